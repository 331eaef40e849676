/* stragglers: which rank arrives last at the job's collectives, and how long the others wait
 * for it. In NCCL every rank's kernel of a collective ends at about the same moment; a rank
 * arrives when its kernel starts on its GPU, and the ranks that came earlier wait inside the
 * kernel. Assumption (docs/analyze.md): the k-th NCCL kernel of one collective type (AllReduce,
 * AllGather, ...) on each rank, in start order, is the same collective, as in data parallelism
 * with one communicator; ranks that ran different numbers of a type are said so and that type
 * is not matched. Per collective: the last rank, last - second-last (its lag: what the
 * collective would have gained had it arrived with the others) and last - first; per rank: how
 * often it was last, the time the others waited for it, and per training step (a repeated
 * top-level NVTX range such as `step` or PyTorch's `ProfilerStep#N`) in how many it was the
 * one that cost most. NCCL kernels come from the timeline pass (timeline_ranks.c). */
#include "analyze/findings.h"
#include "analyze/thresholds.h"
#include "analyze/timeline.h"
#include "common/index_map.h"

#include <errno.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One collective a rank was last at: evidence. */
struct late {
    int64_t lag, spread, id, arrival, index, step;
    int type;
    size_t first, second; /* the first and the second-last rank (lanes) */
};

/* An instance of the step range on a lane, and the lags of the collectives the lane was last
 * at during it. */
struct step {
    int64_t start, end, lag;
};

struct lane {
    const struct timeline_rank *r;
    int64_t took_part, last, lag_ns, waited_ns, steps_last;
    struct late top[ANALYZE_MAX_EVIDENCE]; /* longest lag first */
    int top_count;
    struct step *steps; /* its process's instances of the step range, in start order */
    size_t step_count, step_cap;
};

struct straggle {
    struct analyze_ctx *ctx;
    struct lane *lanes;
    size_t count, processes; /* lanes, and the distinct processes among them */
    int64_t matched, distinct, spread_sum, spread_max;
    char types[256];    /* "AllReduce 100, AllGather 20" */
    char mismatch[512]; /* types not matched, with counts */
    char step_name[128];
};

static void keep_late(struct lane *l, const struct late *e)
{
    int i = l->top_count < ANALYZE_MAX_EVIDENCE ? l->top_count++ : ANALYZE_MAX_EVIDENCE;
    if (i == ANALYZE_MAX_EVIDENCE) {
        if (e->lag <= l->top[ANALYZE_MAX_EVIDENCE - 1].lag)
            return;
        i = ANALYZE_MAX_EVIDENCE - 1;
    }
    while (i > 0 && l->top[i - 1].lag < e->lag) {
        l->top[i] = l->top[i - 1];
        i--;
    }
    l->top[i] = *e;
}

