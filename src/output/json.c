/* JSON string escaping with UTF-8 validation (each byte that does not start a valid
 * sequence becomes one U+FFFD) and number output. One escaper (escape_some) serves the
 * buffer and the stream forms. */
#include "output/json.h"
#include "output/utf8.h"

#include <math.h>
#include <stdint.h>

/* The most one input character becomes: \u00XX. */
#define MAX_PER_CHARACTER 6

/* Escapes whole characters from *p while dst has room; advances *p and returns the bytes
 * written. Every input byte becomes at most MAX_PER_CHARACTER bytes, so the characters that
 * start in the next room / MAX_PER_CHARACTER bytes fit without a check per byte. */
static size_t escape_some(char *dst, size_t room, const unsigned char **p, const unsigned char *end)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = *p;
    char *o = dst;
    for (;;) {
        size_t left = (size_t)(end - s), fits = (room - (size_t)(o - dst)) / MAX_PER_CHARACTER;
        if (left == 0 || fits == 0)
            break;
        const unsigned char *stop = s + (fits < left ? fits : left);
        while (s < stop) {
            unsigned char c = *s;
            if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
                *o++ = (char)c;
                s++;
            } else if (c >= 0x80) {
                size_t n = utf8_sequence(s, (size_t)(end - s));
                if (n == 0) { /* U+FFFD REPLACEMENT CHARACTER */
                    *o++ = '\xEF', *o++ = '\xBF', *o++ = '\xBD';
                    s++;
                } else {
                    for (size_t i = 0; i < n; i++)
                        *o++ = (char)s[i];
                    s += n;
                }
            } else {
                s++;
                *o++ = '\\';
                if (c == '"' || c == '\\')
                    *o++ = (char)c;
                else if (c == '\n')
                    *o++ = 'n';
                else if (c == '\t')
                    *o++ = 't';
                else if (c == '\r')
                    *o++ = 'r';
                else /* the other controls and DEL */
                    *o++ = 'u', *o++ = '0', *o++ = '0', *o++ = hex[c >> 4], *o++ = hex[c & 15];
            }
        }
    }
    *p = s;
    return (size_t)(o - dst);
}

size_t json_escape(char *dst, const char *bytes, size_t len)
{
    const unsigned char *p = (const unsigned char *)bytes;
    dst[0] = '"';
    size_t n = 1 + escape_some(dst + 1, MAX_PER_CHARACTER * len, &p, p + len);
    dst[n++] = '"';
    return n;
}

void json_write_string(FILE *out, const char *bytes, size_t len)
{
    if (!bytes) {
        fputs("null", out);
        return;
    }
    const unsigned char *p = (const unsigned char *)bytes, *end = p + len;
    char buf[1024];
    putc('"', out);
    while (p < end)
        fwrite(buf, 1, escape_some(buf, sizeof buf, &p, end), out);
    putc('"', out);
}

void json_write_cstring(FILE *out, const char *s)
{
    size_t len = 0;
    if (s)
        while (s[len])
            len++;
    json_write_string(out, s, len);
}

void json_write_double(FILE *out, double v)
{
    if (!isfinite(v)) {
        fputs("null", out);
        return;
    }
    if (fabs(v) < 9e15 && v == (double)(int64_t)v) { /* the cast only where it is defined */
        fprintf(out, "%lld", (long long)v);
        return;
    }
    fprintf(out, "%.17g", v);
}
