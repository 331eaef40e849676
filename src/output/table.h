/* The one writer every report (and analyze, the HTML page) prints through: the same rows as an
 * aligned text table with human units (ns/µs/ms/s), as CSV, or as JSON with exact nanoseconds. Text
 * tables are held until table_finish (to align the columns); CSV and JSON rows stream out as they
 * come. */
#ifndef LANTERN_OUTPUT_TABLE_H
#define LANTERN_OUTPUT_TABLE_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>

enum table_format { TABLE_FORMAT_TABLE, TABLE_FORMAT_CSV, TABLE_FORMAT_JSON };

enum table_kind {
    TABLE_TEXT,      /* left-aligned text */
    TABLE_INT,       /* an integer count */
    TABLE_NS,        /* a duration in ns: human units in tables, exact ns in CSV/JSON */
    TABLE_PERCENT,   /* a percentage, one decimal */
    TABLE_BYTES,     /* a size: MB (10^6 bytes, as nsys) in tables, exact bytes in CSV/JSON */
    TABLE_REAL,      /* a plain number: two decimals in tables, exact in CSV/JSON */
    TABLE_FORMATTED, /* text the caller formatted as a number (table_text): aligned right */
};

struct table_column {
    const char
        *name; /* the header: "Total Time"; CSV adds the unit of TABLE_NS: "Total Time (ns)" */
    const char *key; /* the JSON key: "total_ns" */
    enum table_kind kind;
};

struct table;

/* Parses "table", "csv" or "json"; returns -EINVAL for anything else. */
int table_parse_format(const char *name, enum table_format *out);

/* Starts a table of ncols columns (the array must outlive the table). A text table is fitted
 * into width columns (0: no limit; output/fit.h): number columns left out from the right (or
 * in table_drop_ranks' order), named in a line after the table, and text columns cut with
 * '~'. NULL if out of memory. */
struct table *table_new(FILE *out, enum table_format format, int width,
                        const struct table_column *cols, int ncols);

/* CSV for a terminal: each cell's control characters escaped as in text tables (\e, \r,
 * \x07), so a recorded name cannot drive it; CSV elsewhere keeps them exact. Call before the
 * first cell. */
void table_escape_csv_controls(struct table *t);

/* Cells of the current row, left to right; the row ends after its last column. */
void table_text(struct table *t, const char *text); /* NULL: empty cell / JSON null */
void table_int(struct table *t, int64_t v);
void table_ns(struct table *t, double ns); /* whole ns print as integers */
void table_percent(struct table *t, double percent);
void table_bytes(struct table *t, double bytes);
void table_real(struct table *t, double v);

/* The order in which a fitted text table (table_new's width) leaves columns out, instead of
 * its number columns from the right: drop[c] > 0 ranks column c (the highest rank first, a
 * rank's columns together), 0 keeps it (the array must outlive the table). Call before
 * table_finish. */
void table_drop_ranks(struct table *t, const int *drop);

/* Writes what is held and frees the table; returns 0, -EIO if a write failed or -ENOMEM if a
 * cell could not be stored. */
int table_finish(struct table *t);

/* A copy of text for a terminal (malloc'd; NULL if out of memory): C0 control characters,
 * DEL and the C1 controls U+0080-U+009F become \xNN (\n, \t, \r, \e for the common ones),
 * so that a name recorded from a program can never move the cursor or drive the terminal. */
char *table_escape_controls(const char *text);

/* A duration in human units ("812 ns", "1.250 µs", "3.000 ms", "2.500 s") into buf. */
void table_format_duration(char *buf, size_t size, double ns);

#endif
