/* What a comparison's result is made of, below every stage that fills or writes it: the names of
 * its row kinds, verdicts and explained parts, its warnings and its regression count. The
 * comparison (diff_compare.c), the checks (diff_checks.c), the loading (diff_load.c) and the
 * writers (diff_output.c, diff_html.c) read them here, so that no two of those files call each
 * other. */
#include "diff/diff_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

const struct diff_kind_info diff_kinds[DIFF_KIND_COUNT] = {
    [DIFF_KIND_RUN] = {"run", DIFF_UNIT_NS},
    [DIFF_KIND_RANGE] = {"range", DIFF_UNIT_NS},
    [DIFF_KIND_KERNEL] = {"kernel", DIFF_UNIT_NS},
    [DIFF_KIND_RANGE_KERNEL] = {"kernel in range", DIFF_UNIT_NS},
    [DIFF_KIND_COPY] = {"copy", DIFF_UNIT_NS},
    [DIFF_KIND_API] = {"cuda api", DIFF_UNIT_NS},
    [DIFF_KIND_ENERGY] = {"energy", DIFF_UNIT_JOULES},
    [DIFF_KIND_METRIC] = {"gpu metric", DIFF_UNIT_PERCENT},
};

const char *const diff_verdict_names[DIFF_VERDICT_COUNT] = {
    [DIFF_SLOWER] = "slower", [DIFF_FASTER] = "faster",     [DIFF_HIGHER] = "higher",
    [DIFF_LOWER] = "lower",   [DIFF_NEW] = "new",           [DIFF_GONE] = "gone",
    [DIFF_SAME] = "same",     [DIFF_UNTESTED] = "untested",
};

int diff_warn(struct diff_result *result, const char *fmt, ...)
{
    char *text;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&text, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -ENOMEM;
    char **grown = realloc(result->warnings, (result->warning_count + 1) * sizeof *grown);
    if (!grown) {
        free(text);
        return -ENOMEM;
    }
    result->warnings = grown;
    result->warnings[result->warning_count++] = text;
    return 0;
}

const char *const diff_part_names[DIFF_PART_COUNT] = {
    [DIFF_PART_KERNEL] = "kernel",      [DIFF_PART_COPY] = "copy",
    [DIFF_PART_RANGE] = "nested range", [DIFF_PART_SYNC] = "sync waits",
    [DIFF_PART_HOST] = "host gaps",
};

size_t diff_regressions(const struct diff_result *result)
{
    return result->verdicts[DIFF_SLOWER];
}
