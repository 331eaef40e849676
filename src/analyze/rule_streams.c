/* stream_use: work serialized on one stream that could overlap. Three signs: a process
 * created several streams (cudaStreamCreate*) but ran its work on one (an index that never
 * rotates); NVTX ranges
 * numbered per chunk ("H2D Memory Stream 0", "... 1") whose work all landed on one stream (the
 * Nsight Systems tutorial's `[cuda.stream()] * n` bug: one stream, repeated); and a stream
 * whose copies and kernels never overlapped. */
#include "analyze/findings.h"
#include "analyze/thresholds.h"
#include "analyze/timeline.h"

#include <errno.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t overlap_gain(int64_t copy_ns, int64_t kernel_ns)
{
    return copy_ns < kernel_ns ? copy_ns : kernel_ns;
}

/* Whether the program itself created stream (process, stream): a cudaStreamCreate* the agent
 * saw (cuda_stream_handles). CUPTI also reports streams the driver makes for itself (six
 * more beside the program's one in examples/cuda_normalize on an H100, driver 580). */
static int is_program_stream(struct analyze_ctx *ctx, int64_t process_id, int64_t stream)
{
    sqlite3_stmt *st = analyze_prepare(ctx, "stream_use",
                                       "SELECT count(*) FROM cuda_stream_handles WHERE"
                                       " process_id = ?1 AND stream = ?2");
    int v = 0;
    if (!st)
        return 0;
    sqlite3_bind_int64(st, 1, process_id);
    sqlite3_bind_int64(st, 2, stream);
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int(st, 0) > 0;
    sqlite3_finalize(st);
    return v;
}

/* The one stream of its own a process used, or NULL when it used none or several. */
static const struct timeline_stream *
only_stream(struct analyze_ctx *ctx, const struct analyze_timeline *t, int64_t process_id)
{
    const struct timeline_stream *only = NULL;
    for (size_t i = 0; i < t->stream_count; i++) {
        const struct timeline_stream *s = &t->streams[i];
        if (s->process_id != process_id || !is_program_stream(ctx, s->process_id, s->stream))
            continue;
        if (only)
            return NULL;
        only = s;
    }
    return only;
}

/* Sign 1: streams created, one used. */
static int created_unused(struct analyze_ctx *ctx, const struct analyze_timeline *t,
                          struct analyze_result *res, unsigned char *flagged)
{
    sqlite3_stmt *procs =
        analyze_prepare(ctx, "stream_use",
                        "SELECT h.process_id, count(DISTINCT h.stream), p.pid FROM"
                        " cuda_stream_handles h LEFT JOIN processes p ON p.id = h.process_id"
                        " GROUP BY h.process_id HAVING count(DISTINCT h.stream) >= 2");
    sqlite3_stmt *rows = analyze_prepare(
        ctx, "stream_use",
        "SELECT NULL, NULL, p.pid, NULL, COALESCE(g.nvml_index, c.device), s.stream, NULL,"
        " n.value, NULL FROM cuda_streams s LEFT JOIN processes p ON p.id = s.process_id"
        " LEFT JOIN cuda_contexts c ON c.process_id = s.process_id AND c.context = s.context"
        " LEFT JOIN gpus g ON g.id = s.gpu_id LEFT JOIN strings n ON n.id = s.name_id"
        " WHERE s.process_id = ?1 AND s.is_default = 0 AND s.stream = ?2 LIMIT 1");
    int rc = procs && rows ? 0 : -EIO;
    while (rc == 0 && sqlite3_step(procs) == SQLITE_ROW) {
        int64_t process_id = sqlite3_column_int64(procs, 0);
        const struct timeline_stream *used = only_stream(ctx, t, process_id);
        if (!used)
            continue;
        char copies[32], kernels[32];
        struct analyze_finding *f = analyze_add_finding(
            res, (double)overlap_gain(used->copy_ns, used->kernel_ns), NULL,
            "pid %lld created %lld streams but ran all its work on stream %lld (%lld copies, %s;"
            " %lld kernels, %s): nothing could overlap",
            (long long)sqlite3_column_int64(procs, 2), (long long)sqlite3_column_int64(procs, 1),
            (long long)used->stream, (long long)used->copies,
            analyze_fmt_ns(copies, sizeof copies, (double)used->copy_ns), (long long)used->kernels,
            analyze_fmt_ns(kernels, sizeof kernels, (double)used->kernel_ns));
        if (!f)
            continue;
        f->count = sqlite3_column_int64(procs, 1);
        flagged[used - t->streams] = 1;
        sqlite3_reset(rows);
        sqlite3_bind_int64(rows, 1, process_id);
        sqlite3_bind_int64(rows, 2, used->stream);
        int before = f->evidence_count;
        rc = analyze_evidence_from(ctx, f, rows);
        if (rc == 0 && f->evidence_count > before) {
            struct analyze_evidence *e = &f->evidence[f->evidence_count - 1];
            char detail[96];
            snprintf(detail, sizeof detail, "the stream used: %lld ops",
                     (long long)(used->kernels + used->copies));
            free(e->detail);
            e->detail = strdup(detail);
        }
    }
    sqlite3_finalize(procs);
    sqlite3_finalize(rows);
    return ctx->error[0] ? -EIO : rc;
}

