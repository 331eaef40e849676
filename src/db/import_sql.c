/* How the importer binds its rows (one tagged value per column) and runs the embedded .sql
 * scripts with named parameters, shared by the importer's core and sources (import_internal.h). */
#include "db/import_internal.h"

#include <errno.h>
#include <string.h>

void import_bind_values(sqlite3_stmt *st, int first, const struct import_value *values, int n)
{
    for (int k = 0; k < n; k++) {
        const struct import_value *v = &values[k];
        int col = first + k;
        switch (v->kind) {
        case IMPORT_VALUE_INT:
            sqlite3_bind_int64(st, col, v->i);
            continue;
        case IMPORT_VALUE_NONZERO:
            if (v->i)
                sqlite3_bind_int64(st, col, v->i);
            else
                sqlite3_bind_null(st, col);
            continue;
        case IMPORT_VALUE_PLUS_ONE:
            if (v->plus_one)
                sqlite3_bind_int64(st, col, (int64_t)(v->plus_one - 1));
            else
                sqlite3_bind_null(st, col);
            continue;
        case IMPORT_VALUE_REAL:
            sqlite3_bind_double(st, col, v->real);
            continue;
        case IMPORT_VALUE_TEXT:
        case IMPORT_VALUE_TEXT_COPY:
            if (v->p)
                sqlite3_bind_text(st, col, v->p, v->len,
                                  v->kind == IMPORT_VALUE_TEXT ? SQLITE_STATIC : SQLITE_TRANSIENT);
            else
                sqlite3_bind_null(st, col);
            continue;
        case IMPORT_VALUE_BYTES:
        case IMPORT_VALUE_BYTES_TEXT:
            if (v->len || v->kind == IMPORT_VALUE_BYTES_TEXT)
                sqlite3_bind_text(st, col, v->p, v->len, SQLITE_TRANSIENT);
            else
                sqlite3_bind_null(st, col);
            continue;
        case IMPORT_VALUE_BLOB:
            if (v->len)
                sqlite3_bind_blob(st, col, v->p, v->len, SQLITE_TRANSIENT);
            else
                sqlite3_bind_null(st, col);
            continue;
        case IMPORT_VALUE_SQL:
            sqlite3_bind_value(st, col, v->p);
            continue;
        case IMPORT_VALUE_NULL:
            sqlite3_bind_null(st, col);
            continue;
        }
    }
}

/* Binds every parameter of st by name from params; -EIO for one params lacks (a bug). */
static int bind_params(sqlite3_stmt *st, const struct import_sql_param *params)
{
    int n = sqlite3_bind_parameter_count(st);
    for (int i = 1; i <= n; i++) {
        const char *name = sqlite3_bind_parameter_name(st, i);
        const struct import_sql_param *p = params;
        while (p && p->name && (!name || strcmp(p->name, name) != 0))
            p++;
        if (!p || !p->name)
            return -EIO;
        struct import_value v = p->text ? IMPORT_TEXT(p->text) : IMPORT_INT(p->value);
        import_bind_values(st, i, &v, 1);
    }
    return 0;
}

int import_exec_script(sqlite3 *db, const char *sql, const struct import_sql_param *params)
{
    while (sql && *sql) {
        sqlite3_stmt *st = NULL;
        const char *tail = NULL;
        if (sqlite3_prepare_v2(db, sql, -1, &st, &tail) != SQLITE_OK)
            return -EIO;
        sql = tail;
        if (!st) /* only blanks or comments were left */
            continue;
        int rc = bind_params(st, params);
        while (rc == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
            rc = 0;
        sqlite3_finalize(st);
        if (rc != 0 && rc != SQLITE_DONE)
            return -EIO;
    }
    return 0;
}
