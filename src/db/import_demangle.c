/* Demangles kernel names after import (for kernels.demangled_id, set by cuda_finish.sql) and
 * the CPU samples' function names: a file of its own because it loads the C++ runtime at run
 * time. */
#include "db/import_demangle.h"
#include "db/import_internal.h"

#include <errno.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

/* Kernel names are recorded mangled (the agent does no C++ work inside the profiled
 * process); here each distinct name is demangled once with the C++ runtime's
 * __cxa_demangle, found at run time so the importer stays plain C. Without a C++ runtime
 * the names stay mangled (demangled_id NULL). */
typedef char *(*cxa_demangle_fn)(const char *mangled, char *out, size_t *len, int *status);

static cxa_demangle_fn find_demangler(void)
{
    void *fn = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (!fn) {
        void *cxx = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
        fn = cxx ? dlsym(cxx, "__cxa_demangle") : NULL;
    }
    cxa_demangle_fn demangle;
    memcpy(&demangle, &fn, sizeof(demangle));
    return demangle;
}

char *import_demangle(const char *name)
{
    static cxa_demangle_fn demangle;
    static int looked;
    if (!name || strncmp(name, "_Z", 2) != 0)
        return NULL;
    if (!looked) {
        demangle = find_demangler();
        looked = 1;
    }
    int status = -1;
    char *text = demangle ? demangle(name, NULL, NULL, &status) : NULL;
    if (status != 0) {
        free(text);
        return NULL;
    }
    return text;
}

int import_demangle_kernel_names(sqlite3 *db)
{
    cxa_demangle_fn demangle = find_demangler();
    sqlite3_stmt *names = NULL, *add_string = NULL, *add_pair = NULL;
    int rc = -EIO;
    if (sqlite3_exec(
            db, "CREATE TEMP TABLE demangled(name_id INTEGER PRIMARY KEY, demangled_id INTEGER)",
            NULL, NULL, NULL) != SQLITE_OK)
        return -EIO;
    if (!demangle)
        return 0;
    if (sqlite3_exec(db,
                     "INSERT INTO demangled(name_id) SELECT DISTINCT name_id FROM kernels"
                     " WHERE demangled_id IS NULL AND name_id IS NOT NULL",
                     NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(
            db,
            "SELECT d.name_id, s.value FROM demangled d JOIN strings s ON s.id = d.name_id"
            " WHERE s.value LIKE '\\_Z%' ESCAPE '\\'",
            -1, &names, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "INSERT INTO strings(value) VALUES(?)", -1, &add_string, NULL) !=
            SQLITE_OK ||
        sqlite3_prepare_v2(db, "UPDATE demangled SET demangled_id = ? WHERE name_id = ?", -1,
                           &add_pair, NULL) != SQLITE_OK)
        goto fail;
    while (sqlite3_step(names) == SQLITE_ROW) {
        int status = -1;
        char *text = demangle((const char *)sqlite3_column_text(names, 1), NULL, NULL, &status);
        if (status == 0 && text) {
            import_bind_row(add_string, IMPORT_TEXT_COPY(text));
            int ok = sqlite3_step(add_string) == SQLITE_DONE;
            sqlite3_reset(add_string);
            import_bind_row(add_pair, IMPORT_INT(sqlite3_last_insert_rowid(db)),
                            IMPORT_INT(sqlite3_column_int64(names, 0)));
            ok = ok && sqlite3_step(add_pair) == SQLITE_DONE;
            sqlite3_reset(add_pair);
            if (!ok) {
                free(text);
                goto fail;
            }
        }
        free(text);
    }
    rc = 0;
fail:
    sqlite3_finalize(names);
    sqlite3_finalize(add_string);
    sqlite3_finalize(add_pair);
    return rc;
}
