/* Why did a range get slower or faster? For each NVTX range the comparison found changed, what
 * its instances contain, per instance and averaged over each side's runs: the GPU time of the
 * kernels and copies its process launched while it was open (by short name: new and gone ones
 * stand out), its nested ranges, the time its thread waited in CUDA synchronization, and its
 * host gaps (its time outside any CUDA API call). The parts are listed largest change first
 * and written as one line (docs/diff.md, "What changed inside a range"). Each run's instances of
 * the changed ranges are gathered once in a temporary table of its connection. */
#include "diff/diff_internal.h"
#include "model/kernels_model.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Parts whose change is below this share of the range's are left out of the line (new and
 * gone kernels always stay), and at most this many are named. */
#define DIFF_PART_MIN_SHARE 0.02
#define DIFF_PART_MAX_SHOWN 6

/* The rows explained: the slower and faster ranges. */
struct explain {
    struct diff_result *res;
    size_t *rows; /* result rows explained, by label: label i is rows[i] */
    size_t count;
    char *error;
    size_t error_size;
};

static int fail(struct explain *e, sqlite3 *db)
{
    snprintf(e->error, e->error_size, "explaining the changed ranges: %s", sqlite3_errmsg(db));
    return -EIO;
}

/* Adds ns per instance to the part (kind, name) of row, on one side. */
static int add_part(struct diff_row *row, enum diff_part_kind kind, const char *name, int side,
                    double ns)
{
    struct diff_part *p = NULL;
    for (size_t i = 0; i < row->part_count && !p; i++)
        if (row->parts[i].kind == kind &&
            (row->parts[i].name == name ||
             (name && row->parts[i].name && !strcmp(row->parts[i].name, name))))
            p = &row->parts[i];
    if (!p) {
        struct diff_part *grown = realloc(row->parts, (row->part_count + 1) * sizeof *grown);
        if (!grown)
            return -ENOMEM;
        row->parts = grown;
        p = &row->parts[row->part_count];
        *p = (struct diff_part){.kind = kind, .tensor = -1};
        if (name && !(p->name = strdup(name)))
            return -ENOMEM;
        row->part_count++;
    }
    *(side ? &p->new : &p->base) += ns;
    return 0;
}

/* This run's ids of each explained range into temp.diff_wanted, and their instances into
 * temp.diff_instances (label = the explained range's index). */
static int gather_instances(struct explain *e, struct diff_run *run)
{
    sqlite3 *db = run->db;
    sqlite3_stmt *add = NULL;
    if (sqlite3_exec(
            db,
            "DROP TABLE IF EXISTS temp.diff_wanted; DROP TABLE IF EXISTS temp.diff_instances;"
            "DROP TABLE IF EXISTS temp.diff_calls; DROP TABLE IF EXISTS temp.diff_launches;"
            "CREATE TEMP TABLE diff_wanted(domain_id INTEGER, name_id INTEGER,"
            " label INTEGER, PRIMARY KEY(domain_id, name_id));",
            NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "INSERT INTO temp.diff_wanted VALUES (?1, ?2, ?3)", -1, &add,
                           NULL) != SQLITE_OK)
        return fail(e, db);
    for (size_t label = 0; label < e->count; label++) {
        const char *name = e->res->rows[e->rows[label]].name;
        for (size_t k = 0; k < run->count; k++) {
            const struct diff_series *s = &run->series[k];
            if (s->kind != DIFF_KIND_RANGE || strcmp(s->name, name))
                continue;
            sqlite3_reset(add);
            sqlite3_bind_int64(add, 1, s->domain_id);
            sqlite3_bind_int64(add, 2, s->name_id);
            sqlite3_bind_int64(add, 3, (int64_t)label);
            if (sqlite3_step(add) != SQLITE_DONE) {
                sqlite3_finalize(add);
                return fail(e, db);
            }
        }
    }
    sqlite3_finalize(add);
    if (sqlite3_exec(db,
                     "CREATE TEMP TABLE diff_instances(id INTEGER PRIMARY KEY, label INTEGER,"
                     " process_id INTEGER, thread_id INTEGER, start_ns INTEGER, end_ns INTEGER);"
                     "INSERT INTO temp.diff_instances SELECT r.id, w.label, r.process_id,"
                     " r.start_thread_id, r.start_ns, r.end_ns FROM ranges r"
                     " JOIN temp.diff_wanted w ON w.domain_id = r.domain_id"
                     " AND w.name_id = ifnull(r.name_id, 0) WHERE r.end_ns IS NOT NULL;"
                     /* the CUDA calls each instance's thread made inside it (its host gaps) */
                     "CREATE TEMP TABLE diff_calls AS SELECT i.label, i.id AS instance, a.id,"
                     " a.start_ns, min(a.end_ns, i.end_ns) AS end_ns FROM temp.diff_instances i"
                     " JOIN cuda_api a ON a.thread_id = i.thread_id AND a.start_ns >= i.start_ns"
                     " AND a.start_ns < i.end_ns;"
                     /* and those of any thread of its process (its GPU work: PyTorch launches
                      * the backward pass from the autograd engine's thread) */
                     "CREATE TEMP TABLE diff_launches AS SELECT i.label, a.id"
                     " FROM temp.diff_instances i JOIN threads t ON t.process_id = i.process_id"
                     " JOIN cuda_api a ON a.thread_id = t.id AND a.start_ns >= i.start_ns"
                     " AND a.start_ns < i.end_ns;"
                     "CREATE INDEX temp.diff_launches_by_id ON diff_launches(id);",
                     NULL, NULL, NULL) != SQLITE_OK)
        return fail(e, db);
    return 0;
}

