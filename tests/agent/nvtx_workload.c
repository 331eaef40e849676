/* The NVTX program the agent tests run under the agent (NVTX_INJECTION64_PATH): one scenario
 * per argv[1]. It checks NVTX's return values itself (exit 1 on a mismatch) and prints what
 * the trace must then contain that only it knows (times it measured, handles it got). */
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtCuda.h>
#include <nvtx3/nvToolsExtCudaRt.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "workload: %s:%d: %s\n", __FILE__, __LINE__, #cond);                   \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* push/pop levels, an unbalanced pop, a mark, a start/end range */
static void scenario_basic(void)
{
    CHECK(nvtxRangePushA("outer") == 0);
    CHECK(nvtxRangePushA("inner") == 1);
    CHECK(nvtxRangePop() == 1);
    CHECK(nvtxRangePop() == 0);
    CHECK(nvtxRangePop() < 0);
    nvtxMarkA("here");
    nvtxRangeId_t id = nvtxRangeStartA("span");
    CHECK(id != 0);
    nvtxRangeEnd(id);
    printf("range %llu\n", (unsigned long long)id);
}

#define THREADS 64
#define NESTED 1000

static pthread_barrier_t barrier;

static void *nested_ranges(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&barrier);
    for (int i = 0; i < NESTED; i++)
        CHECK(nvtxRangePushA("nested") == i);
    for (int i = NESTED - 1; i >= 0; i--)
        CHECK(nvtxRangePop() == i);
    return NULL;
}

static void scenario_threads(void)
{
    pthread_t t[THREADS];
    pthread_barrier_init(&barrier, NULL, THREADS);
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_create(&t[i], NULL, nested_ranges, NULL) == 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
}

/* 300 short-lived threads, 50 at a time: rings of exited threads are reused. */
static void *ten_ranges(void *arg)
{
    (void)arg;
    for (int i = 0; i < 10; i++) {
        CHECK(nvtxRangePushA("short-lived") == 0);
        CHECK(nvtxRangePop() == 0);
    }
    return NULL;
}

static void scenario_thread_churn(void)
{
    for (int batch = 0; batch < 6; batch++) {
        pthread_t t[50];
        for (int i = 0; i < 50; i++)
            CHECK(pthread_create(&t[i], NULL, ten_ranges, NULL) == 0);
        for (int i = 0; i < 50; i++)
            pthread_join(t[i], NULL);
        sleep_ms(40); /* the writer reclaims the exited threads' rings */
    }
}

static void *end_range(void *arg)
{
    nvtxRangeEnd(*(nvtxRangeId_t *)arg);
    return NULL;
}

static void scenario_cross_thread(void)
{
    nvtxRangeId_t id = nvtxRangeStartA("handed over");
    pthread_t t;
    CHECK(pthread_create(&t, NULL, end_range, &id) == 0);
    pthread_join(t, NULL);
    printf("range %llu\n", (unsigned long long)id);
}

/* the main thread starts 1000 ranges, 1 ms apart in all, a second thread ends them 5 ms later
 * (its buffer is drained before the main thread's: its ENDs precede their STARTs in the file) */
#define HANDED_OVER 1000
static nvtxRangeId_t handed_over[HANDED_OVER];

static void *end_all_ranges(void *arg)
{
    (void)arg;
    sleep_ms(5);
    for (int i = 0; i < HANDED_OVER; i++)
        nvtxRangeEnd(handed_over[i]);
    return NULL;
}

static void scenario_cross_thread_many(void)
{
    for (int i = 0; i < HANDED_OVER; i++)
        handed_over[i] = nvtxRangeStartA("handed over");
    pthread_t t;
    CHECK(pthread_create(&t, NULL, end_all_ranges, NULL) == 0);
    pthread_join(t, NULL);
}

/* push/pop nesting 200000 levels deep, then popped back out */
static void scenario_deep(void)
{
    enum { DEPTH = 200000 };
    for (int d = 0; d < DEPTH; d++)
        CHECK(nvtxRangePushA("level") == d);
    for (int d = DEPTH; d-- > 0;)
        CHECK(nvtxRangePop() == d);
}

static nvtxEventAttributes_t attributes(void)
{
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof(a));
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    return a;
}

