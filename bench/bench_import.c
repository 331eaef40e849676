/* Importer throughput: writes a synthetic session (raw files as the agent writes them:
 * 1 MiB chunks of PUSH/POP records on several threads, nested three deep) and times
 * import_session() on it. Budget: 2 M events/s on one core (a range = 2 events).
 * Usage: bench_import [ranges (default 2000000)] [processes (default 2)] */
#include "db/import.h"
#include "import/raw_writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHUNK_BYTES (1u << 20)
#define THREADS 4

static double now_s(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Starts a new chunk when the current one is nearly full, as the agent's writer does. */
static void make_room(struct raw_writer *w, uint64_t ts)
{
    if (w->b.cap - w->b.len > 256)
        return;
    raw_flush(w, 0);
    raw_chunk(w, ts);
}

/* One process: each step opens "step" > "forward" > "kernel" on one of THREADS threads. */
static void write_process(const char *dir, unsigned pid, uint64_t ranges)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%u-1.lrt", dir, pid);
    struct raw_writer w;
    raw_open(&w, path, CHUNK_BYTES);
    uint64_t ts = 1000000;
    raw_chunk(&w, ts);
    raw_process(&w, pid, ts, "bench", 5, TRACE_FLAG_NVTX, NULL);
    const char *names[] = {"step", "forward", "kernel"};
    for (unsigned i = 0; i < 3; i++)
        raw_string(&w, i + 1, names[i]);
    for (unsigned t = 1; t <= THREADS; t++)
        raw_thread(&w, t, pid + t, ts);
    for (uint64_t r = 0; r < ranges; r += 3) {
        uint64_t thread = r / 3 % THREADS + 1;
        for (unsigned depth = 0; depth < 3; depth++) {
            make_room(&w, ts);
            raw_push(&w, thread, ts += 100, 0, depth, depth + 1);
        }
        for (int depth = 2; depth >= 0; depth--) {
            make_room(&w, ts);
            raw_pop(&w, thread, ts += 50 + (r % 7), 0, (uint64_t)depth);
        }
    }
    RAW(&w, process_end, .end = ts, .dropped_total = 0, .clean = 1);
    raw_flush(&w, 0);
    raw_close(&w);
}

int main(int argc, char **argv)
{
    uint64_t ranges = argc > 1 ? strtoull(argv[1], NULL, 10) : 2000000;
    unsigned processes = argc > 2 ? (unsigned)atoi(argv[2]) : 2;
    char dir[] = "/tmp/lantern-bench-import-XXXXXX", db[64], cmd[128];
    if (!mkdtemp(dir) || !processes)
        return 1;
    for (unsigned p = 0; p < processes; p++)
        write_process(dir, 1000 * (p + 1), ranges / processes);
    snprintf(db, sizeof db, "%s.db", dir);
    struct import_summary sum;
    /* CPU time is the budget's measure (one core) and steadier than wall time on a shared machine
     */
    double wall0 = now_s(CLOCK_MONOTONIC), cpu0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
    int rc = import_session(dir, db, NULL, &sum);
    double wall = now_s(CLOCK_MONOTONIC) - wall0, cpu = now_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    struct stat st;
    stat(db, &st);
    printf("bench_import: %llu ranges (%llu events) in %u processes, %llu records\n",
           (unsigned long long)sum.ranges, (unsigned long long)sum.ranges * 2, processes,
           (unsigned long long)sum.records);
    printf("bench_import: cpu %.3f s = %.2f M events/s (%.0f ns per range); wall %.3f s = %.2f M "
           "events/s; "
           "database %.1f MB\n",
           cpu, (double)sum.ranges * 2 / cpu / 1e6, cpu * 1e9 / (double)sum.ranges, wall,
           (double)sum.ranges * 2 / wall / 1e6, (double)st.st_size / 1e6);
    snprintf(cmd, sizeof cmd, "rm -rf %s %s", dir, db);
    if (system(cmd) != 0 || rc != 0)
        return 1;
    return 0;
}
