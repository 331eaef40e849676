/* The report table writer (src/output/table.c): human units in text tables, exact values
 * in CSV and JSON, aligned columns, CSV quoting. */
#include "harness.h"
#include "output/table.h"

static char out[2048];

static void durations_in_human_units(void)
{
    char buf[32];
    const struct {
        double ns;
        const char *text;
    } cases[] = {
        {0, "0 ns"},
        {999, "999 ns"},
        {1000, "1.000 µs"},
        {1234567, "1.235 ms"},
        {999999999, "1000.000 ms"},
        {2.5e9, "2.500 s"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        table_format_duration(buf, sizeof buf, cases[i].ns);
        ASSERT_STR_EQ(buf, cases[i].text);
    }
}

static const struct table_column columns[] = {
    {"Name", "name", TABLE_TEXT},
    {"Time", "time_percent", TABLE_PERCENT},
    {"Total", "total_ns", TABLE_NS},
    {"Count", "count", TABLE_INT},
};

static const char *write_rows(enum table_format format)
{
    FILE *f = fmemopen(out, sizeof out, "w");
    struct table *t = table_new(f, format, 0, columns, 4);
    table_text(t, "a,\"b\"");
    table_percent(t, 66.6666);
    table_ns(t, 1500.5);
    table_int(t, 3);
    table_text(t, "µ");
    table_percent(t, 33.3334);
    table_ns(t, 20);
    table_int(t, 12);
    ASSERT_EQ(table_finish(t), 0);
    fclose(f);
    return out;
}

static void text_table_is_aligned_with_units(void)
{
    /* 1500.5 ns is 1.5004999... µs in binary: rounds down */
    ASSERT_STR_EQ(write_rows(TABLE_FORMAT_TABLE), "Name   Time (%)     Total  Count\n"
                                                  "-----  --------  --------  -----\n"
                                                  "a,\"b\"      66.7  1.500 µs      3\n"
                                                  "µ          33.3     20 ns     12\n");
}

static void csv_is_exact_and_quoted(void)
{
    ASSERT_STR_EQ(write_rows(TABLE_FORMAT_CSV), "Name,Time (%),Total (ns),Count\n"
                                                "\"a,\"\"b\"\"\",66.667,1500.5,3\n"
                                                "µ,33.333,20,12\n");
}

static void json_is_exact(void)
{
    ASSERT_STR_EQ(write_rows(TABLE_FORMAT_JSON),
                  "[\n {\"name\": \"a,\\\"b\\\"\", \"time_percent\": 66.667, \"total_ns\": 1500.5, "
                  "\"count\": 3},\n {\"name\": \"µ\", \"time_percent\": 33.333, \"total_ns\": 20, "
                  "\"count\": 12}\n]");
}

/* Terminal escape injection: control characters of a recorded name never reach the terminal
 * raw in a text table (CSV and JSON escape in their own way). */
static void text_table_escapes_control_characters(void)
{
    char *e = table_escape_controls("a\x1b[2Jb\n\t\x01\x7f\xc2\x9b ok \xc2\xb5");
    ASSERT_STR_EQ(e, "a\\e[2Jb\\n\\t\\x01\\x7f\\x9b ok \xc2\xb5");
    free(e);
    static const struct table_column name_only[] = {{"Name", "name", TABLE_TEXT}};
    FILE *f = fmemopen(out, sizeof out, "w");
    struct table *t = table_new(f, TABLE_FORMAT_TABLE, 0, name_only, 1);
    table_text(t, "\x1b]0;pwned\x07");
    ASSERT_EQ(table_finish(t), 0);
    fclose(f);
    ASSERT_STR_EQ(out, "Name\n--------------\n\\e]0;pwned\\x07\n");
}

/* A table fitted to a width (table_new's, output/fit.h): the ranked columns (table_drop_ranks)
 * are left out, the highest rank first and a rank's columns together, as few as fit with names
 * cut to 20 characters, and named after the table; then the widest text column is cut with
 * '~', by display columns (µ is one). Without ranks numbers leave from the right; without a
 * width nothing changes. */
static const struct table_column fitted_columns[] = {
    {"Name", "name", TABLE_TEXT},        {"A", "a", TABLE_INT}, {"B", "b", TABLE_INT},
    {"Right", "right", TABLE_FORMATTED}, {"C", "c", TABLE_INT},
};

static const char *write_fitted(int width, const int *drop)
{
    FILE *f = fmemopen(out, sizeof out, "w");
    struct table *t = table_new(f, TABLE_FORMAT_TABLE, width, fitted_columns, 5);
    if (drop)
        table_drop_ranks(t, drop);
    table_text(t, "µµµµµµµµµµµµµµµµµµµ");
    table_int(t, 1);
    table_int(t, 2);
    table_text(t, "+5 %");
    table_int(t, 3);
    ASSERT_EQ(table_finish(t), 0);
    fclose(f);
    return out;
}

static void text_table_fits_a_width(void)
{
    static const int drop[] = {0, 2, 2, 0, 1};
    const int widths[] = {0, 30, 24, 21};
    const char *expected[] = {
        "Name                 A  B  Right  C\n"
        "-------------------  -  -  -----  -\n"
        "µµµµµµµµµµµµµµµµµµµ  1  2   +5 %  3\n",
        "Name                 Right  C\n"
        "-------------------  -----  -\n"
        "µµµµµµµµµµµµµµµµµµµ   +5 %  3\n"
        "(left out to fit: A, B; -w 0 or a wider terminal shows them)\n",
        "Name               Right\n"
        "-----------------  -----\n"
        "µµµµµµµµµµµµµµµµ~   +5 %\n"
        "(left out to fit: A, B, C; -w 0 or a wider terminal shows them)\n",
        "Name            Right\n"
        "--------------  -----\n"
        "µµµµµµµµµµµµµ~   +5 %\n"
        "(left out to fit: A, B, C; -w 0 or a wider terminal shows them)\n",
    };
    for (int i = 0; i < 4; i++)
        ASSERT_STR_EQ(write_fitted(widths[i], drop), expected[i]);
    ASSERT_STR_EQ(write_fitted(24, NULL),
                  "Name                 A\n"
                  "-------------------  -\n"
                  "µµµµµµµµµµµµµµµµµµµ  1\n"
                  "(left out to fit: B, Right, C; -w 0 or a wider terminal shows them)\n");
}

static const struct test_case tests[] = {
    {"text_table_fits_a_width", text_table_fits_a_width},
    {"text_table_escapes_control_characters", text_table_escapes_control_characters},
    {"durations_in_human_units", durations_in_human_units},
    {"text_table_is_aligned_with_units", text_table_is_aligned_with_units},
    {"csv_is_exact_and_quoted", csv_is_exact_and_quoted},
    {"json_is_exact", json_is_exact},
    {NULL, NULL},
};

int main(int argc, char **argv)
{
    return test_main(tests, argc, argv);
}
