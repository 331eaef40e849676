/* The file being imported, as sources see it (import_internal.h): its database, name,
 * counters, warnings, cached statements and their stepping. */
#include "db/import_core.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

sqlite3 *import_db(struct import_file *f)
{
    return f->s->db;
}

const char *import_file_name(struct import_file *f)
{
    return f->name;
}

struct import_summary *import_summary_of(struct import_file *f)
{
    return &f->s->summary;
}

void import_lost(struct import_file *f, enum import_loss kind, uint64_t n)
{
    f->lost[kind] += n;
}

static const char *const loss_what[IMPORT_LOSS_KINDS] = {
#define LOSS(ID, what) what,
    IMPORT_LOSSES(LOSS)
#undef LOSS
};

void import_losses_finish(struct import_file *f)
{
    for (int k = 0; k < IMPORT_LOSS_KINDS; k++) {
        if (!f->lost[k])
            continue;
        import_warn(f, "%s: %llu %s", f->name, (unsigned long long)f->lost[k], loss_what[k]);
        sqlite3_stmt *st = import_core_stmt(
            f, IMPORT_CORE_SLOT_LOSS,
            "INSERT INTO import_losses(process_id, raw_file, count, reason) VALUES(?, ?, ?, ?)");
        if (!st)
            return;
        import_bind_row(st, IMPORT_NONZERO(f->process_id), IMPORT_TEXT(f->name),
                        IMPORT_INT(f->lost[k]), IMPORT_TEXT(loss_what[k]));
        import_step(f, st, NULL);
    }
}

void import_malformed(struct import_file *f)
{
    import_lost(f, IMPORT_LOST_MALFORMED, 1);
}

void import_warn(struct import_file *f, const char *fmt, ...)
{
    /* a cancelled import keeps nothing: what fails after the stop (SQLite's interrupt rolled
     * the tables back) is no warning about the files, and the CLI says it was interrupted */
    if (f->s->cancelled)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    f->s->summary.warnings++;
    if (f->s->opt && f->s->opt->warn)
        f->s->opt->warn(f->s->opt->ctx, msg);
    size_t old = f->warning ? strlen(f->warning) : 0;
    char *w = realloc(f->warning, old + strlen(msg) + 3);
    if (!w)
        return;
    if (old)
        strcpy(w + old, "; ");
    strcpy(w + (old ? old + 2 : 0), msg);
    f->warning = w;
}

static sqlite3_stmt *stmt_in_bank(struct import_file *f, int bank, int slot, const char *sql)
{
    if (slot < 0 || slot >= IMPORT_SLOTS)
        return NULL;
    sqlite3_stmt **cached = &f->stmts[bank][slot], *st = *cached;
    if (!st) {
        if (sqlite3_prepare_v3(f->s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, cached, NULL) !=
            SQLITE_OK) {
            import_warn(f, "internal error preparing statement: %s", sqlite3_errmsg(f->s->db));
            return NULL;
        }
        return *cached;
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return st;
}

int import_step(struct import_file *f, sqlite3_stmt *st, const char *what)
{
    if (!st)
        return -EIO;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE || rc == SQLITE_ROW)
        return 0;
    if (what)
        import_warn(f, "%s%s", what, sqlite3_errmsg(import_db(f)));
    return -EIO;
}

int import_meta_reason(struct import_file *f, int slot, const char *key, struct trace_bytes reason,
                       const char *what)
{
    char message[96];
    sqlite3_stmt *st = import_stmt(f, slot, "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)");
    if (!st)
        return -EIO;
    import_bind_row(st, IMPORT_TEXT(key), IMPORT_BYTES_TEXT(reason));
    snprintf(message, sizeof message, "cannot store the %s: ", what);
    return import_step(f, st, message);
}

sqlite3_stmt *import_stmt(struct import_file *f, int slot, const char *sql)
{
    return stmt_in_bank(f, f->bank, slot, sql);
}

sqlite3_stmt *import_core_stmt(struct import_file *f, int slot, const char *sql)
{
    return stmt_in_bank(f, 0, slot, sql);
}
