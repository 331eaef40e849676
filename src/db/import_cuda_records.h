/* The CUDA source's record handlers (import_cuda_records.c), for its row and end-of-session
 * work in import_cuda.c. */
#ifndef LANTERN_DB_IMPORT_CUDA_RECORDS_H
#define LANTERN_DB_IMPORT_CUDA_RECORDS_H

#include "db/import_internal.h"

/* The CUDA importer's state for one file (the kernels and API calls it holds back to write in
 * batches): NULL when out of memory. */
void *import_cuda_file_open(struct import_file *f, void *session_state);
/* One CUDA record (types 40-79); ctx is import_cuda_file_open's. */
int import_cuda_record(void *ctx, unsigned type, struct trace_fields *fields);
/* End of the file: writes the rows held back, frees ctx. */
void import_cuda_file_close(void *ctx);

/* cuda_api.api: TRACE_CUDA_API's "u api (0 runtime, 1 driver)" (src/trace/format.h). */
enum { IMPORT_CUDA_API_RUNTIME = 0, IMPORT_CUDA_API_DRIVER = 1 };

/* cuda_syncs.sync_kind of a TRACE_CUDA_SYNC_* value (NULL: unknown). */
#define IMPORT_CUDA_SYNC_KINDS 5
extern const char *const import_cuda_sync_kind_names[IMPORT_CUDA_SYNC_KINDS];

#endif
