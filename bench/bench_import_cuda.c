/* The CUDA importer at scale (docs/benchmarks.md, "Importer", CUDA): writes a synthetic session
 * shaped like a PyTorch training run under `lantern profile -t cuda,nvtx`, with the generated
 * encoders, in the records and order the agent writes (CUPTI's records and TRACE_STRINGs under
 * the writer lock, NVTX as each thread's event stream after a TRACE_CLOCK); imports it in a
 * child process (CPU time, wall time and peak RSS from wait4); then times the reports users run
 * first, each a `lantern` process of its own.
 * Usage: bench_import_cuda [CUDA events (10000000)] [processes (2)] [DIR]
 * With DIR the session (DIR/raw) and its database (DIR/session.db) are kept there. The reports
 * run this build's lantern, or $LANTERN_BIN.
 *
 * Per process (a data-parallel rank): a main thread and PyTorch's autograd thread. A step: a
 * "step" range on the main thread holding "data" (two pinned host-to-device copies on a copy
 * stream), "forward" (LAYERS layer ranges of FORWARD_KERNELS kernels), "optimizer" (fused
 * multi-tensor kernels) and the loss read back (a pageable device-to-host copy and a
 * cudaStreamSynchronize); "backward" on the autograd thread (the layers in reverse, twice the
 * kernels, and gradient memsets), joined by cudaEventRecord/cudaStreamWaitEvent. Each kernel
 * has its launching call (cudaLaunchKernel; cuLaunchKernelEx for the GEMMs, as cuBLAS calls
 * the driver on Hopper), each copy and memset its cudaMemcpyAsync / cudaMemsetAsync. Kernel
 * names: a few hundred mangled ATen templates, cuBLAS and Triton names, each launch site
 * keeping its name from step to step. An event is one record of a row: a call, a kernel, a
 * copy, a memset; an NVTX range is two (push and pop), as in bench_import. */
#include "import/raw_writer.h"
#include "trace/events.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_sql.h"
#include "db/import.h"

#define CHUNK_BYTES (1u << 20)
#define LAYERS 24
#define FORWARD_KERNELS 10 /* per layer; backward launches twice as many */
#define OPTIMIZER_KERNELS 40
#define GRAD_MEMSETS 8
#define COMPUTE_STREAM 7
#define COPY_STREAM 14
/* CUDA events of one step: kernels and their calls, 3 copies and 8 memsets with theirs, the
 * synchronize, 3 cudaEventRecord and 1 cudaStreamWaitEvent. */
#define KERNELS_PER_STEP (LAYERS * FORWARD_KERNELS * 3 + OPTIMIZER_KERNELS)
#define CUDA_EVENTS_PER_STEP (2 * KERNELS_PER_STEP + 2 * 3 + 2 * GRAD_MEMSETS + 1 + 4)

/* ---- kernel names ------------------------------------------------------------------------ */

/* ATen's vectorized elementwise kernels over functors, element types and operand counts: the
 * bulk of a PyTorch trace's distinct names (mangled, as CUPTI gives them). */
static const char *const functors[] = {
    "FillFunctor",      "CUDAFunctor_add",  "MulFunctor",        "AddFunctor",
    "DivFunctor",       "GeluCUDAKernelImpl", "SiluFunctor",     "sigmoid_kernel_cuda",
    "tanh_kernel_cuda", "neg_kernel_cuda",  "reciprocal_kernel", "sqrt_kernel_cuda",
    "rsqrt_kernel_cuda", "exp_kernel_cuda", "log_kernel_cuda",   "abs_kernel_cuda",
    "where_kernel_impl", "clamp_kernel_cuda", "pow_tensor_scalar", "bernoulli_functor",
};
static const char *const dtypes[] = {"f", "d", "N3c104HalfE", "N3c108BFloat16E", "i", "l"};
static const char *const gemms[] = {
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
    "segment_k_off_kernel__5x_cublas",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_"
    "segment_k_off_kernel__5x_cublas",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize64x128x64_warpgroupsize1x1x1_execute_"
    "segment_k_off_kernel__5x_cublas",
    "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn",
    "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_nn",
    "ampere_bf16_s16816gemm_bf16_64x64_sliced1x2_ldg8_f2f_stages_64x5_nt",
    "cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_nn_align8",
    "cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8",
};
#define GEMM_NAMES (sizeof gemms / sizeof gemms[0])
#define TRITON_NAMES 24
#define ELEMENTWISE_NAMES (20 * 6 * 2)
#define NAMES (GEMM_NAMES + TRITON_NAMES + ELEMENTWISE_NAMES)

