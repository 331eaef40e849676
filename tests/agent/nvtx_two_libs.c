/* Starts 8 threads at once (a barrier) that make their first NVTX calls through two
 * different libraries, each with its own NVTX copy, so the agent's init runs concurrently. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

int nvtx_lib_a_ranges(int n);
int nvtx_lib_b_ranges(int n);

static pthread_barrier_t barrier;

static void *worker(void *arg)
{
    int first_a = (int)(long)arg % 2;
    pthread_barrier_wait(&barrier);
    int rc = first_a ? nvtx_lib_a_ranges(1000) | nvtx_lib_b_ranges(1000)
                     : nvtx_lib_b_ranges(1000) | nvtx_lib_a_ranges(1000);
    return (void *)(long)rc;
}

int main(void)
{
    pthread_t t[8];
    pthread_barrier_init(&barrier, NULL, 8);
    for (long i = 0; i < 8; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)i) != 0)
            return 1;
    int failed = 0;
    for (int i = 0; i < 8; i++) {
        void *rc;
        pthread_join(t[i], &rc);
        failed |= rc != NULL;
    }
    if (failed)
        fprintf(stderr, "nvtx_two_libs: wrong push/pop levels\n");
    return failed;
}
