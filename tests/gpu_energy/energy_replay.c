/* Replays windows over the samples of a Lantern database with the energy model, for the
 * accuracy benchmark (bench/bench_energy_accuracy.py --replay): reads "gpu_id start_ns end_ns"
 * lines on stdin and prints "joules error_joules counter_updates flags" for each, or with
 * --power-only the same by the pre-Volta method (the power integral alone). */
#include "energy/energy_db.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    int power_only = argc > 2 && strcmp(argv[2], "--power-only") == 0;
    sqlite3 *db = NULL;
    if (argc < 2 || sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        fprintf(stderr, "usage: energy_replay DB [--power-only] < windows\n");
        sqlite3_close(db); /* sqlite3_open_v2 allocates a handle even when it fails */
        return 2;
    }
    struct energy_db_gpu *gpus;
    int n = energy_db_load(db, &gpus);
    if (n <= 0) {
        fprintf(stderr, "energy_replay: no GPU samples in %s\n", argv[1]);
        sqlite3_close(db);
        return 1;
    }
    long long gpu_id;
    unsigned long long start, end;
    while (scanf("%lld %llu %llu", &gpu_id, &start, &end) == 3) {
        const struct energy_db_gpu *g = NULL;
        for (int i = 0; i < n; i++)
            if (gpus[i].gpu_id == gpu_id)
                g = &gpus[i];
        if (!g) {
            printf("nan nan 0 0\n");
            continue;
        }
        gpus[g - gpus].track.power_only = power_only;
        struct energy_interval e = energy_track_between(&g->track, start, end);
        printf("%.6f %.6f %llu %u\n", e.mj / 1000, e.error_mj / 1000, (unsigned long long)e.updates,
               e.flags);
    }
    energy_db_free(gpus, n);
    sqlite3_close(db);
    return 0;
}
