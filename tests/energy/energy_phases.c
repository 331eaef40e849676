/* A program for the energy end-to-end tests: three NVTX ranges of known length inside one
 * lantern.h energy window, printing the window's live measurement so the test can compare it
 * with what the importer computes from the launcher's samples. */
#include "lantern.h"

#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <time.h>

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int main(void)
{
    lantern_monitor *m;
    if (lantern_monitor_open(NULL, "none", 0, &m) != LANTERN_OK)
        return 1;
    lantern_window_begin(m, "phases");
    static const char *names[] = {"phase1", "phase2", "phase3"};
    for (int i = 0; i < 3; i++) {
        nvtxRangePushA(names[i]);
        sleep_ms(250);
        nvtxRangePop();
    }
    lantern_measurement *r;
    if (lantern_window_end(m, "phases", &r) != LANTERN_OK)
        return 1;
    double j = -1, error = -1;
    lantern_measurement_gpu_energy(r, 0, &j, &error);
    printf("window %.6f %.6f %.6f\n", lantern_measurement_time(r), j, error);
    lantern_measurement_free(r);
    lantern_monitor_close(m);
    return 0;
}
