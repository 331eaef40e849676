/* The RAPL part of the importer: TRACE_RAPL_* records (150-159) of the launcher's raw file
 * into cpu_packages and cpu_energy_samples (energy already unwrapped by the sampler,
 * src/launcher/rapl_sampler.c), and the reason none was sampled into
 * meta.rapl_disabled_reason. Record layouts: src/trace/records.def. */
#include "db/import_internal.h"
#include "trace/format.h"
#include "trace/records.h"

#include <errno.h>

enum { SLOT_PACKAGE, SLOT_SAMPLE, SLOT_DISABLED };

static int import_package(struct import_file *f, struct trace_fields *fl)
{
    struct trace_rapl_package p;
    trace_get_rapl_package(fl, &p);
    sqlite3_stmt *st = import_stmt(f, SLOT_PACKAGE,
                                   "INSERT INTO cpu_packages(package,"
                                   " max_energy_range_uj, dram_max_energy_range_uj)"
                                   " VALUES(?, ?, ?)");
    if (!st)
        return -EIO;
    import_bind_row(st, IMPORT_INT(p.package), IMPORT_INT(p.max_range_uj),
                    IMPORT_PLUS_ONE(p.dram_max_range_uj));
    return import_step(f, st, "cannot store a CPU package: ");
}

static int import_sample(struct import_file *f, struct trace_fields *fl)
{
    struct trace_rapl_sample r;
    trace_get_rapl_sample(fl, &r);
    sqlite3_stmt *st = import_stmt(f, SLOT_SAMPLE,
                                   "INSERT INTO cpu_energy_samples(package, ts_ns, energy_uj,"
                                   " dram_energy_uj) VALUES(?, ?, ?, ?)");
    if (!st)
        return -EIO;
    import_bind_row(st, IMPORT_INT(r.package), IMPORT_INT(r.ts), IMPORT_INT(r.energy_uj),
                    IMPORT_PLUS_ONE(r.dram_energy_uj));
    return import_step(f, st, "cannot store a CPU energy sample: ");
}

static int import_disabled(struct import_file *f, struct trace_fields *fl)
{
    struct trace_rapl_disabled d;
    trace_get_rapl_disabled(fl, &d);
    return import_meta_reason(f, SLOT_DISABLED, "rapl_disabled_reason", d.reason,
                              "RAPL disabled reason");
}

static int (*const importers[])(struct import_file *, struct trace_fields *) = {
    [TRACE_RAPL_PACKAGE - TRACE_RAPL_FIRST] = import_package,
    [TRACE_RAPL_SAMPLE - TRACE_RAPL_FIRST] = import_sample,
    [TRACE_RAPL_DISABLED - TRACE_RAPL_FIRST] = import_disabled,
};

static int rapl_record(void *ctx, unsigned type, struct trace_fields *fields)
{
    unsigned i = type - TRACE_RAPL_FIRST;
    if (i >= sizeof importers / sizeof importers[0] || !importers[i])
        return 0; /* a newer sampler's record: skipped */
    return importers[i](ctx, fields);
}

extern const char import_rapl_window_sql[];

const struct import_source import_source_RAPL = {
    .record = rapl_record,
    .window_sql = import_rapl_window_sql,
};
