/* A stand-in for a program's driver calls (tests/energy/test_sampler_interference.py): for
 * SECONDS it takes the fake NVML's driver lock (a file, flock) around a 50 us "driver call",
 * then pauses 200 us, and prints how much of its time it spent waiting for the lock, which
 * the fake's slow NVML calls hold. With `b2b`, a thread of its own reads the fake's energy
 * counter back to back meanwhile, as the sampler once did: the control that shows the test
 * can fail. With `monitor`, it opens a lantern.h energy monitor (in-process sampling) and
 * measures a window around the loop.
 *
 *   driver_lock_client LOCK_FILE SECONDS [b2b|monitor]
 * prints: wait_share=F calls=N max_wait_ms=F */
#include "lantern.h"
#include "nvml/nvml_iface.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void spin_for(uint64_t ns)
{
    uint64_t until = now_ns() + ns;
    while (now_ns() < until)
        ;
}

static int stop;

static void *read_back_to_back(void *arg)
{
    struct nvml *nvml = arg;
    unsigned long long mj;
    while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE))
        nvml->api.total_energy(nvml->gpus[0].device, &mj);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: driver_lock_client LOCK_FILE SECONDS [b2b]\n");
        return 2;
    }
    int fd = open(argv[1], O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        perror(argv[1]);
        return 1;
    }
    static struct nvml nvml;
    pthread_t reader;
    int b2b = argc > 3 && strcmp(argv[3], "b2b") == 0;
    if (b2b &&
        (nvml_open(&nvml) != 0 || pthread_create(&reader, NULL, read_back_to_back, &nvml) != 0)) {
        fprintf(stderr, "driver_lock_client: %s\n", nvml.disabled_reason);
        return 1;
    }
    lantern_monitor *monitor = NULL;
    if (argc > 3 && strcmp(argv[3], "monitor") == 0 &&
        (lantern_monitor_open(NULL, NULL, 0, &monitor) != LANTERN_OK ||
         lantern_window_begin(monitor, "loop") != LANTERN_OK)) {
        fprintf(stderr, "driver_lock_client: cannot open a monitor\n");
        return 1;
    }
    uint64_t start = now_ns(), end = start + (uint64_t)(atof(argv[2]) * 1e9);
    uint64_t waited = 0, worst = 0, calls = 0;
    while (now_ns() < end) {
        uint64_t t0 = now_ns();
        flock(fd, LOCK_EX);
        uint64_t wait = now_ns() - t0;
        waited += wait;
        worst = wait > worst ? wait : worst;
        spin_for(50000);
        flock(fd, LOCK_UN);
        calls++;
        usleep(200);
    }
    double secs = (double)(now_ns() - start) / 1e9;
    if (b2b) {
        __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
        pthread_join(reader, NULL);
        nvml_close(&nvml);
    }
    if (monitor) {
        lantern_measurement *m = NULL;
        double joules = 0;
        if (lantern_window_end(monitor, "loop", &m) == LANTERN_OK)
            lantern_measurement_gpu_energy(m, 0, &joules, NULL);
        printf("window_j=%.3f ", joules);
        lantern_measurement_free(m);
        lantern_monitor_close(monitor);
    }
    printf("wait_share=%.4f calls=%llu max_wait_ms=%.3f\n", (double)waited / 1e9 / secs,
           (unsigned long long)calls, (double)worst / 1e6);
    return 0;
}
