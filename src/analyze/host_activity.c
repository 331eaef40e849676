/* What the host did in a finding's windows (host_activity.h): the CPU samples of the threads
 * concerned, counted per leaf callsite (model/cpu_profile.h), summed into the top functions
 * (leaf, and the nearest frame of the program's own above it), the blocking calls of -t osrt
 * where the database has them, the GIL waits of Python threads (model/gil_waits.h) where it
 * has them, and the advice of the first pattern of a table that covers enough of the samples,
 * of the blocked time or of the time waited for the GIL. docs/analyze.md, "What the host did". */
#include "analyze/host_activity.h"
#include "analyze/findings.h"
#include "analyze/thresholds.h"
#include "common/index_map.h"
#include "common/u64_map.h"
#include "model/gil_waits.h"
#include "model/thread_states.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Patterns of host activity, first match wins (the specific before the generic). Needles are
 * '|'-separated: "=name" is a function's exact name (and a blocking call's), any other text a
 * part of a frame's function or module name (for a Python function, of its file's path: its
 * name is only its qualified name in the file, as cpu_python.c reads it). HOST_LEAF patterns
 * look at the running function only (the interpreter is on every Python stack: only its own
 * time is overhead); HOST_ANY_FRAME ones at every frame of the stack (a compiler's frames are
 * callers of whatever runs); the GIL's (no needles) at the time the threads waited for it. */
enum host_match {
    HOST_ANY_FRAME, /* a needle in any frame of the stack */
    HOST_LEAF,      /* a needle in the running function */
    HOST_GIL,       /* no needle: the time the threads waited for the GIL */
};
static const struct host_pattern {
    const char *what, *needles;
    enum host_match match;
    const char *advice;
} host_patterns[] = {
    {"JIT compilation of numba kernels",
     "numba/core/compiler|numba/core/typed_passes|llvmlite|Dispatcher.compile|"
     "_compile_for_args",
     HOST_ANY_FRAME,
     "warm up (call each kernel once) before the timed region, or cache the compilation "
     "(@cuda.jit(cache=True))"},
    {"a synchronization point",
     "=cudaStreamSynchronize|=cudaDeviceSynchronize|=cudaEventSynchronize|=cuCtxSynchronize|"
     "=cuStreamSynchronize|=cuEventSynchronize",
     HOST_ANY_FRAME,
     "the host waits for the GPU here (.item(), .cpu(), printing a tensor synchronize): move "
     "the synchronization out of the loop or wait on an event where the data is needed"},
    {"tokenization", "tokenizers|tokenizer|sentencepiece", HOST_ANY_FRAME,
     "tokenize ahead of the GPU work (pre-tokenized data, or in DataLoader workers)"},
    {"data loading (reads)",
     "=read|=pread64|=readv|=preadv|=recv|=recvfrom|=recvmsg|=__libc_read|=__libc_recv|"
     "=__read_nocancel|libjpeg|libturbojpeg|libpng|_imaging",
     HOST_ANY_FRAME,
     "load and decode input in more workers (DataLoader num_workers), with pinned memory and "
     "prefetching, so the next batch is ready before the GPU needs it"},
    {"threads contend for the GIL", "", HOST_GIL,
     "another Python thread holds the GIL while this one should launch work: move CPU-bound "
     "Python work out of the process (multiprocessing, DataLoader workers) or into code that "
     "releases the GIL (NumPy, PyTorch ops, C extensions)"},
    {"framework dispatch between small kernels", "c10::|at::_ops::|torch::autograd|libtorch|libc10",
     HOST_LEAF,
     "launch fewer, larger kernels: capture the step in CUDA graphs or compile it "
     "(torch.compile(mode=\"reduce-overhead\"))"},
    {"Python interpreter overhead between kernels", "_PyEval_|PyObject_|_PyObject_|libpython",
     HOST_LEAF,
     "move the per-kernel Python work out of the loop: CUDA graphs, torch.compile, or fewer, "
     "larger kernels"},
};
#define HOST_PATTERNS (sizeof host_patterns / sizeof host_patterns[0])

