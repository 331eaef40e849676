/* A tiny test harness in libuv's manner: each test is a function named for the behaviour
 * it checks, registered in a table; ASSERTs on exact values print where they failed. */
#ifndef LANTERN_TEST_HARNESS_H
#define LANTERN_TEST_HARNESS_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ASSERT(cond)                                                                        \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__, __LINE__, #cond);    \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

#define ASSERT_EQ(a, b)                                                                     \
    do {                                                                                    \
        long long a_ = (long long)(a), b_ = (long long)(b);                                 \
        if (a_ != b_) {                                                                     \
            fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", __FILE__, __LINE__,   \
                    #a, #b, a_, b_);                                                        \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

#define ASSERT_STR_EQ(a, b)                                                                 \
    do {                                                                                    \
        const char *a_ = (a), *b_ = (b);                                                    \
        if (!a_ || !b_ || strcmp(a_, b_) != 0) {                                            \
            fprintf(stderr, "%s:%d: %s == %s failed: \"%s\" != \"%s\"\n", __FILE__,        \
                    __LINE__, #a, #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)");              \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

struct test_case { const char *name; void (*fn)(void); };

/* main() for a test program: runs every test, or the one named in argv[1]. */
static inline int test_main(const struct test_case *tests, int argc, char **argv)
{
    int ran = 0;
    for (const struct test_case *t = tests; t->name; t++) {
        if (argc > 1 && strcmp(argv[1], t->name) != 0)
            continue;
        fprintf(stderr, "test %s ... ", t->name);
        t->fn();
        fprintf(stderr, "ok\n");
        ran++;
    }
    if (!ran) {
        fprintf(stderr, "no test named %s\n", argc > 1 ? argv[1] : "(none)");
        return 1;
    }
    return 0;
}

#endif
