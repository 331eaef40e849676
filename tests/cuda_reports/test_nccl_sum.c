/* nccl_sum and what it knows of NCCL: kernel names parsed, nccl-tests' bus-bandwidth factors,
 * and the report over nccl_session.sql, a two-rank session whose rows were worked out by hand
 * (see the comments there). */
#include <math.h>
#include <sqlite3.h>

#include "harness.h"
#include "model/nccl.h"
#include "stats/stats.h"

static void expect_kernel(const char *name, const char *collective, const char *algo,
                          const char *proto, const char *redop, const char *type)
{
    struct nccl_kernel k;
    if (!nccl_parse_kernel(name, &k)) {
        fprintf(stderr, "not parsed: %s\n", name);
        exit(1);
    }
    ASSERT_STR_EQ(k.collective, collective);
    ASSERT_STR_EQ(k.algo, algo);
    ASSERT_STR_EQ(k.proto, proto);
    ASSERT_STR_EQ(k.redop, redop);
    ASSERT_STR_EQ(k.type, type);
}

static void kernel_names_of_every_nccl_generation_are_parsed(void)
{
    /* NCCL 2.19+, demangled and mangled */
    expect_kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                  "AllReduce", "RING", "LL", "Sum", "f32");
    expect_kernel("_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE",
                  "AllReduce", "RING", "LL", "Sum", "f32");
    expect_kernel("ncclDevKernel_ReduceScatter_MinMax_bf16_NVLS_SIMPLE(x)", "ReduceScatter",
                  "NVLS", "SIMPLE", "MinMax", "bf16");
    expect_kernel("ncclDevKernel_AllReduce_Sum_u8_COLLNET_DIRECT_LL128", "AllReduce",
                  "COLLNET_DIRECT", "LL128", "Sum", "u8");
    expect_kernel("ncclDevKernel_AllReduce_Sum_f16_NVLS_TREE_SIMPLE", "AllReduce", "NVLS_TREE",
                  "SIMPLE", "Sum", "f16");
    expect_kernel("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                  "AllGather", "RING", "LL", "", "");
    expect_kernel("ncclDevKernel_AllGatherV_RING_LL", "AllGather", "RING", "LL", "", "");
    expect_kernel("ncclDevKernel_Broadcast_RING_LL", "Broadcast", "RING", "LL", "", "");
    expect_kernel("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "SendRecv", "", "",
                  "", "");
    expect_kernel("ncclDevKernel_Generic_4", "Generic", "", "", "", "");
    /* symmetric kernels (2.27+) */
    expect_kernel("ncclSymkDevKernel_AllReduce_AGxLLMC_R_sum_bf16(ncclSymkDevWorkArgs4K)",
                  "AllReduce", "AGxLLMC_R", "", "sum", "bf16");
    expect_kernel("ncclSymkDevKernel_ReduceScatter_RailA2A_LsaLD_avg_f32_profile",
                  "ReduceScatter", "RailA2A_LsaLD", "", "avg", "f32");
    expect_kernel("ncclSymkDevKernel_AllGather_TmaST", "AllGather", "TmaST", "", "", "");
    /* 2.12-2.18 */
    expect_kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
                  "AllReduce", "RING", "LL", "Sum", "float");
    expect_kernel("ncclKernel_AllReduce_TREE_LL128_Prod___nv_bfloat16(x)", "AllReduce", "TREE",
                  "LL128", "Prod", "__nv_bfloat16");
    expect_kernel("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(x)", "SendRecv", "", "", "", "int8_t");
    /* not NCCL's */
    struct nccl_kernel k;
    ASSERT(!nccl_parse_kernel("void gemm<float>(float*)", &k));
    ASSERT(!nccl_parse_kernel("ncclDevKernel_Unknown_RING_LL", &k));
    ASSERT(!nccl_parse_kernel("_Z99ncclDevKernel_AllReduce", &k)); /* a length past the name */
    ASSERT(!nccl_parse_kernel("ncclDevKernel_", &k));
    ASSERT(!nccl_parse_kernel("", &k));
}

/* NCCL_KERNEL_LIKE, the SQL filter before the parser (nccl_sum, lantern analyze), lets every
 * form of name the parser accepts through. */
