/* A small NVTX program for the README's quick start and the end-to-end tests: nested
 * push/pop ranges on the main thread, two worker threads, a start/end range that ends on
 * another thread, marks, a named domain with a category, colors and payloads. */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static nvtxDomainHandle_t io_domain;

/* Each worker names itself and does a few "io" steps in its own domain. */
static void *worker(void *arg)
{
    long index = (long)arg;
    char name[32];
    snprintf(name, sizeof name, "worker %ld", index);
    nvtxNameOsThreadA((uint32_t)gettid(), name);
    for (int i = 0; i < 3; i++) {
        nvtxEventAttributes_t a = {0};
        a.version = NVTX_VERSION;
        a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
        a.category = 1;
        a.messageType = NVTX_MESSAGE_TYPE_ASCII;
        a.message.ascii = "read";
        a.payloadType = NVTX_PAYLOAD_TYPE_INT64;
        a.payload.llValue = i;
        nvtxDomainRangePushEx(io_domain, &a);
        sleep_ms(2 + index);
        nvtxDomainRangePop(io_domain);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 5;
    io_domain = nvtxDomainCreateA("io");
    nvtxDomainNameCategoryA(io_domain, 1, "disk");
    nvtxNameOsThreadA((uint32_t)gettid(), "main");
    nvtxMarkA("start");

    nvtxEventAttributes_t load = {0};
    load.version = NVTX_VERSION;
    load.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    load.colorType = NVTX_COLOR_ARGB;
    load.color = 0xFF2E86DE;
    load.messageType = NVTX_MESSAGE_TYPE_ASCII;
    load.message.ascii = "load";
    nvtxRangeId_t loading = nvtxRangeStartEx(&load);

    pthread_t threads[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&threads[i], NULL, worker, (void *)i);
    for (int i = 0; i < 2; i++)
        pthread_join(threads[i], NULL);
    nvtxRangeEnd(loading);

    for (int step = 0; step < steps; step++) {
        nvtxRangePushA("step");
        nvtxRangePushA("forward");
        sleep_ms(3);
        nvtxRangePop();
        nvtxRangePushA("backward");
        sleep_ms(5);
        nvtxRangePop();
        nvtxRangePop();
    }
    nvtxMarkA("done");
    printf("nvtx_demo: %d steps done\n", steps);
    return 0;
}
