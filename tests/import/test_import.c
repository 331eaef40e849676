/* The importer on synthetic raw files: every NVTX record type lands in the exact rows
 * expected, dropped records leave unended ranges instead of mispaired ones, a truncated
 * file imports up to the damage with a warning, the launcher's file fills meta, and its GPU
 * metric records become their tables, damage skipped. */
#include "db/import.h"
#include "harness.h"
#include "model/session_losses.h"
#include "raw_writer.h"
#include "trace/events.h"
#include "trace/gpu_metrics.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/lantern-import-XXXXXX";
static char db_path[256];
static int warnings_seen;
static char last_warning[512];

static void on_warning(void *ctx, const char *msg)
{
    (void)ctx;
    warnings_seen++;
    snprintf(last_warning, sizeof last_warning, "%s", msg);
}

static void fresh_session(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ASSERT_EQ(system(cmd), 0);
    ASSERT_EQ(mkdir(dir, 0755), 0);
    snprintf(db_path, sizeof db_path, "%s.db", dir);
    unlink(db_path);
    warnings_seen = 0;
}

static sqlite3 *import_and_open(void)
{
    struct import_options opt = {.warn = on_warning};
    struct import_summary sum;
    ASSERT_EQ(import_session(dir, db_path, &opt, &sum), 0);
    sqlite3 *db;
    ASSERT_EQ(sqlite3_open(db_path, &db), SQLITE_OK);
    return db;
}

/* The rows of a query as text: columns separated by '|', rows by ';', NULL as "-". */
static const char *rows(sqlite3 *db, const char *sql)
{
    static char out[4096];
    sqlite3_stmt *st;
    size_t len = 0;
    out[0] = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "bad query: %s: %s\n", sql, sqlite3_errmsg(db));
        exit(1);
    }
    for (int r = 0; sqlite3_step(st) == SQLITE_ROW; r++) {
        for (int c = 0; c < sqlite3_column_count(st); c++) {
            const char *v = (const char *)sqlite3_column_text(st, c);
            len += (size_t)snprintf(out + len, sizeof out - len, "%s%s",
                                    c   ? "|"
                                    : r ? ";"
                                        : "",
                                    v ? v : "-");
        }
    }
    sqlite3_finalize(st);
    return out;
}

static uint64_t bits_of(double d)
{
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return b;
}

/* 100-1.lrt: two threads, the default domain and "io", nested push/pop, a start/end range
 * ended on another thread, a mark, an unbalanced pop, dropped records, and (chunk 2) the
 * traces dropped records leave: a pop without its push, a push without its pop, and ranges
 * still open when the file ends. */
static void write_full_process(void)
{
    struct raw_writer w;
    char path[300];
    snprintf(path, sizeof path, "%s/100-1.lrt", dir);
    raw_open(&w, path, 1 << 16);
    raw_chunk(&w, 1000);
    raw_process(&w, 100, 1000, "demo\0-x", 7, TRACE_FLAG_NVTX, NULL);
    raw_thread(&w, 1, 100, 1000);
    raw_thread(&w, 2, 101, 1100);
    const char *names[] = {"outer", "inner", "io", "disk", "async", "tick", "main thread"};
    for (int i = 0; i < 7; i++)
        raw_string(&w, (uint64_t)i + 1, names[i]);
    RAW(&w, domain, .domain = 1, .name = 3);
    RAW(&w, category, .domain = 1, .category = 7, .name = 4);
    RAW(&w, thread_name, .os_tid = 100, .name = 7);
    RAW(&w, push, .thread_idx = 1, .ts = 2000, .domain = 0, .depth = 0, .name = 1,
        .color = 0xFF112233u + 1, .payload_type = 2, .payload = (uint64_t)-5);
    RAW(&w, push, .thread_idx = 1, .ts = 2100, .domain = 0, .depth = 1, .name = 2,
        .payload_type = 3, .payload = bits_of(2.5));
    raw_pop(&w, 1, 2300, 0, 1);
    RAW(&w, push, .thread_idx = 1, .ts = 2400, .domain = 1, .depth = 0, .name = 1, .category = 7);
    raw_pop(&w, 1, 2450, 1, 0);
    RAW(&w, start, .thread_idx = 1, .ts = 2500, .range_id = 77, .domain = 0, .name = 5,
        .payload_type = 4, .payload = 0xFFFFFFFFu);
    RAW(&w, mark, .thread_idx = 2, .ts = 2600, .domain = 1, .name = 6, .category = 7,
        .color = 0xFF00FF00u + 1, .payload_type = 5, .payload = 0xFFFFFFFEu);
    RAW(&w, end, .thread_idx = 2, .ts = 2900, .range_id = 77);
    RAW(&w, unbalanced_pop, .thread_idx = 2, .ts = 2950, .domain = 0);
    RAW(&w, dropped, .thread_idx = 2, .count = 3);
    raw_pop(&w, 1, 3000, 0, 0);
    raw_flush(&w, 0);

    raw_chunk(&w, 3000);
    raw_push(&w, 2, 3100, 0, 0, 2); /* never popped: the file ends */
    /* never ended */
    RAW(&w, start, .thread_idx = 1, .ts = 3200, .range_id = 78, .domain = 0, .name = 5);
    raw_push(&w, 1, 3300, 0, 1, 2);            /* its parent's push was dropped */
    raw_pop(&w, 1, 3400, 0, 1);
    raw_pop(&w, 1, 3500, 0, 0); /* the dropped push's pop: ignored */
    raw_push(&w, 1, 3600, 0, 0, 1);
    raw_push(&w, 1, 3700, 0, 1, 2); /* its pop was dropped */
    raw_pop(&w, 1, 3900, 0, 0);
    RAW(&w, domain_destroy, .domain = 1, .ts = 3950);
    RAW(&w, clock, .tsc = 123456, .ts = 3960);
    RAW(&w, process_end, .end = 4000, .dropped_total = 5, .clean = 1);
    raw_flush(&w, 0);
    raw_close(&w);
}

static void every_nvtx_record_becomes_its_row(void)
{
    fresh_session();
    write_full_process();
    sqlite3 *db = import_and_open();
    ASSERT_EQ(warnings_seen, 0);
    ASSERT_STR_EQ(
        rows(db,
             "SELECT pid, ppid, exe, cmdline, host, start_ns, end_ns, clean_exit, dropped_events, "
             "unbalanced_pops, raw_file, import_warning FROM processes"),
        "100|1|/bin/demo|demo -x|h1|1000|4000|1|5|1|100-1.lrt|-");
    ASSERT_STR_EQ(rows(db, "SELECT t.id, tid, s.value, start_ns, dropped_events FROM threads t "
                           "LEFT JOIN strings s ON s.id = t.name_id ORDER BY t.id"),
                  "1|100|main thread|1000|0;2|101|-|1100|3");
    ASSERT_STR_EQ(
        rows(db, "SELECT d.id, s.value FROM domains d LEFT JOIN strings s ON s.id = d.name_id"),
        "0|-;1|io");
    ASSERT_STR_EQ(
        rows(
            db,
            "SELECT domain_id, category, s.value FROM categories JOIN strings s ON s.id = name_id"),
        "1|7|disk");
    ASSERT_STR_EQ(rows(db,
                       "SELECT r.id, s.value, domain_id, category, iif(color IS NULL, NULL, "
                       "printf('%X', color)), payload, style, depth, "
                       "parent_id, start_thread_id, end_thread_id, start_ns, end_ns FROM ranges r "
                       "LEFT JOIN strings s ON s.id = r.name_id ORDER BY r.id"),
                  "1|outer|0|0|FF112233|-5|0|0|-|1|1|2000|3000;"
                  "2|inner|0|0|-|2.5|0|1|1|1|1|2100|2300;"
                  "3|outer|1|7|-|-|0|0|-|1|1|2400|2450;"
                  "4|async|0|0|-|4294967295|1|-|-|1|2|2500|2900;"
                  "5|inner|0|0|-|-|0|0|-|2|-|3100|-;"
                  "6|async|0|0|-|-|1|-|-|1|-|3200|-;"
                  "7|inner|0|0|-|-|0|1|-|1|1|3300|3400;"
                  "8|outer|0|0|-|-|0|0|-|1|1|3600|3900;"
                  "9|inner|0|0|-|-|0|1|8|1|-|3700|-");
    ASSERT_STR_EQ(rows(db, "SELECT process_id, thread_id, domain_id, s.value, category, iif(color "
                           "IS NULL, NULL, printf('%X', color)), "
                           "payload, ts_ns FROM marks JOIN strings s ON s.id = name_id"),
                  "1|2|1|tick|7|FF00FF00|-2|2600");
    ASSERT_STR_EQ(
        rows(db, "SELECT key, value FROM meta ORDER BY key"),
        "clock|CLOCK_MONOTONIC;command|demo -x;dropped_events|5;end_ns|4000;exit_status|-;host|h1;"
        "import_warnings|0;lantern_version|0.1.0;schema_version|9;start_ns|1000;"
        "start_wall_ns|1700000000000001000;trace|nvtx;truncated_strings|0");
    ASSERT_STR_EQ(
        rows(db,
             "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'marks_by_thread'"),
        "1");
    sqlite3_close(db);
}

