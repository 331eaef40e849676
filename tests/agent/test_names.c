/* The agent's table of threads known only by tid (src/agent/names.c, CUPTI's API records),
 * compiled from the agent's source: a long run that keeps making new threads must keep
 * naming them after the table has filled. */
#include "agent/names.h"
#include "harness.h"

#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static char last_name[64];
static unsigned names_written;

static uint64_t fake_intern(const char *s, size_t len)
{
    snprintf(last_name, sizeof last_name, "%.*s", (int)len, s);
    return ++names_written;
}

static int fake_reserve(size_t bytes)
{
    (void)bytes;
    return 0;
}

static void test_a_new_thread_is_named_after_the_table_filled(void)
{
    static uint8_t buf[1 << 20];
    struct trace_chunk_builder chunk;
    trace_chunk_begin(&chunk, buf, sizeof buf, 0);
    struct names_out out = {&chunk, fake_intern, fake_reserve};
    prctl(PR_SET_NAME, "late-thread", 0, 0, 0);
    /* 4096 threads that have ended (no /proc entry: no name) fill the table many times */
    for (uint32_t tid = 1u << 30; tid < (1u << 30) + 4096; tid++)
        names_note_tid_locked(&out, tid);
    ASSERT_EQ(names_written, 0);
    names_note_tid_locked(&out, (uint32_t)syscall(SYS_gettid));
    ASSERT_EQ(names_written, 1);
    ASSERT_STR_EQ(last_name, "late-thread");
    names_note_tid_locked(&out, (uint32_t)syscall(SYS_gettid)); /* known: not again */
    ASSERT_EQ(names_written, 1);
}

static const struct test_case tests[] = {
    {"a_new_thread_is_named_after_the_table_filled",
     test_a_new_thread_is_named_after_the_table_filled},
    {NULL, NULL},
};

int main(int argc, char **argv)
{
    return test_main(tests, argc, argv);
}
