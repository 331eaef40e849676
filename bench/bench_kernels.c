/* Benchmark of `lantern kernels` (docs/benchmarks.md, "Kernels report"): builds a database of
 * N kernels shaped like a PyTorch training run under emit_nvtx (every kernel in its own op
 * range with shapes, ops inside user layer ranges, half of them backward on an autograd
 * thread), then times the report in each format on one core.
 * Usage: bench_kernels [N=1000000] [DB=/tmp/lantern_bench_kernels.db] [keep|drop] [EXTRA=0]
 * EXTRA adds that many kernel-less op ranges (aten::view-like, with shapes) before each
 * kernel's op, as real PyTorch traces have: the report reads them but attributes nothing. */
#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_sql.h"
#include "model/kernels.h"

#define KERNELS_PER_LAYER 100

static const char *const kernel_names[] = {
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
    "segment_k_off_kernel__5x_cublas",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>"
    ", std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*"
    ", 3ul>)",
    "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float,"
    " float, float, float>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::"
    "MeanOps<float, float, float, float>, unsigned int, float, 4>)",
};
#define NAME_COUNT (sizeof kernel_names / sizeof kernel_names[0])

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    return text;
}

/* Inserts a string and returns its id (ids are assigned in order from 1). */
static int64_t add_string(sqlite3_stmt *st, int64_t *next_id, const char *value)
{
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, *next_id);
    sqlite3_bind_text(st, 2, value, -1, SQLITE_TRANSIENT);
    sqlite3_step(st);
    return (*next_id)++;
}

static void add_range(sqlite3_stmt *st, int64_t id, int64_t name_id, int64_t parent, int thread,
                      int64_t start)
{
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, name_id);
    if (parent)
        sqlite3_bind_int64(st, 3, parent);
    else
        sqlite3_bind_null(st, 3);
    sqlite3_bind_int(st, 4, thread);
    sqlite3_bind_int64(st, 5, start);
    sqlite3_step(st);
}

static void add_kernel(sqlite3_stmt *st, int64_t start, int64_t name_id, int api, int64_t range)
{
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, start);
    sqlite3_bind_int64(st, 2, start + 900 + (start % 7) * 100);
    sqlite3_bind_int64(st, 3, name_id);
    sqlite3_bind_int(st, 4, api);
    sqlite3_bind_int64(st, 5, range);
    sqlite3_step(st);
}