/* A second process: its "io" domain merges with the first's by name; its second chunk was
 * cut short by a kill, so it imports up to there and says so. The launcher's file gives
 * the command, the trace list and the exit status, and is no process. */
static void truncated_file_imports_up_to_damage(void)
{
    fresh_session();
    write_full_process();
    struct raw_writer w;
    char path[300];
    snprintf(path, sizeof path, "%s/200-2.lrt", dir);
    raw_open(&w, path, 4096);
    raw_chunk(&w, 10000);
    raw_process(&w, 200, 10000, "worker", 6, TRACE_FLAG_NVTX, NULL);
    raw_thread(&w, 1, 200, 10000);
    raw_string(&w, 1, "io");
    raw_string(&w, 2, "x");
    RAW(&w, domain, .domain = 5, .name = 1);
    raw_push(&w, 1, 10000, 5, 0, 2);
    raw_pop(&w, 1, 10100, 5, 0);
    raw_flush(&w, 0);
    raw_chunk(&w, 10100);
    raw_push(&w, 1, 10200, 5, 0, 2);
    raw_pop(&w, 1, 10300, 5, 0);
    raw_flush(&w, 10);
    raw_close(&w);
    struct stat st;
    ASSERT_EQ(stat(path, &st), 0);
    snprintf(path, sizeof path, "%s/launcher.lrt", dir);
    raw_open(&w, path, 4096);
    raw_chunk(&w, 500);
    raw_process(&w, 99, 500, "demo\0-x", 7, TRACE_FLAG_LAUNCHER, "nvtx,cuda");
    RAW(&w, process_end, .end = 20000, .dropped_total = 0, .clean = 1, .exit_status = 3);
    raw_flush(&w, 0);
    raw_close(&w);

    sqlite3 *db = import_and_open();
    ASSERT_EQ(warnings_seen, 1);
    /* the damaged chunk is chunk 1 (0-based); all of its bytes are lost */
    ASSERT(strstr(last_warning, "200-2.lrt: chunk 1 at offset ") == last_warning);
    ASSERT(strstr(last_warning, "truncated chunk"));
    long lost = strtol(strstr(last_warning, "; ") + 2, NULL, 10);
    ASSERT(lost > 10 && lost < st.st_size - 16);
    ASSERT_STR_EQ(rows(db, "SELECT pid, import_warning IS NOT NULL FROM processes ORDER BY id"),
                  "100|0;200|1");
    sqlite3_stmt *q;
    ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT import_warning FROM processes WHERE pid = 200", -1, &q,
                                 NULL),
              SQLITE_OK);
    ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
    ASSERT_STR_EQ((const char *)sqlite3_column_text(q, 0), last_warning);
    sqlite3_finalize(q);
    ASSERT_STR_EQ(
        rows(db, "SELECT r.id, domain_id, start_ns, end_ns FROM ranges r WHERE process_id = 2"),
        "10|1|10000|10100");
    ASSERT_STR_EQ(rows(db, "SELECT count(*) FROM domains"), "2");
    ASSERT_STR_EQ(
        rows(db, "SELECT key, value FROM meta WHERE key IN ('command', 'trace', 'exit_status', "
                 "'start_ns', 'end_ns', 'import_warnings', 'start_wall_ns') ORDER BY key"),
        "command|demo -x;end_ns|20000;exit_status|3;import_warnings|1;start_ns|500;"
        "start_wall_ns|1700000000000000500;trace|nvtx,cuda");
    sqlite3_close(db);
}

/* A file that is not a trace, and one whose records are nonsense (a depth beyond the agent's
 * 32-bit counters): the import goes on, each file says what was wrong with it, and the
 * malformed record is counted in import_losses. */
static void garbage_is_a_warning_not_a_failure(void)
{
    fresh_session();
    char path[300];
    snprintf(path, sizeof path, "%s/300-3.lrt", dir);
    FILE *f = fopen(path, "w");
    fputs("this is not a Lantern trace at all", f);
    fclose(f);
    struct raw_writer w;
    snprintf(path, sizeof path, "%s/400-4.lrt", dir);
    raw_open(&w, path, 4096);
    raw_chunk(&w, 100);
    raw_process(&w, 400, 100, "deep", 4, TRACE_FLAG_NVTX, NULL);
    raw_thread(&w, 1, 400, 100);
    raw_push(&w, 1, 200, 0, (uint64_t)1 << 40, 0);
    raw_push(&w, 1, 300, 0, 0, 0);
    raw_pop(&w, 1, 400, 0, 0);
    raw_flush(&w, 0);
    raw_close(&w);
    sqlite3 *db = import_and_open();
    ASSERT_EQ(warnings_seen, 2);
    ASSERT_STR_EQ(rows(db, "SELECT pid, import_warning FROM processes ORDER BY pid"),
                  "300|300-3.lrt: not a Lantern raw trace (bad magic); 34 bytes lost;"
                  "400|400-4.lrt: 1 malformed records skipped");
    ASSERT_STR_EQ(rows(db, "SELECT depth, start_ns, end_ns FROM ranges"), "0|300|400");
    ASSERT_STR_EQ(rows(db, "SELECT value FROM meta WHERE key = 'import_warnings'"), "2");
    ASSERT_STR_EQ(rows(db, "SELECT p.pid, l.raw_file, l.count, l.reason FROM import_losses l"
                           " JOIN processes p ON p.id = l.process_id"),
                  "400|400-4.lrt|1|malformed records skipped");
    sqlite3_close(db);
}

/* Thread 2 ends the ranges thread 1 started, and the writer drained thread 2 first, so every
 * END comes before its START in the file (the agent's writer drains thread after thread):
 * each range is whole, with its start thread, its end thread and its duration. */
static void range_ended_on_another_thread_before_its_start_in_the_file(void)
{
    enum { N = 1000 };
    fresh_session();
    struct raw_writer w;
    char path[300];
    snprintf(path, sizeof path, "%s/500-5.lrt", dir);
    raw_open(&w, path, 1 << 20);
    raw_chunk(&w, 100);
    raw_process(&w, 500, 100, "cross", 5, TRACE_FLAG_NVTX, NULL);
    raw_thread(&w, 2, 502, 100);
    raw_thread(&w, 1, 501, 100);
    raw_string(&w, 1, "handed over");
    for (uint64_t i = 0; i < N; i++)
        RAW(&w, end, .thread_idx = 2, .ts = 100000 + i * 10, .range_id = (1ull << 40) | (i + 1));
    for (uint64_t i = 0; i < N; i++)
        RAW(&w, start, .thread_idx = 1, .ts = 1000 + i, .range_id = (1ull << 40) | (i + 1),
            .name = 1);
    RAW(&w, end, .thread_idx = 2, .ts = 200000, .range_id = 99); /* its START was dropped */
    RAW(&w, process_end, .end = 300000, .clean = 1);
    raw_flush(&w, 0);
    raw_close(&w);
    sqlite3 *db = import_and_open();
    ASSERT_EQ(warnings_seen, 0);
    ASSERT_STR_EQ(rows(db, "SELECT count(*), count(DISTINCT r.id), st.tid, et.tid, r.style,"
                           " min(r.end_ns - r.start_ns), max(r.end_ns - r.start_ns),"
                           " sum(r.end_ns - r.start_ns - (99000 + 9 * (r.start_ns - 1000)))"
                           " FROM ranges r JOIN threads st ON st.id = r.start_thread_id"
                           " JOIN threads et ON et.id = r.end_thread_id"),
                  "1000|1000|501|502|1|99000|107991|0");
    ASSERT_STR_EQ(rows(db, "SELECT count(*) FROM ranges WHERE end_ns IS NULL"), "0");
    sqlite3_close(db);
}