static void kernel_name(unsigned i, char *out, size_t size)
{
    if (i < GEMM_NAMES) {
        snprintf(out, size, "%s", gemms[i]);
        return;
    }
    i -= GEMM_NAMES;
    if (i < TRITON_NAMES) {
        static const char *const ops[] = {"add_mul", "native_layer_norm", "gelu", "softmax",
                                          "mean_pow", "addmm_relu"};
        snprintf(out, size, "triton_%s_fused_%s_%u", i % 2 ? "red" : "poi", ops[i % 6], i);
        return;
    }
    i -= TRITON_NAMES;
    const char *functor = functors[i % 20], *dtype = dtypes[i / 20 % 6];
    unsigned vector = i / 120 ? 8 : 4, operands = 1 + i % 3;
    snprintf(out, size,
             "_ZN2at6native29vectorized_elementwise_kernelILi%uENS0_%zu%sI%sEENS_6detail5ArrayIPcLi"
             "%uEEEEEviT0_T1_",
             vector, strlen(functor), functor, dtype, operands);
}

/* ---- one process's file ------------------------------------------------------------------ */

struct stream_thread {
    uint64_t idx, tid, ticks, cpu_ns; /* ticks: the stream's last event; cpu_ns: its clock */
    uint8_t events[16384];
    size_t len;
    uint64_t defined; /* bit i: name i of the NVTX names defined in this stream */
};

struct process_writer {
    struct raw_writer w;
    struct stream_thread main, autograd;
    uint64_t next_string, correlation, gpu_free[2];
    uint64_t kernel_names[NAMES], nvtx_names[LAYERS + 8], api_names[8];
};

enum { API_LAUNCH, API_LAUNCH_EX, API_MEMCPY, API_MEMSET, API_SYNC, API_EVENT_RECORD,
       API_WAIT_EVENT };
static const char *const api_name_text[] = {"cudaLaunchKernel", "cuLaunchKernelEx",
                                            "cudaMemcpyAsync", "cudaMemsetAsync",
                                            "cudaStreamSynchronize", "cudaEventRecord",
                                            "cudaStreamWaitEvent"};
static const char *const nvtx_fixed[] = {"step", "data", "forward", "backward", "optimizer"};

static uint64_t mix(uint64_t x)
{
    x ^= x >> 31;
    x *= 0x9E3779B97F4A7C15u;
    return x ^ (x >> 29);
}

/* Starts a new chunk when the current one is nearly full, as the agent's writer does. */
static void make_room(struct process_writer *p, size_t bytes)
{
    if (p->w.b.cap - p->w.b.len > bytes + 256)
        return;
    raw_flush(&p->w, 0);
    raw_chunk(&p->w, p->main.cpu_ns);
}

static uint64_t define_string(struct process_writer *p, const char *s)
{
    make_room(p, strlen(s));
    raw_string(&p->w, ++p->next_string, s);
    return p->next_string;
}

/* A thread's drained events: one TRACE_THREAD_EVENTS record, as the agent's writer copies. */
static void drain(struct process_writer *p, struct stream_thread *t)
{
    if (!t->len)
        return;
    make_room(p, t->len + 16);
    RAW(&p->w, thread_events, .thread_idx = t->idx, .events = trace_bytes(t->events, t->len));
    t->len = 0;
}

/* A push or pop into the thread's stream (trace/events.h); a name's first use defines it
 * with a STRING event, as thread_events.h does. */
