/* UTF-8 facts every writer of names needs (table, CSV, JSON, the kernels columns): where a
 * valid sequence ends (RFC 3629), which characters are controls that must never reach a
 * terminal raw, and how many columns text takes. Names come from the profiled program
 * (NVTX, thread names, kernel names), so any byte may appear. */
#ifndef LANTERN_OUTPUT_UTF8_H
#define LANTERN_OUTPUT_UTF8_H

#include <stddef.h>

/* Length of the valid UTF-8 sequence at p (1-4; p[0] < 0x80 is 1), or 0 if the bytes there
 * are not one: overlongs, surrogates and code points above U+10FFFF are invalid. left is the
 * number of bytes from p to the end of the text (at least 1). */
size_t utf8_sequence(const unsigned char *p, size_t left);

/* Length of the control character at NUL-terminated p: 1 for C0 (U+0000-U+001F) and DEL, 2
 * for a C1 control (U+0080-U+009F, encoded C2 80-C2 9F; C2 9B is a terminal's CSI), 0 for
 * anything else. Inline: the kernels text writer asks it of every byte it prints. */
static inline size_t utf8_control(const unsigned char *p)
{
    if (p[0] < 0x20 || p[0] == 0x7F)
        return 1;
    return p[0] == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9F ? 2 : 0;
}

/* Columns NUL-terminated UTF-8 text takes: one per code point (µ is two bytes, one column). */
size_t utf8_width(const char *s);

/* Bytes of the longest start of NUL-terminated s that takes at most `columns` columns. */
size_t utf8_prefix(const char *s, size_t columns);

#endif