static void scenario_attributes(void)
{
    nvtxDomainHandle_t io = nvtxDomainCreateA("io");
    CHECK(io != NULL);
    CHECK(nvtxDomainCreateA("io") == io);
    nvtxDomainHandle_t wide = nvtxDomainCreateW(L"wide-domain");
    CHECK(wide != NULL && wide != io);

    nvtxNameCategoryA(7, "global-cat");
    nvtxDomainNameCategoryA(io, 3, "io-cat");
    nvtxStringHandle_t reg = nvtxDomainRegisterStringA(io, "registered");
    nvtxStringHandle_t reg2 = nvtxDomainRegisterStringA(io, "registered-2");
    CHECK(reg != NULL && reg2 != NULL && reg != reg2);

    /* the default domain and plain pushes share one stack; a domain has its own */
    CHECK(nvtxRangePushA("plain") == 0);
    nvtxEventAttributes_t a = attributes();
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "default-domain";
    CHECK(nvtxDomainRangePushEx(NULL, &a) == 1);

    a = attributes();
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = reg;
    a.category = 3;
    a.colorType = NVTX_COLOR_ARGB;
    a.color = 0xFF00FF00u;
    a.payloadType = NVTX_PAYLOAD_TYPE_INT32;
    a.payload.iValue = -5;
    CHECK(nvtxDomainRangePushEx(io, &a) == 0);

    a = attributes();
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = reg;
    a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
    a.payload.ullValue = 0xFFFFFFFFFFFFull;
    CHECK(nvtxDomainRangePushEx(io, &a) == 1);
    CHECK(nvtxDomainRangePop(io) == 1);
    CHECK(nvtxDomainRangePop(io) == 0);
    CHECK(nvtxDomainRangePop(io) < 0);
    CHECK(nvtxDomainRangePop(NULL) == 1);
    CHECK(nvtxRangePop() == 0);

    a = attributes();
    a.messageType = NVTX_MESSAGE_TYPE_UNICODE;
    a.message.unicode = L"h\u00e9llo \u2713 \U0001D11E";
    a.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
    a.payload.dValue = 2.25;
    nvtxDomainMarkEx(wide, &a);

    a = attributes();
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "float-mark";
    a.category = 7;
    a.payloadType = NVTX_PAYLOAD_TYPE_FLOAT;
    a.payload.fValue = 1.5f;
    nvtxMarkEx(&a);
    nvtxMarkW(L"wide-mark");
    CHECK(nvtxRangePushW(L"wide-push") == 0);
    CHECK(nvtxRangePop() == 0);

    a = attributes();
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = reg2;
    nvtxRangeId_t id = nvtxDomainRangeStartEx(io, &a);
    CHECK(id != 0);
    nvtxDomainRangeEnd(io, id);

    nvtxNameOsThreadA(4242, "worker-name");
    nvtxNameCuStreamA((CUstream)(uintptr_t)0x1234, "cu-stream");
    nvtxNameCuDeviceW(1, L"cu-device");
    nvtxNameCudaEventA((cudaEvent_t)(uintptr_t)0x5678, "rt-event");
    nvtxDomainDestroy(wide);
}

/* a 1 MiB name (slow path) and bytes that are not UTF-8, both recorded byte-exact */
static void scenario_big_names(void)
{
    size_t len = 1u << 20;
    char *big = malloc(len + 1);
    for (size_t i = 0; i < len; i++)
        big[i] = (char)('a' + i % 26);
    big[len] = '\0';
    CHECK(nvtxRangePushA(big) == 0);
    CHECK(nvtxRangePop() == 0);
    free(big);
    CHECK(nvtxRangePushA("\xff\xfe\x80 not utf-8 \xc3") == 0);
    CHECK(nvtxRangePop() == 0);
}

static void scenario_fork(void)
{
    nvtxDomainHandle_t d = nvtxDomainCreateA("forked-domain");
    CHECK(nvtxRangePushA("parent-before") == 0);
    CHECK(nvtxRangePop() == 0);
    fflush(stdout);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        nvtxEventAttributes_t a = attributes();
        a.messageType = NVTX_MESSAGE_TYPE_ASCII;
        a.message.ascii = "child";
        CHECK(nvtxDomainRangePushEx(d, &a) == 0);
        CHECK(nvtxDomainRangePop(d) == 0);
        exit(0);
    }
    int status;
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(nvtxRangePushA("parent-after") == 0);
    CHECK(nvtxRangePop() == 0);
    printf("child %d\n", (int)child);
}

static void scenario_sigkill(void)
{
    for (int i = 0; i < 100; i++) {
        CHECK(nvtxRangePushA("before-kill") == 0);
        CHECK(nvtxRangePop() == 0);
    }
    sleep_ms(300); /* > drain (10 ms) + flush (50 ms) periods, with room for a loaded machine */
    raise(SIGKILL);
}

/* killed by SIGTERM right after its events: the agent ends the file before the process dies */
static void scenario_sigterm(void)
{
    for (int i = 0; i < 10; i++) {
        CHECK(nvtxRangePushA("before-term") == 0);
        CHECK(nvtxRangePop() == 0);
    }
    raise(SIGTERM);
}

