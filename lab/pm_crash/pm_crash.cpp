// Diagnostic for the SIGSEGV in libnvperf_host.so during CUPTI PM sampling (lab/pm_crash/README.md).
// Runs the call sequence of src/launcher/gpu_metrics_pm.c, with each difference from NVIDIA's
// pm_sampling sample a knob (PMC_* environment variables), logs each CUPTI call to stderr
// before it is made, and on a fatal signal prints where (address, the mapping it falls in, the
// call in flight, a backtrace). C in style; compiled as C++ only so that it includes CUPTI's
// real cupti_profiler_host.h (no hand-written declarations to doubt). Diagnostics only.
#include <cuda.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>
#include <cupti_version.h>

#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

/* ---- logging, flushed (write(2)) -------------------------------------------------------- */

static void say(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof buf - 2)
        n = (int)sizeof buf - 2;
    buf[n++] = '\n';
    ssize_t unused = write(2, buf, (size_t)n);
    (void)unused;
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
static uint64_t t_start;

/* What is in flight, for the crash handler. */
static const char *volatile g_where = "start";
static volatile long g_round = -1, g_sample = -1, g_evaluated = 0, g_decodes = 0;
static volatile uint64_t g_sampling_started_ns = 0;
static int verbose = 1; /* 2: log every per-sample call too */

/* ---- knobs ----------------------------------------------------------------------------- */

static const char *knob(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}
static long knob_l(const char *name, long dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 0) : dflt;
}

/* ---- CUPTI and libcuda through dlopen --------------------------------------------------- */

#define CUPTI_FUNCS(X)                                                                             \
    X(cuptiGetResultString)                                                                        \
    X(cuptiGetVersion)                                                                             \
    X(cuptiProfilerInitialize)                                                                     \
    X(cuptiDeviceGetChipName)                                                                      \
    X(cuptiPmSamplingGetCounterAvailability)                                                       \
    X(cuptiPmSamplingEnable)                                                                       \
    X(cuptiPmSamplingDisable)                                                                      \
    X(cuptiPmSamplingSetConfig)                                                                    \
    X(cuptiPmSamplingGetCounterDataSize)                                                           \
    X(cuptiPmSamplingCounterDataImageInitialize)                                                   \
    X(cuptiPmSamplingStart)                                                                        \
    X(cuptiPmSamplingStop)                                                                         \
    X(cuptiPmSamplingDecodeData)                                                                   \
    X(cuptiPmSamplingGetCounterDataInfo)                                                           \
    X(cuptiPmSamplingCounterDataGetSampleInfo)                                                     \
    X(cuptiProfilerHostInitialize)                                                                 \
    X(cuptiProfilerHostDeinitialize)                                                               \
    X(cuptiProfilerHostConfigAddMetrics)                                                           \
    X(cuptiProfilerHostGetConfigImageSize)                                                         \
    X(cuptiProfilerHostGetConfigImage)                                                             \
    X(cuptiProfilerHostGetNumOfPasses)                                                             \
    X(cuptiProfilerHostEvaluateToGpuValues)
#define DECLARE(f) static decltype(&f) p_##f;
CUPTI_FUNCS(DECLARE)

static CUresult (*p_cuInit)(unsigned int);
static CUresult (*p_cuDriverGetVersion)(int *);
static CUresult (*p_cuDeviceGet)(CUdevice *, int);

static const char *errstr(CUptiResult rc)
{
    const char *s = NULL;
    if (p_cuptiGetResultString && p_cuptiGetResultString(rc, &s) == CUPTI_SUCCESS && s)
        return s;
    return "?";
}

