/* HTML text as every self-contained page Lantern writes needs it (`lantern report`, `lantern
 * diff --html`): names come from the profiled program, so any byte may appear, and none may
 * open a tag or leave an attribute. */
#ifndef LANTERN_OUTPUT_HTML_H
#define LANTERN_OUTPUT_HTML_H

#include <stddef.h>
#include <stdio.h>

/* Text with &, <, >, " and ' escaped, control characters dropped (NULL writes nothing). */
void html_text(FILE *out, const char *s);
/* html_text of at most max_chars characters (code points): longer text is cut to
 * max_chars - 1 of them and an ellipsis. */
void html_text_cut(FILE *out, const char *s, size_t max_chars);

#endif
