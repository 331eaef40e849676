/* The GPU metrics part of the importer: TRACE_GPU_METRIC_* records (100-119) of the launcher's
 * raw file into gpu_metric_sets (a GPU's row in gpus found or made by uuid, as NVML and CUDA
 * do), gpu_metric_samples (one row per sample, a column per metric of gpu_metrics.def, NULL
 * where the set lacks it) and gpu_metric_status. Layouts: src/trace/records.def. Damage is
 * skipped, never guessed at: a set without a GPU uuid, a sample of no known set, a sample
 * that ends before it starts (docs/trace-format.md, "GPU hardware metrics"). */
#include "db/import_internal.h"
#include "trace/format.h"
#include "trace/gpu_metrics.h"
#include "trace/records.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SLOT_GPU, SLOT_GPU_ID, SLOT_SET, SLOT_SAMPLE, SLOT_STATUS, SLOT_SAMPLER, SLOT_RELAY };

#define SETS_MAX 256 /* sets per file: one per GPU and source; more is damage */

/* One file's sets: its set ids to gpu_metric_sets rows, and each one's mask. */
struct gpu_metrics_file {
    struct import_file *f;
    struct {
        uint64_t file_id;
        int64_t row;
        uint32_t mask;
    } sets[SETS_MAX];
    size_t count;
    int warned;
};

static void *gpu_metrics_file_open(struct import_file *f, void *session_state)
{
    (void)session_state;
    struct gpu_metrics_file *g = calloc(1, sizeof *g);
    if (g)
        g->f = f;
    return g;
}

static void gpu_metrics_file_close(void *ctx)
{
    free(ctx);
}

static const char *source_name(uint64_t source)
{
    return source == TRACE_GPU_METRICS_PM_SAMPLING ? "CUPTI PM sampling"
           : source == TRACE_GPU_METRICS_GPM       ? "NVML GPM"
                                                   : NULL;
}

/* gpus.id of a uuid, made when no other source described that GPU; 0 on failure. */
static int64_t gpu_of(struct import_file *f, struct trace_bytes uuid, struct trace_bytes name,
                      uint64_t nvml_index_plus_1)
{
    sqlite3_stmt *st = import_stmt(f, SLOT_GPU,
                                   "INSERT INTO gpus(uuid, name, nvml_index) VALUES(?, ?, ?)"
                                   " ON CONFLICT(uuid) DO UPDATE SET"
                                   " name = COALESCE(gpus.name, excluded.name),"
                                   " nvml_index = COALESCE(gpus.nvml_index, excluded.nvml_index)");
    if (!st)
        return 0;
    import_bind_row(st, IMPORT_BYTES(uuid), IMPORT_BYTES(name), IMPORT_PLUS_ONE(nvml_index_plus_1));
    if (import_step(f, st, "cannot store a GPU: ") < 0 ||
        !(st = import_stmt(f, SLOT_GPU_ID, "SELECT id FROM gpus WHERE uuid = ?")))
        return 0;
    import_bind_row(st, IMPORT_BYTES(uuid));
    return sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
}

/* The hardware names, NUL-separated in the trace (a trailing NUL or not), as one text with
 * "; " between them. */
static char *hardware_text(struct trace_bytes b)
{
    size_t len = b.len;
    while (len && !b.bytes[len - 1])
        len--;
    char *s = malloc(len * 2 + 1);
    size_t n = 0;
    if (!s)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        if (b.bytes[i]) {
            s[n++] = (char)b.bytes[i];
        } else {
            s[n++] = ';';
            s[n++] = ' ';
        }
    }
    s[n] = 0;
    return s;
}

/* The mask's columns, comma-separated (every column fits: at most 16 names of < 16 bytes). */
static void mask_columns(uint32_t mask, char *out, size_t size)
{
    size_t len = 0;
    out[0] = 0;
    for (int i = 0; i < GPU_METRIC_COUNT && len < size; i++)
        if (mask & (1u << i))
            len += (size_t)snprintf(out + len, size - len, "%s%s", len ? "," : "",
                                    gpu_metrics[i].column);
}