/* Runs a query of rows (label, name or NULL, ns, extra) and adds each, divided by the label's
 * instances in this run and the side's runs, to the label's part of kind (a kernel's name
 * shortened; kind DIFF_PART_KERNEL rows whose column 3 is not 'kernel' are copies). */
static int add_query(struct explain *e, sqlite3 *db, const char *sql, enum diff_part_kind kind,
                     int side, const double *scale)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
        return fail(e, db);
    int step, rc = 0;
    char *short_name = NULL;
    while (rc == 0 && (step = sqlite3_step(q)) == SQLITE_ROW) {
        size_t label = (size_t)sqlite3_column_int64(q, 0);
        const char *name = (const char *)sqlite3_column_text(q, 1);
        enum diff_part_kind k = kind;
        if (kind == DIFF_PART_KERNEL && name) {
            const char *what = (const char *)sqlite3_column_text(q, 3);
            if (what && strcmp(what, "kernel")) {
                k = DIFF_PART_COPY;
            } else {
                free(short_name);
                if (!(short_name = malloc(strlen(name) + 1))) {
                    rc = -ENOMEM;
                    break;
                }
                name = kernels_name_short(name, short_name, strlen(name) + 1);
            }
        }
        if (label < e->count && scale[label] > 0)
            rc = add_part(&e->res->rows[e->rows[label]], k, name, side,
                          sqlite3_column_double(q, 2) * scale[label]);
    }
    free(short_name);
    if (rc == 0 && step != SQLITE_DONE)
        rc = fail(e, db);
    else if (rc < 0)
        snprintf(e->error, e->error_size, "out of memory");
    sqlite3_finalize(q);
    return rc;
}

/* Nested ranges are named as their rows are: by the run's series of that range. */
static int add_nested(struct explain *e, struct diff_run *run, int side, const double *scale)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(run->db,
                           "SELECT i.label, c.domain_id, ifnull(c.name_id, 0),"
                           " sum(c.end_ns - c.start_ns) FROM ranges c JOIN temp.diff_instances i"
                           " ON i.id = c.parent_id WHERE c.end_ns IS NOT NULL GROUP BY 1, 2, 3",
                           -1, &q, NULL) != SQLITE_OK)
        return fail(e, run->db);
    int step, rc = 0;
    while (rc == 0 && (step = sqlite3_step(q)) == SQLITE_ROW) {
        size_t label = (size_t)sqlite3_column_int64(q, 0);
        int64_t domain_id = sqlite3_column_int64(q, 1), name_id = sqlite3_column_int64(q, 2);
        for (size_t k = 0; k < run->count; k++) {
            const struct diff_series *s = &run->series[k];
            if (s->kind == DIFF_KIND_RANGE && s->domain_id == domain_id && s->name_id == name_id &&
                label < e->count && scale[label] > 0) {
                rc = add_part(&e->res->rows[e->rows[label]], DIFF_PART_RANGE, s->name, side,
                              sqlite3_column_double(q, 3) * scale[label]);
                break;
            }
        }
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = fail(e, run->db);
    else if (rc < 0)
        snprintf(e->error, e->error_size, "out of memory");
    sqlite3_finalize(q);
    return rc;
}