static void nvtx_event(struct process_writer *p, struct stream_thread *t, unsigned op,
                       uint64_t depth, unsigned name)
{
    if (sizeof t->events - t->len < 256)
        drain(p, t);
    uint8_t *e = t->events + t->len;
    if (op == TRACE_EV_PUSH && !(t->defined >> name & 1)) {
        const char *text = name < 5 ? nvtx_fixed[name] : NULL;
        char layer[32];
        if (!text) {
            snprintf(layer, sizeof layer, "model.layers.%u", name - 5);
            text = layer;
        }
        if (!p->nvtx_names[name])
            p->nvtx_names[name] = ++p->next_string;
        *e++ = TRACE_EV_STRING;
        e = trace_ev_u(e, p->nvtx_names[name]);
        e = trace_ev_u(e, strlen(text));
        memcpy(e, text, strlen(text));
        e += strlen(text);
        t->defined |= 1ull << name;
    }
    *e++ = (uint8_t)op;
    e = trace_ev_i(e, (int64_t)(t->cpu_ns - t->ticks));
    t->ticks = t->cpu_ns;
    e = trace_ev_u(e, depth);
    if (op == TRACE_EV_PUSH)
        e = trace_ev_u(e, p->nvtx_names[name]);
    t->len = (size_t)(e - t->events);
}

/* One call of the thread, lasting ns; returns its correlation id. */
static uint64_t api_call(struct process_writer *p, struct stream_thread *t, unsigned api,
                         uint64_t ns)
{
    make_room(p, 64);
    uint64_t correlation = ++p->correlation;
    RAW(&p->w, cuda_api, .os_tid = t->tid, .api = api == API_LAUNCH_EX, .cbid = 200 + api,
        .name = p->api_names[api], .start = t->cpu_ns, .end = t->cpu_ns + ns,
        .correlation = correlation);
    t->cpu_ns += ns + 1500;
    return correlation;
}

/* The GPU interval of work on a stream: after its launch and after the stream's last work. */
static uint64_t gpu_start(struct process_writer *p, int copy, uint64_t launched)
{
    uint64_t start = p->gpu_free[copy] > launched + 4000 ? p->gpu_free[copy] : launched + 4000;
    return start;
}

static void launch(struct process_writer *p, struct stream_thread *t, unsigned site)
{
    uint64_t h = mix(site + 1);
    unsigned name = site % 3 == 0 ? (unsigned)(h % GEMM_NAMES)
                                  : GEMM_NAMES + (unsigned)(h % (NAMES - GEMM_NAMES));
    int gemm = name < GEMM_NAMES;
    uint64_t launched = t->cpu_ns;
    uint64_t correlation = api_call(p, t, gemm ? API_LAUNCH_EX : API_LAUNCH, 3000 + h % 3000);
    uint64_t start = gpu_start(p, 0, launched), end = start + 2000 + h % (gemm ? 90000 : 12000);
    p->gpu_free[0] = end;
    make_room(p, 128);
    RAW(&p->w, cuda_kernel, .device = 0, .context = 1, .stream = COMPUTE_STREAM,
        .correlation = correlation, .start = start, .end = end, .name = p->kernel_names[name],
        .grid_x = 1 + h % 4096, .grid_y = 1 + (h >> 12) % 4, .grid_z = 1, .block_x = 128u << (h % 3),
        .block_y = 1, .block_z = 1, .cluster_x = gemm ? 2 : 1, .cluster_y = 1, .cluster_z = 1,
        .registers_per_thread = 16 + (h >> 20) % 200, .static_smem = gemm ? 0 : (h >> 8) % 4096,
        .dynamic_smem = gemm ? 200704 : 0, .launch_type = gemm ? 3 : 0);
}

static void copy(struct process_writer *p, struct stream_thread *t, int to_device, uint64_t bytes)
{
    uint64_t launched = t->cpu_ns;
    uint64_t correlation = api_call(p, t, API_MEMCPY, to_device ? 4000 : 9000);
    int stream = to_device ? 1 : 0;
    uint64_t start = gpu_start(p, stream, launched), end = start + bytes / 20;
    p->gpu_free[stream] = end;
    make_room(p, 64);
    RAW(&p->w, cuda_memcpy, .device = 0, .context = 1,
        .stream = to_device ? COPY_STREAM : COMPUTE_STREAM, .correlation = correlation,
        .start = start, .end = end, .copy_kind = to_device ? TRACE_CUDA_COPY_HTOD : TRACE_CUDA_COPY_DTOH,
        .bytes = bytes, .src_kind = to_device ? TRACE_CUDA_MEM_PINNED : TRACE_CUDA_MEM_DEVICE,
        .dst_kind = to_device ? TRACE_CUDA_MEM_DEVICE : TRACE_CUDA_MEM_PAGEABLE,
        .async = to_device, .src_device = 0, .dst_device = 0);
}

