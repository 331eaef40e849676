/* Synthetic rank databases for the fleet benchmark (bench/bench_fleet.py, docs/benchmarks.md
 * "Many ranks: merge and queries"): writes one rank's database shaped like a data-parallel
 * training step, then derives the other ranks from it by copying the file and changing, with
 * SQL, what differs between ranks: host, pid, rank, GPU uuid, the host's wall clock and the
 * all-reduce's duration. The files stand for what `lantern profile -o run-%r.db` leaves.
 * Usage: bench_ranks DIR RANKS [EVENTS_PER_RANK=1000000] [RANKS_PER_HOST=8] [LATE_RANK LATE_NS]
 * With LATE_RANK, that rank's CPU stalls LATE_NS before each step (its GPU idles meanwhile) and
 * the other ranks wait for it inside the all-reduce, which lasts LATE_NS longer for them: every
 * rank's all-reduce still ends together, the late rank's starts LATE_NS after the others'
 * (what `lantern analyze`'s stragglers, rank_idle and comm_overlap must find: tests/merge).
 * One step (100 events; a range, a kernel or an API call is one event): NVTX "step" >
 * "forward" > 4 "layer N" ranges and "backward" > 4 "layer N", then "optimizer" (12 ranges);
 * 5 kernels per layer and 4 in the optimizer (one NCCL all-reduce), each launched by one
 * cudaLaunchKernel call (44 kernels, 44 API calls); NVML samples at 10 Hz. A step lasts ~4.3 ms. */
#include <fcntl.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db/import.h"
#include "bench_sql.h"

#define EVENTS_PER_STEP 100
#define LAYERS 4
#define KERNELS_PER_LAYER 5
#define OPTIMIZER_KERNELS 4
#define LAUNCH_NS 5000 /* a cudaLaunchKernel call */
#define SAMPLE_NS 100000000
#define START_WALL_NS 1764000000000000000LL
#define START_NS 1000000000LL

