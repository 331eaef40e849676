/* libFuzzer target for the raw-trace reader and the importer (scripts/fuzz.sh runs it; results
 * in docs/testing.md). Each input is one raw trace file: it is imported into a database as
 * `lantern import` would, and the database is then read back by the Chrome export, the NVTX
 * summary and the GPU metrics summary, so that whatever a damaged file can put in a database
 * is exercised too.
 * Built with FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION, which skips the chunk CRC check
 * (src/trace/codec.c): otherwise nearly every mutation would stop at the checksum. */
#include "db/import.h"
#include "export/export.h"
#include "stats/stats.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char session[256], raw_path[300], db_path[300];
static FILE *null_out;

static void ignore_warning(void *ctx, const char *msg)
{
    (void)ctx;
    (void)msg;
}

static void setup(void)
{
    const char *tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"; /* in memory */
    snprintf(session, sizeof session, "%s/lantern-fuzz-XXXXXX", tmp);
    if (!mkdtemp(session))
        abort();
    snprintf(raw_path, sizeof raw_path, "%s/1-1.lrt", session);
    snprintf(db_path, sizeof db_path, "%s.db", session);
    null_out = fopen("/dev/null", "w");
    if (!null_out)
        abort();
}

/* Reads the database the way `lantern export` and `lantern stats` do. */
static void read_back(void)
{
    sqlite3 *db;
    if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        char error[256];
        export_chrome(db, null_out, NULL, error, sizeof error);
        struct stats_ctx ctx = {.db = db, .out = null_out, .format = TABLE_FORMAT_TABLE};
        stats_header(&ctx, null_out);
        stats_nvtx_sum(&ctx);
        stats_gpu_metrics_sum(&ctx);
    }
    sqlite3_close(db);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!session[0])
        setup();
    FILE *f = fopen(raw_path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
        abort();
    struct import_options opt = {.warn = ignore_warning, .replace = 1};
    if (import_session(session, db_path, &opt, NULL) == 0)
        read_back();
    unlink(db_path);
    return 0;
}
