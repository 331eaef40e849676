/* JSON output shared by every JSON Lantern writes (exports, reports, analyze, `lantern
 * kernels`): strings escaped per RFC 8259, with \n \t \r named, other control characters and
 * DEL as \u00XX, and each byte that starts no valid UTF-8 sequence replaced by U+FFFD, so the
 * output always parses, whatever bytes the profiled program gave NVTX or CUDA. */
#ifndef LANTERN_OUTPUT_JSON_H
#define LANTERN_OUTPUT_JSON_H

#include <stddef.h>
#include <stdio.h>

/* The most bytes json_escape writes for len bytes of input (\u00XX for each, two quotes). */
#define JSON_ESCAPED_MAX(len) (6 * (len) + 2)

/* Writes bytes[0..len) as a quoted JSON string into dst (JSON_ESCAPED_MAX(len) bytes of room,
 * no NUL added); returns the bytes written. For writers that build lines in a buffer. */
size_t json_escape(char *dst, const char *bytes, size_t len);

/* Writes bytes[0..len) as a quoted JSON string; NULL writes null. */
void json_write_string(FILE *out, const char *bytes, size_t len);
/* Same for a NUL-terminated string. */
void json_write_cstring(FILE *out, const char *s);
/* A number; non-finite values (not representable in JSON) write null. */
void json_write_double(FILE *out, double v);

#endif
