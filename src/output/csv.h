/* CSV fields as RFC 4180 writes them, for every CSV Lantern prints (reports, analyze,
 * `lantern kernels`): a field holding a comma, quote, CR or LF is quoted, its quotes doubled;
 * any other field is written as it is. */
#ifndef LANTERN_OUTPUT_CSV_H
#define LANTERN_OUTPUT_CSV_H

#include <stddef.h>
#include <stdio.h>

/* The most bytes csv_escape writes for len bytes of text. */
#define CSV_ESCAPED_MAX(len) (2 * (len) + 2)

/* Writes NUL-terminated s as one CSV field into dst (CSV_ESCAPED_MAX(strlen(s)) bytes of
 * room, no NUL added); returns the bytes written. */
size_t csv_escape(char *dst, const char *s);

/* Writes s as one CSV field to out; NULL writes an empty field. */
void csv_write_field(FILE *out, const char *s);

#endif
