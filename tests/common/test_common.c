/* src/common/, src/db/gpu_peaks.c, src/model/: the u64 map and the index map against plain arrays
 * as the truth, the GPU peak table against hand-computed products (docs/trace-format.md, "Peak
 * rates"), and the interval arithmetic of the GPU metrics reports (overlap with other kernels,
 * samples over an interval) against hand-worked cases and brute force. */
#include "common/index_map.h"
#include "common/u64_map.h"
#include "db/gpu_peaks.h"
#include "db/import.h"
#include "harness.h"
#include "model/gpu_metrics_series.h"
#include "model/overlap.h"

#include <math.h>

#define KEYS 20000u

/* Keys that collide a lot: multiples of a large power of two, plus small ones. */
static uint64_t key_of(unsigned i)
{
    return i % 2 ? (uint64_t)(i + 1) << 40 : (uint64_t)i + 1;
}

static void u64_map_matches_a_plain_array(void)
{
    static uint64_t truth[KEYS]; /* 0: absent */
    struct u64_map m = {0};
    ASSERT(u64_map_find(&m, 1) == NULL);
    for (unsigned i = 0; i < KEYS; i++) {
        ASSERT_EQ(u64_map_put(&m, key_of(i), i * 3 + 1), 0);
        truth[i] = i * 3 + 1;
    }
    ASSERT_EQ(u64_map_put(&m, key_of(7), 99), 0); /* an update, not a new entry */
    truth[7] = 99;
    ASSERT_EQ(m.count, KEYS);
    /* remove every third key, in an order that leaves holes inside probe runs */
    for (unsigned i = KEYS; i-- > 0;)
        if (i % 3 == 0) {
            u64_map_remove(&m, key_of(i));
            truth[i] = 0;
        }
    u64_map_remove(&m, key_of(0)); /* already gone: nothing happens */
    size_t present = 0;
    for (unsigned i = 0; i < KEYS; i++) {
        uint64_t *v = u64_map_find(&m, key_of(i));
        if (truth[i]) {
            ASSERT(v);
            ASSERT_EQ(*v, truth[i]);
            present++;
        } else {
            ASSERT(v == NULL);
        }
    }
    ASSERT_EQ(m.count, present);
    size_t walked = 0; /* the documented walk sees each entry once */
    for (size_t i = 0; i < m.cap; i++)
        walked += m.keys[i] != 0;
    ASSERT_EQ(walked, present);
    u64_map_release(&m);
    ASSERT_EQ(m.count, 0);
    ASSERT(u64_map_find(&m, key_of(1)) == NULL);
}

/* Records with a two-part key; every hash forced into 16 values so that most keys collide and
 * only the comparison tells them apart. */
struct pair_record {
    int64_t a, b, seen;
};

static int pair_eq(const void *array, size_t pos, const void *key)
{
    const struct pair_record *r = &((const struct pair_record *)array)[pos], *k = key;
    return r->a == k->a && r->b == k->b;
}

static void index_map_finds_each_record_once(void)
{
    struct index_map m = {0};
    struct pair_record *records = NULL;
    size_t n = 0, cap = 0;
    for (int round = 0; round < 3; round++)
        for (int64_t i = 0; i < 3000; i++) {
            struct pair_record key = {.a = i % 50, .b = i / 50};
            int added;
            ASSERT_EQ(index_reserve((void **)&records, &cap, n, sizeof *records), 0);
            long pos = index_get(&m, index_mix(7, key.a) % 16, records, pair_eq, &key, n, &added);
            ASSERT(pos >= 0);
            ASSERT_EQ(added, round == 0);
            if (added) {
                ASSERT_EQ(pos, (long)n);
                records[n++] = key;
            }
            ASSERT(records[pos].a == key.a && records[pos].b == key.b);
            records[pos].seen++;
        }
    ASSERT_EQ(n, 3000);
    for (size_t i = 0; i < n; i++)
        ASSERT_EQ(records[i].seen, 3);
    index_release(&m);
    free(records);
}

static void gpu_peaks_of_an_h100(void)
{
    struct gpu_peaks p;
    /* 132 SMs at 1980 MHz: 256 FP32, 4096 FP16/BF16, 2048 TF32, 256 FP64 FLOP/clock/SM */
    ASSERT_EQ(gpu_peaks_flops(9, 0, 132, 1980000, &p), 1);
    ASSERT_EQ(p.fp32, 66908160000000ll);
    ASSERT_EQ(p.fp16, 1070530560000000ll);
    ASSERT_EQ(p.bf16, 1070530560000000ll);
    ASSERT_EQ(p.tf32, 535265280000000ll);
    ASSERT_EQ(p.fp64, 66908160000000ll);
}

