/* A server that forks a worker per request, as the launcher sees it: N times, a child forks a
 * grandchild and exits at once, so the grandchild is orphaned to lantern (the subreaper),
 * which reaps it. Each grandchild exits with getpid() % 200 + 1, the ground truth that the
 * database's exit statuses are checked against, after an NVTX mark when MODE is "traced" (a
 * process is recorded from its first NVTX call). At the end, once its last orphan had time to
 * be reaped, it prints the memory of its parent, the launcher, as "launcher_hwm_kib N
 * launcher_anon_kib M" (test_launcher_flat.py): its peak (VmHWM) and its anonymous memory
 * (RssAnon: the heap and stacks, without the file pages of its libraries, which the page
 * cache drops and brings back at will), then waits until the file STOP exists, if named.
 * Usage: N [traced|quiet] [STOP] */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The launcher's FIELD of /proc/PID/status ("VmHWM:", "RssAnon:") in KiB, or -1. */
static long parent_kib(const char *field)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)getppid());
    FILE *f = fopen(path, "r");
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, field, strlen(field)))
            kib = atol(line + strlen(field));
    if (f)
        fclose(f);
    return kib;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100;
    int traced = argc > 2 && !strcmp(argv[2], "traced");
    for (long i = 0; i < n; i++) {
        pid_t child = fork();
        if (child < 0)
            return 1;
        if (child == 0) {
            if (fork() == 0) {
                if (traced)
                    nvtxMarkA("request");
                _exit(getpid() % 200 + 1);
            }
            _exit(0);
        }
        int status;
        while (waitpid(child, &status, 0) < 0)
            ;
    }
    usleep(300000); /* the last orphans reaped */
    printf("launcher_hwm_kib %ld launcher_anon_kib %ld\n", parent_kib("VmHWM:"),
           parent_kib("RssAnon:"));
    fflush(stdout);
    while (argc > 3 && access(argv[3], F_OK) != 0)
        usleep(10000);
    return 0;
}
