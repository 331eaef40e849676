/* JSON output helpers shared by the exports and the reports' JSON format: strings escaped
 * per RFC 8259, with control characters as \u00XX and invalid UTF-8 replaced by U+FFFD so
 * the output always parses, whatever bytes the profiled program gave NVTX. */
#ifndef LANTERN_EXPORT_JSON_H
#define LANTERN_EXPORT_JSON_H

#include <stddef.h>
#include <stdio.h>

/* Writes bytes[0..len) as a quoted JSON string; NULL writes null. */
void json_write_string(FILE *out, const char *bytes, size_t len);
/* Same for a NUL-terminated string. */
void json_write_cstring(FILE *out, const char *s);
/* A number; non-finite values (not representable in JSON) write null. */
void json_write_double(FILE *out, double v);

#endif