/* The step instance of lane l holding instant ts, or -1 (none). */
static int64_t step_of(const struct lane *l, int64_t ts)
{
    size_t lo = 0, hi = l->step_count;
    while (lo < hi) { /* first instance starting after ts */
        size_t mid = lo + (hi - lo) / 2;
        if (l->steps[mid].start <= ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && l->steps[lo - 1].end >= ts ? (int64_t)lo - 1 : -1;
}

/* One collective: each lane's arrival given by its cursor. */
static void match_one(struct straggle *s, const size_t *cursor, const int *in, int type,
                      int64_t index)
{
    size_t last = SIZE_MAX, second = SIZE_MAX, first = SIZE_MAX;
    int64_t a_last = 0, a_second = 0, a_first = 0;
    for (size_t l = 0; l < s->count; l++) {
        if (!in[l])
            continue;
        int64_t a = s->lanes[l].r->collectives[cursor[l]].start;
        s->lanes[l].took_part++;
        if (first == SIZE_MAX || a < a_first) {
            first = l;
            a_first = a;
        }
        if (last == SIZE_MAX || a > a_last) {
            second = last;
            a_second = a_last;
            last = l;
            a_last = a;
        } else if (second == SIZE_MAX || a > a_second) {
            second = l;
            a_second = a;
        }
    }
    s->matched++;
    s->spread_sum += a_last - a_first;
    if (a_last - a_first > s->spread_max)
        s->spread_max = a_last - a_first;
    if (a_last == a_second)
        return; /* a tie: no rank was the last alone */
    s->distinct++;
    struct lane *l = &s->lanes[last];
    l->last++;
    l->lag_ns += a_last - a_second;
    for (size_t k = 0; k < s->count; k++)
        if (in[k])
            l->waited_ns += a_last - s->lanes[k].r->collectives[cursor[k]].start;
    struct late e = {.lag = a_last - a_second,
                     .spread = a_last - a_first,
                     .id = l->r->collectives[cursor[last]].id,
                     .arrival = a_last,
                     .index = index,
                     .step = step_of(l, a_last),
                     .type = type,
                     .first = first,
                     .second = second};
    keep_late(l, &e);
    if (e.step >= 0)
        l->steps[e.step].lag += e.lag;
}

static void append(char *buf, size_t size, const char *fmt, const char *text, long long n)
{
    size_t used = strlen(buf);
    if (used < size)
        snprintf(buf + used, size - used, fmt, used ? ", " : "", text, n);
}

/* Matches the k-th collective of one type on every lane that ran it. */
static int match_type(struct straggle *s, int type, const char *name)
{
    size_t participants = 0;
    int64_t n = -1, differ = 0;
    int *in = calloc(s->count, sizeof *in);
    size_t *cursor = calloc(s->count, sizeof *cursor);
    int64_t *counts = calloc(s->count, sizeof *counts);
    int rc = in && cursor && counts ? 0 : -ENOMEM;
    for (size_t l = 0; rc == 0 && l < s->count; l++) {
        const struct timeline_rank *r = s->lanes[l].r;
        for (size_t k = 0; k < r->collective_count; k++)
            counts[l] += r->collectives[k].type == type;
        if (!counts[l])
            continue;
        in[l] = 1;
        participants++;
        differ |= n >= 0 && counts[l] != n;
        n = n < 0 || counts[l] < n ? counts[l] : n;
    }
    if (rc == 0 && participants >= 2 && differ) {
        char counted[256] = "";
        for (size_t l = 0, shown = 0; l < s->count && shown < 4; l++) {
            char label[160];
            if (in[l] && ++shown)
                append(counted, sizeof counted, "%s%s: %lld",
                       timeline_rank_label(s->lanes[l].r, label, sizeof label),
                       (long long)counts[l]);
        }
        size_t used = strlen(s->mismatch);
        snprintf(s->mismatch + used, sizeof s->mismatch - used,
                 "%s%s not matched: the ranks ran different numbers of it (%s%s)", used ? "; " : "",
                 name, counted, participants > 4 ? ", ..." : "");
    } else if (rc == 0 && participants >= 2) {
        append(s->types, sizeof s->types, "%s%s %lld", name, (long long)n);
        for (int64_t k = 0; k < n; k++) {
            for (size_t l = 0; l < s->count; l++) { /* each cursor to its next of this type */
                if (!in[l])
                    continue;
                while (s->lanes[l].r->collectives[cursor[l]].type != type)
                    cursor[l]++;
            }
            match_one(s, cursor, in, type, k);
            for (size_t l = 0; l < s->count; l++)
                cursor[l] += in[l];
        }
    }
    free(in);
    free(cursor);
    free(counts);
    return rc;
}

/* "ProfilerStep#12" -> "ProfilerStep", "step 3" -> "step": one name for every instance. */
static size_t step_stem(const char *name)
{
    size_t n = strlen(name);
    while (n > 0 && isdigit((unsigned char)name[n - 1]))
        n--;
    if (n < strlen(name) && n > 0 && strchr("# _-", name[n - 1]))
        n--;
    return n;
}

struct stem {
    char *name;
    size_t len;
    int64_t ns, processes, in_process, last_process;
};

static int stem_eq(const void *array, size_t pos, const void *key)
{
    const struct stem *a = &((const struct stem *)array)[pos], *b = key;
    return a->len == b->len && memcmp(a->name, b->name, a->len) == 0;
}

static uint64_t stem_hash(const char *s, size_t n)
{
    uint64_t h = 14695981039346656037ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static struct lane *lane_of_process(struct straggle *s, int64_t process_id)
{
    for (size_t l = 0; l < s->count; l++)
        if (s->lanes[l].r->process_id == process_id)
            return &s->lanes[l];
    return NULL;
}

static const char step_query[] =
    "SELECT r.process_id, s.value, r.start_ns, r.end_ns FROM ranges r"
    " JOIN strings s ON s.id = r.name_id WHERE r.depth = 0 AND r.style = 0"
    " AND r.end_ns IS NOT NULL ORDER BY r.process_id, r.start_ns";

struct stems {
    struct stem *v;
    size_t count, cap;
    struct index_map index;
};

/* Each stem of the lanes' processes' top-level push/pop ranges (step_query's rows): its time,
 * and in how many processes it repeats. 0 or -ENOMEM. */
static int count_stems(struct straggle *s, sqlite3_stmt *st, struct stems *m)
{
    int added;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t p = sqlite3_column_int64(st, 0);
        const char *name = (const char *)sqlite3_column_text(st, 1);
        size_t len = step_stem(name);
        if (!lane_of_process(s, p) || len == 0)
            continue;
        struct stem key = {.name = (char *)name, .len = len};
        long pos =
            index_reserve((void **)&m->v, &m->cap, m->count, sizeof *m->v) < 0
                ? -1
                : index_get(&m->index, stem_hash(name, len), m->v, stem_eq, &key, m->count, &added);
        if (pos < 0 || (added && !(key.name = strndup(name, len))))
            return -ENOMEM;
        if (added) {
            key.last_process = -1;
            m->v[m->count++] = key;
        }
        struct stem *e = &m->v[pos];
        e->ns += sqlite3_column_int64(st, 3) - sqlite3_column_int64(st, 2);
        if (e->last_process != p) {
            e->last_process = p;
            e->in_process = 0;
        }
        if (++e->in_process == 2) /* repeated in this process */
            e->processes++;
    }
    return 0;
}

/* The instances of the step (step_query's rows named by that stem), on each lane of their
 * process. 0 or -ENOMEM. */
static int load_steps(struct straggle *s, sqlite3_stmt *st, const struct stem *step)
{
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t p = sqlite3_column_int64(st, 0);
        const char *name = (const char *)sqlite3_column_text(st, 1);
        if (step_stem(name) != step->len || memcmp(name, step->name, step->len) != 0)
            continue;
        struct step instance = {.start = sqlite3_column_int64(st, 2),
                                .end = sqlite3_column_int64(st, 3)};
        for (size_t k = 0; k < s->count; k++) {
            struct lane *l = &s->lanes[k];
            if (l->r->process_id != p)
                continue;
            if (index_reserve((void **)&l->steps, &l->step_cap, l->step_count, sizeof *l->steps) <
                0)
                return -ENOMEM;
            l->steps[l->step_count++] = instance;
        }
    }
    return 0;
}

/* The step range: the top-level push/pop range name (stem) that every lane's process runs at
 * least twice, with the most time; then each lane's instances of it. 0, -EIO or -ENOMEM. */
static int find_steps(struct straggle *s)
{
    sqlite3_stmt *st = analyze_prepare(s->ctx, "stragglers", step_query);
    if (!st)
        return -EIO;
    struct stems stems = {0};
    int rc = count_stems(s, st, &stems);
    const struct stem *chosen = NULL;
    for (size_t i = 0; rc == 0 && i < stems.count; i++)
        if (stems.v[i].processes == (int64_t)s->processes &&
            (!chosen || stems.v[i].ns > chosen->ns))
            chosen = &stems.v[i];
    if (chosen) {
        snprintf(s->step_name, sizeof s->step_name, "%.*s", (int)chosen->len, chosen->name);
        sqlite3_reset(st);
        rc = load_steps(s, st, chosen);
    }
    sqlite3_finalize(st);
    for (size_t i = 0; i < stems.count; i++)
        free(stems.v[i].name);
    free(stems.v);
    index_release(&stems.index);
    if (rc)
        snprintf(s->ctx->error, sizeof s->ctx->error, "stragglers: out of memory");
    return rc;
}

/* For each step, the lane whose lags in it add up most: it "cost" that step. Returns the
 * number of steps: up to the last one in which a lane was last. */
static int64_t steps_last(struct straggle *s)
{
    size_t steps = 0;
    for (size_t l = 0; l < s->count; l++)
        for (size_t j = s->lanes[l].step_count; j > steps; j--)
            if (s->lanes[l].steps[j - 1].lag > 0) {
                steps = j;
                break;
            }
    for (size_t j = 0; j < steps; j++) {
        size_t best = SIZE_MAX;
        int64_t lag = 0;
        for (size_t l = 0; l < s->count; l++)
            if (j < s->lanes[l].step_count && s->lanes[l].steps[j].lag > lag) {
                lag = s->lanes[l].steps[j].lag;
                best = l;
            }
        if (best != SIZE_MAX)
            s->lanes[best].steps_last++;
    }
    return (int64_t)steps;
}

static int report_lane(struct straggle *s, struct analyze_result *res, struct lane *l,
                       int64_t steps, const struct analyze_timeline *t)
{
    struct analyze_ctx *ctx = s->ctx;
    char label[160], mean[32], total[32], waited[32], per_step[256] = "";
    if (s->step_name[0] && steps > 0) {
        char each[32];
        snprintf(per_step, sizeof per_step,
                 "; the last in %lld of %lld steps of '%s' (%s per step)", (long long)l->steps_last,
                 (long long)steps, s->step_name,
                 analyze_fmt_ns(each, sizeof each, (double)l->lag_ns / (double)steps));
    }
    struct analyze_finding *f = analyze_add_finding(
        res, (double)l->lag_ns, NULL,
        "%s arrived last at %lld of the %lld collectives it took part in; the others waited "
        "%s for it each time (last - second-last), %s in all (%.1f %% of the run; %s of the "
        "other ranks' time together)%s",
        timeline_rank_label(l->r, label, sizeof label), (long long)l->last, (long long)l->took_part,
        analyze_fmt_ns(mean, sizeof mean, (double)l->lag_ns / (double)l->last),
        analyze_fmt_ns(total, sizeof total, (double)l->lag_ns),
        analyze_share(ctx, (double)l->lag_ns),
        analyze_fmt_ns(waited, sizeof waited, (double)l->waited_ns), per_step);
    if (!f)
        return 0;
    f->count = l->last;
    for (int i = 0; i < l->top_count; i++) {
        const struct late *e = &l->top[i];
        char lag[32], spread[32], step[64] = "", first[160], second[160], detail[640];
        if (e->step >= 0)
            snprintf(step, sizeof step, ", step %lld", (long long)e->step + 1);
        snprintf(detail, sizeof detail,
                 "%s #%lld%s: %s arrived last, %s after %s (the second-last) and %s after %s "
                 "(the first)",
                 t->nccl_types[e->type], (long long)e->index + 1, step,
                 timeline_rank_label(l->r, label, sizeof label),
                 analyze_fmt_ns(lag, sizeof lag, (double)e->lag),
                 timeline_rank_label(s->lanes[e->second].r, second, sizeof second),
                 analyze_fmt_ns(spread, sizeof spread, (double)e->spread),
                 timeline_rank_label(s->lanes[e->first].r, first, sizeof first));
        if (timeline_op_evidence(ctx, f, TIMELINE_KERNEL, e->id, detail, e->arrival, e->lag) < 0)
            return -EIO;
    }
    return 0;
}

static int by_lag(const void *a, const void *b)
{
    const struct lane *x = *(const struct lane *const *)a, *y = *(const struct lane *const *)b;
    return (x->lag_ns < y->lag_ns) - (x->lag_ns > y->lag_ns);
}

static void note(struct straggle *s, struct analyze_result *res, size_t hosts)
{
    char mean[32], max[32], host_text[200] = "";
    if (hosts > 1)
        snprintf(host_text, sizeof host_text,
                 "; the ranks ran on %zu hosts: arrivals on different hosts are compared through "
                 "the merge's clock alignment, whose error (the hosts' NTP offset) is not "
                 "measured",
                 hosts);
    if (s->matched)
        analyze_note(res,
                     "%lld collectives matched over %zu ranks (%s), %lld with one rank last; "
                     "arrival spread (last - first) %s on average, %s at most%s%s%s",
                     (long long)s->matched, s->count, s->types, (long long)s->distinct,
                     analyze_fmt_ns(mean, sizeof mean, (double)s->spread_sum / (double)s->matched),
                     analyze_fmt_ns(max, sizeof max, (double)s->spread_max),
                     s->mismatch[0] ? "; " : "", s->mismatch, host_text);
    else
        analyze_note(res, "no collective matched over %zu ranks%s%s", s->count,
                     s->mismatch[0] ? ": " : "", s->mismatch);
}

int rule_stragglers(struct analyze_ctx *ctx, struct analyze_result *res)
{
    int rc;
    struct analyze_timeline *t = analyze_gpu_work(ctx, res, &rc);
    if (!t || !timeline_several_ranks(t, res))
        return rc;
    struct straggle s = {.ctx = ctx, .lanes = calloc(t->rank_count, sizeof *s.lanes)};
    struct lane **order = calloc(t->rank_count, sizeof *order);
    if (!s.lanes || !order) {
        free(s.lanes);
        free(order);
        snprintf(ctx->error, sizeof ctx->error, "stragglers: out of memory");
        return -ENOMEM;
    }
    size_t processes = 0, hosts = 0;
    for (size_t i = 0; i < t->rank_count; i++) {
        const struct timeline_rank *r = &t->ranks[i];
        if (!r->collective_count)
            continue;
        int new_process = 1, new_host = 1;
        for (size_t k = 0; k < s.count; k++) {
            new_process &= s.lanes[k].r->process_id != r->process_id;
            new_host &= !(r->host && s.lanes[k].r->host && !strcmp(r->host, s.lanes[k].r->host));
        }
        processes += new_process;
        hosts += new_host;
        s.lanes[s.count++].r = r;
    }
    s.processes = processes;
    if (processes < 2) {
        analyze_note(res,
                     "NCCL kernels (ncclDevKernel_*, ncclSymkDevKernel_*, ncclKernel_*) in %zu "
                     "process: nothing to compare",
                     processes);
    } else {
        rc = find_steps(&s);
        for (int type = 0; rc == 0 && type < t->nccl_type_count; type++)
            rc = match_type(&s, type, t->nccl_types[type]);
        int64_t steps = 0;
        if (rc == 0) {
            steps = steps_last(&s);
            note(&s, res, hosts);
        }
        for (size_t l = 0; l < s.count; l++)
            order[l] = &s.lanes[l];
        qsort(order, s.count, sizeof *order, by_lag);
        for (size_t i = 0; rc == 0 && i < s.count; i++) {
            struct lane *l = order[i];
            if (l->took_part < STRAGGLER_MIN_COLLECTIVES ||
                100.0 * (double)l->last < STRAGGLER_LAST_SHARE * (double)l->took_part ||
                (double)l->lag_ns < STRAGGLER_MIN_LAG_NS * (double)l->last ||
                analyze_share(ctx, (double)l->lag_ns) < STRAGGLER_MIN_SHARE)
                continue;
            rc = report_lane(&s, res, l, steps, t);
        }
        if (rc && !ctx->error[0])
            snprintf(ctx->error, sizeof ctx->error, "stragglers: out of memory");
    }
    for (size_t l = 0; l < s.count; l++)
        free(s.lanes[l].steps);
    free(s.lanes);
    free(order);
    return rc;
}