/* Push/pop nesting as deep as a program makes it: every level is a range, with its depth and
 * its parent, and nothing is counted lost. */
static void deep_nesting_keeps_every_level(uint64_t depth)
{
    fresh_session();
    struct raw_writer w;
    char path[300];
    snprintf(path, sizeof path, "%s/600-6.lrt", dir);
    raw_open(&w, path, 1 << 16);
    raw_chunk(&w, 0);
    raw_process(&w, 600, 0, "deep", 4, TRACE_FLAG_NVTX, NULL);
    raw_thread(&w, 1, 600, 0);
    raw_string(&w, 1, "level");
    for (uint64_t d = 0; d < depth; d++) {
        if (w.b.len + 64 > w.cap) {
            raw_flush(&w, 0);
            raw_chunk(&w, d);
        }
        raw_push(&w, 1, 1 + d, 0, d, 1);
    }
    for (uint64_t d = depth; d-- > 0;) {
        if (w.b.len + 64 > w.cap) {
            raw_flush(&w, 0);
            raw_chunk(&w, 3 * depth - d);
        }
        raw_pop(&w, 1, 3 * depth - d, 0, d);
    }
    RAW(&w, process_end, .end = 4 * depth, .clean = 1);
    raw_flush(&w, 0);
    raw_close(&w);
    sqlite3 *db = import_and_open();
    ASSERT_EQ(warnings_seen, 0);
    char want[200];
    snprintf(want, sizeof want, "%llu|%llu|0|%llu|%llu", (unsigned long long)depth,
             (unsigned long long)depth, (unsigned long long)depth - 1,
             (unsigned long long)depth - 1);
    ASSERT_STR_EQ(rows(db, "SELECT count(*), count(end_ns), min(depth), max(depth),"
                           " (SELECT count(*) FROM ranges r JOIN ranges p ON p.id = r.parent_id"
                           "  AND p.depth = r.depth - 1 AND p.start_ns < r.start_ns"
                           "  AND p.end_ns > r.end_ns) FROM ranges"),
                  want);
    ASSERT_STR_EQ(rows(db, "SELECT count(*) FROM import_losses"), "0");
    sqlite3_close(db);
}

static void nesting_10000_levels_deep_is_kept(void)
{
    deep_nesting_keeps_every_level(10000);
}

static void nesting_200000_levels_deep_is_kept(void)
{
    deep_nesting_keeps_every_level(200000);
}

/* A chunk written twice and a chunk written before the one numbered below it: each chunk is
 * imported once, in its numbers' order (no negative duration), each fault is said in a
 * warning and counted in import_losses (the Lost events line); a chunk appended after the
 * process's end (another process recovering its events) is imported like any other. */
static void duplicated_misordered_and_appended_chunks(void)
{
    fresh_session();
    struct raw_writer w;
    char path[300];
    snprintf(path, sizeof path, "%s/700-7.lrt", dir);
    raw_open(&w, path, 4096);
    raw_chunk(&w, 0);
    raw_process(&w, 700, 0, "dup", 3, TRACE_FLAG_NVTX, NULL);
    raw_thread(&w, 1, 700, 0);
    raw_string(&w, 1, "step");
    raw_flush(&w, 0);
    raw_chunk(&w, 100);
    raw_push(&w, 1, 100, 0, 0, 1);
    size_t first_len = trace_chunk_finish(&w.b);
    uint8_t first[4096];
    memcpy(first, w.buf, first_len); /* held back: written after the next chunk */
    raw_chunk(&w, 200);
    raw_pop(&w, 1, 200, 0, 0);
    raw_push(&w, 1, 300, 0, 0, 1);
    raw_pop(&w, 1, 400, 0, 0);
    raw_flush(&w, 0);
    fwrite(first, 1, first_len, w.file);
    fwrite(w.buf, 1, w.b.len, w.file); /* the pop's chunk again */
    raw_chunk(&w, 500);
    RAW(&w, process_end, .end = 500, .clean = 1);
    raw_flush(&w, 0);
    raw_chunk(&w, 600); /* appended after the end */
    raw_push(&w, 1, 600, 0, 0, 1);
    raw_pop(&w, 1, 650, 0, 0);
    raw_flush(&w, 0);
    raw_close(&w);
    sqlite3 *db = import_and_open();
    ASSERT_EQ(warnings_seen, 2);
    ASSERT_STR_EQ(rows(db, "SELECT start_ns, end_ns FROM ranges ORDER BY start_ns"),
                  "100|200;300|400;600|650");
    ASSERT_STR_EQ(rows(db, "SELECT raw_file, count, reason FROM import_losses ORDER BY rowid"),
                  "700-7.lrt|1|duplicated chunks skipped (each chunk is imported once);"
                  "700-7.lrt|1|chunks out of order (imported in their sequence order)");
    char *line = session_losses_line(db);
    ASSERT_STR_EQ(line, "1 duplicated chunks skipped (each chunk is imported once) (pid 700 dup: 1); "
                        "1 chunks out of order (imported in their sequence order) (pid 700 dup: 1)");
    free(line);
    sqlite3_close(db);
}

static void existing_database_is_not_overwritten(void)
{
    fresh_session();
    write_full_process();
    FILE *f = fopen(db_path, "w");
    fputs("keep me", f);
    fclose(f);
    ASSERT_EQ(import_session(dir, db_path, NULL, NULL), -EEXIST);
    struct stat st;
    ASSERT_EQ(stat(db_path, &st), 0);
    ASSERT_EQ(st.st_size, 7);
    ASSERT_EQ(import_session("/nonexistent-lantern-session", "/tmp/never.db", NULL, NULL), -ENOENT);
    unlink(db_path);
}

/* A process whose agent ran out of disk (TRACE_WRITE_ERROR, then its end record with the lost
 * events counted) and cut a long name: the warnings say so, and the counts arrive. */
static void write_error_and_cut_name_are_reported(void)
{
    fresh_session();
    struct raw_writer w;
    char path[300];
    snprintf(path, sizeof path, "%s/500-5.lrt", dir);
    raw_open(&w, path, 4096);
    raw_chunk(&w, 100);
    raw_process(&w, 500, 100, "full", 4, TRACE_FLAG_NVTX, NULL);
    RAW(&w, string, .id = 1,
        .bytes = trace_bytes("long" TRACE_STRING_CUT_MARK, 4 + sizeof TRACE_STRING_CUT_MARK - 1),
        .original_len = 3000000);
    raw_thread(&w, 1, 500, 100);
    raw_push(&w, 1, 200, 0, 0, 1);
    RAW(&w, write_error, .error = 28, .file_bytes = 81920,
        .reason = trace_cstr("No space left on device"));
    RAW(&w, process_end, .end = 900, .dropped_total = 1234, .clean = 1);
    raw_flush(&w, 0);
    raw_close(&w);
    sqlite3 *db = import_and_open();
    ASSERT_EQ(warnings_seen, 2);
    ASSERT_STR_EQ(rows(db, "SELECT dropped_events, clean_exit, import_warning FROM processes"),
                  "1234|1|500-5.lrt: the agent could not write its trace after 81920 bytes: No "
                  "space left on device; the events that followed are counted as dropped; "
                  "500-5.lrt: 1 names longer than 1048576 bytes were cut (they end with "
                  "\"...[cut by lantern]\")");
    ASSERT_STR_EQ(rows(db, "SELECT key, value FROM meta WHERE key IN ('dropped_events', "
                           "'truncated_strings') ORDER BY key"),
                  "dropped_events|1234;truncated_strings|1");
    sqlite3_close(db);
    unlink(db_path);
}