static void memset_grad(struct process_writer *p, struct stream_thread *t, uint64_t bytes)
{
    uint64_t launched = t->cpu_ns;
    uint64_t correlation = api_call(p, t, API_MEMSET, 3500);
    uint64_t start = gpu_start(p, 0, launched), end = start + 1000 + bytes / 1000;
    p->gpu_free[0] = end;
    make_room(p, 64);
    RAW(&p->w, cuda_memset, .device = 0, .context = 1, .stream = COMPUTE_STREAM,
        .correlation = correlation, .start = start, .end = end, .bytes = bytes, .value = 0,
        .mem_kind = TRACE_CUDA_MEM_DEVICE, .async = 1);
}

static void sync_compute(struct process_writer *p, struct stream_thread *t)
{
    uint64_t done = p->gpu_free[0] > t->cpu_ns ? p->gpu_free[0] - t->cpu_ns + 2000 : 2000;
    api_call(p, t, API_SYNC, done);
}

static void step(struct process_writer *p, unsigned n)
{
    struct stream_thread *m = &p->main, *a = &p->autograd;
    unsigned site = 0;
    nvtx_event(p, m, TRACE_EV_PUSH, 0, 0);
    nvtx_event(p, m, TRACE_EV_PUSH, 1, 1);
    copy(p, m, 1, 8u << 20);
    copy(p, m, 1, 64u << 10);
    api_call(p, m, API_EVENT_RECORD, 1500);
    nvtx_event(p, m, TRACE_EV_POP, 1, 0);
    nvtx_event(p, m, TRACE_EV_PUSH, 1, 2);
    api_call(p, m, API_WAIT_EVENT, 1500);
    for (unsigned l = 0; l < LAYERS; l++) {
        nvtx_event(p, m, TRACE_EV_PUSH, 2, 5 + l);
        for (unsigned k = 0; k < FORWARD_KERNELS; k++)
            launch(p, m, site++);
        nvtx_event(p, m, TRACE_EV_POP, 2, 0);
    }
    nvtx_event(p, m, TRACE_EV_POP, 1, 0);
    /* backward() on the main thread waits for the autograd thread */
    a->cpu_ns = m->cpu_ns + 20000;
    nvtx_event(p, a, TRACE_EV_PUSH, 0, 3);
    for (unsigned g = 0; g < GRAD_MEMSETS; g++)
        memset_grad(p, a, (uint64_t)(1 + g) << 20);
    for (unsigned l = LAYERS; l-- > 0;) {
        nvtx_event(p, a, TRACE_EV_PUSH, 1, 5 + l);
        for (unsigned k = 0; k < 2 * FORWARD_KERNELS; k++)
            launch(p, a, site++);
        nvtx_event(p, a, TRACE_EV_POP, 1, 0);
    }
    api_call(p, a, API_EVENT_RECORD, 1500);
    nvtx_event(p, a, TRACE_EV_POP, 0, 0);
    m->cpu_ns = a->cpu_ns + 20000;
    nvtx_event(p, m, TRACE_EV_PUSH, 1, 4);
    for (unsigned k = 0; k < OPTIMIZER_KERNELS; k++)
        launch(p, m, site++);
    api_call(p, m, API_EVENT_RECORD, 1500);
    nvtx_event(p, m, TRACE_EV_POP, 1, 0);
    copy(p, m, 0, 4);
    sync_compute(p, m);
    nvtx_event(p, m, TRACE_EV_POP, 0, 0);
    /* the agent's writer drains every thread every 10 ms: here once a step or so */
    if (n % 2 == 1) {
        drain(p, m);
        drain(p, a);
    }
}