static int import_set(struct gpu_metrics_file *g, struct trace_fields *fl)
{
    struct trace_gpu_metric_set r;
    trace_get_gpu_metric_set(fl, &r);
    const char *source = source_name(r.source);
    /* bits past gpu_metrics.def's rows are a newer launcher's metrics: their values come
     * after those of the known ones (bit order), so dropping them keeps the rest in place */
    uint32_t mask = (uint32_t)r.metrics & ((1u << GPU_METRIC_COUNT) - 1);
    if (!source || !r.gpu_uuid.len) {
        import_warn(g->f, "a GPU metric set without %s was skipped (source %llu)",
                    source ? "a GPU uuid" : "a known source", (unsigned long long)r.source);
        return 0;
    }
    if (g->count == SETS_MAX) {
        import_warn(g->f, "more than %d GPU metric sets in one file: the others were skipped",
                    SETS_MAX);
        return 0;
    }
    int64_t gpu = gpu_of(g->f, r.gpu_uuid, r.gpu_name, r.nvml_index);
    sqlite3_stmt *st = import_stmt(g->f, SLOT_SET,
                                   "INSERT INTO gpu_metric_sets(gpu_id, source, period_ns, metrics,"
                                   " hardware, chip) VALUES(?, ?, ?, ?, ?, ?)");
    char columns[512];
    char *hardware = hardware_text(r.hardware);
    if (!gpu || !st || !hardware) {
        free(hardware);
        return -EIO;
    }
    mask_columns(mask, columns, sizeof columns);
    import_bind_row(st, IMPORT_INT(gpu), IMPORT_TEXT(source), IMPORT_INT(r.period_ns),
                    IMPORT_TEXT_COPY(columns), IMPORT_TEXT_COPY(hardware), IMPORT_BYTES(r.chip));
    free(hardware);
    if (import_step(g->f, st, "cannot store a GPU metric set: ") < 0)
        return -EIO;
    g->sets[g->count].file_id = r.set_id;
    g->sets[g->count].row = sqlite3_last_insert_rowid(import_db(g->f));
    g->sets[g->count].mask = mask;
    g->count++;
    return 0;
}

/* The set a sample or a sampler record names: the latest set of that id in the file (a
 * sampler that restarts may define an id again), or -1. */
static int set_index(const struct gpu_metrics_file *g, uint64_t file_id)
{
    for (size_t i = g->count; i-- > 0;)
        if (g->sets[i].file_id == file_id)
            return (int)i;
    return -1;
}

static int import_sample(struct gpu_metrics_file *g, struct trace_fields *fl)
{
    struct trace_gpu_metric_sample r;
    trace_get_gpu_metric_sample(fl, &r);
    int set = set_index(g, r.set_id);
    if (set < 0) {
        if (!g->warned++)
            import_warn(g->f, "GPU metric samples of an unknown set were skipped");
        return 0;
    }
    if (r.end < r.start) { /* damage: its values would be averages over a negative span */
        import_malformed(g->f);
        return 0;
    }
    static const char sql[] = "INSERT INTO gpu_metric_samples(set_id, start_ns, end_ns"
#define GPU_METRIC(ID, column, unit, gpm_id, gpm_scale, cupti, definition) ", " column
#include "trace/gpu_metrics.def"
#undef GPU_METRIC
                              ") VALUES(?, ?, ?"
#define GPU_METRIC(ID, column, unit, gpm_id, gpm_scale, cupti, definition) ", ?"
#include "trace/gpu_metrics.def"
#undef GPU_METRIC
                              ")";
    sqlite3_stmt *st = import_stmt(g->f, SLOT_SAMPLE, sql);
    if (!st)
        return -EIO;
    import_bind_row(st, IMPORT_INT(g->sets[set].row), IMPORT_INT(r.start), IMPORT_INT(r.end));
    /* values in bit order; a short list leaves the last metrics NULL */
    struct import_value metrics[GPU_METRIC_COUNT];
    size_t value = 0;
    for (int i = 0; i < GPU_METRIC_COUNT; i++)
        metrics[i] =
            (g->sets[set].mask & (1u << i)) && value < r.values.count && value < TRACE_U_LIST_MAX
                ? IMPORT_REAL(gpu_metric_decode(i, r.values.values[value++]))
                : IMPORT_NULL;
    import_bind_values(st, 4, metrics, GPU_METRIC_COUNT);
    return import_step(g->f, st, "cannot store a GPU metric sample: ");
}

