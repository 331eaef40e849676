/* The choice of CUPTI PM-sampling metrics for a chip (src/launcher/gpu_metrics_pm.c), on this
 * machine's own CUPTI: its host API knows every supported chip's metrics without the GPU. For
 * each chip Lantern meets, the metrics of src/trace/gpu_metrics.def resolve to names the chip
 * accepts, the set takes one pass (PM sampling takes no more), and the core metrics the issue
 * asks for are in it. Skips (77) where there is no CUPTI 12.6+. */
#include "launcher/gpu_metrics_pm.h"
#include "tests/harness.h"

#include <errno.h>
#include <stdlib.h>

#define SKIP 77
#define ALL ((1u << GPU_METRIC_COUNT) - 1)
#define CORE                                                                                       \
    ((1u << GPU_METRIC_GR_ACTIVE) | (1u << GPU_METRIC_SM_ACTIVE) |                                 \
     (1u << GPU_METRIC_WARP_OCCUPANCY) | (1u << GPU_METRIC_TENSOR_ACTIVE) |                        \
     (1u << GPU_METRIC_DRAM_READ) | (1u << GPU_METRIC_DRAM_WRITE) | (1u << GPU_METRIC_PCIE_RX))

static struct pm_api api;

/* The number of passes of the chosen names, asked of CUPTI anew. */
static size_t passes_of(const char *chip, const struct pm_choice *c)
{
    struct pm_host_initialize init = {
        .struct_size = sizeof init, .profiler_type = PM_HOST_PM_SAMPLING, .chip = chip};
    ASSERT_EQ(api.host_initialize(&init), CUPTI_SUCCESS);
    struct pm_host_add_metrics add = {.struct_size = sizeof add,
                                      .host = init.host,
                                      .names = (const char **)c->name_ptrs,
                                      .count = c->count};
    ASSERT_EQ(api.host_add_metrics(&add), CUPTI_SUCCESS);
    struct pm_host_config_size cs = {.struct_size = sizeof cs, .host = init.host};
    ASSERT_EQ(api.host_config_size(&cs), CUPTI_SUCCESS);
    uint8_t *image = malloc(cs.size);
    struct pm_host_config cfg = {
        .struct_size = sizeof cfg, .host = init.host, .size = cs.size, .image = image};
    ASSERT_EQ(api.host_config(&cfg), CUPTI_SUCCESS);
    struct pm_host_passes np = {.struct_size = sizeof np, .size = cs.size, .image = image};
    ASSERT_EQ(api.host_passes(&np), CUPTI_SUCCESS);
    struct pm_host_deinitialize fin = {.struct_size = sizeof fin, .host = init.host};
    api.host_deinitialize(&fin);
    free(image);
    return np.passes;
}

static void check_chip(const char *chip, uint32_t must)
{
    struct pm_choice c;
    char why[256];
    ASSERT_EQ(pm_choose_metrics(&api, chip, NULL, ALL, &c, why, sizeof why), 0);
    fprintf(stderr, "%s: %zu hardware metrics for mask 0x%x (refused 0x%x, left out 0x%x) ", chip,
            c.count, c.mask, c.refused, c.dropped);
    ASSERT_EQ(c.mask | c.refused | c.dropped, ALL);
    ASSERT_EQ(c.mask & (c.refused | c.dropped), 0);
    ASSERT_EQ(c.mask & must, must);
    ASSERT_EQ(passes_of(chip, &c), 1);
    for (int m = 0; m < GPU_METRIC_COUNT; m++)
        ASSERT((c.mask & (1u << m)) ? c.sum[m].parts >= 1 : 1);
}

static void gh100_takes_every_metric_from_its_triage_counters_in_one_pass(void)
{
    struct pm_choice c;
    char why[256];
    check_chip("GH100", ALL);
    ASSERT_EQ(pm_choose_metrics(&api, "GH100", NULL, ALL, &c, why, sizeof why), 0);
    int m = GPU_METRIC_TENSOR_ACTIVE;
    ASSERT_STR_EQ(c.names[c.sum[m].part[0]],
                  "TPC.TriageCompute.sm__pipe_tensor_cycles_active_realtime.avg."
                  "pct_of_peak_sustained_elapsed");
    m = GPU_METRIC_DRAM_BW; /* read + write, the same names as dram_read's and dram_write's */
    ASSERT_EQ(c.sum[m].parts, 2);
    ASSERT_EQ(c.sum[m].part[0], c.sum[GPU_METRIC_DRAM_READ].part[0]);
    ASSERT_EQ(c.sum[m].part[1], c.sum[GPU_METRIC_DRAM_WRITE].part[0]);
}

static void other_chips_fall_back_to_plain_names_in_one_pass(void)
{
    check_chip("GB100", CORE);
    check_chip("GA100", CORE); /* without sm_issue: it does not fit with the occupancy */
    check_chip("AD102", (1u << GPU_METRIC_GR_ACTIVE) | (1u << GPU_METRIC_SM_ACTIVE) |
                            (1u << GPU_METRIC_WARP_OCCUPANCY));
}

static void a_mask_asks_only_for_its_metrics(void)
{
    struct pm_choice c;
    char why[256];
    uint32_t mask = (1u << GPU_METRIC_SM_ACTIVE) | (1u << GPU_METRIC_PCIE_TX);
    ASSERT_EQ(pm_choose_metrics(&api, "GH100", NULL, mask, &c, why, sizeof why), 0);
    ASSERT_EQ(c.mask, mask);
    ASSERT_EQ(c.count, 2);
}

static void an_unknown_chip_is_an_error_with_a_reason(void)
{
    struct pm_choice c;
    char why[256] = "";
    ASSERT_EQ(pm_choose_metrics(&api, "NOCHIP", NULL, ALL, &c, why, sizeof why), -EOPNOTSUPP);
    ASSERT(why[0]);
}

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif

int main(int argc, char **argv)
{
    char why[512];
#ifdef SANITIZED
    /* CUPTI opens libnvperf_host with RTLD_DEEPBIND, which the sanitizer runtime refuses (it
     * aborts the process); the unsanitized build runs this test. */
    printf("SKIP: CUPTI's host library cannot load under AddressSanitizer (RTLD_DEEPBIND)\n");
    return SKIP;
#endif
    if (pm_api_load(&api, 0, why, sizeof why) < 0) {
        printf("SKIP: %s\n", why);
        return SKIP;
    }
    static const struct test_case tests[] = {
        {"gh100_takes_every_metric_from_its_triage_counters_in_one_pass",
         gh100_takes_every_metric_from_its_triage_counters_in_one_pass},
        {"other_chips_fall_back_to_plain_names_in_one_pass",
         other_chips_fall_back_to_plain_names_in_one_pass},
        {"a_mask_asks_only_for_its_metrics", a_mask_asks_only_for_its_metrics},
        {"an_unknown_chip_is_an_error_with_a_reason", an_unknown_chip_is_an_error_with_a_reason},
        {NULL, NULL},
    };
    return test_main(tests, argc, argv);
}
