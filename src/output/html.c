/* HTML text escaping for every page Lantern writes (see html.h). */
#include "output/html.h"

void html_text(FILE *out, const char *s)
{
    if (!s)
        return;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
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