/* SQLite's authorizer, installed on every connection: no INSERT into osrt_calls. */
static int deny_osrt_calls(void *ctx, int action, const char *table, const char *unused,
                           const char *db, const char *trigger)
{
    (void)ctx, (void)unused, (void)db, (void)trigger;
    return action == SQLITE_INSERT && table && !strcmp(table, "osrt_calls") ? SQLITE_DENY
                                                                           : SQLITE_OK;
}

static int install_deny_osrt_calls(sqlite3 *db, char **error, const void *api)
{
    (void)error, (void)api;
    return sqlite3_set_authorizer(db, deny_osrt_calls, NULL);
}

/* A source's record handler that fails (here: its INSERT is refused) is not silent: each
 * record it could not store is counted in import_losses and said in a warning. */
static void a_failing_record_handler_is_counted(void)
{
    fresh_session();
    struct raw_writer w;
    char path[300];
    snprintf(path, sizeof path, "%s/600-6.lrt", dir);
    raw_open(&w, path, 4096);
    raw_chunk(&w, 100);
    raw_process(&w, 600, 100, "osrt", 4, TRACE_FLAG_NVTX, NULL);
    raw_thread(&w, 1, 600, 100);
    for (int i = 0; i < 2; i++)
        RAW(&w, osrt_call, .thread_idx = 1, .start = 200 + 100 * (uint64_t)i,
            .end = 250 + 100 * (uint64_t)i, .function = 1, .ret = -1, .error = 4);
    RAW(&w, process_end, .end = 900, .clean = 1);
    raw_flush(&w, 0);
    raw_close(&w);
    ASSERT_EQ(sqlite3_auto_extension((void (*)(void))install_deny_osrt_calls), SQLITE_OK);
    sqlite3 *db = import_and_open();
    sqlite3_cancel_auto_extension((void (*)(void))install_deny_osrt_calls);
    ASSERT_STR_EQ(rows(db, "SELECT count, reason FROM import_losses"),
                  "2|records not stored: the importer failed (an SQL error)");
    ASSERT_STR_EQ(last_warning, "600-6.lrt: 2 records not stored: the importer failed (an SQL "
                                "error)");
    ASSERT_STR_EQ(rows(db, "SELECT count(*) FROM osrt_calls"), "0");
    sqlite3_close(db);
    unlink(db_path);
}

/* A folder with no raw file, or only files that are not Lantern's, is no session: an error
 * (-ENODATA), and no database is written. */
static void empty_or_foreign_folder_is_an_error(void)
{
    fresh_session();
    ASSERT_EQ(import_session(dir, db_path, NULL, NULL), -ENODATA);
    char path[300];
    snprintf(path, sizeof path, "%s/notes.lrt", dir);
    FILE *f = fopen(path, "w");
    fputs("not a trace", f);
    fclose(f);
    ASSERT_EQ(import_session(dir, db_path, NULL, NULL), -ENODATA);
    struct stat st;
    ASSERT(stat(db_path, &st) < 0 && errno == ENOENT);
    char part[300];
    snprintf(part, sizeof part, "%s.part", db_path);
    ASSERT(stat(part, &st) < 0 && errno == ENOENT);
}

/* A FIFO (or a link) named *.lrt is skipped with a warning: opening it never blocks. */
static void fifo_and_link_are_skipped_without_blocking(void)
{
    fresh_session();
    write_full_process();
    char path[300];
    snprintf(path, sizeof path, "%s/fifo.lrt", dir);
    ASSERT_EQ(mkfifo(path, 0600), 0);
    snprintf(path, sizeof path, "%s/link.lrt", dir);
    ASSERT_EQ(symlink("/dev/zero", path), 0);
    sqlite3 *db = import_and_open();
    ASSERT_EQ(warnings_seen, 2);
    ASSERT_STR_EQ(rows(db, "SELECT count(*) FROM processes"), "1");
    sqlite3_close(db);
    unlink(db_path);
}

static int cancel_now(void *ctx)
{
    (void)ctx;
    return 1;
}

/* A cancelled import returns -EINTR and leaves neither the database nor its .part file. */
static void cancelled_import_leaves_nothing(void)
{
    fresh_session();
    write_full_process();
    struct import_options opt = {.cancel = cancel_now};
    ASSERT_EQ(import_session(dir, db_path, &opt, NULL), -EINTR);
    struct stat st;
    char part[300];
    snprintf(part, sizeof part, "%s.part", db_path);
    ASSERT(stat(db_path, &st) < 0 && stat(part, &st) < 0);
}

/* replace: an existing database is replaced by rename, a folder never. */
static void replace_renames_over_the_old_file(void)
{
    fresh_session();
    write_full_process();
    FILE *f = fopen(db_path, "w");
    fputs("old", f);
    fclose(f);
    struct import_options opt = {.replace = 1};
    ASSERT_EQ(import_session(dir, db_path, &opt, NULL), 0);
    sqlite3 *db;
    ASSERT_EQ(sqlite3_open(db_path, &db), SQLITE_OK);
    ASSERT_STR_EQ(rows(db, "SELECT count(*) FROM processes"), "1");
    sqlite3_close(db);
    unlink(db_path);
    ASSERT_EQ(mkdir(db_path, 0700), 0);
    ASSERT_EQ(import_session(dir, db_path, &opt, NULL), -EISDIR);
    rmdir(db_path);
}

/* A string literal with NULs inside, and its length. */
#define ARGS(literal) literal, sizeof(literal) - 1

/* TRACE_THREAD_OS_NAME, TRACE_THREAD_PYTHON_NAME (the latest of each wins, by tid, before
 * or after TRACE_THREAD) and TRACE_PROCESS_INFO: a parent found through an untraced process
 * between (ppid 1 here, the grandparent 200 in the ancestors). */
static void names_ranks_and_parents_come_from_their_records(void)
{
    fresh_session();
    struct raw_writer w;
    char path[300];
    snprintf(path, sizeof path, "%s/200-1.lrt", dir);
    raw_open(&w, path, 1 << 16);
    raw_chunk(&w, 1000);
    raw_process(&w, 200, 1000, ARGS("/usr/bin/python3.12\0-u\0/w/train.py\0--lr"), TRACE_FLAG_NVTX,
                NULL);
    const char *names[] = {"python3", "loader", "pt_autograd_0", "Thread-1", "DataLoader"};
    for (int i = 0; i < 5; i++)
        raw_string(&w, (uint64_t)i + 1, names[i]);
    RAW(&w, thread_python_name, .os_tid = 201, .name = 4);
    raw_thread(&w, 1, 200, 1000);
    RAW(&w, thread_os_name, .os_tid = 200, .name = 1);
    raw_thread(&w, 2, 201, 1100);
    RAW(&w, thread_os_name, .os_tid = 201, .name = 1);
    RAW(&w, thread_python_name, .os_tid = 201, .name = 5);
    RAW(&w, thread_os_name, .os_tid = 201, .name = 2);
    RAW(&w, thread_os_name, .os_tid = 202, .name = 3); /* CUPTI's */
    RAW(&w, thread_name, .os_tid = 0, .name = 2); /* nvtxNameOsThreadA(0, ...): no such thread */
    raw_flush(&w, 0);
    raw_close(&w);
    snprintf(path, sizeof path, "%s/300-2.lrt", dir);
    raw_open(&w, path, 1 << 16);
    raw_chunk(&w, 2000);
    raw_process(&w, 300, 2000, ARGS("python3\0-m\0pkg.run"), TRACE_FLAG_NVTX, NULL);
    RAW(&w, process_info, .rank = 3, .local_rank = 1, .rank_variable = trace_cstr("SLURM_PROCID"),
        .ancestors = {2, {200, 1}});
    raw_flush(&w, 0);
    raw_close(&w);
    sqlite3 *db = import_and_open();
    ASSERT_STR_EQ(rows(db, "SELECT pid, name, rank, local_rank, rank_variable, parent_id"
                           " FROM processes ORDER BY pid"),
                  "200|train.py|-|-|-|-;300|pkg.run|2|0|SLURM_PROCID|1");
    ASSERT_STR_EQ(rows(db, "SELECT t.tid, o.value, p.value FROM threads t"
                           " LEFT JOIN strings o ON o.id = t.os_name_id"
                           " LEFT JOIN strings p ON p.id = t.python_name_id ORDER BY t.tid"),
                  "200|python3|-;201|loader|DataLoader;202|pt_autograd_0|-");
    ASSERT_EQ(warnings_seen, 0);
    sqlite3_close(db);
}