/* What one run's instances of the explained ranges contain, added to their parts. */
static int explain_run(struct explain *e, struct diff_run *run, int side, int side_runs)
{
    sqlite3 *db = run->db;
    double *scale = calloc(e->count, sizeof *scale); /* 1 / (instances x side's runs) */
    sqlite3_stmt *q = NULL;
    int rc = scale ? gather_instances(e, run) : -ENOMEM;
    if (rc == 0 && sqlite3_prepare_v2(db,
                                      "SELECT label, count(*) FROM temp.diff_instances"
                                      " GROUP BY label",
                                      -1, &q, NULL) != SQLITE_OK)
        rc = fail(e, db);
    while (rc == 0 && sqlite3_step(q) == SQLITE_ROW) {
        size_t label = (size_t)sqlite3_column_int64(q, 0);
        if (label < e->count) {
            const struct diff_row *row = &e->res->rows[e->rows[label]];
            int runs = side ? row->new.runs : row->base.runs;
            scale[label] = 1.0 / (sqlite3_column_double(q, 1) * (runs ? runs : side_runs));
        }
    }
    sqlite3_finalize(q);
    if (rc == 0)
        rc = add_query(e, db,
                       "SELECT c.label, o.name, sum(o.end_ns - o.start_ns), o.kind FROM gpu_ops o"
                       " JOIN temp.diff_launches c ON c.id = o.api_id GROUP BY 1, 2, 4",
                       DIFF_PART_KERNEL, side, scale);
    if (rc == 0)
        rc = add_nested(e, run, side, scale);
    if (rc == 0)
        rc = add_query(e, db,
                       "SELECT i.label, NULL, sum(min(s.end_ns, i.end_ns) - s.start_ns)"
                       " FROM temp.diff_instances i JOIN cuda_syncs s ON s.thread_id = i.thread_id"
                       " AND s.start_ns >= i.start_ns AND s.start_ns < i.end_ns GROUP BY 1",
                       DIFF_PART_SYNC, side, scale);
    /* host gaps: each instance's time less the union of its calls (sorted by start, a call
     * adds what it reaches past every earlier one's end: a driver call inside a runtime call
     * adds nothing) */
    if (rc == 0)
        rc = add_query(e, db,
                       "SELECT i.label, NULL, sum(i.end_ns - i.start_ns - ifnull(u.busy, 0))"
                       " FROM temp.diff_instances i LEFT JOIN (SELECT instance, sum(max(0, end_ns"
                       " - max(start_ns, ifnull(reach, start_ns)))) AS busy FROM (SELECT instance,"
                       " start_ns, end_ns, max(end_ns) OVER (PARTITION BY instance ORDER BY"
                       " start_ns, end_ns ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)"
                       " AS reach FROM temp.diff_calls) GROUP BY instance) u ON u.instance = i.id"
                       " GROUP BY 1",
                       DIFF_PART_HOST, side, scale);
    free(scale);
    return rc;
}

static int compare_parts(const void *a, const void *b)
{
    const struct diff_part *x = a, *y = b;
    double dx = fabs(x->new - x->base), dy = fabs(y->new - y->base);
    if (dx != dy)
        return dx < dy ? 1 : -1;
    if (x->kind != y->kind)
        return (int)x->kind - (int)y->kind;
    return strcmp(x->name ? x->name : "", y->name ? y->name : "");
}

/* The new runs' Tensor Core activity of a kernel, from its gpu metric row; -1: not recorded. */
static double tensor_share(const struct diff_result *res, const char *kernel)
{
    for (size_t i = 0; i < res->count; i++) {
        const struct diff_row *r = &res->rows[i];
        if (r->kind == DIFF_KIND_METRIC && !strcmp(r->scope, "tensor_active") &&
            !strcmp(r->name, kernel))
            return r->new.count ? r->new.median : -1;
    }
    return -1;
}