/* Kernel names (strings 10..) and their durations; the last one is the all-reduce. */
static const struct {
    const char *name;
    int64_t ns;
} kernel_kinds[] = {
    {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1", 180000},
    {"void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>", 30000},
    {"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16>", 25000},
    {"flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>>", 120000},
    {"void at::native::elementwise_kernel<128, 2, add_kernel>", 15000},
    {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x256x64_warpgroupsize2x1x1", 200000},
    {"void at::native::multi_tensor_apply_kernel<AdamFunctor<c10::BFloat16>>", 60000},
    {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
     900000},
};
#define KINDS (sizeof kernel_kinds / sizeof kernel_kinds[0])
#define ALLREDUCE (KINDS - 1)

struct gen {
    sqlite3_stmt *range, *close, *api, *kernel;
    int64_t range_id, api_id, gpu_free;
};

static int64_t range_open(struct gen *g, int64_t name, int64_t depth, int64_t parent, int64_t t)
{
    bind_step(g->range, 6, (int64_t[]){++g->range_id, name, depth, parent, t, t});
    return g->range_id;
}

static void range_close(struct gen *g, int64_t id, int64_t t)
{
    bind_step(g->close, 2, (int64_t[]){t, id});
}

/* One cudaLaunchKernel at t and the kernel it queues on stream 7, extra_ns longer than its
 * kind's; returns the call's end. */
static int64_t launch(struct gen *g, size_t kind, int64_t range, int64_t t, int64_t extra_ns)
{
    int64_t api = ++g->api_id, start = t + LAUNCH_NS + 2000;
    if (start < g->gpu_free)
        start = g->gpu_free;
    g->gpu_free = start + kernel_kinds[kind].ns + extra_ns;
    bind_step(g->api, 5, (int64_t[]){api, t, t + LAUNCH_NS, api, range});
    bind_step(g->kernel, 6,
              (int64_t[]){api, start, g->gpu_free, 10 + (int64_t)kind, api, range});
    return t + LAUNCH_NS;
}

/* stall_ns: the CPU's stall before each step; wait_ns: what the all-reduce waits for a late
 * rank. The GPU runs behind the CPU all through a step, so both shift its work exactly. */
static int generate(sqlite3 *db, long steps, int64_t stall_ns, int64_t wait_ns)
{
    if (exec_sql(db, "BEGIN;"
                 "INSERT INTO processes(id, pid, ppid, exe, cmdline, host, start_ns, end_ns,"
                 " clean_exit, raw_file, name, rank, local_rank, rank_variable) VALUES (1, 10000,"
                 " 9999, '/usr/bin/python3.12', 'python3 train.py', 'node000', 1000000000, 0,"
                 " 1, '10000-1.lrt', 'train.py', 0, 0, 'RANK');"
                 "INSERT INTO threads(id, process_id, tid, start_ns, os_name_id) VALUES"
                 " (1, 1, 10000, 1000000000, 3), (2, 1, 10001, 1000000000, 4);"
                 "INSERT INTO gpus(id, uuid, name, nvml_index, pci_bus_id, cc_major, cc_minor,"
                 " sm_count, memory_bytes, max_threads_per_sm, max_regs_per_sm, max_smem_per_sm,"
                 " max_blocks_per_sm, peak_fp32_flops, peak_fp16_flops, power_limit_mw) VALUES"
                 " (1, 'GPU-node000-0', 'NVIDIA H100 80GB HBM3', 0, '00000000:18:00.0', 9, 0,"
                 " 132, 85520809984, 2048, 65536, 233472, 32, 67e12, 989e12, 700000);"
                 "INSERT INTO process_gpus VALUES (1, 0, 1);"
                 "INSERT INTO cuda_contexts(process_id, context, gpu_id, device, null_stream)"
                 " VALUES (1, 1, 1, 0, 7);"
                 "INSERT INTO cuda_streams(process_id, context, stream, gpu_id, is_default)"
                 " VALUES (1, 1, 7, 1, 1);"
                 "INSERT INTO domains VALUES (0, NULL);"
                 "INSERT INTO strings VALUES (1, 'cudaLaunchKernel'), (2, 'step'),"
                 " (3, 'python3'), (4, 'pt_data_worker'), (5, 'forward'), (6, 'backward'),"
                 " (7, 'optimizer'), (20, 'layer 0'), (21, 'layer 1'), (22, 'layer 2'),"
                 " (23, 'layer 3');") < 0)
        return -1;
    sqlite3_stmt *name;
    sqlite3_prepare_v2(db, "INSERT INTO strings VALUES (?, ?)", -1, &name, NULL);
    for (size_t k = 0; k < KINDS; k++) {
        sqlite3_reset(name);
        sqlite3_bind_int64(name, 1, 10 + (int64_t)k);
        sqlite3_bind_text(name, 2, kernel_kinds[k].name, -1, SQLITE_STATIC);
        sqlite3_step(name);
    }
    sqlite3_finalize(name);
    struct gen g = {0};
    sqlite3_prepare_v2(db,
                       "INSERT INTO ranges(id, process_id, domain_id, name_id, category, style,"
                       " depth, parent_id, start_thread_id, end_thread_id, start_ns, end_ns)"
                       " VALUES (?, 1, 0, ?, 0, 0, ?, nullif(?, 0), 1, 1, ?, ?)",
                       -1, &g.range, NULL);
    sqlite3_prepare_v2(db, "UPDATE ranges SET end_ns = ? WHERE id = ?", -1, &g.close, NULL);
    sqlite3_prepare_v2(db,
                       "INSERT INTO cuda_api(id, process_id, thread_id, api, cbid, name_id,"
                       " start_ns, end_ns, return_code, correlation_id, nvtx_range_id) VALUES"
                       " (?, 1, 1, 0, 211, 1, ?, ?, 0, ?, ?)",
                       -1, &g.api, NULL);
    sqlite3_prepare_v2(db,
                       "INSERT INTO kernels(process_id, gpu_id, device, context, stream,"
                       " correlation_id, start_ns, end_ns, name_id, grid_x, grid_y, grid_z,"
                       " block_x, block_y, block_z, regs_per_thread, static_smem, dynamic_smem,"
                       " launch_type, api_id, nvtx_range_id) VALUES (1, 1, 0, 1, 7, ?, ?, ?, ?,"
                       " 132, 1, 1, 256, 1, 1, 128, 0, 49152, 0, ?, ?)",
                       -1, &g.kernel, NULL);
    int64_t t = START_NS + 1000000;
    for (long s = 0; s < steps; s++) {
        t += stall_ns;
        int64_t step = range_open(&g, 2, 0, 0, t);
        for (int phase = 0; phase < 2; phase++) {
            int64_t pass = range_open(&g, 5 + phase, 1, step, t += 1000);
            for (int l = 0; l < LAYERS; l++) {
                int64_t layer = range_open(&g, 20 + (phase ? LAYERS - 1 - l : l), 2, pass,
                                           t += 500);
                for (int k = 0; k < KERNELS_PER_LAYER; k++)
                    t = launch(&g, (size_t)(k + phase * 5 == 5 ? 5 : k), layer, t + 1000, 0);
                range_close(&g, layer, t += 500);
            }
            range_close(&g, pass, t += 500);
        }
        int64_t opt = range_open(&g, 7, 1, step, t += 1000);
        t = launch(&g, ALLREDUCE, opt, t + 1000, wait_ns);
        for (int k = 1; k < OPTIMIZER_KERNELS; k++)
            t = launch(&g, 6, opt, t + 1000, 0);
        t = g.gpu_free + 20000; /* the step waits for the GPU (loss.item()) */
        range_close(&g, opt, t);
        range_close(&g, step, t);
        t += 50000;
    }
    sqlite3_finalize(g.range);
    sqlite3_finalize(g.close);
    sqlite3_finalize(g.api);
    sqlite3_finalize(g.kernel);
    sqlite3_stmt *sample;
    sqlite3_prepare_v2(db,
                       "INSERT INTO gpu_samples(gpu_id, ts_ns, power_mw, energy_mj, sm_clock_mhz,"
                       " memory_clock_mhz, gpu_util, memory_used_bytes, temperature_c,"
                       " throttle_reasons, energy_uncertainty_ns) VALUES (1, ?, ?, ?, 1980, 2619,"
                       " 97, 60000000000, 62, 0, 0)",
                       -1, &sample, NULL);
    for (int64_t ts = START_NS; ts < t; ts += SAMPLE_NS)
        bind_step(sample, 3,
                  (int64_t[]){ts, 520000 + ts / SAMPLE_NS % 7 * 1000, (ts - START_NS) / 1000000 * 520});
    sqlite3_finalize(sample);
    char sql[1024];
    snprintf(sql, sizeof sql,
             "UPDATE processes SET end_ns = %" PRId64 ";"
             "INSERT INTO meta VALUES ('schema_version', 9), ('lantern_version', 'bench'),"
             " ('command', 'python3 train.py'), ('host', 'node000'), ('start_wall_ns', %lld),"
             " ('start_ns', %lld), ('end_ns', %" PRId64 "), ('clock', 'CLOCK_MONOTONIC'),"
             " ('trace', 'nvtx,cuda,nvml'), ('exit_status', 0), ('dropped_events', 0),"
             " ('truncated_strings', 0), ('import_warnings', 0), ('nvidia_gpu_present', 1);"
             "COMMIT;",
             t, START_WALL_NS, START_NS, t);
    return exec_sql(db, sql);
}

static int copy_file(const char *from, const char *to)
{
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_EXCL, 0644);
    struct stat st;
    int rc = in < 0 || out < 0 || fstat(in, &st) ? -1 : 0;
    for (off_t left = rc ? 0 : st.st_size; left > 0;) {
        ssize_t n = copy_file_range(in, NULL, out, NULL, (size_t)left, 0);
        if (n <= 0) {
            rc = -1;
            break;
        }
        left -= n;
    }
    if (in >= 0)
        close(in);
    if (out >= 0 && close(out))
        rc = -1;
    return rc;
}

/* Rank r from a template (rank 0's file, or the late rank's): its host (r / per_host), pid,
 * rank, GPU, the host's wall clock (a few µs of NTP offset per host) and an all-reduce that
 * ends r x 100 ns later. */
static int derive(const char *dir, const char *template, long r, long per_host)
{
    char from[4096], to[4096], sql[2048];
    snprintf(from, sizeof from, "%s/%s", dir, template);
    snprintf(to, sizeof to, "%s/rank%ld.db", dir, r);
    sqlite3 *db;
    if (copy_file(from, to) || sqlite3_open(to, &db) != SQLITE_OK)
        return fprintf(stderr, "bench_ranks: cannot write %s\n", to), -1;
    long host = r / per_host, local = r % per_host;
    snprintf(sql, sizeof sql,
             "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; BEGIN;"
             "UPDATE meta SET value = 'node%03ld' WHERE key = 'host';"
             "UPDATE meta SET value = %lld WHERE key = 'start_wall_ns';"
             "UPDATE processes SET host = 'node%03ld', pid = %ld, ppid = %ld, rank = %ld,"
             " local_rank = %ld, raw_file = '%ld-1.lrt';"
             "UPDATE threads SET tid = tid - 10000 + %ld;"
             "UPDATE gpus SET uuid = 'GPU-node%03ld-%ld', nvml_index = %ld,"
             " pci_bus_id = '00000000:%02lx:00.0';"
             "UPDATE kernels SET end_ns = end_ns + %ld WHERE name_id = %d;"
             "COMMIT;",
             host, START_WALL_NS + host * 7000, host, 10000 + local, 9999 - local, r, local,
             10000 + local, 10000 + local, host, local, local, 0x18 + local * 0x10, r * 100,
             10 + (int)ALLREDUCE);
    int rc = exec_sql(db, sql);
    sqlite3_close(db);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc == 6)
        return fprintf(stderr, "usage: bench_ranks DIR RANKS [EVENTS_PER_RANK] [RANKS_PER_HOST]"
                               " [LATE_RANK LATE_NS]\n"),
               2;
    const char *dir = argv[1];
    long ranks = atol(argv[2]), events = argc > 3 ? atol(argv[3]) : 1000000,
         per_host = argc > 4 ? atol(argv[4]) : 8, late = argc > 6 ? atol(argv[5]) : -1;
    int64_t late_ns = argc > 6 ? atoll(argv[6]) : 0;
    if (ranks < 1 || events < EVENTS_PER_STEP || per_host < 1 || late >= ranks ||
        (argc > 6 && (late < 0 || late_ns <= 0)))
        return fprintf(stderr, "bench_ranks: bad arguments\n"), 2;
    /* rank 0's file (waiting for the late rank if there is one), then the late rank's */
    const char *templates[2] = {"rank0.db", "late.template.db"};
    for (int k = 0; k < (late >= 0 ? 2 : 1); k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, templates[k]);
        sqlite3 *db;
        if (access(path, F_OK) == 0)
            return fprintf(stderr, "bench_ranks: %s exists\n", path), 1;
        if (sqlite3_open(path, &db) != SQLITE_OK || exec_sql(db, import_schema_sql) < 0)
            return fprintf(stderr, "bench_ranks: cannot create %s\n", path), 1;
        exec_sql(db, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;");
        if (generate(db, events / EVENTS_PER_STEP, k ? late_ns : 0, k ? 0 : late_ns) < 0 ||
            exec_sql(db, import_indexes_sql) < 0)
            return 1;
        sqlite3_close(db);
    }
    for (long r = 1; r < ranks; r++)
        if (derive(dir, r == late ? templates[1] : templates[0], r, per_host) < 0)
            return 1;
    if (late == 0) { /* rank 0 is the late one: its file is the late template, derived */
        char from[4096], to[4096];
        snprintf(from, sizeof from, "%s/rank0.db", dir);
        snprintf(to, sizeof to, "%s/rank0.db.unused", dir);
        if (rename(from, to) || derive(dir, templates[1], 0, per_host) < 0 || unlink(to))
            return 1;
    }
    if (late >= 0) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, templates[1]);
        unlink(path);
    }
    return 0;
}