static int import_status(struct gpu_metrics_file *g, struct trace_fields *fl)
{
    static const char *const codes[] = {
        [TRACE_GPU_METRICS_UNAVAILABLE] = "unavailable",
        [TRACE_GPU_METRICS_NOT_PERMITTED] = "not permitted",
        [TRACE_GPU_METRICS_BUSY] = "busy",
        [TRACE_GPU_METRICS_LOST] = "lost",
        [TRACE_GPU_METRICS_FAILED] = "failed",
        [TRACE_GPU_METRICS_CRASHED] = "crashed",
        [TRACE_GPU_METRICS_HUNG] = "hung",
    };
    struct trace_gpu_metric_status r;
    trace_get_gpu_metric_status(fl, &r);
    int64_t gpu = r.gpu_uuid.len ? gpu_of(g->f, r.gpu_uuid, (struct trace_bytes){0}, 0) : 0;
    sqlite3_stmt *st = import_stmt(g->f, SLOT_STATUS,
                                   "INSERT INTO gpu_metric_status(gpu_id, source, code, count,"
                                   " reason) VALUES(?, ?, ?, ?, ?)");
    if (!st)
        return -EIO;
    const char *code = r.code < sizeof codes / sizeof codes[0] ? codes[r.code] : NULL;
    import_bind_row(st, IMPORT_NONZERO(gpu), IMPORT_TEXT(source_name(r.source)), IMPORT_TEXT(code),
                    IMPORT_INT(r.count), IMPORT_BYTES(r.reason));
    return import_step(g->f, st, "cannot store a GPU metric status: ");
}

static int import_sampler(struct gpu_metrics_file *g, struct trace_fields *fl)
{
    struct trace_gpu_metric_sampler r;
    trace_get_gpu_metric_sampler(fl, &r);
    int set = set_index(g, r.set_id); /* the latest set of that id, as a sample's */
    if (set < 0)
        return 0;
    sqlite3_stmt *st = import_stmt(g->f, SLOT_SAMPLER,
                                   "UPDATE gpu_metric_sets SET samples = ?, lost_samples = ?,"
                                   " duration_ns = ?, sampler_cpu_ns = ?, sampler_reads = ?,"
                                   " sampler_read_ns = ? WHERE id = ?");
    if (!st)
        return -EIO;
    import_bind_row(st, IMPORT_INT(r.samples), IMPORT_INT(r.lost), IMPORT_INT(r.duration_ns),
                    IMPORT_INT(r.cpu_ns), IMPORT_INT(r.reads), IMPORT_INT(r.read_ns),
                    IMPORT_INT(g->sets[set].row));
    return import_step(g->f, st, "cannot store a GPU metric sampler: ");
}

/* The sampler child's cost, as the launcher measured it (gpu_metrics_sampler.c). */
static int import_relay(struct gpu_metrics_file *g, struct trace_fields *fl)
{
    struct trace_gpu_metric_relay r;
    trace_get_gpu_metric_relay(fl, &r);
    int set = set_index(g, r.set_id);
    if (set < 0)
        return 0;
    sqlite3_stmt *st = import_stmt(g->f, SLOT_RELAY,
                                   "UPDATE gpu_metric_sets SET sampler_process_cpu_ns = ?,"
                                   " sampler_max_rss_kib = ?, delivery_mean_ns = ?,"
                                   " delivery_max_ns = ?, relay_cpu_ns = ? WHERE id = ?");
    if (!st)
        return -EIO;
    import_bind_row(st, IMPORT_INT(r.cpu_ns), IMPORT_INT(r.max_rss_kib),
                    r.samples ? IMPORT_INT(r.delay_sum_ns / r.samples) : IMPORT_NULL,
                    r.samples ? IMPORT_INT(r.delay_max_ns) : IMPORT_NULL,
                    IMPORT_INT(r.relay_cpu_ns), IMPORT_INT(g->sets[set].row));
    return import_step(g->f, st, "cannot store a GPU metric sampler's cost: ");
}

static int gpu_metrics_record(void *ctx, unsigned type, struct trace_fields *fields)
{
    struct gpu_metrics_file *g = ctx;
    switch (type) {
    case TRACE_GPU_METRIC_SET:
        return import_set(g, fields);
    case TRACE_GPU_METRIC_SAMPLE:
        return import_sample(g, fields);
    case TRACE_GPU_METRIC_STATUS:
        return import_status(g, fields);
    case TRACE_GPU_METRIC_SAMPLER:
        return import_sampler(g, fields);
    case TRACE_GPU_METRIC_RELAY:
        return import_relay(g, fields);
    default:
        return IMPORT_RECORD_UNKNOWN; /* a newer launcher's record: skipped and counted */
    }
}

/* After every file (the kernels are in): GPM's samples lined up with them. */
static int gpu_metrics_session_finish(sqlite3 *db, void *state, uint64_t records)
{
    (void)state;
    return records ? import_gpu_metrics_align(db) : 0;
}

extern const char import_gpu_metrics_window_sql[];

const struct import_source import_source_GPU_METRICS = {
    .file_open = gpu_metrics_file_open,
    .record = gpu_metrics_record,
    .file_close = gpu_metrics_file_close,
    .session_finish = gpu_metrics_session_finish,
    .window_sql = import_gpu_metrics_window_sql,
};