/* The short names of processes (processes.name) from their NUL-separated arguments. */
static void process_names_follow_the_interpreters_script(void)
{
    static const struct {
        const char *args;
        size_t len;
        const char *name;
    } cases[] = {
        {ARGS("python3\0train.py"), "train.py"},
        {ARGS("/usr/bin/python3.12\0-u\0-W\0ignore\0/a/b/train.py\0--x"), "train.py"},
        {ARGS("python\0-m\0torch.distributed.run\0t.py"), "torch.distributed.run"},
        {ARGS("python3\0-mpkg"), "pkg"},
        {ARGS("python3\0-c\0print(1)"), "python3 -c"},
        {ARGS("python3"), "python3"},
        {ARGS("/bin/bash\0./run.sh\0a"), "run.sh"},
        {ARGS("sh\0-c\0make"), "sh -c"},
        {ARGS("/opt/app/bin/trainer\0--python\0x.py"), "trainer"},
        {ARGS("pythonista\0x.py"), "pythonista"},
        {ARGS(""), ""},
        /* Inductor's compile workers: a package's __main__.py is the package (issue #28) */
        {ARGS("/usr/bin/python3\0/v/lib/python3.11/site-packages/torch/_inductor/compile_worker/"
              "__main__.py\0--pickler=x\0--workers=32"),
         "torch._inductor.compile_worker"},
        {ARGS("python3\0tools/bench/__main__.py"), "bench"},
        /* multiprocessing's own children, until their Process names them */
        {ARGS("python3\0-B\0-c\0from multiprocessing.spawn import spawn_main; spawn_main(tracker_"
              "fd=4, pipe_handle=6)\0--multiprocessing-fork"),
         "multiprocessing.spawn"},
        {ARGS("python3\0-c\0from multiprocessing.forkserver import main; main(3)"),
         "multiprocessing.forkserver"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[64];
        import_process_name(cases[i].args, cases[i].len, out, sizeof out);
        ASSERT_STR_EQ(out, cases[i].name);
    }
}

/* The columns of gpu_metric_samples after set_id, start_ns and end_ns are gpu_metrics.def's
 * rows, in order: the importer binds them by position, and the reports name them from it. */
static void gpu_metric_samples_columns_are_gpu_metrics_def_rows(void)
{
    sqlite3 *db;
    ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, import_schema_sql, NULL, NULL, NULL), SQLITE_OK);
    char expected[1024] = "set_id;start_ns;end_ns";
    for (int i = 0; i < GPU_METRIC_COUNT; i++)
        snprintf(expected + strlen(expected), sizeof expected - strlen(expected), ";%s",
                 gpu_metrics[i].column);
    ASSERT_STR_EQ(rows(db, "SELECT name FROM pragma_table_info('gpu_metric_samples') ORDER BY cid"),
                  expected);
    sqlite3_close(db);
}

/* launcher.lrt with GPU metrics: a PM-sampling set of every metric on GPU-a (which CUDA also
 * described, so the GPU is one row), a GPM set of three on GPU-b, samples (one with a short
 * value list, one of an unknown set, one inverted), a set without uuid, a newer record type,
 * and status lines. */
static void gpu_metric_records_become_sets_samples_and_status(void)
{
    fresh_session();
    struct raw_writer w;
    char path[300];
    snprintf(path, sizeof path, "%s/100-1.lrt", dir);
    raw_open(&w, path, 4096);
    raw_chunk(&w, 1000);
    raw_process(&w, 100, 1000, "app", 3, TRACE_FLAG_CUDA, "cuda");
    RAW(&w, cuda_device, .device = 0, .name = trace_cstr("NVIDIA H200"),
        .uuid = trace_cstr("GPU-a"), .cc_major = 9, .sm_count = 132);
    RAW(&w, process_end, .end = 9000, .clean = 1);
    raw_flush(&w, 0);
    raw_close(&w);

    snprintf(path, sizeof path, "%s/launcher.lrt", dir);
    raw_open(&w, path, 4096);
    raw_chunk(&w, 500);
    raw_process(&w, 99, 500, "app", 3, TRACE_FLAG_LAUNCHER, "cuda");
    const char hardware[] = "gr\0sm\0tensor";
    RAW(&w, gpu_metric_set, .set_id = 1, .gpu_uuid = trace_cstr("GPU-a"),
        .gpu_name = trace_cstr("ignored: CUDA named it"), .source = TRACE_GPU_METRICS_PM_SAMPLING,
        .period_ns = 100000, .metrics = (1u << GPU_METRIC_COUNT) - 1,
        .hardware = trace_bytes(hardware, sizeof hardware), .chip = trace_cstr("GH100"));
    RAW(&w, gpu_metric_set, .set_id = 2, .gpu_uuid = trace_cstr("GPU-b"),
        .gpu_name = trace_cstr("NVIDIA H100"), .source = TRACE_GPU_METRICS_GPM,
        .period_ns = 10000000,
        .metrics = 1u << GPU_METRIC_SM_ACTIVE | 1u << GPU_METRIC_TENSOR_ACTIVE |
                   1u << GPU_METRIC_PCIE_RX | 1u << 20 /* a newer launcher's metric */,
        .hardware = trace_cstr("2; 5; 21"));
    RAW(&w, gpu_metric_set, .set_id = 3, .source = TRACE_GPU_METRICS_GPM); /* no uuid */
    /* metric i reads 1.25 i (a rate in B/s is stored whole: nvlink_tx's 17.5 reads 18) */
    struct trace_gpu_metric_sample a = {.set_id = 1, .start = 1000, .end = 1100};
    for (int i = 0; i < GPU_METRIC_COUNT; i++)
        a.values.values[i] = gpu_metric_encode(i, i == GPU_METRIC_PCIE_TX ? 58.9e9 : 1.25 * i);
    a.values.count = GPU_METRIC_COUNT;
    raw_check(trace_put_gpu_metric_sample(&w.b, &a));
    RAW(&w, gpu_metric_sample, .set_id = 2, .start = 1000, .end = 11000,
        .values = {.count = 4, .values = {9950, 0, 58000000000u, 7}});
    RAW(&w, gpu_metric_sample, .set_id = 2, .start = 11000, .end = 11000, /* zero-length */
        .values = {.count = 1, .values = {5000}});                      /* short list */
    RAW(&w, gpu_metric_sample, .set_id = 9, .start = 12000, .end = 13000); /* unknown set */
    RAW(&w, gpu_metric_sample, .set_id = 2, .start = 13000, .end = 12000); /* inverted */
    RAW(&w, gpu_metric_status, .gpu_uuid = trace_cstr("GPU-a"),
        .source = TRACE_GPU_METRICS_PM_SAMPLING, .code = TRACE_GPU_METRICS_LOST, .count = 7,
        .reason = trace_cstr("buffer full"));
    RAW(&w, gpu_metric_status, .code = TRACE_GPU_METRICS_NOT_PERMITTED,
        .reason = trace_cstr("profiling needs admin (NVreg_RestrictProfilingToAdminUsers)"));
    /* type 119: in the source's range, not yet defined: skipped by its length */
    struct trace_record_mark future = trace_record_begin(&w.b, TRACE_GPU_METRICS_LAST);
    trace_put_u(&w.b, 1);
    trace_put_u(&w.b, 2);
    raw_check(trace_record_end(&w.b, future));
    RAW(&w, process_end, .end = 20000, .clean = 1, .exit_status = 0);
    raw_flush(&w, 0);
    raw_close(&w);

    struct import_options opt = {.warn = on_warning};
    struct import_summary sum;
    ASSERT_EQ(import_session(dir, db_path, &opt, &sum), 0);
    sqlite3 *db;
    ASSERT_EQ(sqlite3_open(db_path, &db), SQLITE_OK);
    ASSERT_EQ(sum.skipped, 1);
    /* the set without uuid, the unknown set's samples, the inverted sample (malformed) */
    ASSERT_EQ(warnings_seen, 3);
    ASSERT_STR_EQ(rows(db, "SELECT id, uuid, name FROM gpus ORDER BY id"),
                  "1|GPU-a|NVIDIA H200;2|GPU-b|NVIDIA H100");
    ASSERT_STR_EQ(rows(db, "SELECT id, gpu_id, source, period_ns, metrics, hardware, chip"
                           " FROM gpu_metric_sets ORDER BY id"),
                  "1|1|CUPTI PM sampling|100000|gr_active,sm_active,sm_issue,warp_occupancy,"
                  "tensor_active,tensor_hmma,tensor_imma,tensor_dmma,dram_read,dram_write,"
                  "dram_bw,pcie_rx,pcie_tx,nvlink_rx,nvlink_tx|gr; sm; tensor|GH100;"
                  "2|2|NVML GPM|10000000|sm_active,tensor_active,pcie_rx|2; 5; 21|-");
    ASSERT_STR_EQ(rows(db, "SELECT set_id, start_ns, end_ns, gr_active, sm_active, nvlink_tx,"
                           " pcie_tx FROM gpu_metric_samples WHERE set_id = 1"),
                  "1|1000|1100|0.0|1.25|18.0|58900000000.0");
    ASSERT_STR_EQ(rows(db, "SELECT start_ns, end_ns, sm_active, tensor_active, pcie_rx, gr_active"
                           " FROM gpu_metric_samples WHERE set_id = 2 ORDER BY start_ns"),
                  "1000|11000|99.5|0.0|58000000000.0|-;11000|11000|50.0|-|-|-");
    /* GPU-b's GPM samples have no kernels to be lined up with (import_gpu_metrics_align.c) */
    ASSERT_STR_EQ(rows(db, "SELECT gpu_id, source, code, count, reason FROM gpu_metric_status"
                           " ORDER BY rowid"),
                  "1|CUPTI PM sampling|lost|7|buffer full;"
                  "-|-|not permitted|0|profiling needs admin (NVreg_RestrictProfilingToAdminUsers);"
                  "2|NVML GPM|unaligned|0|no kernels on this GPU to line the samples up with (they "
                  "may lag by up to 100 ms)");
    sqlite3_close(db);
}