static int load_cupti(void)
{
    const char *paths[] = {getenv("PMC_CUPTI"), "libcupti.so.13",
                           "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
                           "/usr/local/cuda/lib64/libcupti.so.13", "/usr/local/cuda/lib/libcupti.so.13"};
    void *h = NULL;
    for (size_t i = 0; i < sizeof paths / sizeof paths[0] && !h; i++)
        if (paths[i] && *paths[i]) {
            h = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
            if (h)
                say("loaded CUPTI as %s", paths[i]);
        }
    if (!h) {
        say("RESULT setup-failed cannot load libcupti: %s", dlerror());
        return -1;
    }
#define LOAD(f)                                                                                    \
    if (!(*(void **)&p_##f = dlsym(h, #f))) {                                                      \
        say("RESULT setup-failed libcupti has no %s", #f);                                         \
        return -1;                                                                                 \
    }
    CUPTI_FUNCS(LOAD)
    return 0;
}

static int load_cuda(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h || !(*(void **)&p_cuInit = dlsym(h, "cuInit")) ||
        !(*(void **)&p_cuDriverGetVersion = dlsym(h, "cuDriverGetVersion")) ||
        !(*(void **)&p_cuDeviceGet = dlsym(h, "cuDeviceGet"))) {
        say("RESULT setup-failed no libcuda.so.1");
        return -1;
    }
    return 0;
}

/* A CUPTI call: logged before, breadcrumb set, failure printed. */
#define CALL(fn, params, loud)                                                                     \
    ({                                                                                             \
        g_where = #fn;                                                                             \
        if (loud)                                                                                  \
            say("[%8.3f] -> %s", (now_ns() - t_start) / 1e9, #fn);                                 \
        CUptiResult rc_ = p_##fn(params);                                                          \
        if (rc_ != CUPTI_SUCCESS)                                                                  \
            say("[%8.3f] <- %s failed: %d %s", (now_ns() - t_start) / 1e9, #fn, (int)rc_,          \
                errstr(rc_));                                                                      \
        g_where = "between calls (after " #fn ")";                                                 \
        rc_;                                                                                       \
    })

/* ---- the crash handler ------------------------------------------------------------------ */

static struct {
    uintptr_t lo, hi;
    int set;
} thread_stack[2]; /* 0: main, 1: decode thread */
static __thread int thread_slot;

static void record_stack(int slot)
{
    pthread_attr_t a;
    void *addr;
    size_t size;
    thread_slot = slot;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        if (pthread_attr_getstack(&a, &addr, &size) == 0) {
            thread_stack[slot].lo = (uintptr_t)addr;
            thread_stack[slot].hi = (uintptr_t)addr + size;
            thread_stack[slot].set = 1;
        }
        pthread_attr_destroy(&a);
    }
    /* the handler runs on its own stack, so a stack overflow is reported too */
    static char alt[2][256 * 1024];
    stack_t ss;
    ss.ss_sp = alt[slot];
    ss.ss_size = sizeof alt[slot];
    ss.ss_flags = 0;
    sigaltstack(&ss, NULL);
}

static void put(const char *s)
{
    ssize_t unused = write(2, s, strlen(s));
    (void)unused;
}
static void put_hex(uintptr_t v)
{
    char b[19] = "0x";
    for (int i = 0; i < 16; i++)
        b[2 + i] = "0123456789abcdef"[(v >> (60 - 4 * i)) & 15];
    b[18] = 0;
    put(b);
}
static void put_dec(long v)
{
    char b[24];
    int n = 0;
    int neg = v < 0;
    unsigned long u = neg ? (unsigned long)-v : (unsigned long)v;
    do
        b[n++] = (char)('0' + u % 10);
    while ((u /= 10));
    if (neg)
        put("-");
    char o[24];
    for (int i = 0; i < n; i++)
        o[i] = b[n - 1 - i];
    o[n] = 0;
    put(o);
}

static uintptr_t parse_hex(const char **p)
{
    uintptr_t v = 0;
    for (;; (*p)++) {
        char c = **p;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return v;
        v = v * 16 + (uintptr_t)d;
    }
}

/* Prints the /proc/self/maps line holding addr (or says none). */
static void print_mapping(const char *label, uintptr_t addr)
{
    static char buf[1 << 20];
    int fd = open("/proc/self/maps", O_RDONLY);
    size_t len = 0;
    ssize_t n;
    while (fd >= 0 && len < sizeof buf - 1 && (n = read(fd, buf + len, sizeof buf - 1 - len)) > 0)
        len += (size_t)n;
    if (fd >= 0)
        close(fd);
    buf[len] = 0;
    put(label);
    put_hex(addr);
    put(": ");
    uintptr_t prev_hi = 0;
    for (char *line = buf; *line;) {
        char *end = strchr(line, '\n');
        if (end)
            *end = 0;
        const char *p = line;
        uintptr_t lo = parse_hex(&p);
        p++;
        uintptr_t hi = parse_hex(&p);
        if (addr >= lo && addr < hi) {
            put("in [");
            put(line);
            put("] +");
            put_hex(addr - lo);
            put("\n");
            return;
        }
        if (addr >= prev_hi && addr < lo) {
            put("in no mapping (between ");
            put_hex(prev_hi);
            put(" and [");
            put(line);
            put("])\n");
            return;
        }
        prev_hi = hi;
        if (!end)
            break;
        *end = '\n';
        line = end + 1;
    }
    put("in no mapping\n");
}

static void on_fatal(int sig, siginfo_t *info, void *context)
{
    uintptr_t pc = 0;
#if defined(__x86_64__)
    pc = (uintptr_t)((ucontext_t *)context)->uc_mcontext.gregs[REG_RIP];
#endif
    uintptr_t addr = (uintptr_t)info->si_addr;
    put("\n===== FATAL SIGNAL =====\n");
    put("RESULT crash sig=");
    put_dec(sig);
    put(" code=");
    put_dec(info->si_code);
    put(" addr=");
    put_hex(addr);
    put(" pc=");
    put_hex(pc);
    put(" in=");
    put((const char *)g_where);
    put(" thread=");
    put(thread_slot ? "decode" : "main");
    put(" round=");
    put_dec(g_round);
    put(" sample=");
    put_dec(g_sample);
    put(" evaluated=");
    put_dec(g_evaluated);
    put(" decodes=");
    put_dec(g_decodes);
    put(" t_since_start_ms=");
    put_dec(g_sampling_started_ns ? (long)((now_ns() - g_sampling_started_ns) / 1000000) : -1);
    put("\n");
    print_mapping("pc   ", pc);
    print_mapping("addr ", addr);
    for (int s = 0; s < 2; s++)
        if (thread_stack[s].set && addr + 1024 * 1024 >= thread_stack[s].lo &&
            addr < thread_stack[s].hi) {
            put("addr is in or just below the ");
            put(s ? "decode" : "main");
            put(" thread's stack [");
            put_hex(thread_stack[s].lo);
            put(", ");
            put_hex(thread_stack[s].hi);
            put(") -> stack overflow?\n");
        }
    Dl_info di;
    if (pc && dladdr((void *)pc, &di)) { /* not async-signal-safe; diagnostics only */
        put("pc symbol: ");
        put(di.dli_fname ? di.dli_fname : "?");
        put(" ");
        put(di.dli_sname ? di.dli_sname : "(no exported symbol)");
        put(" +");
        put_hex(di.dli_saddr ? pc - (uintptr_t)di.dli_saddr : pc - (uintptr_t)di.dli_fbase);
        put(" (file offset ");
        put_hex(pc - (uintptr_t)di.dli_fbase);
        put(")\n");
    }
    put("backtrace:\n");
    void *frames[64];
    int n = backtrace(frames, 64);
    backtrace_symbols_fd(frames, n, 2);
    put("===== END =====\n");
    _exit(128 + sig);
}

static void install_handler(void)
{
    void *warm[2];
    backtrace(warm, 2); /* loads libgcc_s now, not in the handler */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fatal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
}

/* ---- the GPU work to sample (a child forked before any CUDA call) ----------------------- */

static pid_t load_pid = -1;
static int load_go[2] = {-1, -1};

/* The child: waits for the go byte, then cuMemset/cuMemcpy loops for PMC_DURATION_MS + 1 s
 * (or runs PMC_LOAD_CMD with sh -c). */
static void run_load(void);
static void load_child(void)
{
    char go;
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* a crashed sampler takes its load along */
    close(load_go[1]);
    if (read(load_go[0], &go, 1) != 1)
        _exit(0);
    run_load();
}

static void run_load(void)
{
    const char *cmd = getenv("PMC_LOAD_CMD");
    if (!strcmp(knob("PMC_LOAD", "driver"), "cmd") && cmd) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(h, "cuInit");
    CUresult (*dev_get)(CUdevice *, int) = (CUresult(*)(CUdevice *, int))dlsym(h, "cuDeviceGet");
    CUresult (*retain)(CUcontext *, CUdevice) =
        (CUresult(*)(CUcontext *, CUdevice))dlsym(h, "cuDevicePrimaryCtxRetain");
    CUresult (*set)(CUcontext) = (CUresult(*)(CUcontext))dlsym(h, "cuCtxSetCurrent");
    CUresult (*alloc)(CUdeviceptr *, size_t) =
        (CUresult(*)(CUdeviceptr *, size_t))dlsym(h, "cuMemAlloc_v2");
    CUresult (*memset32)(CUdeviceptr, unsigned, size_t) =
        (CUresult(*)(CUdeviceptr, unsigned, size_t))dlsym(h, "cuMemsetD32_v2");
    CUresult (*copy)(CUdeviceptr, CUdeviceptr, size_t) =
        (CUresult(*)(CUdeviceptr, CUdeviceptr, size_t))dlsym(h, "cuMemcpyDtoD_v2");
    CUresult (*sync)(void) = (CUresult(*)(void))dlsym(h, "cuCtxSynchronize");
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr a, b;
    size_t bytes = 512u << 20;
    if (!sync || init(0) || dev_get(&dev, (int)knob_l("PMC_DEVICE", 0)) || retain(&ctx, dev) ||
        set(ctx) || alloc(&a, bytes) || alloc(&b, bytes)) {
        say("load: CUDA set-up failed");
        _exit(1);
    }
    uint64_t until = now_ns() + (uint64_t)(knob_l("PMC_DURATION_MS", 1500) +
                                           (getenv("PMC_LOADONLY") ? 0 : 300)) * 1000000u;
    unsigned long rounds = 0;
    while (now_ns() < until) {
        memset32(a, (unsigned)rounds, bytes / 4);
        copy(b, a, bytes);
        sync();
        rounds++;
    }
    say("load: %lu rounds of a 512 MiB memset + copy", rounds);
    _exit(0);
}

static void load_fork(void)
{
    if (!strcmp(knob("PMC_LOAD", "driver"), "none"))
        return;
    if (pipe(load_go) < 0 || (load_pid = fork()) < 0) {
        say("cannot fork the load");
        return;
    }
    if (load_pid == 0)
        load_child();
    close(load_go[0]);
}
static void load_start(void)
{
    if (load_pid > 0) {
        say("[%8.3f] load: go", (now_ns() - t_start) / 1e9);
        ssize_t unused = write(load_go[1], "g", 1);
        (void)unused;
    }
}

/* ---- the sampler ------------------------------------------------------------------------ */

/* Lantern's set for GH100 (src/trace/gpu_metrics.def, first candidates; dram_bw reuses
 * dram_read's and dram_write's names). */
static const char *const lantern_gh100 =
    "FE_B.TriageCompute.gr__cycles_active.avg.pct_of_peak_sustained_elapsed,"
    "TPC.TriageCompute.sm__cycles_active.avg.pct_of_peak_sustained_elapsed,"
    "TPC.TriageCompute.sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed,"
    "TPC.TriageCompute.tpc__warps_active_shader_cs_realtime.avg.pct_of_peak_sustained_elapsed,"
    "TPC.TriageCompute.sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed,"
    "TPC.TriageCompute.sm__pipe_tensor_op_hmma_cycles_active_realtime.avg.pct_of_peak_sustained_"
    "elapsed,"
    "TPC.TriageCompute.sm__pipe_tensor_op_imma_cycles_active_realtime.avg.pct_of_peak_sustained_"
    "elapsed,"
    "SM_C.TriageCompute.smsp__pipe_tensor_op_dmma_cycles_active.avg.pct_of_peak_sustained_elapsed,"
    "FBSP.TriageCompute.dramc__read_throughput.avg.pct_of_peak_sustained_elapsed,"
    "FBSP.TriageCompute.dramc__write_throughput.avg.pct_of_peak_sustained_elapsed,"
    "PCI.TriageCompute.pcie__read_bytes.sum.per_second,"
    "PCI.TriageCompute.pcie__write_bytes.sum.per_second,"
    "NVLRX.TriageCompute.nvlrx__bytes_packet_request_data_user.sum.per_second,"
    "NVLRX.TriageCompute.nvlrx__bytes_packet_response_data_user.sum.per_second,"
    "NVLTX.TriageCompute.nvltx__bytes_packet_request_data_user.sum.per_second,"
    "NVLTX.TriageCompute.nvltx__bytes_packet_response_data_user.sum.per_second";

#define NAMES_MAX 64
static char *names_buf;
static const char *names[NAMES_MAX];
static size_t names_count;

static struct {
    size_t device;
    CUpti_PmSampling_Object *object;
    CUpti_Profiler_Host_Object *eval_host;
    uint8_t *data, *blank;
    size_t data_size;
    double *values;
    int eval_mode; /* 0 none, 1 all, 2 first of each decode */
    int reset_init;
    uint64_t decode_ns, duration_ns;
    long bad_time, overflows;
} S;

static CUptiResult host_open(const char *chip, const uint8_t *avail, CUpti_Profiler_Host_Object **out)
{
    CUpti_Profiler_Host_Initialize_Params p = {CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
    p.profilerType = CUPTI_PROFILER_TYPE_PM_SAMPLING;
    p.pChipName = chip;
    p.pCounterAvailabilityImage = avail;
    CUptiResult rc = CALL(cuptiProfilerHostInitialize, &p, verbose);
    *out = rc == CUPTI_SUCCESS ? p.pHostObject : NULL;
    return rc;
}
static void host_close(CUpti_Profiler_Host_Object *h)
{
    if (!h)
        return;
    CUpti_Profiler_Host_Deinitialize_Params p = {CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
    p.pHostObject = h;
    CALL(cuptiProfilerHostDeinitialize, &p, verbose);
}
static CUptiResult host_add(CUpti_Profiler_Host_Object *h, const char **list, size_t count, int loud)
{
    CUpti_Profiler_Host_ConfigAddMetrics_Params a = {
        CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
    a.pHostObject = h;
    a.ppMetricNames = list;
    a.numMetrics = count;
    return CALL(cuptiProfilerHostConfigAddMetrics, &a, loud);
}
/* The config image of h (metrics added); malloc'd. */
static CUptiResult host_config(CUpti_Profiler_Host_Object *h, uint8_t **image, size_t *size)
{
    CUpti_Profiler_Host_GetConfigImageSize_Params cs = {
        CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
    cs.pHostObject = h;
    CUptiResult rc = CALL(cuptiProfilerHostGetConfigImageSize, &cs, verbose);
    if (rc)
        return rc;
    *size = cs.configImageSize;
    *image = (uint8_t *)malloc(*size);
    CUpti_Profiler_Host_GetConfigImage_Params ci = {
        CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
    ci.pHostObject = h;
    ci.configImageSize = *size;
    ci.pConfigImage = *image;
    if ((rc = CALL(cuptiProfilerHostGetConfigImage, &ci, verbose)))
        return rc;
    CUpti_Profiler_Host_GetNumOfPasses_Params np = {
        CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
    np.configImageSize = *size;
    np.pConfigImage = *image;
    if ((rc = CALL(cuptiProfilerHostGetNumOfPasses, &np, verbose)))
        return rc;
    say("config image: %zu bytes, %zu pass(es)", *size, np.numOfPasses);
    return CUPTI_SUCCESS;
}

static void scribble(void *p, size_t n, const char *what)
{
    if (!p)
        return;
    memset(p, 0xA5, n);
    say("scribbled over the %s (%zu bytes at %p): CUPTI must not be reading it any more", what,
        n, p);
}

static CUptiResult evaluate_samples(size_t completed)
{
    for (size_t i = 0; i < completed; i++) {
        if (S.eval_mode == 2 && i > 0)
            break;
        g_sample = (long)i;
        CUpti_PmSampling_CounterData_GetSampleInfo_Params si = {
            CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE};
        si.pPmSamplingObject = S.object;
        si.pCounterDataImage = S.data;
        si.counterDataImageSize = S.data_size;
        si.sampleIndex = i;
        CUptiResult rc = CALL(cuptiPmSamplingCounterDataGetSampleInfo, &si, verbose > 1);
        if (rc)
            return rc;
        if (si.endTimestamp <= si.startTimestamp)
            S.bad_time++;
        CUpti_Profiler_Host_EvaluateToGpuValues_Params ev = {
            CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
        ev.pHostObject = S.eval_host;
        ev.pCounterDataImage = S.data;
        ev.counterDataImageSize = S.data_size;
        ev.rangeIndex = i;
        ev.ppMetricNames = names;
        ev.numMetrics = names_count;
        ev.pMetricValues = S.values;
        if ((rc = CALL(cuptiProfilerHostEvaluateToGpuValues, &ev, verbose > 1)))
            return rc;
        g_evaluated++;
        if (g_evaluated == 1 || g_evaluated % 2000 == 0)
            say("sample %ld: %.3f %.3f ... (%zu values)", g_evaluated, S.values[0],
                names_count > 1 ? S.values[1] : 0.0, names_count);
    }
    g_sample = -1;
    return CUPTI_SUCCESS;
}

static CUptiResult reset_image(void)
{
    if (!S.reset_init) {
        g_where = "memcpy reset of the counter-data image";
        memcpy(S.data, S.blank, S.data_size);
        return CUPTI_SUCCESS;
    }
    CUpti_PmSampling_CounterDataImage_Initialize_Params ci = {
        CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    ci.pPmSamplingObject = S.object;
    ci.counterDataSize = S.data_size;
    ci.pCounterData = S.data;
    return CALL(cuptiPmSamplingCounterDataImageInitialize, &ci, verbose > 1);
}

static CUptiResult drain(int final)
{
    for (int round = 0; round < 64; round++) {
        g_round = round;
        CUpti_PmSampling_DecodeData_Params dd = {CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE};
        dd.pPmSamplingObject = S.object;
        dd.pCounterDataImage = S.data;
        dd.counterDataImageSize = S.data_size;
        uint64_t t0 = now_ns();
        CUptiResult rc = CALL(cuptiPmSamplingDecodeData, &dd, verbose > 1);
        uint64_t t1 = now_ns();
        if (rc)
            return rc;
        g_decodes++;
        S.overflows += dd.overflow;
        CUpti_PmSampling_GetCounterDataInfo_Params di = {
            CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE};
        di.pCounterDataImage = S.data;
        di.counterDataImageSize = S.data_size;
        if ((rc = CALL(cuptiPmSamplingGetCounterDataInfo, &di, verbose > 1)))
            return rc;
        if (verbose)
            say("[%8.3f] decode %ld.%d: %.2f ms stop=%d overflow=%d total=%zu populated=%zu "
                "completed=%zu%s",
                (t0 - t_start) / 1e9, (long)g_decodes, round, (t1 - t0) / 1e6,
                (int)dd.decodeStopReason, (int)dd.overflow, di.numTotalSamples,
                di.numPopulatedSamples, di.numCompletedSamples, final ? " (final)" : "");
        if (S.eval_mode && (rc = evaluate_samples(di.numCompletedSamples)))
            return rc;
        if ((rc = reset_image()))
            return rc;
        if (dd.decodeStopReason != CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL &&
            (!final || dd.decodeStopReason == CUPTI_PM_SAMPLING_DECODE_STOP_REASON_END_OF_RECORDS))
            break;
    }
    g_round = -1;
    return CUPTI_SUCCESS;
}

static void *decode_loop(void *arg)
{
    (void)arg;
    record_stack(1);
    CUptiResult rc = CUPTI_SUCCESS;
    uint64_t end = g_sampling_started_ns + S.duration_ns;
    while (rc == CUPTI_SUCCESS && now_ns() < end) {
        struct timespec ts = {0, (long)S.decode_ns};
        nanosleep(&ts, NULL);
        rc = drain(0);
    }
    CUpti_PmSampling_Stop_Params sp = {CUpti_PmSampling_Stop_Params_STRUCT_SIZE};
    sp.pPmSamplingObject = S.object;
    if (rc == CUPTI_SUCCESS && (rc = CALL(cuptiPmSamplingStop, &sp, 1)) == CUPTI_SUCCESS)
        rc = drain(1);
    return (void *)(intptr_t)rc;
}

static int split_names(const char *list)
{
    names_buf = strdup(list);
    for (char *save = NULL, *t = strtok_r(names_buf, ",", &save); t && names_count < NAMES_MAX;
         t = strtok_r(NULL, ",", &save))
        names[names_count++] = t;
    return names_count ? 0 : -1;
}

static void print_libraries(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024], last[1024] = "";
    while (f && fgets(line, sizeof line, f)) {
        char *path = strchr(line, '/');
        if (!path || !(strstr(path, "cupti") || strstr(path, "nvperf") || strstr(path, "libcuda") ||
                       strstr(path, "nvidia")))
            continue;
        if (!strcmp(path, last))
            continue;
        snprintf(last, sizeof last, "%s", path);
        path[strcspn(path, "\n")] = 0;
        say("mapped: %s", path);
    }
    if (f)
        fclose(f);
}

/* Lantern mimics: 'chip' of the host objects points into this frame, which is gone after
 * setup (as pm_start's chip[64] is); PMC_CHIP=clobber scribbles it deliberately. */
static char chip_copy[64];

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    t_start = now_ns();
    if (getenv("PMC_LOADONLY")) /* only the GPU work: a program for `lantern profile` to run */
        run_load();
    verbose = (int)knob_l("PMC_VERBOSE", 1);
    install_handler();
    record_stack(0);
    const int dry = (int)knob_l("PMC_DRY", 0); /* host side only, no GPU: chip from PMC_CHIP_NAME */
    const char *variant = knob("PMC_VARIANT", "(unnamed)");
    const char *eval_host_mode = knob("PMC_EVALHOST", "same");     /* same | separate */
    const char *chip_mode = knob("PMC_CHIP", "keep");              /* keep | clobber */
    const char *avail_mode = knob("PMC_AVAIL", "keep");            /* keep | clobber | null */
    const char *config_mode = knob("PMC_CONFIG", "keep");          /* keep | free | clobber */
    const long churn = knob_l("PMC_CHURN", 0);                      /* extra host objects first */
    const int use_thread = (int)knob_l("PMC_THREAD", 1);
    const long stack_mb = knob_l("PMC_STACK_MB", 0);
    const char *load_when = knob("PMC_LOAD_WHEN", "after"); /* after | before sampling starts */
    S.device = (size_t)knob_l("PMC_DEVICE", 0);
    S.eval_mode = !strcmp(knob("PMC_EVAL", "all"), "none") ? 0
                  : !strcmp(knob("PMC_EVAL", "all"), "first") ? 2
                                                               : 1;
    S.reset_init = !strcmp(knob("PMC_RESET", "init"), "init");
    S.decode_ns = (uint64_t)knob_l("PMC_DECODE_MS", 20) * 1000000u;
    S.duration_ns = (uint64_t)knob_l("PMC_DURATION_MS", 1500) * 1000000u;
    const uint64_t interval = (uint64_t)knob_l("PMC_INTERVAL_NS", 200000);
    const size_t hwbuf = (size_t)knob_l("PMC_HWBUF_MB", 64) << 20;
    const long max_samples = knob_l("PMC_MAXSAMPLES", 404);
    const int keep_latest = !strcmp(knob("PMC_APPEND", "oldest"), "latest");
    if (split_names(knob("PMC_METRICS", lantern_gh100)) < 0)
        return 2;
    struct utsname u;
    uname(&u);
    struct rlimit rl;
    getrlimit(RLIMIT_STACK, &rl);
    say("variant %s: evalhost=%s chip=%s avail=%s config=%s churn=%ld reset=%s eval=%s thread=%d "
        "stack_mb=%ld load=%s/%s interval=%lu ns hwbuf=%zu MiB max_samples=%ld decode=%lu ms "
        "append=%s metrics=%zu; kernel %s; RLIMIT_STACK %ld",
        variant, eval_host_mode, chip_mode, avail_mode, config_mode, churn,
        S.reset_init ? "init" : "memcpy", knob("PMC_EVAL", "all"), use_thread, stack_mb,
        knob("PMC_LOAD", "driver"), load_when, (unsigned long)interval, hwbuf >> 20, max_samples,
        (unsigned long)(S.decode_ns / 1000000), keep_latest ? "latest" : "oldest", names_count,
        u.release, (long)rl.rlim_cur);

    if (!dry)
        load_fork(); /* before any CUDA call here */
    if (load_cupti() < 0 || (!dry && load_cuda() < 0))
        return 3;
    uint32_t cupti_version = 0;
    p_cuptiGetVersion(&cupti_version);
    int driver = 0;
    CUptiResult rc;
    const char *chip;
    uint8_t *avail = NULL;
    size_t avail_size = 0;
    if (dry) {
        chip = knob("PMC_CHIP_NAME", "GH100");
    } else {
        if (p_cuInit(0) != CUDA_SUCCESS) {
            say("RESULT setup-failed cuInit");
            return 3;
        }
        p_cuDriverGetVersion(&driver);
        CUpti_Profiler_Initialize_Params pi = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
        if (CALL(cuptiProfilerInitialize, &pi, 1))
            return 3;
        CUpti_Device_GetChipName_Params cn = {CUpti_Device_GetChipName_Params_STRUCT_SIZE};
        cn.deviceIndex = S.device;
        if (CALL(cuptiDeviceGetChipName, &cn, 1))
            return 3;
        chip = cn.pChipName;
        CUpti_PmSampling_GetCounterAvailability_Params ca = {
            CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE};
        ca.deviceIndex = S.device;
        if (CALL(cuptiPmSamplingGetCounterAvailability, &ca, 1))
            return 3;
        avail_size = ca.counterAvailabilityImageSize;
        avail = (uint8_t *)malloc(avail_size);
        ca.pCounterAvailabilityImage = avail;
        if (CALL(cuptiPmSamplingGetCounterAvailability, &ca, 1))
            return 3;
    }
    say("CUPTI version %u, driver CUDA %d, chip %s, counter availability image %zu bytes",
        cupti_version, driver, chip, avail_size);
    snprintf(chip_copy, sizeof chip_copy, "%s", chip);
    const uint8_t *host_avail = !strcmp(avail_mode, "null") ? NULL : avail;

    /* pm_choose_metrics opens and closes a host object per candidate and per set it tries */
    for (long i = 0; i < churn; i++) {
        CUpti_Profiler_Host_Object *h;
        int v = verbose;
        verbose = 0;
        if (host_open(chip_copy, host_avail, &h) == CUPTI_SUCCESS) {
            host_add(h, &names[i % names_count], 1, 0);
            host_close(h);
        }
        verbose = v;
    }
    if (churn)
        say("opened and closed %ld host objects first", churn);

    /* the config image, and the host object that evaluates */
    CUpti_Profiler_Host_Object *config_host = NULL;
    uint8_t *config = NULL;
    size_t config_size = 0;
    if ((rc = host_open(chip_copy, host_avail, &config_host)) ||
        (rc = host_add(config_host, names, names_count, 1)) ||
        (rc = host_config(config_host, &config, &config_size))) {
        say("RESULT setup-failed host config: %s", errstr(rc));
        return 3;
    }
    if (!strcmp(eval_host_mode, "separate")) { /* Lantern: a second object, metrics added only */
        host_close(config_host);
        if ((rc = host_open(chip_copy, host_avail, &S.eval_host)) ||
            (rc = host_add(S.eval_host, names, names_count, 1))) {
            say("RESULT setup-failed eval host: %s", errstr(rc));
            return 3;
        }
    } else {
        S.eval_host = config_host; /* NVIDIA's sample */
    }
    print_libraries(); /* libnvperf_host is loaded by now */
    if (getenv("PMC_SELFTEST")) { /* proves the handler: a fault inside libc, on the thread */
        g_where = "self test: strlen(bad pointer)";
        const char *volatile bad = (const char *)(uintptr_t)0x10;
        volatile size_t n = strlen(bad);
        (void)n;
    }
    if (dry) {
        say("RESULT dry-ok host side only (%zu metrics, config %zu bytes)", names_count,
            config_size);
        return 0;
    }

    CUpti_PmSampling_Enable_Params en = {CUpti_PmSampling_Enable_Params_STRUCT_SIZE};
    en.deviceIndex = S.device;
    if (CALL(cuptiPmSamplingEnable, &en, 1))
        return 3;
    S.object = en.pPmSamplingObject;
    CUpti_PmSampling_SetConfig_Params sc = {CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE};
    sc.pPmSamplingObject = S.object;
    sc.configSize = config_size;
    sc.pConfig = config;
    sc.hardwareBufferSize = hwbuf;
    sc.samplingInterval = interval;
    sc.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
    sc.hwBufferAppendMode = keep_latest ? CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_LATEST
                                        : CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST;
    if (CALL(cuptiPmSamplingSetConfig, &sc, 1))
        return 3;
    if (!strcmp(config_mode, "free")) {
        memset(config, 0xA5, config_size); /* as free() then reuse would, deterministically */
        free(config);
        config = NULL;
        say("config image freed (scribbled first) after SetConfig, as gpu_metrics_pm.c does");
    } else if (!strcmp(config_mode, "clobber")) {
        scribble(config, config_size, "config image");
    }
    CUpti_PmSampling_GetCounterDataSize_Params ds = {
        CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE};
    ds.pPmSamplingObject = S.object;
    ds.pMetricNames = names;
    ds.numMetrics = names_count;
    ds.maxSamples = (uint32_t)max_samples;
    if (CALL(cuptiPmSamplingGetCounterDataSize, &ds, 1))
        return 3;
    S.data_size = ds.counterDataSize;
    S.data = (uint8_t *)malloc(S.data_size);
    S.blank = (uint8_t *)malloc(S.data_size);
    S.values = (double *)calloc(names_count, sizeof(double));
    CUpti_PmSampling_CounterDataImage_Initialize_Params ci = {
        CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    ci.pPmSamplingObject = S.object;
    ci.counterDataSize = S.data_size;
    ci.pCounterData = S.data;
    if (CALL(cuptiPmSamplingCounterDataImageInitialize, &ci, 1))
        return 3;
    memcpy(S.blank, S.data, S.data_size);
    say("counter-data image %zu bytes for %ld samples", S.data_size, max_samples);

    if (!strcmp(chip_mode, "clobber")) /* pm_start's chip[] is reused once it returns */
        scribble(chip_copy, sizeof chip_copy, "chip name given to the host objects");
    if (!strcmp(avail_mode, "clobber"))
        scribble(avail, avail_size, "counter availability image");

    if (!strcmp(load_when, "before")) {
        load_start();
        struct timespec ts = {1, 0}; /* the program's context exists before sampling starts */
        nanosleep(&ts, NULL);
    }
    CUpti_PmSampling_Start_Params st = {CUpti_PmSampling_Start_Params_STRUCT_SIZE};
    st.pPmSamplingObject = S.object;
    if (CALL(cuptiPmSamplingStart, &st, 1))
        return 3;
    g_sampling_started_ns = now_ns();
    if (strcmp(load_when, "before"))
        load_start();

    void *ret = NULL;
    if (use_thread) {
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        if (stack_mb > 0)
            pthread_attr_setstacksize(&attr, (size_t)stack_mb << 20);
        pthread_t t;
        pthread_create(&t, &attr, decode_loop, NULL);
        pthread_join(t, &ret);
    } else {
        ret = decode_loop(NULL);
        thread_slot = 0;
    }
    rc = (CUptiResult)(intptr_t)ret;
    CUpti_PmSampling_Disable_Params dp = {CUpti_PmSampling_Disable_Params_STRUCT_SIZE};
    dp.pPmSamplingObject = S.object;
    CALL(cuptiPmSamplingDisable, &dp, 1);
    host_close(S.eval_host);
    if (load_pid > 0)
        waitpid(load_pid, NULL, 0);
    if (rc)
        say("RESULT cupti-error %d %s in %s after %ld decodes, %ld samples evaluated", (int)rc,
            errstr(rc), (const char *)g_where, (long)g_decodes, (long)g_evaluated);
    else
        say("RESULT ok %ld decodes, %ld samples evaluated, %ld without time, %ld overflows",
            (long)g_decodes, (long)g_evaluated, S.bad_time, S.overflows);
    free(config);
    return rc ? 4 : 0;
}
