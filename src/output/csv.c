/* CSV field quoting (see csv.h): one rule for every CSV Lantern writes. */
#include "output/csv.h"

#include <string.h>

static int needs_quotes(const char *s)
{
    return strpbrk(s, ",\"\n\r") != NULL;
}

/* Copies s[0..len) to dst with each quote doubled; returns the bytes written (2 * len at most). */
static size_t double_quotes(char *dst, const char *s, size_t len)
{
    char *o = dst;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '"')
            *o++ = '"';
        *o++ = s[i];
    }
    return (size_t)(o - dst);
}

size_t csv_escape(char *dst, const char *s)
{
    size_t len = strlen(s);
    if (!needs_quotes(s)) {
        memcpy(dst, s, len);
        return len;
    }
    dst[0] = '"';
    size_t n = 1 + double_quotes(dst + 1, s, len);
    dst[n++] = '"';
    return n;
}

void csv_write_field(FILE *out, const char *s)
{
    if (!s)
        return;
    if (!needs_quotes(s)) {
        fputs(s, out);
        return;
    }
    char buf[1024];
    size_t len = strlen(s);
    putc('"', out);
    for (size_t at = 0; at < len; at += sizeof buf / 2) {
        size_t piece = len - at < sizeof buf / 2 ? len - at : sizeof buf / 2;
        fwrite(buf, 1, double_quotes(buf, s + at, piece), out);
    }
    putc('"', out);
}