/* A sampler that restarts defines its set id again: its samples and its footprint record
 * (TRACE_GPU_METRIC_SAMPLER) go to the latest set of that id, never to the earlier one. */
static void gpu_metric_sampler_fills_the_latest_set_of_its_id(void)
{
    fresh_session();
    struct raw_writer w;
    char path[300];
    snprintf(path, sizeof path, "%s/launcher.lrt", dir);
    raw_open(&w, path, 4096);
    raw_chunk(&w, 500);
    raw_process(&w, 99, 500, "app", 3, TRACE_FLAG_LAUNCHER, "gpu_metrics");
    RAW(&w, gpu_metric_set, .set_id = 1, .gpu_uuid = trace_cstr("GPU-a"),
        .source = TRACE_GPU_METRICS_GPM, .period_ns = 1000, .metrics = 1u << GPU_METRIC_SM_ACTIVE);
    RAW(&w, gpu_metric_sampler, .set_id = 1, .samples = 3, .duration_ns = 3000);
    RAW(&w, gpu_metric_set, .set_id = 1, .gpu_uuid = trace_cstr("GPU-a"),
        .source = TRACE_GPU_METRICS_GPM, .period_ns = 1000, .metrics = 1u << GPU_METRIC_SM_ACTIVE);
    RAW(&w, gpu_metric_sample, .set_id = 1, .start = 5000, .end = 6000,
        .values = {.count = 1, .values = {5000}});
    RAW(&w, gpu_metric_sampler, .set_id = 1, .samples = 1, .lost = 2, .duration_ns = 1000,
        .cpu_ns = 40, .reads = 1, .read_ns = 7);
    RAW(&w, gpu_metric_sampler, .set_id = 9, .samples = 8); /* no such set: nothing */
    RAW(&w, process_end, .end = 9000, .clean = 1, .exit_status = 0);
    raw_flush(&w, 0);
    raw_close(&w);

    sqlite3 *db = import_and_open();
    ASSERT_EQ(warnings_seen, 0);
    ASSERT_STR_EQ(rows(db, "SELECT id, samples, lost_samples, duration_ns, sampler_cpu_ns,"
                           " sampler_reads, sampler_read_ns FROM gpu_metric_sets ORDER BY id"),
                  "1|3|0|3000|0|0|0;2|1|2|1000|40|1|7");
    ASSERT_STR_EQ(rows(db, "SELECT set_id, start_ns, sm_active FROM gpu_metric_samples"),
                  "2|5000|50.0");
    sqlite3_close(db);
}

/* A function of this program the CPU records point into: the importer must name it from the
 * program's own symbol table. */
__attribute__((noinline, used)) void cpu_test_marker(void)
{
    __asm__ volatile("" ::: "memory");
}

/* A C function under a C++ name: its frame is named demangled. */
__attribute__((noinline, used)) void cpu_test_cxx_marker(void) __asm__("_ZN3lab6markerEv");
__attribute__((noinline, used)) void cpu_test_cxx_marker(void)
{
    __asm__ volatile("" ::: "memory");
}

/* The executable mapping of this program that holds address (from /proc/self/maps). */
static void mapping_of(uint64_t address, uint64_t *start, uint64_t *end, uint64_t *offset,
                       char *path, size_t size)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[4096];
    ASSERT_EQ(maps != NULL, 1);
    *start = 0;
    while (fgets(line, sizeof line, maps)) {
        unsigned long long s, e, o;
        char perms[8];
        int at = 0;
        if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &s, &e, perms, &o, &at) < 4 ||
            address < s || address >= e)
            continue;
        *start = s, *end = e, *offset = o;
        snprintf(path, size, "%s", line + at);
        path[strcspn(path, "\n")] = '\0';
    }
    fclose(maps);
    ASSERT_EQ(*start != 0, 1);
}

/* 300-1.lrt: the sampler's records, as the agent writes them: a stack of this program's
 * function called from an address in a library and a return address in no mapping (the walk
 * left the code: cut there), a stack whose mapping comes after it, a sample without a user
 * frame, one of a stack never described (malformed), and the totals. */
