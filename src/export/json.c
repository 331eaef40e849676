/* JSON string escaping with UTF-8 validation (each byte that does not start a valid
 * sequence becomes one U+FFFD) and number output. */
#include "export/json.h"

#include <math.h>
#include <stdint.h>

/* Length of the valid UTF-8 sequence at p (1-4), or 0 if it is not valid: overlongs,
 * surrogates and code points above U+10FFFF are invalid (RFC 3629). */
static size_t utf8_sequence(const unsigned char *p, size_t left)
{
    unsigned char c = p[0];
    size_t n;
    uint32_t min, cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2, min = 0x80, cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3, min = 0x800, cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4, min = 0x10000, cp = c & 0x07;
    } else {
        return 0;
    }
    if (left < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

void json_write_string(FILE *out, const char *bytes, size_t len)
{
    if (!bytes) {
        fputs("null", out);
        return;
    }
    const unsigned char *p = (const unsigned char *)bytes, *end = p + len;
    putc('"', out);
    while (p < end) {
        unsigned char c = *p;
        size_t n = utf8_sequence(p, (size_t)(end - p));
        if (n == 0) {
            fputs("\xEF\xBF\xBD", out); /* U+FFFD REPLACEMENT CHARACTER */
            p++;
            continue;
        }
        if (n > 1) {
            fwrite(p, 1, n, out);
        } else if (c == '"' || c == '\\') {
            putc('\\', out);
            putc(c, out);
        } else if (c == '\n') {
            fputs("\\n", out);
        } else if (c == '\t') {
            fputs("\\t", out);
        } else if (c == '\r') {
            fputs("\\r", out);
        } else if (c < 0x20 || c == 0x7F) {
            fprintf(out, "\\u%04x", c);
        } else {
            putc(c, out);
        }
        p += n;
    }
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
