/* What the CUDA source's importer files share (import_cuda.c, import_cuda_records.c,
 * import_demangle.c): nothing outside them includes this. */
#ifndef LANTERN_DB_IMPORT_CUDA_H
#define LANTERN_DB_IMPORT_CUDA_H

#include "db/import_internal.h"

/* One CUDA record (types 40-79); ctx is the import_file. */
int import_cuda_record(void *ctx, unsigned type, struct trace_fields *fields);

/* cuda_api.api: TRACE_CUDA_API's "u api (0 runtime, 1 driver)" (src/trace/format.h). */
enum { IMPORT_CUDA_API_RUNTIME = 0, IMPORT_CUDA_API_DRIVER = 1 };

/* cuda_syncs.sync_kind of a TRACE_CUDA_SYNC_* value (NULL: unknown). */
#define IMPORT_CUDA_SYNC_KINDS 5
extern const char *const import_cuda_sync_kind_names[IMPORT_CUDA_SYNC_KINDS];

/* kernels.demangled_id for every mangled kernel name not yet demangled. Returns 0 (also when
 * no C++ runtime is there to demangle) or -1 on an SQL error. */
int import_demangle_kernel_names(sqlite3 *db);

/* The CUDA passes after all files, embedded from cuda_*.sql at build time. */
extern const char import_cuda_correlate_sql[];
extern const char import_cuda_capture_sql[];
extern const char import_cuda_finish_sql[];

#endif
