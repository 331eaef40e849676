/* The CPU samples' model (cpu_profile.h): callsites, frames and stacks loaded once, frames
 * classified as a library's or the program's own by a table of module and name patterns, and
 * samples counted per leaf callsite, thread by thread, inside sorted time windows. */
#include "model/cpu_profile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define CPU_MAX_DEPTH 256 /* deeper callsites are damage: walks stop (as cpu_sample_sum) */

int cpu_profile_has_samples(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    int has = 0;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM cpu_samples LIMIT 1", -1, &st, NULL) == SQLITE_OK)
        has = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return has;
}

/* How a frame is classified: the first row that matches decides; no match is the program's. */
enum cpu_match_field { MATCH_MODULE, MATCH_NAME_OR_MODULE };
enum cpu_match_how { MATCH_PREFIX, MATCH_CONTAINS, MATCH_SUFFIX };
static const struct {
    enum cpu_match_field field;
    enum cpu_match_how how;
    const char *text;
    unsigned char library;
} library_patterns[] = {
    /* Python files: installed packages and the standard library are libraries */
    {MATCH_NAME_OR_MODULE, MATCH_CONTAINS, "site-packages", 1},
    {MATCH_NAME_OR_MODULE, MATCH_CONTAINS, "dist-packages", 1},
    {MATCH_NAME_OR_MODULE, MATCH_CONTAINS, "/lib/python", 1},
    {MATCH_NAME_OR_MODULE, MATCH_PREFIX, "<frozen", 1},
    {MATCH_MODULE, MATCH_SUFFIX, ".py", 0},    /* any other Python file: the program's */
    {MATCH_MODULE, MATCH_PREFIX, "python", 1}, /* the interpreter's executable */
    {MATCH_MODULE, MATCH_CONTAINS, ".so", 1},  /* shared objects, extension modules */
    {MATCH_MODULE, MATCH_PREFIX, "ld-", 1},    /* the dynamic loader */
    {MATCH_MODULE, MATCH_PREFIX, "[vdso]", 1},
    {MATCH_MODULE, MATCH_PREFIX, "[anon]", 1},
    {MATCH_MODULE, MATCH_PREFIX, "[unknown]", 1},
};

static int matches(const char *s, enum cpu_match_how how, const char *text)
{
    size_t n = strlen(s), t = strlen(text);
    switch (how) {
    case MATCH_PREFIX:
        return !strncmp(s, text, t);
    case MATCH_CONTAINS:
        return strstr(s, text) != NULL;
    case MATCH_SUFFIX:
        return n >= t && !strcmp(s + n - t, text);
    }
    return 0;
}

int cpu_frame_is_library(const char *name, const char *module)
{
    if (!module)
        return 1;
    for (size_t i = 0; i < sizeof library_patterns / sizeof library_patterns[0]; i++) {
        int hit = matches(module, library_patterns[i].how, library_patterns[i].text);
        if (!hit && library_patterns[i].field == MATCH_NAME_OR_MODULE && name)
            hit = matches(name, library_patterns[i].how, library_patterns[i].text);
        if (hit)
            return library_patterns[i].library;
    }
    return 0;
}

static int64_t max_id(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static int load_frames(sqlite3 *db, struct cpu_profile *p)
{
    int64_t n = max_id(db, "SELECT ifnull(max(id), 0) FROM cpu_frames");
    if (n < 0 || n > (1 << 28))
        return n < 0 ? -EIO : -EBADMSG;
    p->frames = (size_t)n + 1;
    p->name = calloc(p->frames, sizeof *p->name);
    p->module = calloc(p->frames, sizeof *p->module);
    p->file = calloc(p->frames, sizeof *p->file);
    p->library = calloc(p->frames, 1);
    sqlite3_stmt *st = NULL;
    if (!p->name || !p->module || !p->file || !p->library)
        return -ENOMEM;
    if (sqlite3_prepare_v2(db, "SELECT id, name, module, file FROM cpu_frames", -1, &st, NULL) !=
        SQLITE_OK)
        return -EIO;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        const char *name = (const char *)sqlite3_column_text(st, 1);
        const char *module = (const char *)sqlite3_column_text(st, 2);
        const char *file = (const char *)sqlite3_column_text(st, 3);
        if (id <= 0 || id > n)
            continue;
        p->name[id] = strdup(name ? name : "");
        p->module[id] = module ? strdup(module) : NULL;
        p->file[id] = file ? strdup(file) : NULL;
        if (!p->name[id] || (module && !p->module[id]) || (file && !p->file[id]))
            break;
        /* a Python function by its file's path: site-packages or the program's own */
        p->library[id] = (unsigned char)cpu_frame_is_library(name, file ? file : module);
    }
    if (sqlite3_finalize(st) != SQLITE_OK || step != SQLITE_DONE)
        return step == SQLITE_ROW ? -ENOMEM : -EIO; /* a row left: a copy failed */
    return 0;
}

static const struct cpu_profile *sort_profile; /* qsort's context */

static int by_depth(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    int32_t dx = sort_profile->depth[x], dy = sort_profile->depth[y];
    return dx != dy ? (dx > dy) - (dx < dy) : (x > y) - (x < y);
}