static int generate(sqlite3 *db, long count, long extra)
{
    if (exec_sql(db, "BEGIN;"
                 "INSERT INTO meta VALUES ('schema_version', 9);"
                 "INSERT INTO processes(id, pid) VALUES (1, 1);"
                 "INSERT INTO threads(id, process_id, tid) VALUES (1, 1, 100), (2, 1, 101);"
                 "INSERT INTO cuda_api(id, process_id, thread_id, api, start_ns, end_ns)"
                 " VALUES (1, 1, 1, 0, 0, 1), (2, 1, 2, 0, 0, 1);"
                 "INSERT INTO gpus(id, uuid, sm_count, cc_major, max_threads_per_sm,"
                 " max_regs_per_sm, max_smem_per_sm, max_blocks_per_sm, peak_fp32_flops,"
                 " peak_bf16_flops, peak_dram_bytes_per_s) VALUES (1, 'GPU-1', 132, 9, 2048,"
                 " 65536, 233472, 32, 60e12, 990e12, 3.35e12);") < 0)
        return -1;
    sqlite3_stmt *string_st, *range_st, *kernel_st;
    sqlite3_prepare_v2(db, "INSERT INTO strings(id, value) VALUES (?, ?)", -1, &string_st, NULL);
    sqlite3_prepare_v2(db,
                       "INSERT INTO ranges(id, process_id, name_id, style, parent_id,"
                       " start_thread_id, start_ns) VALUES (?, 1, ?, 0, ?, ?, ?)",
                       -1, &range_st, NULL);
    sqlite3_prepare_v2(db,
                       "INSERT INTO kernels(process_id, gpu_id, device, stream, start_ns,"
                       " end_ns, demangled_id, grid_x, grid_y, grid_z, block_x, block_y,"
                       " block_z, regs_per_thread, static_smem, dynamic_smem, api_id,"
                       " nvtx_range_id) VALUES (1, 1, 0, 7, ?, ?, ?, 264, 1, 1, 256, 1, 1,"
                       " 96, 0, 32768, ?, ?)",
                       -1, &kernel_st, NULL);
    int64_t next_string = 1, next_range = 1, names[NAME_COUNT];
    for (size_t i = 0; i < NAME_COUNT; i++)
        names[i] = add_string(string_st, &next_string, kernel_names[i]);
    int64_t layer = 0, engine = 0;
    char text[256];
    for (long k = 0; k < count; k++) {
        int64_t start = 1000 + (int64_t)k * 2000, seq = k / 2;
        int backward = k % 2;
        if (k % KERNELS_PER_LAYER == 0) {
            snprintf(text, sizeof text, "layer%ld", k / KERNELS_PER_LAYER);
            layer = next_range++;
            add_range(range_st, layer, add_string(string_st, &next_string, text), 0, 1, start);
            engine = next_range++;
            add_range(range_st, engine,
                      add_string(string_st, &next_string,
                                 "autograd::engine::evaluate_function: AddmmBackward0"),
                      0, 2, start);
        }
        int64_t parent = layer;
        if (backward) {
            snprintf(text, sizeof text, "AddmmBackward0, seq = %" PRId64 ", op_id = %ld", seq, k);
            parent = next_range++;
            add_range(range_st, parent, add_string(string_st, &next_string, text), engine, 2,
                      start);
            snprintf(text, sizeof text,
                     "aten::mm, seq = %ld, op_id = %ld, sizes = [[64, 1024], "
                     "[1024, 512]]",
                     count + k, k);
        } else {
            snprintf(text, sizeof text,
                     "aten::addmm, seq = %" PRId64 ", op_id = %ld, sizes = "
                     "[[1024], [64, 512], [512, 1024], [], []]",
                     seq, k);
        }
        for (long e = 0; e < extra; e++) {
            snprintf(text, sizeof text,
                     "aten::view, seq = %ld, op_id = %ld, sizes = [[64, 512], []]", k,
                     k * (extra + 1) + e);
            add_range(range_st, next_range++, add_string(string_st, &next_string, text), parent,
                      backward ? 2 : 1, start);
        }
        int64_t op = next_range++;
        add_range(range_st, op, add_string(string_st, &next_string, text), parent, backward ? 2 : 1,
                  start);
        add_kernel(kernel_st, start, names[k % NAME_COUNT], backward ? 2 : 1, op);
    }
    sqlite3_finalize(string_st);
    sqlite3_finalize(range_st);
    sqlite3_finalize(kernel_st);
    return exec_sql(db, "COMMIT;");
}

static double time_report(sqlite3 *db, enum kernels_format format, const char *columns)
{
    FILE *out = fopen("/dev/null", "w");
    struct kernels_options opt = {.format = format, .columns = columns};
    double t0 = now_s();
    int rc = kernels_write(db, &opt, out);
    double t1 = now_s();
    fclose(out);
    if (rc < 0) {
        fprintf(stderr, "bench_kernels: report failed: %s\n", strerror(-rc));
        exit(1);
    }
    return t1 - t0;
}

int main(int argc, char **argv)
{
    long count = argc > 1 ? atol(argv[1]) : 1000000;
    long extra = argc > 4 ? atol(argv[4]) : 0;
    const char *path = argc > 2 ? argv[2] : "/tmp/lantern_bench_kernels.db";
    const char *schema = read_file(LANTERN_SOURCE_DIR "/src/db/schema.sql");
    if (!schema)
        return fprintf(stderr, "bench_kernels: cannot read schema.sql\n"), 1;
    unlink(path);
    sqlite3 *db;
    if (sqlite3_open(path, &db) != SQLITE_OK ||
        exec_sql(db, "PRAGMA journal_mode=OFF;"
                 "PRAGMA synchronous=OFF;") < 0 ||
        exec_sql(db, schema) < 0)
        return 1;
    double t0 = now_s();
    if (generate(db, count, extra) < 0 ||
        exec_sql(db, read_file(LANTERN_SOURCE_DIR "/src/db/indexes.sql")) < 0)
        return 1;
    printf("generated %ld kernels (%ld ranges) in %.2f s\n", count,
           count + count / 2 + count * extra, now_s() - t0);
    sqlite3_close(db);
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        return 1;
    printf("text, default columns:  %.2f s\n", time_report(db, KERNELS_FORMAT_TEXT, NULL));
    printf("csv, default columns:   %.2f s\n", time_report(db, KERNELS_FORMAT_CSV, NULL));
    printf("json, default columns:  %.2f s\n", time_report(db, KERNELS_FORMAT_JSON, NULL));
    printf("csv, idx,op,flops:      %.2f s\n", time_report(db, KERNELS_FORMAT_CSV, "idx,op,flops"));
    sqlite3_close(db);
    if (argc <= 3 || strcmp(argv[3], "keep") != 0)
        unlink(path);
    return 0;
}