static void gpu_peaks_unknown_are_zero(void)
{
    struct gpu_peaks p;
    ASSERT_EQ(gpu_peaks_flops(6, 1, 28, 1900000, &p), 0); /* not in the table */
    ASSERT_EQ(p.fp32, 0);
    ASSERT_EQ(gpu_peaks_flops(9, 0, 0, 1980000, &p), 0); /* SM count unknown */
    ASSERT_EQ(p.fp16, 0);
    ASSERT_EQ(gpu_peaks_flops(9, 0, 132, 0, &p), 0);      /* clock unknown */
    ASSERT_EQ(gpu_peaks_flops(7, 0, 80, 1530000, &p), 1); /* V100: no BF16, no TF32 */
    ASSERT_EQ(p.bf16, 0);
    ASSERT_EQ(p.tf32, 0);
    ASSERT_EQ(p.fp32, 15667200000000ll); /* 128 x 80 x 1.53 GHz */
}

static void gpu_peak_dram_reported_or_from_the_bus(void)
{
    ASSERT_EQ(gpu_peak_dram_bytes_per_s(4800000000000ll, 2619000, 5120), 4800000000000ll);
    /* 2 x 2619 MHz x 5120 bits / 8 */
    ASSERT_EQ(gpu_peak_dram_bytes_per_s(0, 2619000, 5120), 3352320000000ll);
    ASSERT_EQ(gpu_peak_dram_bytes_per_s(0, 0, 5120), 0);
}

/* Half-open intervals: touching is not overlapping; a zero-length one shares nothing. */
static void overlap_counts_time_shared_with_any_other(void)
{
    const int64_t start[] = {0, 5, 15, 20, 30, 32, 33};
    const int64_t end[] = {10, 15, 20, 20, 40, 34, 36};
    int64_t got[7];
    ASSERT_EQ(overlap_with_others(start, end, 7, got), 0);
    const int64_t expected[] = {5, 5, 0, 0, 4, 2, 3};
    for (int i = 0; i < 7; i++)
        ASSERT_EQ(got[i], expected[i]);
}

static void overlap_matches_brute_force(void)
{
    enum { N = 1500 };
    static int64_t start[N], end[N], got[N];
    srand(7);
    int64_t t = 0;
    for (int i = 0; i < N; i++) {
        t += rand() % 50;
        start[i] = t;
        end[i] = t + (i % 17 == 0 ? 0 : rand() % 400);
    }
    ASSERT_EQ(overlap_with_others(start, end, N, got), 0);
    static unsigned char shared[N * 50 + 400];
    for (int64_t x = 0; x < t + 400; x++) { /* instants where >= 2 intervals are open */
        int open = 0;
        for (int i = 0; i < N && start[i] <= x; i++)
            open += x < end[i];
        shared[x] = open >= 2;
    }
    for (int i = 0; i < N; i++) {
        int64_t n = 0;
        for (int64_t x = start[i]; x < end[i]; x++)
            n += shared[x];
        ASSERT_EQ(got[i], n);
    }
}

static sqlite3 *metrics_db(void)
{
    sqlite3 *db;
    ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, import_schema_sql, NULL, NULL, NULL), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db,
                           "INSERT INTO gpus(id, uuid) VALUES (1, 'GPU-a'), (2, 'GPU-b');"
                           "INSERT INTO gpu_metric_sets(id, gpu_id) VALUES (1, 1), (2, 1), (3, 2);",
                           NULL, NULL, NULL),
              SQLITE_OK);
    return db;
}