static void every_nccl_kernel_name_passes_the_sql_filter(void)
{
    static const char *const names[] = {
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
        "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE",
        "ncclSymkDevKernel_AllReduce_AGxLLMC_R_sum_bf16(ncclSymkDevWorkArgs4K)",
        "void ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)",
    };
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    ASSERT(sqlite3_open(":memory:", &db) == SQLITE_OK);
    ASSERT(sqlite3_prepare_v2(db, "SELECT ?1 LIKE " NCCL_KERNEL_LIKE, -1, &st, NULL) == SQLITE_OK);
    struct nccl_kernel k;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        ASSERT(nccl_parse_kernel(names[i], &k));
        sqlite3_bind_text(st, 1, names[i], -1, SQLITE_STATIC);
        ASSERT(sqlite3_step(st) == SQLITE_ROW);
        ASSERT_EQ(sqlite3_column_int(st, 0), 1);
        sqlite3_reset(st);
    }
    sqlite3_bind_text(st, 1, "void gemm<float>(float*)", -1, SQLITE_STATIC);
    ASSERT(sqlite3_step(st) == SQLITE_ROW);
    ASSERT_EQ(sqlite3_column_int(st, 0), 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static void near(double a, double b)
{
    if (fabs(a - b) > 1e-12) {
        fprintf(stderr, "%.15g != %.15g\n", a, b);
        exit(1);
    }
}

static void bus_bandwidth_factors_are_nccl_tests(void)
{
    near(nccl_busbw_factor(nccl_collective_named("AllReduce"), 8), 2.0 * 7 / 8);
    near(nccl_busbw_factor(nccl_collective_named("AllReduce"), 2), 1);
    near(nccl_busbw_factor(nccl_collective_named("AllReduce"), 1), 0);
    near(nccl_busbw_factor(nccl_collective_named("AllGather"), 8), 7.0 / 8);
    near(nccl_busbw_factor(nccl_collective_named("ReduceScatter"), 4), 3.0 / 4);
    near(nccl_busbw_factor(nccl_collective_named("AllToAll"), 4), 3.0 / 4);
    near(nccl_busbw_factor(nccl_collective_named("Broadcast"), 8), 1);
    near(nccl_busbw_factor(nccl_collective_named("Reduce"), 8), 1);
    near(nccl_busbw_factor(nccl_collective_named("Send"), 2), 1);
    near(nccl_busbw_factor(nccl_collective_named("Recv"), 2), 1);
    ASSERT(nccl_busbw_factor(nccl_collective_named("Generic"), 8) < 0);
    ASSERT(nccl_busbw_factor(nccl_collective_named("AllReduce"), 0) < 0);
    ASSERT(nccl_busbw_factor(NULL, 8) < 0);
    /* nccl-tests' size: NCCL's payload gives one rank's part of an AllGather and ReduceScatter */
    ASSERT(nccl_collective_named("AllGather")->size_is_per_rank);
    ASSERT(nccl_collective_named("ReduceScatter")->size_is_per_rank);
    ASSERT(!nccl_collective_named("AllReduce")->size_is_per_rank);
    ASSERT(!nccl_collective_named("Broadcast")->size_is_per_rank);
    /* which kernels run which calls */
    ASSERT(nccl_kernel_runs(nccl_collective_named("Send"), "SendRecv"));
    ASSERT(nccl_kernel_runs(nccl_collective_named("AllReduce"), "Generic"));
    ASSERT(!nccl_kernel_runs(nccl_collective_named("Send"), "AllReduce"));
}

static void exec_file(sqlite3 *db, const char *path)
{
    FILE *f = fopen(path, "rb");
    ASSERT(f);
    static char sql[1 << 16];
    size_t n = fread(sql, 1, sizeof sql - 1, f);
    fclose(f);
    sql[n] = 0;
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
        fprintf(stderr, "%s: %s\n", path, err);
        exit(1);
    }
}

/* nccl_sum in format over the schema and `fixture` (NULL: none); its note in *note. */
static char *run_nccl_sum(const char *fixture, enum table_format format, char *note, size_t size)
{
    sqlite3 *db = NULL;
    ASSERT(sqlite3_open(":memory:", &db) == SQLITE_OK);
    exec_file(db, LANTERN_SOURCE_DIR "/src/db/schema.sql");
    if (fixture)
        exec_file(db, fixture);
    struct stats_ctx ctx = {.db = db, .format = format};
    char *text = NULL;
    size_t len = 0;
    ctx.out = open_memstream(&text, &len);
    ASSERT(ctx.out);
    if (stats_nccl_sum(&ctx) != 0)
        fprintf(stderr, "nccl_sum: %s\n", ctx.error);
    fclose(ctx.out);
    snprintf(note, size, "%s", ctx.note);
    sqlite3_close(db);
    return text;
}

#define SESSION LANTERN_SOURCE_DIR "/tests/cuda_reports/nccl_session.sql"

/* Rank 0: AllReduce 1 MB x2 (1000 + 3000 ns: avg 2000, stddev sqrt(2e6)), n = 4 from the
 * communicator: algbw 1e6 B / 2000 ns = 500 GB/s, busbw x 2(4-1)/4 = 750. AllGather 250 kB
 * per rank: size 4 x 250 kB = 1 MB in 500 ns: 2000 GB/s, busbw x 3/4 = 1500. The group's two
 * AllReduce (300 B, 100 B) share its 800 + 200 ns by bytes: 750 and 250 ns, each 0.4 GB/s,
 * busbw 0.6. Rank 1: no payloads, n = 2 processes in the database; its Send's SendRecv kernel
 * (600 ns), an AllReduce kernel after the Send (2000 ns: not a Send's kernel, on its own), and
 * two SendRecv kernels on their own: one without a recorded launch (400 ns), one replayed from
 * a CUDA graph (700 ns): avg 550, stddev sqrt(2 x 150^2). Time % of all 9200 ns. */
