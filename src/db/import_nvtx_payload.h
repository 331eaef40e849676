/* The NVTX importer's extended payloads (import_nvtx_payload.c), called by import_nvtx.c: the
 * schemas and enumerations a file registers (records 30-33) and the payloads (record 34)
 * that follow an event, stored with the range or mark the event made or ended. */
#ifndef LANTERN_DB_IMPORT_NVTX_PAYLOAD_H
#define LANTERN_DB_IMPORT_NVTX_PAYLOAD_H

#include "db/import_internal.h"

struct nvtx_payloads;

/* Its statement slots (import_stmt) start here: import_nvtx.c's are below. */
#define NVTX_PAYLOAD_SLOT_FIRST 16

/* One file's state, given the file's domain ids (its domain id -> domains.id, kept by
 * import_nvtx.c); NULL when out of memory (its payloads are then skipped). */
struct nvtx_payloads *nvtx_payloads_open(struct import_file *f, const struct id_vec *domains);
void nvtx_payloads_close(struct nvtx_payloads *p);

/* The event whose payloads may follow: on the thread thread_idx, in the file's domain, the
 * range (ranges.id) it began or ended or the mark (marks.id) it made. Called for every NVTX
 * record: with both ids 0 when the record can carry none (payloads after it are ignored). */
void nvtx_payloads_owner(struct nvtx_payloads *p, uint64_t thread_idx, uint64_t file_domain,
                         int64_t range_id, int64_t mark_id);

/* TRACE_PAYLOAD_SCHEMA .. TRACE_PAYLOAD: 0, or a negative code. */
int nvtx_payloads_record(struct nvtx_payloads *p, unsigned type, struct trace_fields *fields);

#endif