static void write_process(const char *dir, unsigned pid, unsigned steps)
{
    static struct process_writer p;
    memset(&p, 0, sizeof p);
    char path[700];
    snprintf(path, sizeof path, "%s/%u-1.lrt", dir, pid);
    uint64_t t0 = 1000000000;
    p.main = (struct stream_thread){.idx = 1, .tid = pid, .cpu_ns = t0};
    p.autograd = (struct stream_thread){.idx = 2, .tid = pid + 1, .cpu_ns = t0};
    p.gpu_free[0] = p.gpu_free[1] = t0;
    raw_open(&p.w, path, CHUNK_BYTES);
    raw_chunk(&p.w, t0);
    static const char cmdline[] = "python\0train.py\0--steps\0" "100";
    raw_process(&p.w, pid, t0, cmdline, sizeof cmdline - 1, TRACE_FLAG_NVTX | TRACE_FLAG_CUDA,
                NULL);
    raw_thread(&p.w, 1, pid, t0);
    raw_thread(&p.w, 2, pid + 1, t0);
    double ns_per_tick = 1.0; /* ticks are ns: exact times */
    uint64_t bits;
    memcpy(&bits, &ns_per_tick, sizeof bits);
    RAW(&p.w, clock, .tsc = t0, .ts = t0, .ns_per_tick = bits);
    RAW(&p.w, cuda_device, .device = 0, .name = trace_cstr("NVIDIA H100 80GB HBM3"),
        .uuid = trace_cstr("GPU-2a7c4b1e-0000-4000-8000-000000000001"),
        .pci_bus_id = trace_cstr("0000:19:00.0"), .cc_major = 9, .cc_minor = 0, .sm_count = 132,
        .memory_bytes = 85520809984ull, .sm_clock_khz = 1980000, .memory_clock_khz = 2619000,
        .memory_bus_bits = 5120, .l2_bytes = 52428800, .max_threads_per_sm = 2048,
        .max_registers_per_sm = 65536, .max_smem_per_sm = 233472, .max_blocks_per_sm = 32,
        .registers_per_block = 65536, .smem_per_block_optin = 232448,
        .dram_bandwidth = 3352320000000ull);
    RAW(&p.w, cuda_context, .context = 1, .device = 0, .null_stream = 7);
    RAW(&p.w, cuda_stream, .context = 1, .stream = COPY_STREAM, .priority = 0,
        .flag = TRACE_CUDA_STREAM_NON_BLOCKING, .correlation = 0);
    for (unsigned i = 0; i < 7; i++)
        p.api_names[i] = define_string(&p, api_name_text[i]);
    for (unsigned i = 0; i < NAMES; i++) {
        char name[512];
        kernel_name(i, name, sizeof name);
        p.kernel_names[i] = define_string(&p, name);
    }
    for (unsigned s = 0; s < steps; s++)
        step(&p, s);
    drain(&p, &p.main);
    drain(&p, &p.autograd);
    make_room(&p, 64);
    RAW(&p.w, process_end, .end = p.main.cpu_ns, .dropped_total = 0, .clean = 1);
    raw_flush(&p.w, 0);
    raw_close(&p.w);
}

/* ---- timing ------------------------------------------------------------------------------ */

struct run {
    double wall, cpu, max_rss_mb;
    int status;
};

/* Runs fn(arg) in a child process: its wall time, CPU time and peak RSS (wait4). */
static struct run in_child(int (*fn)(void *), void *arg)
{
    struct run r = {0};
    double wall0 = wall_s();
    pid_t pid = fork();
    if (pid == 0)
        _exit(fn(arg));
    struct rusage ru;
    int status = 0;
    if (pid < 0 || wait4(pid, &status, 0, &ru) < 0) {
        r.status = -1;
        return r;
    }
    r.wall = wall_s() - wall0;
    r.cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
            (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    r.max_rss_mb = (double)ru.ru_maxrss / 1024.0;
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return r;
}

struct paths {
    const char *raw, *db;
};

static int run_import(void *arg)
{
    const struct paths *p = arg;
    struct import_summary sum;
    int rc = import_session(p->raw, p->db, &(struct import_options){.replace = 1}, &sum);
    if (rc < 0)
        fprintf(stderr, "bench_import_cuda: import failed: %s\n", strerror(-rc));
    return rc < 0 ? 1 : 0;
}

/* `lantern ARGS...` with its output to /dev/null. */
static int run_lantern(void *arg)
{
    char **argv = arg;
    int null = open("/dev/null", O_WRONLY);
    if (null < 0 || dup2(null, 1) < 0)
        return 127;
    const char *lantern = getenv("LANTERN_BIN");
    execv(lantern ? lantern : LANTERN_BIN, argv);
    return 127;
}

static long long count_rows(const char *db_path, const char *table)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    char sql[128];
    long long n = -1;
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
    if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            n = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return n;
}