/* "H2D Memory Stream 3" -> prefix length (up to the number), or 0 for a name without a
 * trailing number. */
static size_t indexed_prefix(const char *name)
{
    size_t n = strlen(name);
    size_t digits = 0;
    while (digits < n && isdigit((unsigned char)name[n - 1 - digits]))
        digits++;
    if (digits == 0 || digits == n || digits > 6)
        return 0;
    return n - digits;
}

struct family {
    char *prefix;
    int64_t indices, streams, one_stream, copies, kernels, copy_ns, kernel_ns;
    int64_t lo, hi; /* smallest and largest index */
};

/* The families of numbered NVTX ranges of process_id whose GPU work ran on the program's
 * streams, into fam (at most ANALYZE_MAX_EVIDENCE; their prefixes allocated). Returns their
 * count, or -EIO on an SQLite error. */
static int load_families(struct analyze_ctx *ctx, int64_t process_id, struct family *fam)
{
    /* the GPU work of each range name of the process, per stream */
    sqlite3_stmt *st = analyze_prepare(
        ctx, "stream_use",
        "SELECT rs.value, x.stream, sum(x.is_kernel), sum(1 - x.is_kernel),"
        " sum(CASE WHEN x.is_kernel THEN x.ns ELSE 0 END),"
        " sum(CASE WHEN x.is_kernel THEN 0 ELSE x.ns END)"
        " FROM (SELECT nvtx_range_id, stream, 1 AS is_kernel, end_ns - start_ns AS ns"
        "  FROM kernels WHERE process_id = ?1 UNION ALL SELECT nvtx_range_id, stream, 0,"
        "  end_ns - start_ns FROM memcpys WHERE process_id = ?1) x"
        " JOIN ranges r ON r.id = x.nvtx_range_id JOIN strings rs ON rs.id = r.name_id"
        " WHERE EXISTS (SELECT 1 FROM cuda_streams c WHERE c.process_id = ?1"
        "  AND c.stream = x.stream AND c.is_default = 0)"
        " GROUP BY r.name_id, x.stream ORDER BY rs.value");
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, process_id);
    int nfam = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        size_t plen = name ? indexed_prefix(name) : 0;
        if (!plen)
            continue;
        int64_t index = atoll(name + plen);
        struct family *f = NULL;
        for (int k = 0; k < nfam; k++)
            if (strlen(fam[k].prefix) == plen && !strncmp(fam[k].prefix, name, plen))
                f = &fam[k];
        if (!f) {
            if (nfam == ANALYZE_MAX_EVIDENCE)
                continue;
            f = &fam[nfam++];
            memset(f, 0, sizeof *f);
            f->prefix = strndup(name, plen);
            f->lo = f->hi = index;
        }
        f->indices++;
        f->lo = index < f->lo ? index : f->lo;
        f->hi = index > f->hi ? index : f->hi;
        f->kernels += sqlite3_column_int64(st, 2);
        f->copies += sqlite3_column_int64(st, 3);
        f->kernel_ns += sqlite3_column_int64(st, 4);
        f->copy_ns += sqlite3_column_int64(st, 5);
    }
    sqlite3_finalize(st);
    return nfam;
}

/* The finding of stream s for its families of two indices or more, with one evidence row
 * each. Returns 1 when it added one, else 0. */
