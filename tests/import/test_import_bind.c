/* The importer's one way to bind a row (import_bind_row, src/db/import_sql.c): each kind of
 * IMPORT_* value lands in its column as the trace's conventions say (0 as NULL for ids, values
 * stored + 1, bytes as text or blobs), read back from an in-memory database. */
#include "db/import_internal.h"
#include "harness.h"
#include "trace/records.h"

/* A statement selecting its n parameters back as one row. */
static sqlite3_stmt *select_params(sqlite3 *db, int n)
{
    char sql[256] = "SELECT ?";
    for (int i = 1; i < n; i++)
        strcat(sql, ", ?");
    sqlite3_stmt *st = NULL;
    ASSERT(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK);
    return st;
}

static sqlite3 *open_db(void)
{
    sqlite3 *db = NULL;
    ASSERT(sqlite3_open(":memory:", &db) == SQLITE_OK);
    return db;
}

static void integers_ids_and_plus_one_values(void)
{
    sqlite3 *db = open_db();
    sqlite3_stmt *st = select_params(db, 7);
    import_bind_row(st, IMPORT_INT(0), IMPORT_INT(-5), IMPORT_NONZERO(0), IMPORT_NONZERO(42),
                    IMPORT_PLUS_ONE(0), IMPORT_PLUS_ONE(1), IMPORT_PLUS_ONE(UINT64_MAX));
    ASSERT(sqlite3_step(st) == SQLITE_ROW);
    ASSERT_EQ(sqlite3_column_type(st, 0), SQLITE_INTEGER);
    ASSERT_EQ(sqlite3_column_int64(st, 0), 0);
    ASSERT_EQ(sqlite3_column_int64(st, 1), -5);
    ASSERT_EQ(sqlite3_column_type(st, 2), SQLITE_NULL);
    ASSERT_EQ(sqlite3_column_int64(st, 3), 42);
    ASSERT_EQ(sqlite3_column_type(st, 4), SQLITE_NULL);
    ASSERT_EQ(sqlite3_column_type(st, 5), SQLITE_INTEGER);
    ASSERT_EQ(sqlite3_column_int64(st, 5), 0);
    ASSERT_EQ(sqlite3_column_int64(st, 6), -2); /* UINT64_MAX - 1, wrapped as SQLite stores it */
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static void reals_texts_and_nulls(void)
{
    sqlite3 *db = open_db();
    sqlite3_stmt *st = select_params(db, 6);
    char copied[] = "copied";
    import_bind_row(st, IMPORT_REAL(1.5), IMPORT_TEXT("static"), IMPORT_TEXT(NULL),
                    IMPORT_TEXT_N("prefix-and-more", 6), IMPORT_TEXT_COPY(copied), IMPORT_NULL);
    copied[0] = 'X'; /* the copy was taken at the bind */
    ASSERT(sqlite3_step(st) == SQLITE_ROW);
    ASSERT_EQ(sqlite3_column_type(st, 0), SQLITE_FLOAT);
    ASSERT(sqlite3_column_double(st, 0) == 1.5);
    ASSERT_STR_EQ((const char *)sqlite3_column_text(st, 1), "static");
    ASSERT_EQ(sqlite3_column_type(st, 2), SQLITE_NULL);
    ASSERT_STR_EQ((const char *)sqlite3_column_text(st, 3), "prefix");
    ASSERT_STR_EQ((const char *)sqlite3_column_text(st, 4), "copied");
    ASSERT_EQ(sqlite3_column_type(st, 5), SQLITE_NULL);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static void bytes_as_text_or_blob_and_empty_ones(void)
{
    sqlite3 *db = open_db();
    sqlite3_stmt *st = select_params(db, 6);
    struct trace_bytes abc = trace_cstr("abc"), none = trace_bytes("", 0);
    import_bind_row(st, IMPORT_BYTES(abc), IMPORT_BYTES(none), IMPORT_BYTES_TEXT(abc),
                    IMPORT_BYTES_TEXT(none), IMPORT_BLOB(abc), IMPORT_BLOB(none));
    ASSERT(sqlite3_step(st) == SQLITE_ROW);
    ASSERT_EQ(sqlite3_column_type(st, 0), SQLITE_TEXT);
    ASSERT_STR_EQ((const char *)sqlite3_column_text(st, 0), "abc");
    ASSERT_EQ(sqlite3_column_type(st, 1), SQLITE_NULL);
    ASSERT_STR_EQ((const char *)sqlite3_column_text(st, 2), "abc");
    ASSERT_EQ(sqlite3_column_type(st, 3), SQLITE_TEXT); /* NVML's '' stays '' */
    ASSERT_EQ(sqlite3_column_bytes(st, 3), 0);
    ASSERT_EQ(sqlite3_column_type(st, 4), SQLITE_BLOB);
    ASSERT_EQ(sqlite3_column_bytes(st, 4), 3);
    ASSERT_EQ(sqlite3_column_type(st, 5), SQLITE_NULL);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static void a_row_starts_at_its_first_column_and_copies_values(void)
{
    sqlite3 *db = open_db();
    sqlite3_stmt *from = select_params(db, 1), *st = select_params(db, 3);
    import_bind_row(from, IMPORT_TEXT("from another statement"));
    ASSERT(sqlite3_step(from) == SQLITE_ROW);
    import_bind_row(st, IMPORT_INT(1));
    import_bind_row_at(st, 2, IMPORT_SQL(sqlite3_column_value(from, 0)), IMPORT_INT(3));
    ASSERT(sqlite3_step(st) == SQLITE_ROW);
    ASSERT_EQ(sqlite3_column_int64(st, 0), 1);
    ASSERT_STR_EQ((const char *)sqlite3_column_text(st, 1), "from another statement");
    ASSERT_EQ(sqlite3_column_int64(st, 2), 3);
    sqlite3_finalize(from);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

int main(int argc, char **argv)
{
    static const struct test_case tests[] = {
        {"integers_ids_and_plus_one_values", integers_ids_and_plus_one_values},
        {"reals_texts_and_nulls", reals_texts_and_nulls},
        {"bytes_as_text_or_blob_and_empty_ones", bytes_as_text_or_blob_and_empty_ones},
        {"a_row_starts_at_its_first_column_and_copies_values",
         a_row_starts_at_its_first_column_and_copies_values},
        {NULL, NULL},
    };
    return test_main(tests, argc, argv);
}
