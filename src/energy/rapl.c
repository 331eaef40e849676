/* RAPL through powercap (see rapl.h): zone discovery by name, counter reads, wrap handling. */
#include "energy/rapl.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *rapl_powercap_root(void)
{
    const char *root = getenv("LANTERN_POWERCAP_ROOT");
    return root && *root ? root : "/sys/class/powercap";
}

static int read_u64_file(const char *path, uint64_t *v)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -errno;
    unsigned long long x;
    int rc = fscanf(f, "%llu", &x) == 1 ? 0 : ferror(f) ? -EIO : -EBADMSG;
    fclose(f);
    if (rc == 0)
        *v = x;
    return rc;
}

static int zone_name_is(const char *zone_dir, const char *want)
{
    char path[512], name[64] = "";
    snprintf(path, sizeof path, "%s/name", zone_dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int ok = fscanf(f, "%63s", name) == 1;
    fclose(f);
    return ok && strcmp(name, want) == 0;
}

static void zone_init(struct rapl_zone *z, const char *zone_dir)
{
    char path[512];
    int n = snprintf(z->energy_path, sizeof z->energy_path, "%s/energy_uj", zone_dir);
    if (n < 0 || (size_t)n >= sizeof z->energy_path) {
        z->energy_path[0] = 0; /* a path too long to hold: the zone is not read */
        return;
    }
    snprintf(path, sizeof path, "%s/max_energy_range_uj", zone_dir);
    if (read_u64_file(path, &z->max_range_uj) != 0)
        z->max_range_uj = 0;
}

/* Fills a package's zones from intel-rapl:N and its dram subzone intel-rapl:N:M. */
static void package_init(struct rapl_package *p, int index)
{
    char dir[300], sub[400];
    memset(p, 0, sizeof *p);
    p->index = index;
    snprintf(dir, sizeof dir, "%s/intel-rapl:%d", rapl_powercap_root(), index);
    zone_init(&p->package, dir);
    for (int m = 0; m < 8; m++) {
        snprintf(sub, sizeof sub, "%s/intel-rapl:%d:%d", dir, index, m);
        if (zone_name_is(sub, "dram")) {
            zone_init(&p->dram, sub);
            break;
        }
    }
}

static int package_exists(int index)
{
    char dir[300];
    snprintf(dir, sizeof dir, "%s/intel-rapl:%d", rapl_powercap_root(), index);
    char want[32];
    snprintf(want, sizeof want, "package-%d", index);
    return zone_name_is(dir, want);
}

int rapl_discover(const char *spec, struct rapl_package *out, int max)
{
    int count = 0;
    if (spec && strcmp(spec, "none") == 0)
        return 0;
    if (!spec || !*spec) {
        for (int i = 0; i < RAPL_MAX_PACKAGES && count < max; i++)
            if (package_exists(i))
                package_init(&out[count++], i);
        return count;
    }
    for (const char *p = spec; *p && count < max;) {
        char *end;
        long i = strtol(p, &end, 10);
        if (end == p || i < 0 || i >= RAPL_MAX_PACKAGES || !package_exists((int)i))
            return -EINVAL;
        package_init(&out[count++], (int)i);
        p = *end == ',' ? end + 1 : end;
    }
    return count;
}

int rapl_read(const struct rapl_zone *z, uint64_t *uj)
{
    return z->energy_path[0] ? read_u64_file(z->energy_path, uj) : -ENOENT;
}

uint64_t rapl_uj_between(const struct rapl_zone *z, uint64_t before_uj, uint64_t after_uj)
{
    return after_uj >= before_uj ? after_uj - before_uj : z->max_range_uj - before_uj + after_uj;
}

double rapl_joules_between(const struct rapl_zone *z, uint64_t before_uj, uint64_t after_uj)
{
    return (double)rapl_uj_between(z, before_uj, after_uj) / 1e6;
}