/* The row's line: "+2.100 ms (+19.0 %, 95 % CI +17.0…+21.0 %): k1 gone (was 1.2 ms), ..." */
static char *explanation_line(const struct diff_row *row)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    if (!out)
        return NULL;
    char change[32], low[32], high[32];
    diff_format_change(change, sizeof change, row->change, DIFF_UNIT_NS);
    fprintf(out, "%s (", change);
    if (!isnan(row->percent))
        fprintf(out, "%+.1f %%, ", row->percent);
    if (!isnan(row->percent_low)) {
        fprintf(out, "95 %% CI %+.1f…%+.1f %%): ", row->percent_low, row->percent_high);
    } else {
        diff_format_change(low, sizeof low, row->change_low, DIFF_UNIT_NS);
        diff_format_change(high, sizeof high, row->change_high, DIFF_UNIT_NS);
        fprintf(out, "95 %% CI %s…%s): ", low, high);
    }
    size_t shown = 0;
    double whole = fabs(row->change);
    for (size_t i = 0; i < row->part_count && shown < DIFF_PART_MAX_SHOWN; i++) {
        const struct diff_part *p = &row->parts[i];
        double d = p->new - p->base;
        int work = p->kind == DIFF_PART_KERNEL || p->kind == DIFF_PART_COPY;
        int gone = work && p->new == 0, added = work && p->base == 0;
        if (!gone && !added && fabs(d) < DIFF_PART_MIN_SHARE * whole)
            continue;
        fputs(shown++ ? ", " : "", out);
        if (p->kind == DIFF_PART_SYNC || p->kind == DIFF_PART_HOST)
            fputs(diff_part_names[p->kind], out);
        else
            fprintf(out, "%s%s", p->kind == DIFF_PART_RANGE ? "nested " : "", p->name);
        char value[32];
        if (gone) {
            diff_format_value(value, sizeof value, p->base, DIFF_UNIT_NS);
            fprintf(out, " gone (was %s)", value);
        } else if (added) {
            diff_format_value(value, sizeof value, p->new, DIFF_UNIT_NS);
            fprintf(out, " new, %s", value);
        } else {
            diff_format_change(value, sizeof value, d, DIFF_UNIT_NS);
            fprintf(out, " %s", value);
        }
        if (p->tensor >= 0)
            fprintf(out, " (Tensor Cores %.0f %%)", p->tensor);
    }
    if (!shown)
        fputs("nothing inside it changed by more than 2 % of it", out);
    if (fclose(out) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

int diff_explain(struct diff_run *const *base, int base_count, struct diff_run *const *new,
                 int new_count, struct diff_result *res, char *error, size_t size)
{
    struct explain e = {.res = res, .error = error, .error_size = size};
    if (!(e.rows = malloc((res->count ? res->count : 1) * sizeof *e.rows))) {
        snprintf(error, size, "out of memory");
        return -ENOMEM;
    }
    for (size_t i = 0; i < res->count; i++)
        if (res->rows[i].kind == DIFF_KIND_RANGE &&
            (res->rows[i].verdict == DIFF_SLOWER || res->rows[i].verdict == DIFF_FASTER))
            e.rows[e.count++] = i;
    int rc = 0;
    for (int i = 0; rc == 0 && e.count && i < base_count; i++)
        rc = explain_run(&e, base[i], 0, base_count);
    for (int i = 0; rc == 0 && e.count && i < new_count; i++)
        rc = explain_run(&e, new[i], 1, new_count);
    for (size_t k = 0; rc == 0 && k < e.count; k++) {
        struct diff_row *row = &res->rows[e.rows[k]];
        for (size_t i = 0; i < row->part_count; i++)
            if (row->parts[i].kind == DIFF_PART_KERNEL)
                row->parts[i].tensor = tensor_share(res, row->parts[i].name);
        if (row->part_count)
            qsort(row->parts, row->part_count, sizeof *row->parts, compare_parts);
        if (!(row->explanation = explanation_line(row))) {
            snprintf(error, size, "out of memory");
            rc = -ENOMEM;
        }
    }
    free(e.rows);
    return rc;
}