/* The session's CPU samples as the rules need them, loaded once (ctx->cpu). */
struct analyze_cpu {
    int asked;    /* cpu_sampling has rows */
    int loaded;   /* profile and masks below are loaded */
    int has_osrt; /* -t osrt ran in a process (osrt has rows) */
    int has_gil;  /* the Python sampler saw GIL waits (cpu_gil_waits has rows) */
    int has_states; /* the sampled threads' states were recorded (cpu_thread_states has rows) */
    struct cpu_profile profile;
    uint32_t *frame_bits; /* by frame: the patterns its own name or module matches */
    uint32_t *stack_bits; /* by callsite: the patterns any frame from it up matches */
};

/* Whether text (a function or module name, or a call's name) holds one of the needles. */
static int needle_match(const char *needles, const char *name, const char *module)
{
    for (const char *p = needles; *p;) {
        size_t len = strcspn(p, "|");
        char needle[64];
        if (len < sizeof needle) {
            memcpy(needle, p, len);
            needle[len] = '\0';
            if (needle[0] == '=') {
                if (name && !strcmp(name, needle + 1))
                    return 1;
            } else if ((name && strstr(name, needle)) || (module && strstr(module, needle))) {
                return 1;
            }
        }
        p += len;
        if (*p == '|')
            p++;
    }
    return 0;
}

static uint32_t pattern_bits(const char *name, const char *module)
{
    uint32_t bits = 0;
    for (size_t i = 0; i < HOST_PATTERNS; i++)
        if (needle_match(host_patterns[i].needles, name, module))
            bits |= 1u << i;
    return bits;
}

static struct analyze_cpu *cpu_state(struct analyze_ctx *ctx)
{
    if (ctx->cpu)
        return ctx->cpu;
    struct analyze_cpu *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(ctx->error, sizeof ctx->error, "host activity: out of memory");
        return NULL;
    }
    c->asked = analyze_query_int(ctx, "SELECT 1 FROM cpu_sampling LIMIT 1", 0) == 1;
    c->has_osrt = analyze_query_int(ctx, "SELECT 1 FROM osrt LIMIT 1", 0) == 1;
    c->has_gil = gil_waits_present(ctx->db);
    c->has_states = thread_states_present(ctx->db);
    ctx->cpu = c;
    return c;
}

static int cpu_load(struct analyze_ctx *ctx, struct analyze_cpu *c)
{
    if (c->loaded)
        return 0;
    struct cpu_profile *p = &c->profile;
    int rc = cpu_profile_load(ctx->db, p);
    if (rc < 0) {
        snprintf(ctx->error, sizeof ctx->error, "host activity: cannot read the CPU samples: %s",
                 sqlite3_errmsg(ctx->db));
        return rc;
    }
    c->frame_bits = calloc(p->frames, sizeof *c->frame_bits);
    c->stack_bits = calloc(p->callsites, sizeof *c->stack_bits);
    if (!c->frame_bits || !c->stack_bits) {
        snprintf(ctx->error, sizeof ctx->error, "host activity: out of memory");
        return -ENOMEM;
    }
    for (size_t f = 1; f < p->frames; f++)
        c->frame_bits[f] = pattern_bits(p->name[f], p->file[f] ? p->file[f] : p->module[f]);
    for (size_t i = 0; i < p->callsites; i++) { /* callers first: a callsite adds its frame */
        int64_t cs = p->by_depth[i];
        if (cs > 0)
            c->stack_bits[cs] = c->frame_bits[p->frame[cs]] | c->stack_bits[p->parent[cs]];
    }
    c->loaded = 1;
    return 0;
}

int analyze_host_asked(struct analyze_ctx *ctx)
{
    struct analyze_cpu *c = cpu_state(ctx);
    return c && c->asked;
}

void analyze_cpu_free(struct analyze_cpu *cpu)
{
    if (!cpu)
        return;
    cpu_profile_release(&cpu->profile);
    free(cpu->frame_bits);
    free(cpu->stack_bits);
    free(cpu);
}