static int load_callsites(sqlite3 *db, struct cpu_profile *p)
{
    int64_t n = max_id(db, "SELECT ifnull(max(id), 0) FROM cpu_callsites");
    if (n < 0 || n > (1 << 28))
        return n < 0 ? -EIO : -EBADMSG;
    p->callsites = (size_t)n + 1;
    p->parent = calloc(p->callsites, sizeof *p->parent);
    p->frame = calloc(p->callsites, sizeof *p->frame);
    p->depth = calloc(p->callsites, sizeof *p->depth);
    p->by_depth = calloc(p->callsites, sizeof *p->by_depth);
    sqlite3_stmt *st = NULL;
    if (!p->parent || !p->frame || !p->depth || !p->by_depth)
        return -ENOMEM;
    if (sqlite3_prepare_v2(db, "SELECT id, ifnull(parent_id, 0), frame_id, depth FROM cpu_callsites",
                           -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0), parent = sqlite3_column_int64(st, 1),
                frame = sqlite3_column_int64(st, 2);
        if (id <= 0 || id > n)
            continue;
        /* a damaged row pointing out of the tables is cut: the walk stops there */
        p->parent[id] = parent > 0 && parent <= n && parent != id ? parent : 0;
        p->frame[id] = frame > 0 && (size_t)frame < p->frames ? frame : 0;
        p->depth[id] = (int32_t)sqlite3_column_int(st, 3);
    }
    if (sqlite3_finalize(st) != SQLITE_OK || step != SQLITE_DONE)
        return -EIO;
    for (size_t i = 0; i < p->callsites; i++)
        p->by_depth[i] = (int64_t)i;
    sort_profile = p;
    qsort(p->by_depth, p->callsites, sizeof *p->by_depth, by_depth);
    return 0;
}

static int load_stacks(sqlite3 *db, struct cpu_profile *p)
{
    int64_t n = max_id(db, "SELECT ifnull(max(id), 0) FROM cpu_stacks");
    if (n < 0 || n > (1 << 28))
        return n < 0 ? -EIO : -EBADMSG;
    p->stacks = (size_t)n + 1;
    p->stack_callsite = calloc(p->stacks, sizeof *p->stack_callsite);
    sqlite3_stmt *st = NULL;
    if (!p->stack_callsite)
        return -ENOMEM;
    if (sqlite3_prepare_v2(db, "SELECT id, ifnull(callsite_id, 0) FROM cpu_stacks", -1, &st, NULL) !=
        SQLITE_OK)
        return -EIO;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0), c = sqlite3_column_int64(st, 1);
        if (id > 0 && id <= n)
            p->stack_callsite[id] = c > 0 && (size_t)c < p->callsites ? c : 0;
    }
    return sqlite3_finalize(st) == SQLITE_OK && step == SQLITE_DONE ? 0 : -EIO;
}

int cpu_profile_load(sqlite3 *db, struct cpu_profile *p)
{
    memset(p, 0, sizeof *p);
    int rc = load_frames(db, p);
    if (rc == 0)
        rc = load_callsites(db, p);
    if (rc == 0)
        rc = load_stacks(db, p);
    if (rc < 0)
        cpu_profile_release(p);
    return rc;
}

void cpu_profile_release(struct cpu_profile *p)
{
    for (size_t i = 0; i < p->frames; i++) {
        if (p->name)
            free(p->name[i]);
        if (p->module)
            free(p->module[i]);
        if (p->file)
            free(p->file[i]);
    }
    free(p->name);
    free(p->module);
    free(p->file);
    free(p->library);
    free(p->parent);
    free(p->frame);
    free(p->depth);
    free(p->by_depth);
    free(p->stack_callsite);
    memset(p, 0, sizeof *p);
}

int64_t cpu_profile_user_frame(const struct cpu_profile *p, int64_t callsite)
{
    int steps = 0;
    for (int64_t c = callsite; c > 0 && (size_t)c < p->callsites && steps < CPU_MAX_DEPTH;
         c = p->parent[c], steps++)
        if (p->frame[c] && !p->library[p->frame[c]])
            return p->frame[c];
    return 0;
}

int64_t cpu_profile_count(sqlite3 *db, const struct cpu_profile *p, int64_t thread,
                          const struct cpu_windows *windows, int64_t *counts)
{
    if (windows && windows->count == 0)
        return 0;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT ts_ns, ifnull(stack_id, 0) FROM cpu_samples WHERE thread_id = ?1"
                           " AND ts_ns >= ?2 AND ts_ns < ?3 ORDER BY ts_ns",
                           -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(st, 1, thread);
    sqlite3_bind_int64(st, 2, windows ? windows->start[0] : INT64_MIN);
    sqlite3_bind_int64(st, 3, windows ? windows->end[windows->count - 1] : INT64_MAX);
    int64_t n = 0;
    size_t w = 0;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t ts = sqlite3_column_int64(st, 0), stack = sqlite3_column_int64(st, 1);
        if (windows) { /* samples come in time order: the windows are walked once */
            while (w < windows->count && windows->end[w] <= ts)
                w++;
            if (w == windows->count)
                break;
            if (ts < windows->start[w])
                continue;
        }
        counts[stack > 0 && (size_t)stack < p->stacks ? p->stack_callsite[stack] : 0]++;
        n++;
    }
    int rc = sqlite3_finalize(st);
    return (step == SQLITE_DONE || step == SQLITE_ROW) && rc == SQLITE_OK ? n : -EIO;
}

void cpu_profile_totals(const struct cpu_profile *p, int64_t *counts)
{
    for (size_t i = p->callsites; i-- > 1;) { /* the deepest first: callees before callers */
        int64_t c = p->by_depth[i];
        if (c > 0 && p->parent[c])
            counts[p->parent[c]] += counts[c];
    }
}
