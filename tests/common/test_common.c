/* src/common/: the u64 map and the index map against plain arrays as the truth, and the GPU
 * peak table against hand-computed products (docs/trace-format.md, "Peak rates"). */
#include "common/gpu_peaks.h"
#include "common/index_map.h"
#include "common/u64_map.h"
#include "harness.h"

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
    ASSERT_EQ(gpu_peaks_flops(9, 0, 132, 0, &p), 0); /* clock unknown */
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

static const struct test_case tests[] = {
    {"u64_map_matches_a_plain_array", u64_map_matches_a_plain_array},
    {"index_map_finds_each_record_once", index_map_finds_each_record_once},
    {"gpu_peaks_of_an_h100", gpu_peaks_of_an_h100},
    {"gpu_peaks_unknown_are_zero", gpu_peaks_unknown_are_zero},
    {"gpu_peak_dram_reported_or_from_the_bus", gpu_peak_dram_reported_or_from_the_bus},
    {NULL, NULL},
};

int main(int argc, char **argv)
{
    return test_main(tests, argc, argv);
}