static void cpu_records_become_samples_stacks_and_frames(void)
{
    fresh_session();
    uint64_t marker = (uint64_t)(uintptr_t)&cpu_test_marker, start = 0, end = 0, offset = 0;
    char exe[1024];
    mapping_of(marker, &start, &end, &offset, exe, sizeof exe);
    struct raw_writer w;
    char path[300];
    snprintf(path, sizeof path, "%s/300-1.lrt", dir);
    raw_open(&w, path, 1 << 16);
    raw_chunk(&w, 1000);
    raw_process(&w, 300, 1000, "app", 3, TRACE_FLAG_NVTX | TRACE_FLAG_CPU, NULL);
    RAW(&w, cpu_sampling, .status = TRACE_CPU_SAMPLING_ON, .period_ns = 1000000);
    /* frames, leaf first: the marker, then a return address in "libfake.so" (no such file:
     * named by offset), then 0x10 (in no mapping: the rest is cut) */
    uint8_t frames[64], *p = frames;
    const uint64_t ips[] = {marker, 0x7f0000001235u, 0x10, 0x20};
    p = trace_ev_u(p, ips[0]);
    for (int i = 1; i < 4; i++) {
        int64_t d = (int64_t)(ips[i] - ips[i - 1]);
        p = trace_ev_u(p, ((uint64_t)d << 1) ^ (uint64_t)(d >> 63));
    }
    RAW(&w, cpu_stack, .stack_id = 1, .frames = trace_bytes(frames, (size_t)(p - frames)));
    uint8_t cxx[16];
    size_t cxx_len = (size_t)(trace_ev_u(cxx, (uint64_t)(uintptr_t)&cpu_test_cxx_marker) - cxx);
    RAW(&w, cpu_stack, .stack_id = 2, .frames = trace_bytes(cxx, cxx_len));
    RAW(&w, cpu_sample, .os_tid = 300, .ts = 1900, .stack_id = 2);
    /* JIT code in an anonymous mapping, named by the process's perf map file */
    char perf_map[400];
    snprintf(perf_map, sizeof perf_map, "%s/perf-300.map", dir);
    FILE *jit = fopen(perf_map, "w");
    ASSERT_EQ(jit != NULL, 1);
    fputs("7e0000001000 100 py::hot:app.py\nnot a line\n", jit);
    fclose(jit);
    ASSERT_EQ(setenv("LANTERN_PERF_MAP_DIR", dir, 1), 0);
    RAW(&w, cpu_mapping, .start = 0x7e0000000000u, .end = 0x7e0000010000u, .path = trace_cstr(""));
    size_t jit_len = (size_t)(trace_ev_u(cxx, 0x7e0000001010u) - cxx);
    RAW(&w, cpu_stack, .stack_id = 3, .frames = trace_bytes(cxx, jit_len));
    RAW(&w, cpu_sample, .os_tid = 300, .ts = 1950, .stack_id = 3);
    /* a mapping that names a FIFO: never opened for its symbols in a way that blocks */
    char fifo[400];
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    ASSERT_EQ(mkfifo(fifo, 0600), 0);
    RAW(&w, cpu_mapping, .start = 0x6e0000000000u, .end = 0x6e0000001000u,
        .path = trace_cstr(fifo));
    size_t fifo_len = (size_t)(trace_ev_u(cxx, 0x6e0000000010u) - cxx);
    RAW(&w, cpu_stack, .stack_id = 4, .frames = trace_bytes(cxx, fifo_len));
    RAW(&w, cpu_sample, .os_tid = 300, .ts = 1960, .stack_id = 4);
    RAW(&w, cpu_sample, .os_tid = 300, .ts = 2000, .stack_id = 1);
    RAW(&w, cpu_sample, .os_tid = 301, .ts = 2100, .stack_id = 1);
    RAW(&w, cpu_sample, .os_tid = 300, .ts = 2200, .stack_id = 0); /* in the kernel */
    RAW(&w, cpu_sample, .os_tid = 300, .ts = 2300, .stack_id = 9); /* never described */
    RAW(&w, cpu_mapping, .start = start, .end = end, .file_offset = offset,
        .path = trace_cstr(exe));
    RAW(&w, cpu_mapping, .start = 0x7f0000000000u, .end = 0x7f0000010000u, .file_offset = 0x2000,
        .path = trace_cstr("/nonexistent/libfake.so"));
    RAW(&w, cpu_mapping, .start = 5, .end = 5, .path = trace_cstr("/empty")); /* malformed */
    RAW(&w, cpu_sampler, .samples = 4, .lost = 2, .threads = 2, .cpu_ns = 70);
    RAW(&w, process_end, .end = 9000, .clean = 1);
    raw_flush(&w, 0);
    raw_close(&w);

    sqlite3 *db = import_and_open();
    ASSERT_STR_EQ(rows(db, "SELECT status, period_ns, reason, samples, lost, threads,"
                           " threads_unsampled, cpu_ns, addresses, unsymbolized, truncated_stacks"
                           " FROM cpu_sampling"),
                  "on|1000000|-|4|2|2|0|70|6|3|1");
    ASSERT_STR_EQ(rows(db, "SELECT t.tid, s.ts_ns, s.stack_id FROM cpu_samples s"
                           " JOIN threads t ON t.id = s.thread_id ORDER BY s.ts_ns"),
                  "300|1900|2;300|1950|3;300|1960|4;300|2000|1;301|2100|1;300|2200|-");
    /* the stack, outermost first: libfake.so's address (one byte back: inside its call) under
     * nothing, the marker under it */
    ASSERT_STR_EQ(rows(db,
                       "SELECT c.depth, f.name, f.module, ifnull(c.parent_id, 0) FROM cpu_stacks k"
                       " JOIN cpu_callsites c ON c.id = k.callsite_id"
                       " JOIN cpu_frames f ON f.id = c.frame_id"
                       " UNION ALL SELECT p.depth, f.name, f.module, ifnull(p.parent_id, 0)"
                       " FROM cpu_stacks k JOIN cpu_callsites c ON c.id = k.callsite_id"
                       " JOIN cpu_callsites p ON p.id = c.parent_id"
                       " JOIN cpu_frames f ON f.id = p.frame_id ORDER BY 1, 2"),
                  "0|fifo+0x10|fifo|0;0|lab::marker()|test_import|0;"
                  "0|libfake.so+0x3234|libfake.so|0;0|py::hot:app.py|[jit]|0;"
                  "1|cpu_test_marker|test_import|1");
    sqlite3_close(db);
}

/* 400-1.lrt: CPU-time timers' samples in a Python process: one that stands for 3 periods (two
 * expiries folded into its signal) becomes 3 rows, each given the Python stack of the look
 * near it; one without the field (the layout before it: 1 period), 1 row; one whose fold no
 * agent writes (a blocked signal's: counted lost by the agent), none (malformed). */
static void weighted_cpu_samples_become_one_row_per_period(void)
{
    fresh_session();
    struct raw_writer w;
    char path[300];
    snprintf(path, sizeof path, "%s/400-1.lrt", dir);
    raw_open(&w, path, 1 << 16);
    raw_chunk(&w, 1000);
    raw_process(&w, 400, 1000, "python3", 8, TRACE_FLAG_CPU, NULL);
    RAW(&w, cpu_sampling, .status = TRACE_CPU_SAMPLING_ON, .period_ns = 4000000,
        .reason = trace_cstr("CPU-time timers"), .python_status = TRACE_CPU_SAMPLING_ON,
        .python_tick_ns = 10000000, .python_interpreter = trace_cstr("/usr/bin/python3"));
    RAW(&w, py_frame, .frame_id = 1, .file = trace_cstr("app.py"), .function = trace_cstr("hot"),
        .first_line = 3);
    uint8_t frames[] = {1 << 1 | 1}; /* frame 1, the outermost */
    RAW(&w, py_stack, .stack_id = 1, .frames = trace_bytes(frames, sizeof frames));
    RAW(&w, py_sample, .os_tid = 400, .ts = 2000, .stack_id = 1);
    RAW(&w, cpu_sample, .os_tid = 400, .ts = 2100, .stack_id = 0, .overruns = 2);
    /* the record as written before the field: its three fields alone */
    struct trace_record_mark m = trace_record_begin(&w.b, TRACE_CPU_SAMPLE);
    trace_put_u(&w.b, 400);
    trace_put_ts(&w.b, 2200);
    trace_put_u(&w.b, 0);
    ASSERT_EQ(trace_record_end(&w.b, m), 0);
    RAW(&w, cpu_sample, .os_tid = 400, .ts = 2300, .overruns = TRACE_CPU_SAMPLE_WEIGHT_MAX);
    RAW(&w, cpu_sampler, .samples = 4, .lost = 16, .threads = 1);
    RAW(&w, process_end, .end = 9000, .clean = 1);
    raw_flush(&w, 0);
    raw_close(&w);

    sqlite3 *db = import_and_open();
    ASSERT_STR_EQ(rows(db, "SELECT s.ts_ns, count(*), count(DISTINCT s.stack_id), f.name"
                           " FROM cpu_samples s JOIN cpu_stacks k ON k.id = s.stack_id"
                           " JOIN cpu_callsites c ON c.id = k.callsite_id"
                           " JOIN cpu_frames f ON f.id = c.frame_id GROUP BY s.ts_ns"),
                  "2100|3|1|hot;2200|1|1|hot");
    ASSERT_STR_EQ(rows(db, "SELECT samples, lost, python_matched FROM cpu_sampling"), "4|16|4");
    sqlite3_close(db);
}

/* Kernels and API calls are written in batches of 64 (import_cuda_records.c): across three
 * batches and a partial one, every row keeps the id of its record's place in the file, and
 * each kernel gets its launching call as the file says it: the runtime call over the driver
 * call inside it (which ends, and is written, first), also when the kernel's record comes
 * before its calls' (another CUPTI buffer); the driver call where there is no runtime one;
 * none for a kernel without a call; the call's NVTX range, a GPU, a demangled name. */
