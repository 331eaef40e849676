/* Names of NVML's slowdown reasons (see throttle.h). */
#include "model/throttle.h"

#include <stdio.h>

static const struct {
    unsigned bit;
    const char *name;
} throttle_names[] = {{0x4, "SW power cap"},
                      {0x8, "HW slowdown"},
                      {0x20, "SW thermal"},
                      {0x40, "HW thermal"},
                      {0x80, "HW power brake"}};

void throttle_text(unsigned reasons, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < sizeof throttle_names / sizeof throttle_names[0]; i++) {
        if (!(reasons & throttle_names[i].bit))
            continue;
        int n = snprintf(out + used, size - used, "%s%s", used ? ", " : "", throttle_names[i].name);
        if (n < 0 || (size_t)n >= size - used)
            break;
        used += (size_t)n;
    }
}
