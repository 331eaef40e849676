/* HTML text escaping for every page Lantern writes (see html.h). */
#include "output/html.h"
#include "output/utf8.h"

/* The first n bytes of s, escaped. */
static void html_text_bytes(FILE *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n && s[i]; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '&':
            fputs("&amp;", out);
            break;
        case '<':
            fputs("&lt;", out);
            break;
        case '>':
            fputs("&gt;", out);
            break;
        case '"':
            fputs("&quot;", out);
            break;
        case '\'':
            fputs("&#39;", out);
            break;
        default:
            if (c >= 0x20 || c == '\n' || c == '\t')
                putc(c, out);
        }
    }
}

void html_text(FILE *out, const char *s)
{
    if (s)
        html_text_bytes(out, s, (size_t)-1);
}

void html_text_cut(FILE *out, const char *s, size_t max_chars)
{
    if (!s)
        return;
    if (utf8_width(s) <= max_chars) {
        html_text(out, s);
        return;
    }
    /* the first max_chars - 1 characters, then an ellipsis */
    html_text_bytes(out, s, utf8_prefix(s, max_chars ? max_chars - 1 : 0));
    fputs("\u2026", out);
}
