/* Test helper for the launcher's signal forwarding: opens an NVTX range, says "ready", and
 * waits for SIGTERM or SIGINT. After the first signal it waits 300 ms more to catch a
 * duplicate, closes the range, marks, and exits 40 + the number of signals received (so a
 * test sees that a signal arrived exactly once). */
#include <nvtx3/nvToolsExt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile sig_atomic_t signals_received;

static void on_signal(int sig)
{
    (void)sig;
    signals_received++;
}

int main(void)
{
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    nvtxRangePushA("waiting");
    printf("ready\n");
    fflush(stdout);
    for (int i = 0; i < 3000 && !signals_received; i++) /* at most 30 s */
        usleep(10000);
    usleep(300000);
    nvtxRangePop();
    nvtxMarkA(signals_received ? "got a signal" : "timed out");
    return signals_received ? 40 + signals_received : 1;
}