static int add_families_finding(struct analyze_result *res, const struct timeline_stream *s,
                                const struct family *fam, int nfam)
{
    /* rows are per (name, stream), and the process used one stream: each row is a
     * distinct index of the family on that stream */
    int64_t copy_ns = 0, kernel_ns = 0, families = 0;
    int first = 0;
    for (int k = 0; k < nfam; k++)
        if (fam[k].indices >= 2) {
            if (families++ == 0)
                first = k;
            copy_ns += fam[k].copy_ns;
            kernel_ns += fam[k].kernel_ns;
        }
    if (families == 0)
        return 0;
    struct analyze_finding *f = analyze_add_finding(
        res, (double)overlap_gain(copy_ns, kernel_ns), NULL,
        "%lld famil%s of numbered NVTX ranges (one per chunk, e.g. '%s%lld'..'%s%lld') "
        "put all their GPU work on stream %lld: the chunks were meant for different "
        "streams?",
        (long long)families, families == 1 ? "y" : "ies", fam[first].prefix,
        (long long)fam[first].lo, fam[first].prefix, (long long)fam[first].hi,
        (long long)s->stream);
    for (int k = 0; k < nfam && f; k++) {
        if (fam[k].indices < 2)
            continue;
        char label[160], detail[160];
        snprintf(label, sizeof label, "%s%lld..%s%lld", fam[k].prefix, (long long)fam[k].lo,
                 fam[k].prefix, (long long)fam[k].hi);
        snprintf(detail, sizeof detail,
                 "%lld indices: %lld copies, %lld kernels, all on "
                 "stream %lld",
                 (long long)fam[k].indices, (long long)fam[k].copies, (long long)fam[k].kernels,
                 (long long)s->stream);
        struct analyze_evidence e = {.start_ns = -1,
                                     .duration_ns = fam[k].copy_ns + fam[k].kernel_ns,
                                     .pid = -1,
                                     .tid = -1,
                                     .gpu = -1,
                                     .stream = s->stream,
                                     .range = label,
                                     .detail = detail};
        analyze_add_evidence(f, &e);
        f->count += fam[k].indices;
    }
    return 1;
}

/* Sign 2: for a process whose work sits on one non-default stream, the numbered NVTX range
 * families with GPU work. */
static int indexed_ranges(struct analyze_ctx *ctx, const struct analyze_timeline *t,
                          struct analyze_result *res, unsigned char *flagged)
{
    for (size_t i = 0; i < t->stream_count; i++) {
        const struct timeline_stream *s = &t->streams[i];
        if (flagged[i] || only_stream(ctx, t, s->process_id) != s)
            continue;
        struct family fam[ANALYZE_MAX_EVIDENCE];
        int nfam = load_families(ctx, s->process_id, fam);
        if (nfam < 0)
            return nfam;
        if (add_families_finding(res, s, fam, nfam))
            flagged[i] = 1;
        for (int k = 0; k < nfam; k++)
            free(fam[k].prefix);
    }
    return 0;
}

/* Sign 3: a stream with copies and kernels on a GPU where copies never ran beside kernels. */
static void serialized_streams(struct analyze_ctx *ctx, const struct analyze_timeline *t,
                               struct analyze_result *res, const unsigned char *flagged)
{
    for (size_t i = 0; i < t->stream_count; i++) {
        const struct timeline_stream *s = &t->streams[i];
        int64_t gain = overlap_gain(s->copy_ns, s->kernel_ns);
        if (flagged[i] || s->ns <= 0 ||
            100.0 * (double)gain / (double)s->ns < STREAM_MIN_OVERLAP_SHARE)
            continue;
        const struct timeline_gpu *g = NULL;
        for (int k = 0; k < t->gpu_count; k++)
            if (t->gpus[k].gpu_id == s->gpu_id)
                g = &t->gpus[k];
        if (!g || g->copy_compute_overlap_ns * 20 > gain) /* overlap happens on this GPU */
            continue;
        char copies[32], kernels[32];
        struct analyze_finding *f = analyze_add_finding(
            res, (double)gain, NULL,
            "stream %lld ran %lld copies (%s) and %lld kernels (%s) one after the other; on GPU "
            "%lld copies hardly ever overlapped kernels",
            (long long)s->stream, (long long)s->copies,
            analyze_fmt_ns(copies, sizeof copies, (double)s->copy_ns), (long long)s->kernels,
            analyze_fmt_ns(kernels, sizeof kernels, (double)s->kernel_ns), (long long)g->label);
        if (f)
            f->count = s->copies + s->kernels;
    }
    (void)ctx;
}

int rule_stream_use(struct analyze_ctx *ctx, struct analyze_result *res)
{
    int rc;
    struct analyze_timeline *t = analyze_gpu_work(ctx, res, &rc);
    if (!t)
        return rc;
    ctx->error[0] = '\0';
    unsigned char *flagged = calloc(t->stream_count ? t->stream_count : 1, 1);
    if (!flagged)
        return -ENOMEM;
    rc = created_unused(ctx, t, res, flagged);
    if (rc == 0)
        rc = indexed_ranges(ctx, t, res, flagged);
    if (rc == 0)
        serialized_streams(ctx, t, res, flagged);
    free(flagged);
    return rc;
}