int main(int argc, char **argv)
{
    uint64_t events = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000;
    unsigned processes = argc > 2 ? (unsigned)atoi(argv[2]) : 2;
    char tmp[] = "/tmp/lantern-bench-import-cuda-XXXXXX", raw[600], db[600];
    const char *dir = argc > 3 ? argv[3] : mkdtemp(tmp);
    if (!dir || !processes || (argc > 3 && mkdir(dir, 0755) < 0 && errno != EEXIST)) {
        fprintf(stderr, "usage: bench_import_cuda [CUDA events] [processes] [DIR]\n");
        return 2;
    }
    snprintf(raw, sizeof raw, "%s/raw", dir);
    snprintf(db, sizeof db, "%s/session.db", dir);
    if (mkdir(raw, 0755) < 0) {
        fprintf(stderr, "bench_import_cuda: %s: %s\n", raw, strerror(errno));
        return 1;
    }
    unsigned steps = (unsigned)((events + CUDA_EVENTS_PER_STEP * processes - 1) /
                                (CUDA_EVENTS_PER_STEP * processes));
    double gen0 = wall_s();
    for (unsigned p = 0; p < processes; p++)
        write_process(raw, 1000 * (p + 1), steps);
    double gen = wall_s() - gen0;

    struct paths paths = {raw, db};
    struct run imp = in_child(run_import, &paths);
    if (imp.status != 0)
        return 1;
    long long api = count_rows(db, "cuda_api"), kernels = count_rows(db, "kernels"),
              copies = count_rows(db, "memcpys"), sets = count_rows(db, "memsets"),
              ranges = count_rows(db, "ranges");
    long long cuda_events = api + kernels + copies + sets, all = cuda_events + 2 * ranges;
    struct stat st_db;
    stat(db, &st_db);
    printf("bench_import_cuda: %u processes x %u steps: %lld API calls, %lld kernels, %lld "
           "copies, %lld memsets = %lld CUDA events; %lld NVTX ranges; written in %.1f s\n",
           processes, steps, api, kernels, copies, sets, cuda_events, ranges, gen);
    printf("import: cpu %.2f s = %.2f M events/s (CUDA + NVTX: %.2f M/s); wall %.2f s; peak RSS "
           "%.0f MB; database %.0f MB\n",
           imp.cpu, (double)cuda_events / imp.cpu / 1e6, (double)all / imp.cpu / 1e6, imp.wall,
           imp.max_rss_mb, (double)st_db.st_size / 1e6);

    static const char *const reports[][3] = {
        {"stats", "--report", "cuda_gpu_kern_sum"},  {"stats", "--report", "cuda_api_sum"},
        {"stats", "--report", "cuda_gpu_mem_time_sum"}, {"stats", "--report", "nvtx_sum"},
        {"kernels", NULL, NULL},                     {"analyze", NULL, NULL},
    };
    int rc = 0;
    for (size_t i = 0; i < sizeof reports / sizeof reports[0]; i++) {
        char *args[] = {"lantern", (char *)reports[i][0], db, (char *)reports[i][1],
                        (char *)reports[i][2], NULL};
        struct run r = in_child(run_lantern, args);
        printf("%-8s %-22s wall %6.2f s  cpu %6.2f s  peak RSS %5.0f MB%s\n", reports[i][0],
               reports[i][2] ? reports[i][2] : "", r.wall, r.cpu, r.max_rss_mb,
               r.status ? "  FAILED" : "");
        rc |= r.status != 0;
    }
    if (argc <= 3) {
        char cmd[700];
        snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
        rc |= system(cmd) != 0;
    }
    return rc;
}
