/* CPU package and DRAM energy from Linux's powercap interface (RAPL): the counters under
 * /sys/class/powercap/intel-rapl:N (package N) and its "dram" subzone, in µJ, wrapping at
 * max_energy_range_uj. $LANTERN_POWERCAP_ROOT replaces /sys/class/powercap (tests). */
#ifndef LANTERN_ENERGY_RAPL_H
#define LANTERN_ENERGY_RAPL_H

#include <stdint.h>

#define RAPL_MAX_PACKAGES 16

struct rapl_zone {
    char energy_path[256]; /* "" when the zone does not exist */
    uint64_t max_range_uj;
};

struct rapl_package {
    int index; /* N of intel-rapl:N */
    struct rapl_zone package, dram;
};

/* The powercap folder read: $LANTERN_POWERCAP_ROOT, else /sys/class/powercap. */
const char *rapl_powercap_root(void);

/* Finds the packages named by spec (NULL or "": all; "none": none; else indices separated by
 * commas). Returns how many were found (0 when there is no RAPL), or -EINVAL when spec names
 * a package that does not exist. */
int rapl_discover(const char *spec, struct rapl_package *out, int max);

/* Reads a zone's counter; returns 0, -ENOENT when the zone is absent, or fopen's -errno or
 * -EIO/-EBADMSG when unreadable (since 2020 Linux lets only root read it). */
int rapl_read(const struct rapl_zone *z, uint64_t *uj);

/* Microjoules between two reads of a zone, across at most one wrap of the counter. */
uint64_t rapl_uj_between(const struct rapl_zone *z, uint64_t before_uj, uint64_t after_uj);

/* Joules between two reads of a zone, across at most one wrap of the counter. */
double rapl_joules_between(const struct rapl_zone *z, uint64_t before_uj, uint64_t after_uj);

#endif