#define BATCHED_LAUNCHES 200

static void cuda_rows_keep_their_ids_and_launching_calls_across_batches(void)
{
    fresh_session();
    struct raw_writer w;
    char path[300];
    snprintf(path, sizeof path, "%s/100-1.lrt", dir);
    raw_open(&w, path, 1 << 20);
    raw_chunk(&w, 1000);
    raw_process(&w, 100, 1000, "app", 3, TRACE_FLAG_CUDA | TRACE_FLAG_NVTX, "cuda,nvtx");
    raw_thread(&w, 1, 100, 1000);
    raw_string(&w, 1, "cudaLaunchKernel");
    raw_string(&w, 2, "cuLaunchKernel");
    raw_string(&w, 3, "_Z4axpyPfS_f");
    raw_string(&w, 4, "layer");
    RAW(&w, cuda_device, .device = 0, .name = trace_cstr("NVIDIA H100"),
        .uuid = trace_cstr("GPU-a"), .cc_major = 9, .sm_count = 132);
    /* the ground truth, worked out as the records are written: ids are places in the file */
    int64_t api_rows = 0, kernel_rows = 0, ranges = 0;
    int64_t expected_api[BATCHED_LAUNCHES + 1] = {0}, expected_range[BATCHED_LAUNCHES + 1] = {0};
    int64_t kernel_of_row[BATCHED_LAUNCHES + 1] = {0};
    uint64_t t = 10000;
    for (uint64_t c = 1; c <= BATCHED_LAUNCHES; c++, t += 1000) {
        if (c % 10 == 1) /* ten launches per range */
            raw_push(&w, 1, t, 0, 0, 4), ranges++;
        int kernel_first = c % 5 == 0, driver = c % 3 == 0, runtime = c % 7 != 0,
            no_call = c == 150;
        if (kernel_first) {
            RAW(&w, cuda_kernel, .device = 0, .context = 1, .stream = 7, .correlation = c,
                .start = t + 500, .end = t + 600, .name = 3, .grid_x = 1, .grid_y = 1, .grid_z = 1,
                .block_x = 32, .block_y = 1, .block_z = 1);
            kernel_of_row[++kernel_rows] = (int64_t)c;
        }
        if (!no_call && driver) {
            RAW(&w, cuda_api, .os_tid = 100, .api = 1, .cbid = 307, .name = 2, .start = t + 10,
                .end = t + 50, .correlation = c);
            expected_api[c] = ++api_rows;
        }
        if (!no_call && runtime) {
            RAW(&w, cuda_api, .os_tid = 100, .api = 0, .cbid = 211, .name = 1, .start = t,
                .end = t + 60, .correlation = c);
            expected_api[c] = ++api_rows;
        }
        if (!no_call && (driver || runtime))
            expected_range[c] = ranges;
        if (!kernel_first) {
            RAW(&w, cuda_kernel, .device = 0, .context = 1, .stream = 7, .correlation = c,
                .start = t + 500, .end = t + 600, .name = 3, .grid_x = 1, .grid_y = 1, .grid_z = 1,
                .block_x = 32, .block_y = 1, .block_z = 1);
            kernel_of_row[++kernel_rows] = (int64_t)c;
        }
        if (c % 10 == 0)
            raw_pop(&w, 1, t + 900, 0, 0);
    }
    RAW(&w, process_end, .end = t, .clean = 1);
    raw_flush(&w, 0);
    raw_close(&w);

    sqlite3 *db = import_and_open();
    ASSERT_EQ(warnings_seen, 0);
    ASSERT_EQ(kernel_rows, BATCHED_LAUNCHES);
    ASSERT_STR_EQ(rows(db, "SELECT count(*), max(id) FROM kernels"), "200|200");
    char expected[64];
    snprintf(expected, sizeof expected, "%lld|%lld", (long long)api_rows, (long long)api_rows);
    ASSERT_STR_EQ(rows(db, "SELECT count(*), max(id) FROM cuda_api"), expected);
    sqlite3_stmt *st;
    ASSERT_EQ(sqlite3_prepare_v2(db,
                                 "SELECT k.id, k.correlation_id, k.api_id, k.nvtx_range_id,"
                                 " k.gpu_id, s.value FROM kernels k"
                                 " JOIN strings s ON s.id = k.demangled_id ORDER BY k.id",
                                 -1, &st, NULL),
              SQLITE_OK);
    int64_t n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0), c = sqlite3_column_int64(st, 1);
        ASSERT_EQ(id, ++n);
        ASSERT_EQ(c, kernel_of_row[id]);
        ASSERT_EQ(sqlite3_column_int64(st, 2), expected_api[c]); /* NULL reads 0 */
        ASSERT_EQ(sqlite3_column_int64(st, 3), expected_range[c]);
        ASSERT_EQ(sqlite3_column_int64(st, 4), 1);
        ASSERT_STR_EQ((const char *)sqlite3_column_text(st, 5), "axpy(float*, float*, float)");
    }
    sqlite3_finalize(st);
    ASSERT_EQ(n, BATCHED_LAUNCHES);
    /* every call of a range's thread is in it: runtime and driver alike */
    ASSERT_STR_EQ(rows(db, "SELECT count(*) FROM cuda_api WHERE nvtx_range_id IS NULL"), "0");
    sqlite3_close(db);
}

static const struct test_case tests[] = {
    {"names_ranks_and_parents_come_from_their_records",
     names_ranks_and_parents_come_from_their_records},
    {"process_names_follow_the_interpreters_script", process_names_follow_the_interpreters_script},
    {"write_error_and_cut_name_are_reported", write_error_and_cut_name_are_reported},
    {"a_failing_record_handler_is_counted", a_failing_record_handler_is_counted},
    {"empty_or_foreign_folder_is_an_error", empty_or_foreign_folder_is_an_error},
    {"fifo_and_link_are_skipped_without_blocking", fifo_and_link_are_skipped_without_blocking},
    {"cancelled_import_leaves_nothing", cancelled_import_leaves_nothing},
    {"replace_renames_over_the_old_file", replace_renames_over_the_old_file},
    {"every_nvtx_record_becomes_its_row", every_nvtx_record_becomes_its_row},
    {"truncated_file_imports_up_to_damage", truncated_file_imports_up_to_damage},
    {"garbage_is_a_warning_not_a_failure", garbage_is_a_warning_not_a_failure},
    {"existing_database_is_not_overwritten", existing_database_is_not_overwritten},
    {"range_ended_on_another_thread_before_its_start_in_the_file",
     range_ended_on_another_thread_before_its_start_in_the_file},
    {"nesting_10000_levels_deep_is_kept", nesting_10000_levels_deep_is_kept},
    {"duplicated_misordered_and_appended_chunks", duplicated_misordered_and_appended_chunks},
    {"nesting_200000_levels_deep_is_kept", nesting_200000_levels_deep_is_kept},
    {"gpu_metric_samples_columns_are_gpu_metrics_def_rows",
     gpu_metric_samples_columns_are_gpu_metrics_def_rows},
    {"gpu_metric_records_become_sets_samples_and_status",
     gpu_metric_records_become_sets_samples_and_status},
    {"gpu_metric_sampler_fills_the_latest_set_of_its_id",
     gpu_metric_sampler_fills_the_latest_set_of_its_id},
    {"cpu_records_become_samples_stacks_and_frames", cpu_records_become_samples_stacks_and_frames},
    {"weighted_cpu_samples_become_one_row_per_period",
     weighted_cpu_samples_become_one_row_per_period},
    {"cuda_rows_keep_their_ids_and_launching_calls_across_batches",
     cuda_rows_keep_their_ids_and_launching_calls_across_batches},
    {NULL, NULL},
};

int main(int argc, char **argv)
{
    if (!mkdtemp(dir))
        return 1;
    int rc = test_main(tests, argc, argv);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s %s", dir, db_path);
    if (system(cmd) != 0)
        return 1;
    return rc;
}
