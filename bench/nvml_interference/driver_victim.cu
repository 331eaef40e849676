// The CUDA side of bench/nvml_interference: times this process's own driver calls while a
// second process (nvml_pattern) calls NVML in one pattern at a time, in alternating blocks
// inside one run, so that which NVML calls stall which driver calls is measured rather than
// guessed (issue #11). Each pattern block sits between two idle blocks, its reference.
//
//   driver_victim PATTERN_BIN WORKLOAD BLOCK_MS ROUNDS PATTERN[,PATTERN...]
//   driver_victim run WORKLOAD COUNT     COUNT operations alone (for whole-run timings under
//                                        a profiler): wall time and each call's p50 and p99
//
// Workloads: malloc (cudaMalloc/cudaFree of mixed sizes, up to 16 live), launch (empty
// kernels, a sync every 256), ctx (cuCtxCreate + a 1 MB cuMemAlloc + cuCtxDestroy). Prints one
// line per block and, last, one summary line per pattern: operations per second (median of the
// blocks) and its ratio to the idle blocks beside it, and each timed call's p50 and p99.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <string>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <vector>

static uint64_t now_ns()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#define CHECK(call)                                                                            \
    do {                                                                                       \
        auto rc_ = (call);                                                                     \
        if (rc_ != 0) {                                                                        \
            fprintf(stderr, "driver_victim: %s failed: %d (line %d)\n", #call, (int)rc_,       \
                    __LINE__);                                                                 \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

__global__ void empty_kernel() {}

struct block_result {
    double ops_per_s;
    std::map<std::string, std::vector<double>> lat_us; // per timed call
};

static FILE *to_pattern, *from_pattern;

static void pattern_say(const char *line, char *answer, size_t len)
{
    fprintf(to_pattern, "%s\n", line);
    fflush(to_pattern);
    if (!fgets(answer, (int)len, from_pattern)) {
        fprintf(stderr, "driver_victim: nvml_pattern went away\n");
        exit(1);
    }
    answer[strcspn(answer, "\n")] = 0;
}

static void start_pattern(const char *bin)
{
    int in[2], out[2];
    CHECK(pipe(in));
    CHECK(pipe(out));
    pid_t pid = fork();
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        execl(bin, bin, "serve", (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    to_pattern = fdopen(in[1], "w");
    from_pattern = fdopen(out[0], "r");
}

static void run_malloc(uint64_t until, block_result &r)
{
    static const size_t sizes[] = {8u << 20, 1u << 20, 64u << 10, 32u << 20,
                                   8u << 20, 256u << 10, 128u << 20};
    const int live_max = 16;
    void *live[live_max] = {};
    int head = 0, ops = 0;
    uint64_t start = now_ns();
    auto &m = r.lat_us["cudaMalloc"];
    auto &f = r.lat_us["cudaFree"];
    while (now_ns() < until) {
        if (live[head]) {
            uint64_t t0 = now_ns();
            CHECK(cudaFree(live[head]));
            f.push_back((double)(now_ns() - t0) / 1e3);
        }
        uint64_t t0 = now_ns();
        CHECK(cudaMalloc(&live[head], sizes[ops % 7]));
        m.push_back((double)(now_ns() - t0) / 1e3);
        head = (head + 1) % live_max;
        ops++;
    }
    for (int i = 0; i < live_max; i++)
        if (live[i])
            CHECK(cudaFree(live[i]));
    r.ops_per_s = ops / ((double)(now_ns() - start) / 1e9);
}

static void run_launch(uint64_t until, block_result &r)
{
    uint64_t start = now_ns();
    long ops = 0;
    auto &s = r.lat_us["sync256"];
    while (now_ns() < until) {
        uint64_t t0 = now_ns();
        for (int i = 0; i < 256; i++)
            empty_kernel<<<1, 1>>>();
        CHECK(cudaDeviceSynchronize());
        s.push_back((double)(now_ns() - t0) / 1e3);
        ops += 256;
    }
    r.ops_per_s = ops / ((double)(now_ns() - start) / 1e9);
}

static void run_ctx(uint64_t until, block_result &r)
{
    CUdevice dev;
    CHECK(cuDeviceGet(&dev, 0));
    uint64_t start = now_ns();
    int ops = 0;
    auto &c = r.lat_us["ctx_create"];
    auto &d = r.lat_us["ctx_destroy"];
    while (now_ns() < until) {
        CUcontext ctx;
        uint64_t t0 = now_ns();
        CHECK(cuCtxCreate(&ctx, NULL, 0, dev));
        CUdeviceptr p;
        CHECK(cuMemAlloc(&p, 1 << 20));
        c.push_back((double)(now_ns() - t0) / 1e3);
        t0 = now_ns();
        CHECK(cuMemFree(p));
        CHECK(cuCtxDestroy(ctx));
        d.push_back((double)(now_ns() - t0) / 1e3);
        ops++;
    }
    r.ops_per_s = ops / ((double)(now_ns() - start) / 1e9);
}

static double quantile(std::vector<double> v, double q)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    return v[(size_t)(q * (double)(v.size() - 1))];
}

// Fixed work (COUNT operations, not a time), so that whole runs can be compared.
static int run_alone(const char *workload, long count)
{
    CHECK(cudaFree(0));
    block_result r;
    uint64_t t0 = now_ns();
    if (strcmp(workload, "malloc") == 0) {
        static const size_t sizes[] = {8u << 20, 1u << 20, 64u << 10, 32u << 20,
                                       8u << 20, 256u << 10, 128u << 20};
        void *live[16] = {};
        auto &m = r.lat_us["cudaMalloc"];
        auto &f = r.lat_us["cudaFree"];
        for (long i = 0; i < count; i++) {
            void *&slot = live[i % 16];
            uint64_t a = now_ns();
            if (slot)
                CHECK(cudaFree(slot));
            uint64_t b = now_ns();
            CHECK(cudaMalloc(&slot, sizes[i % 7]));
            uint64_t c = now_ns();
            if (i >= 16)
                f.push_back((double)(b - a) / 1e3);
            m.push_back((double)(c - b) / 1e3);
        }
        for (auto p : live)
            if (p)
                CHECK(cudaFree(p));
    } else {
        for (long i = 0; i < count; i += 256) {
            for (int k = 0; k < 256; k++)
                empty_kernel<<<1, 1>>>();
            CHECK(cudaDeviceSynchronize());
        }
    }
    printf("run workload=%s count=%ld wall_ms=%.3f", workload, count,
           (double)(now_ns() - t0) / 1e6);
    for (auto &kv : r.lat_us)
        printf(" %s_p50_us=%.1f %s_p99_us=%.1f", kv.first.c_str(), quantile(kv.second, 0.5),
               kv.first.c_str(), quantile(kv.second, 0.99));
    printf("\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "run") == 0)
        return run_alone(argv[2], atol(argv[3]));
    if (argc != 6) {
        fprintf(stderr, "usage: driver_victim PATTERN_BIN malloc|launch|ctx BLOCK_MS ROUNDS "
                        "PATTERN[,PATTERN...]\n");
        return 2;
    }
    const char *workload = argv[2];
    uint64_t block_ns = (uint64_t)atof(argv[3]) * 1000000u;
    int rounds = atoi(argv[4]);
    std::vector<std::string> patterns;
    for (char *p = strtok(argv[5], ","); p; p = strtok(NULL, ","))
        patterns.push_back(p);
    CHECK(cuInit(0));
    CHECK(cudaFree(0)); // the runtime's context, before any timing
    signal(SIGPIPE, SIG_IGN);
    start_pattern(argv[1]);
    void (*run)(uint64_t, block_result &) = strcmp(workload, "malloc") == 0   ? run_malloc
                                            : strcmp(workload, "launch") == 0 ? run_launch
                                                                              : run_ctx;
    // warm-up block, not counted
    block_result warm;
    run(now_ns() + block_ns / 2, warm);

    // Every pattern's block sits between two idle blocks, and its slowdown is the idle
    // blocks' mean rate over its own: drift in the machine (the lent H100's CPUs change speed
    // for minutes at a time) hits both sides alike. The order of the patterns turns each round.
    std::map<std::string, std::vector<block_result>> results;
    std::map<std::string, std::vector<double>> slowdowns;
    std::map<std::string, std::string> footprint;
    char answer[4096];
    auto block = [&](const std::string &name, int round) {
        pattern_say(name.c_str(), answer, sizeof answer);
        usleep(30000); // the pattern's first calls (and a sampler's start) out of the block
        block_result r;
        run(now_ns() + block_ns, r);
        pattern_say("stats", answer, sizeof answer);
        footprint[name] = answer;
        printf("block round=%d pattern=%s ops_per_s=%.1f\n", round, name.c_str(), r.ops_per_s);
        results[name].push_back(r);
        return r.ops_per_s;
    };
    double before = block("idle", -1);
    for (int round = 0; round < rounds; round++) {
        for (size_t i = 0; i < patterns.size(); i++) {
            const std::string &name = patterns[(i + (size_t)round) % patterns.size()];
            double ops = block(name, round);
            double after = block("idle", round);
            slowdowns[name].push_back(ops > 0 ? (before + after) / 2 / ops : 0);
            before = after;
        }
    }
    pattern_say("idle", answer, sizeof answer);
    fclose(to_pattern);
    wait(NULL);

    for (auto &name : patterns) {
        std::map<std::string, std::vector<double>> all;
        for (auto &r : results[name])
            for (auto &kv : r.lat_us)
                all[kv.first].insert(all[kv.first].end(), kv.second.begin(), kv.second.end());
        auto &sd = slowdowns[name];
        printf("summary workload=%s pattern=%s slowdown=%.3f min=%.3f max=%.3f", workload,
               name.c_str(), quantile(sd, 0.5), quantile(sd, 0), quantile(sd, 1));
        for (auto &kv : all)
            printf(" %s_p50_us=%.1f %s_p99_us=%.1f", kv.first.c_str(), quantile(kv.second, 0.5),
                   kv.first.c_str(), quantile(kv.second, 0.99));
        printf("\n  footprint %s\n", footprint[name].c_str());
    }
    return 0;
}