static void rows_match_the_hand_computed_session(void)
{
    char note[1024];
    char *csv = run_nccl_sum(SESSION, TABLE_FORMAT_CSV, note, sizeof note);
    ASSERT_STR_EQ(csv,
                  "Time (%),Total Time (ns),Calls,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),"
                  "Size (B),AlgBW (GB/s),BusBW (GB/s),Ranks,Ranks From,Op,Kernel,Collective,"
                  "Process\n"
                  "5.435,500,1,500,500,500,500,0,1000000,2000,1500,4,communicator,,RING_LL,"
                  "AllGather,app (rank 0)\n"
                  "2.717,250,1,250,250,250,250,0,100,0.4,0.6,4,communicator,Max,"
                  "\"RING_LL f32, TREE_LL f32\",AllReduce,app (rank 0)\n"
                  "8.152,750,1,750,750,750,750,0,300,0.4,0.6,4,communicator,Max,"
                  "\"RING_LL f32, TREE_LL f32\",AllReduce,app (rank 0)\n"
                  "43.478,4000,2,2000,2000,1000,3000,1414.214,1000000,500,750,4,communicator,Sum,"
                  "RING_LL f32,AllReduce,app (rank 0)\n"
                  "21.739,2000,1,2000,2000,2000,2000,0,,,,2,database,,RING_LL f32,AllReduce,"
                  "app (rank 1)\n"
                  "6.522,600,1,600,600,600,600,0,,,,2,database,,SendRecv,Send,app (rank 1)\n"
                  "11.957,1100,2,550,550,400,700,212.132,,,,2,database,,SendRecv,SendRecv,"
                  "app (rank 1)\n");
    ASSERT_STR_EQ(note, "");
    free(csv);
}

static void json_gives_exact_bandwidths(void)
{
    char note[1024];
    char *json = run_nccl_sum(SESSION, TABLE_FORMAT_JSON, note, sizeof note);
    ASSERT(strstr(json, "\"size_bytes\": 1000000, \"algbw_gbps\": 500, \"busbw_gbps\": 750, "
                        "\"ranks\": 4, \"ranks_from\": \"communicator\", \"op\": \"Sum\"") != NULL);
    free(json);
}

/* The session without kernels: calls and sizes from the ranges, times unknown, said why. */
static void without_kernels_the_calls_keep_their_sizes(void)
{
    sqlite3 *db = NULL;
    ASSERT(sqlite3_open(":memory:", &db) == SQLITE_OK);
    exec_file(db, LANTERN_SOURCE_DIR "/src/db/schema.sql");
    exec_file(db, SESSION);
    ASSERT(sqlite3_exec(db, "DELETE FROM kernels", NULL, NULL, NULL) == SQLITE_OK);
    struct stats_ctx ctx = {.db = db, .format = TABLE_FORMAT_CSV};
    char *text = NULL;
    size_t len = 0;
    ctx.out = open_memstream(&text, &len);
    ASSERT_EQ(stats_nccl_sum(&ctx), 0);
    fclose(ctx.out);
    ASSERT(strstr(text, "\n,,2,,,,,,1000000,,,4,communicator,Sum,,AllReduce,app (rank 0)\n"));
    ASSERT(strstr(text, "\n,,1,,,,,,,,,2,database,,,Send,app (rank 1)\n"));
    ASSERT(strstr(ctx.note, "no NCCL kernel was recorded") == ctx.note);
    sqlite3_close(db);
    free(text);
}

static void a_session_without_nccl_is_empty_and_says_why(void)
{
    char note[1024];
    char *csv = run_nccl_sum(NULL, TABLE_FORMAT_CSV, note, sizeof note);
    ASSERT(strchr(csv, '\n') == csv + strlen(csv) - 1); /* the header alone */
    ASSERT(strstr(note, "no NCCL activity") == note);
    free(csv);
}

int main(int argc, char **argv)
{
    static const struct test_case tests[] = {
        {"kernel_names_of_every_nccl_generation_are_parsed",
         kernel_names_of_every_nccl_generation_are_parsed},
        {"every_nccl_kernel_name_passes_the_sql_filter",
         every_nccl_kernel_name_passes_the_sql_filter},
        {"bus_bandwidth_factors_are_nccl_tests", bus_bandwidth_factors_are_nccl_tests},
        {"rows_match_the_hand_computed_session", rows_match_the_hand_computed_session},
        {"json_gives_exact_bandwidths", json_gives_exact_bandwidths},
        {"without_kernels_the_calls_keep_their_sizes", without_kernels_the_calls_keep_their_sizes},
        {"a_session_without_nccl_is_empty_and_says_why", a_session_without_nccl_is_empty_and_says_why},
        {NULL, NULL},
    };
    return test_main(tests, argc, argv);
}
