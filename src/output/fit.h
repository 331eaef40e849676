/* Fitting text output to the terminal, one implementation for every command (stats, analyze,
 * kernels, diff, the --help texts): the width to fit, table columns cut ('~') or left out, and
 * prose lines wrapped under their own indentation. CSV, JSON and a pipe get everything whole. */
#ifndef LANTERN_OUTPUT_FIT_H
#define LANTERN_OUTPUT_FIT_H

#include <stddef.h>
#include <stdio.h>

/* The width text written to fd should fit: the terminal's columns when fd is one
 * (TIOCGWINSZ), else $COLUMNS when set (a shell exports it only when asked), else 0: no limit,
 * so a pipe into awk or a file gets every name whole. */
int output_width(int fd);

#define OUTPUT_FIT_FLEXIBLE 1u /* a column that may be cut, down to OUTPUT_FIT_MIN */
#define OUTPUT_FIT_MIN 4

/* Fits columns separated by sep blanks into limit (<= 0: no limit). drop[c] > 0 lets column c
 * be left out: the highest rank first, the columns of one rank together (drop NULL: none).
 * First as few ranks as needed are left out for the line to fit with each flexible column
 * (flags) cut to keep characters; then the widest flexible column loses a character, in turn,
 * until the line fits or none is above OUTPUT_FIT_MIN. widths[]: each column's width in, its
 * fitted width out (0: left out). Returns how many were left out. */
int output_fit_columns(int *widths, const unsigned *flags, const int *drop, int ncols, int sep,
                       int limit, int keep);

/* Writes text (len bytes) with its lines fitted to width (<= 0: as it is). A line is an item
 * ("  -o, --output FILE   the database ...", "label: text") or a heading (ending with ':')
 * followed by its continuations, the lines indented deeper that are neither. Where one of
 * them is longer than width, they are joined into one and broken again at blanks or after
 * commas, each new line indented as the continuations were, else to where the item's text
 * starts (after "label: " or its first gap of two blanks). A word longer than the room is not
 * cut. Lines that fit are written as they are, so fitted tables keep their layout. */
void output_wrap(FILE *out, const char *text, size_t len, int width);

/* Prints what print writes, wrapped (output_wrap) to stdout's width, or 80 columns when that
 * is unknown: for --help texts. */
void output_print_wrapped(void (*print)(FILE *out), FILE *to);

#endif
