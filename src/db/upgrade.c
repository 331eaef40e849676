/* An older Lantern database into this schema (upgrade.h): a new file made with schema.sql, the
 * old one attached, each shared table copied in its shared columns, then upgrade.sql and the
 * indexes. No schema so far removed or renamed a column, so the shared columns are all of the
 * old ones, and a table or column added since starts empty or at its default. */
#include "db/upgrade.h"
#include "db/import.h"
#include "db/import_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char import_upgrade_sql[]; /* upgrade.sql */

static int fail(char *err, size_t err_len, sqlite3 *db, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t err_len, sqlite3 *db, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
    if (db && n >= 0 && (size_t)n < err_len)
        snprintf(err + n, err_len - (size_t)n, ": %s", sqlite3_errmsg(db));
    return -EIO;
}

/* lantern_process_name(cmdline): processes.name from a command line stored with its arguments
 * separated by blanks (import_process_name reads them NUL-separated). */
static void process_name_sql(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const char *cmdline = (const char *)sqlite3_value_text(argv[0]);
    if (!cmdline) {
        sqlite3_result_null(ctx);
        return;
    }
    size_t len = strlen(cmdline);
    char *args = malloc(len + 1), name[256];
    if (!args) {
        sqlite3_result_error_nomem(ctx);
        return;
    }
    for (size_t i = 0; i <= len; i++)
        args[i] = cmdline[i] == ' ' ? '\0' : cmdline[i];
    import_process_name(args, len, name, sizeof name);
    free(args);
    if (*name)
        sqlite3_result_text(ctx, name, -1, SQLITE_TRANSIENT);
    else
        sqlite3_result_null(ctx);
}

/* The columns of table that this schema ("main") and the old one share, quoted and
 * comma-separated, into out. Returns how many, or -EIO. */
static int shared_columns(sqlite3 *db, const char *table, char *out, size_t size)
{
    sqlite3_stmt *st;
    int n = 0;
    size_t used = 0;
    out[0] = '\0';
    if (sqlite3_prepare_v2(db,
                           "SELECT m.name FROM pragma_table_info(?1, 'main') m"
                           " JOIN pragma_table_info(?1, 'old') o ON o.name = m.name ORDER BY m.cid",
                           -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    while (sqlite3_step(st) == SQLITE_ROW) {
        int w = snprintf(out + used, size - used, "%s\"%s\"", n ? ", " : "",
                         (const char *)sqlite3_column_text(st, 0));
        if (w < 0 || (size_t)w >= size - used) {
            sqlite3_finalize(st);
            return -EIO;
        }
        used += (size_t)w;
        n++;
    }
    sqlite3_finalize(st);
    return n;
}

/* Every table of this schema that the old database has: its rows, in the columns both have. */
static int copy_tables(sqlite3 *db, char *err, size_t err_len)
{
    sqlite3_stmt *tables;
    if (sqlite3_prepare_v2(
            db,
            "SELECT m.name FROM main.sqlite_master m JOIN old.sqlite_master o"
            " ON o.name = m.name AND o.type = 'table'"
            " WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' ORDER BY m.rowid",
            -1, &tables, NULL) != SQLITE_OK)
        return fail(err, err_len, db, "cannot read the old schema");
    int rc = 0;
    while (rc == 0 && sqlite3_step(tables) == SQLITE_ROW) {
        const char *table = (const char *)sqlite3_column_text(tables, 0);
        static char columns[16384];
        char *sql = NULL;
        int n = shared_columns(db, table, columns, sizeof columns);
        if (n < 0)
            rc = fail(err, err_len, db, "cannot read the columns of '%s'", table);
        else if (n > 0 && asprintf(&sql, "INSERT INTO main.\"%s\"(%s) SELECT %s FROM old.\"%s\"",
                                   table, columns, columns, table) < 0)
            sql = NULL, rc = fail(err, err_len, NULL, "out of memory");
        else if (sql && sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
            rc = fail(err, err_len, db, "cannot copy '%s'", table);
        free(sql);
    }
    sqlite3_finalize(tables);
    return rc;
}

int upgrade_database(const char *old_path, int from, const char *new_path, char *err,
                     size_t err_len)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *attach = NULL;
    int rc = -EIO;
    if (from < UPGRADE_OLDEST_SCHEMA || from >= IMPORT_SCHEMA_VERSION) {
        snprintf(err, err_len, "schema version %d cannot be upgraded", from);
        return -EINVAL;
    }
    if (sqlite3_open_v2(new_path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        fail(err, err_len, db, "cannot create '%s'", new_path);
        goto out;
    }
    if (sqlite3_exec(db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; BEGIN", NULL, NULL,
                     NULL) != SQLITE_OK ||
        sqlite3_exec(db, import_schema_sql, NULL, NULL, NULL) != SQLITE_OK) {
        fail(err, err_len, db, "cannot write the schema into '%s'", new_path);
        goto out;
    }
    if (sqlite3_prepare_v2(db, "ATTACH DATABASE ?1 AS old", -1, &attach, NULL) != SQLITE_OK ||
        sqlite3_bind_text(attach, 1, old_path, -1, SQLITE_STATIC) != SQLITE_OK ||
        sqlite3_step(attach) != SQLITE_DONE) {
        fail(err, err_len, db, "cannot read '%s'", old_path);
        goto out;
    }
    sqlite3_finalize(attach);
    attach = NULL;
    const struct import_sql_param params[] = {
        {":from", from, NULL}, {":to", IMPORT_SCHEMA_VERSION, NULL}, {NULL, 0, NULL}};
    if (sqlite3_create_function(db, "lantern_process_name", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                                NULL, process_name_sql, NULL, NULL) != SQLITE_OK ||
        copy_tables(db, err, err_len) < 0)
        goto out;
    if (import_exec_script(db, import_upgrade_sql, params) < 0 ||
        sqlite3_exec(db, import_indexes_sql, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(db, "COMMIT; DETACH DATABASE old", NULL, NULL, NULL) != SQLITE_OK) {
        fail(err, err_len, db, "cannot upgrade '%s'", old_path);
        goto out;
    }
    if (sqlite3_exec(db, "PRAGMA journal_mode=DELETE", NULL, NULL, NULL) != SQLITE_OK) {
        fail(err, err_len, db, "cannot write '%s'", new_path);
        goto out;
    }
    rc = 0;
out:
    sqlite3_finalize(attach);
    if (sqlite3_close(db) != SQLITE_OK && rc == 0)
        rc = fail(err, err_len, NULL, "cannot close '%s'", new_path);
    return rc;
}