static void exit_3(int sig)
{
    (void)sig;
    _exit(3);
}

/* a program's own SIGTERM handler is left alone */
static void scenario_own_sigterm_handler(void)
{
    signal(SIGTERM, exit_3);
    nvtxMarkA("loads the agent");
    raise(SIGTERM);
}

/* ranges the program times itself around the NVTX calls */
static void scenario_durations(void)
{
    nvtxMarkA("warm-up"); /* NVTX loads the agent on its first call: keep that out of the timing */
    for (int i = 0; i < 20; i++) {
        uint64_t before = mono_ns();
        nvtxRangePushA("timed");
        uint64_t spin_until = mono_ns() + 100000u * (uint64_t)(i + 1);
        while (mono_ns() < spin_until)
            ;
        nvtxRangePop();
        uint64_t after = mono_ns();
        printf("timed %llu %llu\n", (unsigned long long)before, (unsigned long long)after);
        sleep_ms(3);
    }
}

/* a ring too small for a burst: records are dropped and counted, levels stay right */
static void scenario_overflow(void)
{
    for (int i = 0; i < 100000; i++) {
        CHECK(nvtxRangePushA("burst") == 0);
        CHECK(nvtxRangePushA("burst-inner") == 1);
        CHECK(nvtxRangePop() == 1);
        CHECK(nvtxRangePop() == 0);
    }
}

/* more threads writing at once than a 2-block pool has blocks: 8 threads, each 10000
 * nested pairs, all alive until every one is done */
#define CROWD_THREADS 8
static pthread_barrier_t crowd_barrier;

static void *crowd_thread(void *arg)
{
    (void)arg;
    for (int i = 0; i < 10000; i++) {
        CHECK(nvtxRangePushA("crowd") == 0);
        CHECK(nvtxRangePushA("crowd-inner") == 1);
        CHECK(nvtxRangePop() == 1);
        CHECK(nvtxRangePop() == 0);
    }
    pthread_barrier_wait(&crowd_barrier);
    return NULL;
}

static void scenario_crowd(void)
{
    pthread_t threads[CROWD_THREADS];
    pthread_barrier_init(&crowd_barrier, NULL, CROWD_THREADS);
    for (int i = 0; i < CROWD_THREADS; i++)
        CHECK(pthread_create(&threads[i], NULL, crowd_thread, NULL) == 0);
    for (int i = 0; i < CROWD_THREADS; i++)
        pthread_join(threads[i], NULL);
}

/* many laps of a small ring, with pauses so that nothing is dropped (the 64 KiB ring holds
 * ten rounds: the writer may be late by 150 ms), names of every length so records meet the
 * ring's end at every offset */
static void scenario_wrap(void)
{
    static const char names[] = "abcdefghijklmnopqrstuvwxyz";
    for (int round = 0; round < 100; round++) {
        for (int i = 0; i < 100; i++) {
            CHECK(nvtxRangePushA(names + i % 26) == 0);
            CHECK(nvtxRangePop() == 0);
        }
        sleep_ms(15);
    }
}

/* without a session folder: one warning, no file, and NVTX's own no-tool path (push and
 * pop answer NVTX_NO_PUSH_POP_TRACKING, start answers 0) */
static void scenario_inert(void)
{
    CHECK(nvtxRangePushA("a") == NVTX_NO_PUSH_POP_TRACKING);
    CHECK(nvtxRangePop() == NVTX_NO_PUSH_POP_TRACKING);
    CHECK(nvtxRangeStartA("s") == 0);
    nvtxMarkA("m");
}

struct scenario {
    const char *name;
    void (*run)(void);
};

static const struct scenario scenarios[] = {
    {"basic", scenario_basic},
    {"threads", scenario_threads},
    {"thread_churn", scenario_thread_churn},
    {"cross_thread", scenario_cross_thread},
    {"cross_thread_many", scenario_cross_thread_many},
    {"deep", scenario_deep},
    {"attributes", scenario_attributes},
    {"big_names", scenario_big_names},
    {"fork", scenario_fork},
    {"sigkill", scenario_sigkill},
    {"sigterm", scenario_sigterm},
    {"own_sigterm_handler", scenario_own_sigterm_handler},
    {"durations", scenario_durations},
    {"overflow", scenario_overflow},
    {"crowd", scenario_crowd},
    {"wrap", scenario_wrap},
    {"inert", scenario_inert},
    {NULL, NULL},
};

int main(int argc, char **argv)
{
    for (const struct scenario *s = scenarios; argc > 1 && s->name; s++) {
        if (strcmp(s->name, argv[1]) == 0) {
            s->run();
            return 0;
        }
    }
    fprintf(stderr, "workload: unknown scenario\n");
    return 2;
}
