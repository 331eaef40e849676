/* How the importer binds its rows (one tagged value per column) and runs the embedded .sql
 * scripts with named parameters, shared by the importer's core and sources (import_internal.h). */
#include "db/import_internal.h"

#include <errno.h>
#include <string.h>

void import_bind_values(sqlite3_stmt *st, int first, const struct import_value *values, int n)
{
    for (int k = 0; k < n; k++) {
        if (values[k].kind == IMPORT_VALUE_INT) /* first: most cells of the CUDA batches */
            sqlite3_bind_int64(st, first + k, values[k].i);
        else
            import_bind_value(st, first + k, values[k]);
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
