/* Test helper for the launcher's signal forwarding: opens an NVTX range, says "ready",
 * and waits; on SIGTERM it closes the range, marks, and exits 43 (so the test can tell a
 * forwarded SIGTERM from any other end). */
#include <nvtx3/nvToolsExt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile sig_atomic_t terminated;

static void on_term(int sig)
{
    (void)sig;
    terminated = 1;
}

int main(void)
{
    signal(SIGTERM, on_term);
    nvtxRangePushA("waiting");
    printf("ready\n");
    fflush(stdout);
    for (int i = 0; i < 3000 && !terminated; i++) /* at most 30 s */
        usleep(10000);
    nvtxRangePop();
    nvtxMarkA(terminated ? "got SIGTERM" : "timed out");
    return terminated ? 43 : 1;
}