void analyze_host_free(struct analyze_host *h)
{
    if (!h)
        return;
    free(h->summary);
    free(h->advice);
    for (int i = 0; i < h->top_count; i++) {
        free(h->top[i].function);
        free(h->top[i].module);
        free(h->top[i].user_function);
        free(h->top[i].user_module);
    }
    for (int i = 0; i < h->blocking_count; i++) {
        free(h->blocking[i].name);
        free(h->blocking[i].caller);
    }
    for (int i = 0; i < h->gil_top_count; i++)
        free(h->gil_top[i].function);
    free(h);
}

/* ---- the threads in scope and their processes' sampling ----------------------------------- */

struct scope_threads {
    int64_t *ids, *period; /* threads.id, their process's sampling period (0: not sampled) */
    size_t n, cap;
    char off[256]; /* why a process in scope was not sampled (the first one) */
    int sampled_processes;
};

static int add_thread(struct scope_threads *t, int64_t id, int64_t period)
{
    if (index_reserve((void **)&t->ids, &t->cap, t->n, sizeof *t->ids) < 0)
        return -ENOMEM;
    int64_t *grown = realloc(t->period, t->cap * sizeof *grown); /* as long as ids */
    if (!grown)
        return -ENOMEM;
    t->period = grown;
    t->ids[t->n] = id;
    t->period[t->n++] = period;
    return 0;
}

/* The threads of the scope with their process's period; a process whose sampling was off
 * (or never started: no row) is noted once in t->off. A process's threads are those that
 * called CUDA, where any did: what delayed the next launch is what the launching thread did
 * (other threads' samples, e.g. a BLAS pool spinning, took 61 % of the Numba tutorial's
 * host wait on an H200 and hid its main thread's work). */
static int load_threads(struct analyze_ctx *ctx, const struct analyze_host_scope *s,
                        struct scope_threads *t)
{
    sqlite3_stmt *st =
        analyze_prepare(ctx, "host activity",
                        "SELECT th.id, p.pid, c.status, c.reason, c.period_ns FROM threads th"
                        " JOIN processes p ON p.id = th.process_id"
                        " LEFT JOIN cpu_sampling c ON c.process_id = p.id"
                        " WHERE (?1 = 1 AND th.process_id = ?2 AND"
                        " (EXISTS (SELECT 1 FROM cuda_api a WHERE a.thread_id = th.id) OR"
                        "  NOT EXISTS (SELECT 1 FROM cuda_api a WHERE a.process_id = ?2)))"
                        " OR (?1 = 0 AND th.id = ?2)");
    if (!st)
        return -EIO;
    int by_thread = s->thread_count > 0;
    size_t n = by_thread ? s->thread_count : s->process_count;
    int64_t last_off_pid = -1, last_on_pid = -1;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        sqlite3_reset(st);
        sqlite3_bind_int(st, 1, !by_thread);
        sqlite3_bind_int64(st, 2, by_thread ? s->thread_ids[i] : s->process_ids[i]);
        while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
            int64_t pid = sqlite3_column_int64(st, 1);
            const char *status = (const char *)sqlite3_column_text(st, 2);
            int64_t period = sqlite3_column_int64(st, 4);
            int on = status && !strcmp(status, "on") && period > 0;
            if (on && pid != last_on_pid) {
                t->sampled_processes++;
                last_on_pid = pid;
            }
            if (!on && !t->off[0] && pid != last_off_pid) {
                const char *reason = (const char *)sqlite3_column_text(st, 3);
                snprintf(t->off, sizeof t->off, "pid %lld: %s%s%s", (long long)pid,
                         status ? status : "not recorded (the agent did not sample it)",
                         reason ? ": " : "", reason ? reason : "");
                last_off_pid = pid;
            }
            rc = add_thread(t, sqlite3_column_int64(st, 0), on ? period : 0);
        }
    }
    sqlite3_finalize(st);
    if (rc < 0)
        snprintf(ctx->error, sizeof ctx->error, "host activity: out of memory");
    return rc;
}