static void sample(sqlite3 *db, int set, int64_t start, int64_t end, double sm, double tensor)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "INSERT INTO gpu_metric_samples(set_id, start_ns, end_ns, sm_active, tensor_active)"
             " VALUES (%d, %lld, %lld, %g, %s)",
             set, (long long)start, (long long)end, sm, tensor < 0 ? "NULL" : "0");
    ASSERT_EQ(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    if (tensor > 0) {
        snprintf(sql, sizeof sql,
                 "UPDATE gpu_metric_samples SET tensor_active = %g"
                 " WHERE rowid = last_insert_rowid()",
                 tensor);
        ASSERT_EQ(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    }
}

/* The samples of every set of a GPU, sorted; a sample inside the previous one starts at its
 * end; zero-length ones carry no time; a metric no sample has is absent; a gap adds nothing. */
static void series_weights_samples_by_their_overlap(void)
{
    sqlite3 *db = metrics_db();
    sample(db, 1, 0, 100, 10, 0);
    sample(db, 1, 100, 200, 50, 40);
    sample(db, 1, 200, 200, 99, 99); /* zero length */
    sample(db, 1, 200, 300, 90, -1); /* tensor not sampled */
    sample(db, 2, 250, 350, 30, 0);  /* another set: clipped to [300, 350) */
    sample(db, 1, 400, 600, 20, 0);  /* after a gap */
    sample(db, 3, 0, 1000, 77, 0);   /* GPU-b */
    struct gpu_metrics_series s;
    ASSERT_EQ(gpu_metrics_series_load(db, 1, &s), 0);
    ASSERT_EQ(s.count, 5);
    ASSERT_EQ(s.clipped, 1);
    ASSERT_EQ(s.start[3], 300);
    ASSERT(s.values[GPU_METRIC_SM_ACTIVE] && s.values[GPU_METRIC_TENSOR_ACTIVE]);
    ASSERT(!s.values[GPU_METRIC_DRAM_READ]);
    struct gpu_metric_acc a[GPU_METRIC_COUNT] = {{0}};
    struct gpu_metrics_cursor c = {0};
    gpu_metrics_series_add(&s, &c, 50, 150, a);  /* half of the first two */
    gpu_metrics_series_add(&s, &c, 250, 500, a); /* 50 of the third, the clipped, 100 of the last */
    const struct gpu_metric_acc *sm = &a[GPU_METRIC_SM_ACTIVE], *tc = &a[GPU_METRIC_TENSOR_ACTIVE];
    ASSERT_EQ(sm->covered_ns, 50 + 50 + 50 + 50 + 100);
    ASSERT_EQ(sm->touched_ns, 100 + 100 + 100 + 50 + 200);
    ASSERT(sm->area == 10 * 50 + 50 * 50 + 90 * 50 + 30 * 50 + 20 * 100);
    ASSERT(sm->min == 10 && sm->max == 90);
    ASSERT_EQ(tc->covered_ns, 50 + 50 + 50 + 100); /* not over the third sample */
    ASSERT(tc->area == 40 * 50 && tc->min == 0 && tc->max == 40);
    ASSERT(gpu_metric_acc_mean(tc) == 40.0 * 50 / 250);
    struct gpu_metric_acc none[GPU_METRIC_COUNT] = {{0}};
    gpu_metrics_series_add(&s, &c, 350, 400, none); /* the gap */
    ASSERT_EQ(none[GPU_METRIC_SM_ACTIVE].covered_ns, 0);
    ASSERT(gpu_metric_acc_mean(&none[GPU_METRIC_SM_ACTIVE]) < 0);
    gpu_metrics_series_release(&s);
    sqlite3_close(db);
}

/* Across block boundaries, in sorted order, against sample-by-sample sums. Integer values and
 * durations keep every sum exact in a double. */
static void series_matches_brute_force_across_blocks(void)
{
    enum { N = 1000, Q = 400 };
    sqlite3 *db = metrics_db();
    static int64_t start[N], end[N];
    static double v[N];
    srand(11);
    int64_t t = 0;
    ASSERT_EQ(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
    for (int i = 0; i < N; i++) {
        t += rand() % 3 == 0 ? rand() % 50 : 0; /* some gaps */
        start[i] = t;
        end[i] = t += 1 + rand() % 100;
        v[i] = rand() % 101;
        sample(db, 1, start[i], end[i], v[i], 0);
    }
    ASSERT_EQ(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    struct gpu_metrics_series s;
    ASSERT_EQ(gpu_metrics_series_load(db, 1, &s), 0);
    struct gpu_metrics_cursor c = {0};
    int64_t from = -100;
    for (int q = 0; q < Q; q++) {
        from += rand() % 300;
        int64_t to = from + 1 + (q % 10 == 0 ? rand() % 40000 : rand() % 500);
        struct gpu_metric_acc a[GPU_METRIC_COUNT] = {{0}};
        gpu_metrics_series_add(&s, &c, from, to, a);
        double area = 0, lo = INFINITY, hi = -INFINITY;
        int64_t covered = 0, touched = 0;
        for (int i = 0; i < N; i++) {
            int64_t a0 = start[i] > from ? start[i] : from, a1 = end[i] < to ? end[i] : to;
            if (a1 <= a0)
                continue;
            area += v[i] * (double)(a1 - a0);
            covered += a1 - a0;
            touched += end[i] - start[i];
            lo = v[i] < lo ? v[i] : lo;
            hi = v[i] > hi ? v[i] : hi;
        }
        const struct gpu_metric_acc *sm = &a[GPU_METRIC_SM_ACTIVE];
        ASSERT_EQ(sm->covered_ns, covered);
        ASSERT_EQ(sm->touched_ns, touched);
        ASSERT(sm->area == area);
        ASSERT(!covered || (sm->min == lo && sm->max == hi));
    }
    gpu_metrics_series_release(&s);
    sqlite3_close(db);
}

static const struct test_case tests[] = {
    {"u64_map_matches_a_plain_array", u64_map_matches_a_plain_array},
    {"index_map_finds_each_record_once", index_map_finds_each_record_once},
    {"gpu_peaks_of_an_h100", gpu_peaks_of_an_h100},
    {"gpu_peaks_unknown_are_zero", gpu_peaks_unknown_are_zero},
    {"gpu_peak_dram_reported_or_from_the_bus", gpu_peak_dram_reported_or_from_the_bus},
    {"overlap_counts_time_shared_with_any_other", overlap_counts_time_shared_with_any_other},
    {"overlap_matches_brute_force", overlap_matches_brute_force},
    {"series_weights_samples_by_their_overlap", series_weights_samples_by_their_overlap},
    {"series_matches_brute_force_across_blocks", series_matches_brute_force_across_blocks},
    {NULL, NULL},
};

int main(int argc, char **argv)
{
    return test_main(tests, argc, argv);
}
