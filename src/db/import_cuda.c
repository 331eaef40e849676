/* The CUDA source's importer: its row in the table of sources (import_source_CUDA) and its
 * work after all files: correlation (api_id), capture ranges, NVTX attribution, demangled
 * names, gpu_id and streams (cuda_*.sql, with the trace's enumerations bound by name). Its
 * records: import_cuda_records.c. */
#include "common/sql_query.h"
#include "db/import_cuda_records.h"
#include "db/import_demangle.h"
#include "trace/format.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Embedded from cuda_*.sql at build time (src/db/CMakeLists.txt). */
extern const char import_cuda_correlate_sql[];
extern const char import_cuda_capture_sql[];
extern const char import_cuda_finish_sql[];

/* NVTX attribution of API calls: the innermost push/pop range open on the calling thread at
 * the call's start, i.e. the open range that started last. One sweep per thread over ranges
 * and calls sorted by start, with a stack of candidate ranges (ended ones popped lazily),
 * so it stays O(n log n) where a correlated subquery would be quadratic. */
struct candidate_range {
    int64_t id, end_ns;
    int open_forever;
};

static int attribute_api_calls(sqlite3 *db)
{
    sqlite3_stmt *ranges = NULL, *calls = NULL, *update = NULL;
    struct candidate_range *stack = NULL;
    size_t depth = 0, cap = 0;
    int rc = -EIO;
    if (sqlite3_prepare_v2(
            db,
            "SELECT start_thread_id, start_ns, id, end_ns FROM ranges WHERE style = ?"
            " ORDER BY start_thread_id, start_ns, id",
            -1, &ranges, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(
            db, "SELECT thread_id, start_ns, id FROM cuda_api ORDER BY thread_id, start_ns, id", -1,
            &calls, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "UPDATE cuda_api SET nvtx_range_id = ? WHERE id = ?", -1, &update,
                           NULL) != SQLITE_OK)
        goto fail;
    import_bind_row(ranges, IMPORT_INT(IMPORT_RANGE_PUSH_POP));

    int have_range = sqlite3_step(ranges) == SQLITE_ROW;
    int64_t thread = -1;
    while (sqlite3_step(calls) == SQLITE_ROW) {
        int64_t call_thread = sqlite3_column_int64(calls, 0);
        int64_t call_start = sqlite3_column_int64(calls, 1);
        if (call_thread != thread) {
            thread = call_thread;
            depth = 0;
            while (have_range && sqlite3_column_int64(ranges, 0) < thread)
                have_range = sqlite3_step(ranges) == SQLITE_ROW;
        }
        /* Push every range of this thread that started at or before the call. */
        while (have_range && sqlite3_column_int64(ranges, 0) == thread &&
               sqlite3_column_int64(ranges, 1) <= call_start) {
            if (depth == cap) {
                size_t new_cap = cap ? cap * 2 : 64;
                struct candidate_range *grown = realloc(stack, new_cap * sizeof(*stack));
                if (!grown)
                    goto fail;
                stack = grown;
                cap = new_cap;
            }
            stack[depth++] = (struct candidate_range){sqlite3_column_int64(ranges, 2),
                                                 sqlite3_column_int64(ranges, 3),
                                                 sqlite3_column_type(ranges, 3) == SQLITE_NULL};
            have_range = sqlite3_step(ranges) == SQLITE_ROW;
        }
        while (depth && !stack[depth - 1].open_forever && stack[depth - 1].end_ns <= call_start)
            depth--;
        if (!depth)
            continue;
        import_bind_row(update, IMPORT_INT(stack[depth - 1].id),
                        IMPORT_INT(sqlite3_column_int64(calls, 2)));
        if (sqlite3_step(update) != SQLITE_DONE)
            goto fail;
        sqlite3_reset(update);
    }
    rc = 0;
fail:
    free(stack);
    sqlite3_finalize(ranges);
    sqlite3_finalize(calls);
    sqlite3_finalize(update);
    return rc;
}


/* Kernels, the bulk of a CUDA trace, are written during the files to temp.kernels, a table of
 * the same definition that hides main.kernels from every unqualified name (SQLite looks in temp
 * first): cuda_finish.sql then writes each row once, complete (launching call, range, GPU,
 * demangled name), into main.kernels in id order, where an UPDATE would rewrite every row. */
static int cuda_session_open(sqlite3 *db, void **state)
{
    *state = NULL;
    char *create = NULL;
    const char *prefix = "CREATE TABLE kernels";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT sql FROM main.sqlite_master WHERE name = 'kernels'", -1,
                           &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        const char *sql = (const char *)sqlite3_column_text(st, 0);
        if (sql && !strncmp(sql, prefix, strlen(prefix)))
            create = sqlite3_mprintf("CREATE TEMP TABLE kernels%s", sql + strlen(prefix));
    }
    sqlite3_finalize(st);
    int rc = create && sqlite3_exec(db, create, NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
    sqlite3_free(create);
    return rc;
}

/* (The pass sorts every range: skipped for sessions without CUDA records.) */
static int cuda_session_finish(sqlite3 *db, void *state, uint64_t records)
{
    (void)state;
    if (!records) /* nothing was written to temp.kernels */
        return sqlite3_exec(db, "DROP TABLE temp.kernels", NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
    /* the enumerations the scripts compare with, by name (src/trace/format.h) */
    const struct import_sql_param params[] = {
        {":api_runtime", IMPORT_CUDA_API_RUNTIME, NULL},
        {":api_driver", IMPORT_CUDA_API_DRIVER, NULL},
        {":sync_event", 0, import_cuda_sync_kind_names[TRACE_CUDA_SYNC_EVENT]},
        {":sync_stream_wait_event", 0,
         import_cuda_sync_kind_names[TRACE_CUDA_SYNC_STREAM_WAIT_EVENT]},
        {":sync_stream", 0, import_cuda_sync_kind_names[TRACE_CUDA_SYNC_STREAM]},
        {":sync_context", 0, import_cuda_sync_kind_names[TRACE_CUDA_SYNC_CONTEXT]},
        {":resource_cu_context", TRACE_RESOURCE_CU_CONTEXT, NULL},
        {":resource_cu_stream", TRACE_RESOURCE_CU_STREAM, NULL},
        {":resource_cudart_stream", TRACE_RESOURCE_CUDART_STREAM, NULL},
        {NULL, 0, NULL},
    };
    /* capture ranges are rare, and each of the script's statements walks a whole table */
    int capture = sql_query_int(db, "SELECT EXISTS (SELECT 1 FROM cuda_capture)", 1) != 0;
    if (import_exec_script(db, import_cuda_correlate_sql, params) < 0 ||
        (capture && import_exec_script(db, import_cuda_capture_sql, params) < 0) ||
        attribute_api_calls(db) < 0 || import_demangle_kernel_names(db) < 0)
        return -EIO;
    return import_exec_script(db, import_cuda_finish_sql, params) < 0 ? -EIO : 0;
}

extern const char import_cuda_window_sql[];

const struct import_source import_source_CUDA = {
    .session_open = cuda_session_open,
    .file_open = import_cuda_file_open,
    .record = import_cuda_record,
    .file_close = import_cuda_file_close,
    .session_finish = cuda_session_finish,
    .window_sql = import_cuda_window_sql,
};