/* ---- top functions ------------------------------------------------------------------------- */

struct fn_row {
    int64_t leaf, user, samples; /* frames (0: no user-space frame / none) */
};

static int by_samples(const void *a, const void *b)
{
    const struct fn_row *x = a, *y = b;
    if (x->samples != y->samples)
        return x->samples < y->samples ? 1 : -1;
    return x->leaf != y->leaf ? (x->leaf > y->leaf) - (x->leaf < y->leaf)
                              : (x->user > y->user) - (x->user < y->user);
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* The top (leaf, user frame) pairs of counts into h->top. */
static int top_functions(const struct cpu_profile *p, const int64_t *counts, struct analyze_host *h)
{
    struct u64_map rows_by_key = {0};
    struct fn_row *rows = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    for (size_t c = 0; rc == 0 && c < p->callsites; c++) {
        if (!counts[c])
            continue;
        int64_t leaf = c ? p->frame[c] : 0, user = c ? cpu_profile_user_frame(p, (int64_t)c) : 0;
        if (user == leaf)
            user = 0;
        uint64_t key = (uint64_t)leaf << 32 | (uint64_t)user;
        uint64_t *known = u64_map_find(&rows_by_key, key + 1);
        if (known) {
            rows[*known].samples += counts[c];
            continue;
        }
        if (index_reserve((void **)&rows, &cap, n, sizeof *rows) < 0 ||
            u64_map_put(&rows_by_key, key + 1, n) < 0) {
            rc = -ENOMEM;
            break;
        }
        rows[n++] = (struct fn_row){leaf, user, counts[c]};
    }
    if (rc == 0 && n) { /* none: a thread off the CPU the whole windows (rows NULL) */
        qsort(rows, n, sizeof *rows, by_samples);
        for (size_t i = 0; i < n && h->top_count < ANALYZE_HOST_TOP; i++) {
            struct analyze_host_function *t = &h->top[h->top_count++];
            int64_t leaf = rows[i].leaf, user = rows[i].user;
            t->function = strdup(leaf ? p->name[leaf] : "[no user-space frame]");
            t->module = leaf ? dup_or_null(p->module[leaf]) : NULL;
            t->user_function = user ? strdup(p->name[user]) : NULL;
            t->user_module = user ? dup_or_null(p->module[user]) : NULL;
            t->samples = rows[i].samples;
        }
    }
    u64_map_release(&rows_by_key);
    free(rows);
    return rc;
}

/* ---- blocking calls (-t osrt): read only where it ran ----------------------------------------- */

/* osrt_calls (docs/schema.md): one row per blocking libc call at least the threshold long,
 * with its thread (threads.id), its name (strings.id), its start and end on the session
 * clock, and for a long one who made it (backtrace_id, strings.id). */
static const char osrt_sql[] =
    "SELECT o.start_ns, o.end_ns, ifnull(n.value, '?'), o.backtrace_id FROM osrt_calls o"
    " LEFT JOIN strings n ON n.id = o.name_id"
    " WHERE o.thread_id = ?1 AND o.end_ns > ?2 AND o.start_ns < ?3 ORDER BY o.start_ns";

/* Backtraces told apart per name; a call of another one still counts in the name's time. */
#define MAX_CALL_BACKTRACES 8
/* Frames of the top backtrace named in the summary: the caller and its callers. */
#define CALLER_FRAMES 3

struct call_sum {
    char name[64];
    int64_t calls, ns;
    struct {
        int64_t id, ns; /* strings.id of a backtrace, its calls' time */
    } backtraces[MAX_CALL_BACKTRACES];
    int nbacktraces;
};
#define MAX_CALL_NAMES 64

static void add_backtrace(struct call_sum *c, int64_t id, int64_t ns)
{
    int k = 0;
    while (k < c->nbacktraces && c->backtraces[k].id != id)
        k++;
    if (k == c->nbacktraces && k < MAX_CALL_BACKTRACES) {
        c->backtraces[k].id = id;
        c->backtraces[k].ns = 0;
        c->nbacktraces++;
    }
    if (k < c->nbacktraces)
        c->backtraces[k].ns += ns;
}

/* The sum's top backtrace into c (its first CALLER_FRAMES frames, joined by "<-"). */
static void name_caller(struct analyze_ctx *ctx, const struct call_sum *sum,
                        struct analyze_host_call *c)
{
    int top = -1;
    for (int k = 0; k < sum->nbacktraces; k++)
        if (top < 0 || sum->backtraces[k].ns > sum->backtraces[top].ns)
            top = k;
    if (top < 0)
        return;
    sqlite3_stmt *st = analyze_prepare(ctx, "host activity", "SELECT value FROM strings WHERE id = ?");
    if (!st)
        return;
    sqlite3_bind_int64(st, 1, sum->backtraces[top].id);
    const char *text = sqlite3_step(st) == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0)
                                                       : NULL;
    if (text) {
        const char *end = text;
        for (int frames = 0; end && frames < CALLER_FRAMES; frames++)
            end = strstr(end + (frames ? 2 : 0), "<-");
        c->caller = end ? strndup(text, (size_t)(end - text)) : strdup(text);
        c->caller_ns = sum->backtraces[top].ns;
    }
    sqlite3_finalize(st);
}

static int by_call_ns(const void *a, const void *b)
{
    const struct call_sum *x = a, *y = b;
    return x->ns != y->ns ? (x->ns < y->ns ? 1 : -1) : strcmp(x->name, y->name);
}

/* Sums the blocking calls of the threads inside the windows into h->blocking; *pattern_ns
 * receives, per pattern, the blocked time of the calls it names. */
static int blocking_calls(struct analyze_ctx *ctx, const struct scope_threads *t,
                          const struct cpu_windows *w, struct analyze_host *h,
                          int64_t pattern_ns[HOST_PATTERNS])
{
    sqlite3_stmt *st = analyze_prepare(ctx, "host activity", osrt_sql);
    if (!st)
        return -EIO;
    struct call_sum sums[MAX_CALL_NAMES];
    int nsums = 0;
    for (size_t i = 0; i < t->n; i++) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, t->ids[i]);
        sqlite3_bind_int64(st, 2, w->start[0]);
        sqlite3_bind_int64(st, 3, w->end[w->count - 1]);
        while (sqlite3_step(st) == SQLITE_ROW) {
            int64_t ns =
                gil_overlap(w, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1));
            const char *name = (const char *)sqlite3_column_text(st, 2);
            if (ns <= 0)
                continue;
            int k = 0;
            while (k < nsums && strcmp(sums[k].name, name))
                k++;
            if (k == nsums && nsums < MAX_CALL_NAMES) { /* more names: counted in the total */
                snprintf(sums[k].name, sizeof sums[k].name, "%s", name);
                sums[k].calls = sums[k].ns = 0;
                sums[k].nbacktraces = 0;
                nsums++;
            }
            if (k < nsums) {
                sums[k].calls++;
                sums[k].ns += ns;
                if (sqlite3_column_type(st, 3) != SQLITE_NULL)
                    add_backtrace(&sums[k], sqlite3_column_int64(st, 3), ns);
            }
            h->blocked_ns += ns;
            for (size_t p = 0; p < HOST_PATTERNS; p++)
                if (needle_match(host_patterns[p].needles, name, NULL))
                    pattern_ns[p] += ns;
        }
    }
    sqlite3_finalize(st);
    qsort(sums, (size_t)nsums, sizeof *sums, by_call_ns);
    for (int k = 0; k < nsums && h->blocking_count < ANALYZE_HOST_TOP; k++) {
        struct analyze_host_call *c = &h->blocking[h->blocking_count++];
        c->name = strdup(sums[k].name);
        c->calls = sums[k].calls;
        c->ns = sums[k].ns;
        name_caller(ctx, &sums[k], c);
    }
    return 0;
}

/* ---- GIL waits: read only where the Python sampler saw some -------------------------------- */

/* Sums the threads' GIL waits inside the windows into h (their time, count and the Python
 * functions they waited in). */
static int gil_waits(struct analyze_ctx *ctx, const struct cpu_profile *p,
                     const struct scope_threads *t, const struct cpu_windows *w,
                     struct analyze_host *h)
{
    struct gil_wait_sum sum = {0};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < t->n; i++)
        rc = gil_waits_add(ctx->db, t->ids[i], w, &sum);
    if (rc < 0) {
        snprintf(ctx->error, sizeof ctx->error, "host activity: %s",
                 rc == -ENOMEM ? "out of memory" : sqlite3_errmsg(ctx->db));
        gil_wait_sum_release(&sum);
        return rc;
    }
    gil_wait_sum_sort(&sum);
    h->gil_wait_ns = sum.ns;
    h->gil_waits = sum.waits;
    for (size_t i = 0; i < sum.nfunctions && h->gil_top_count < ANALYZE_HOST_GIL_TOP; i++) {
        int64_t frame = sum.functions[i].frame_id;
        int known = frame > 0 && (size_t)frame < p->frames;
        struct analyze_host_gil_function *g = &h->gil_top[h->gil_top_count++];
        g->function = strdup(known ? p->name[frame] : "[no Python stack]");
        g->ns = sum.functions[i].ns;
    }
    gil_wait_sum_release(&sum);
    return 0;
}

/* ---- thread states: read only where the kernel gave context switches ------------------------ */

/* The sampled threads' time in the windows (inside each one's sampled life) and how much of it
 * they were blocked and preempted (model/thread_states.h): running is the rest. */
static int thread_states(struct analyze_ctx *ctx, const struct scope_threads *t,
                         const struct cpu_windows *w, struct analyze_host *h)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < t->n; i++) {
        struct thread_state_sum sum = {0};
        int64_t start, end;
        if (!t->period[i])
            continue;
        if ((rc = thread_states_life(ctx->db, t->ids[i], &start, &end)) < 0 ||
            (rc = thread_states_add(ctx->db, t->ids[i], w, &sum)) < 0)
            break;
        if (sum.switches == 0) /* no state inside: not known to have run the whole time */
            continue;
        h->state_threads++;
        h->state_ns += (double)gil_overlap(w, start, end);
        h->state_blocked_ns += sum.blocked_ns;
        h->state_preempted_ns += sum.preempted_ns;
    }
    if (rc < 0)
        snprintf(ctx->error, sizeof ctx->error, "host activity: %s", sqlite3_errmsg(ctx->db));
    return rc;
}

/* ---- the summary, the pattern and its advice ---------------------------------------------- */

static void append(char **text, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void append(char **text, const char *fmt, ...)
{
    char *more = NULL;
    va_list ap;
    va_start(ap, fmt);
    int ok = vasprintf(&more, fmt, ap) >= 0;
    va_end(ap);
    if (!ok || !*text) {
        free(more);
        return;
    }
    char *joined = NULL;
    if (asprintf(&joined, "%s%s", *text, more) < 0)
        joined = NULL;
    free(*text);
    free(more);
    *text = joined;
}

static void write_summary(const struct analyze_host_scope *s, struct analyze_host *h)
{
    char window[32], cpu[32], blocked[32];
    h->summary = NULL;
    if (asprintf(&h->summary, "CPU samples in the %s (%s): %lld samples, %s on CPU (%.1f %%)",
                 s->what, analyze_fmt_ns(window, sizeof window, h->window_ns),
                 (long long)h->samples, analyze_fmt_ns(cpu, sizeof cpu, h->on_cpu_ns),
                 h->window_ns > 0 ? 100.0 * h->on_cpu_ns / h->window_ns : 0) < 0)
        h->summary = NULL;
    for (int i = 0; i < h->top_count; i++) {
        const struct analyze_host_function *f = &h->top[i];
        append(&h->summary, "%s %s (%s)", i ? "," : "; top:", f->function,
               f->module ? f->module : "?");
        if (f->user_function)
            append(&h->summary, " in %s (%s)", f->user_function,
                   f->user_module ? f->user_module : "?");
        append(&h->summary, " %.1f %%", 100.0 * (double)f->samples / (double)h->samples);
    }
    if (h->samples == 0)
        append(&h->summary, " (the threads were off the CPU: blocked or sleeping)");
    for (int i = 0; i < h->blocking_count; i++) {
        const struct analyze_host_call *c = &h->blocking[i];
        append(&h->summary, "%s %s %lld calls %s (%.1f %%)", i ? "," : "; blocked in:", c->name,
               (long long)c->calls, analyze_fmt_ns(blocked, sizeof blocked, (double)c->ns),
               h->window_ns > 0 ? 100.0 * (double)c->ns / h->window_ns : 0);
        if (c->caller)
            append(&h->summary, " from %s (%.0f %% of it)", c->caller,
                   c->ns > 0 ? 100.0 * (double)c->caller_ns / (double)c->ns : 0);
    }
    if (h->state_threads && h->state_ns > 0) {
        double blocked = 100.0 * h->state_blocked_ns / h->state_ns;
        double preempted = 100.0 * h->state_preempted_ns / h->state_ns;
        append(&h->summary, "; %s blocked %.1f %% of the %s, preempted %.1f %%, running %.1f %%",
               h->state_threads == 1 ? "the thread was" : "the threads were", blocked, s->what,
               preempted, blocked + preempted < 100 ? 100 - blocked - preempted : 0);
    }
    if (!h->gil_waits)
        return;
    append(&h->summary, "; GIL waits: %lld, %s (%.1f %%)", (long long)h->gil_waits,
           analyze_fmt_ns(blocked, sizeof blocked, (double)h->gil_wait_ns),
           h->window_ns > 0 ? 100.0 * (double)h->gil_wait_ns / h->window_ns : 0);
    for (int i = 0; i < h->gil_top_count; i++)
        append(&h->summary, "%s %s %.1f %%", i ? "," : " in", h->gil_top[i].function,
               100.0 * (double)h->gil_top[i].ns / (double)h->gil_wait_ns);
}

/* A blocked-time advice names where the time was spent: the top blocking call the pattern
 * names, and its top caller, so "data loading (reads)" says which reads. */
static void name_blocking_caller(struct analyze_host *h, const char *needles)
{
    for (int k = 0; k < h->blocking_count && h->advice; k++) {
        const struct analyze_host_call *c = &h->blocking[k];
        if (!needle_match(needles, c->name, NULL))
            continue;
        if (c->caller)
            append(&h->advice, " The %s calls are made mostly (%.0f %%) from %s.", c->name,
                   c->ns > 0 ? 100.0 * (double)c->caller_ns / (double)c->ns : 0, c->caller);
        return;
    }
}

/* The first pattern covering HOST_PATTERN_MIN_PERCENT of the samples (leaf or whole stack, as
 * its row says), of the window time blocked in the calls it names, or (the GIL's) of the
 * window time the threads waited for the GIL. */
static void choose_pattern(const struct analyze_cpu *c, const int64_t *counts,
                           const struct analyze_host_scope *s, const int64_t *pattern_ns,
                           struct analyze_finding *f, struct analyze_host *h)
{
    const struct cpu_profile *p = &c->profile;
    for (size_t i = 0; i < HOST_PATTERNS; i++) {
        int64_t hits = 0;
        for (size_t cs = 1; h->samples > 0 && cs < p->callsites; cs++) {
            uint32_t bits = host_patterns[i].match == HOST_LEAF ? c->frame_bits[p->frame[cs]]
                                                                : c->stack_bits[cs];
            if (counts[cs] && bits >> i & 1)
                hits += counts[cs];
        }
        double by_samples = h->samples ? 100.0 * (double)hits / (double)h->samples : 0;
        double time_ns =
            host_patterns[i].match == HOST_GIL ? (double)h->gil_wait_ns : (double)pattern_ns[i];
        double by_time = h->window_ns > 0 ? 100.0 * time_ns / h->window_ns : 0;
        double percent = by_samples >= by_time ? by_samples : by_time;
        if (percent < HOST_PATTERN_MIN_PERCENT)
            continue;
        h->pattern = host_patterns[i].what;
        h->pattern_percent = percent;
        const char *of = by_samples >= by_time   ? "samples"
                         : host_patterns[i].match == HOST_GIL ? "time, waiting for the GIL,"
                                                : "time, blocked,";
        if (asprintf(&h->advice, "%s (%.0f %% of the %s in the %s): %s", host_patterns[i].what,
                     percent, of, s->what, host_patterns[i].advice) < 0)
            h->advice = NULL;
        if (by_time > by_samples)
            name_blocking_caller(h, host_patterns[i].needles);
        if (h->advice)
            f->advice = h->advice;
        return;
    }
}

int analyze_host_describe(struct analyze_ctx *ctx, struct analyze_finding *f,
                          const struct analyze_host_scope *s)
{
    struct analyze_cpu *c = cpu_state(ctx);
    if (!c)
        return -ENOMEM;
    if (!f || !c->asked || f->host)
        return 0;
    struct analyze_host *h = calloc(1, sizeof *h);
    struct scope_threads t = {0};
    int64_t *counts = NULL, pattern_ns[HOST_PATTERNS] = {0};
    int rc = -ENOMEM;
    if (!h) {
        snprintf(ctx->error, sizeof ctx->error, "host activity: out of memory");
        goto out;
    }
    f->host = h;
    for (size_t i = 0; i < s->windows.count; i++)
        h->window_ns += (double)(s->windows.end[i] - s->windows.start[i]);
    if ((rc = load_threads(ctx, s, &t)) < 0)
        goto out;
    if (t.sampled_processes == 0) { /* say why rather than guess */
        if (asprintf(&h->summary, "CPU sampling was off (%s): what the host did is unknown",
                     t.off[0] ? t.off : "no thread recorded") < 0)
            h->summary = NULL;
        rc = 0;
        goto out;
    }
    h->sampled = 1;
    if ((rc = cpu_load(ctx, c)) < 0)
        goto out;
    rc = -ENOMEM;
    counts = calloc(c->profile.callsites ? c->profile.callsites : 1, sizeof *counts);
    if (!counts) {
        snprintf(ctx->error, sizeof ctx->error, "host activity: out of memory");
        goto out;
    }
    for (size_t i = 0; i < t.n; i++) {
        if (!t.period[i])
            continue;
        int64_t n = cpu_profile_count(ctx->db, &c->profile, t.ids[i], &s->windows, counts);
        if (n < 0) {
            snprintf(ctx->error, sizeof ctx->error, "host activity: %s", sqlite3_errmsg(ctx->db));
            rc = (int)n;
            goto out;
        }
        h->samples += n;
        h->on_cpu_ns += (double)n * (double)t.period[i];
    }
    if (top_functions(&c->profile, counts, h) < 0) {
        snprintf(ctx->error, sizeof ctx->error, "host activity: out of memory");
        goto out;
    }
    if (c->has_osrt && s->windows.count &&
        (rc = blocking_calls(ctx, &t, &s->windows, h, pattern_ns)) < 0)
        goto out;
    if (c->has_gil && s->windows.count &&
        (rc = gil_waits(ctx, &c->profile, &t, &s->windows, h)) < 0)
        goto out;
    if (c->has_states && s->windows.count && (rc = thread_states(ctx, &t, &s->windows, h)) < 0)
        goto out;
    write_summary(s, h);
    choose_pattern(c, counts, s, pattern_ns, f, h);
    rc = 0;
out:
    free(counts);
    free(t.ids);
    free(t.period);
    return rc;
}
