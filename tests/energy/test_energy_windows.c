/* Energy windows (lantern.h) over the fake NVML: scripted power gives known joules, windows
 * nest, overlap and add up, the pre-Volta method and fault injection behave, and a machine
 * without usable NVML still gets a monitor with one clear reason. */
#include "harness.h"
#include "lantern.h"

#include <math.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char script_path[] = "/tmp/lantern-fake-nvml-XXXXXX";

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Writes a fake NVML script whose time 0 is now; returns now. */
static uint64_t script(const char *body)
{
    uint64_t epoch = now_ns();
    FILE *f = fopen(script_path, "w");
    fprintf(f, "epoch_ns %llu\n%s", (unsigned long long)epoch, body);
    fclose(f);
    setenv("LANTERN_FAKE_NVML_SCRIPT", script_path, 1);
    setenv("LANTERN_NVML_LIBRARY", FAKE_NVML_PATH, 1);
    return epoch;
}

static double gpu_joules(lantern_measurement *r, int i, double *error)
{
    double j = -1;
    ASSERT_EQ(lantern_measurement_gpu_energy(r, i, &j, error), LANTERN_OK);
    return j;
}

/* The sampler sees a counter update within its polling period (1 ms, more when this machine
 * is busy and the sampling thread waits for a core), so each window edge is known to about
 * P * that period: the measurement's own error bound must cover the difference. (How tight
 * the bound is, test_energy_model checks on exact samples: here it depends on the load.) */
static int about_power_times_time(const lantern_measurement *r, int gpu, double watts)
{
    double joules, bound;
    if (lantern_measurement_gpu_energy(r, gpu, &joules, &bound) != LANTERN_OK)
        return 0;
    double expected = watts * lantern_measurement_time(r), miss = fabs(joules - expected);
    if (miss <= bound + 0.002)
        return 1;
    fprintf(stderr, "%.4f J measured, %.4f J expected, bound %.4f J: ", joules, expected, bound);
    return 0;
}

static lantern_monitor *open_monitor(const char *gpus, unsigned int options)
{
    lantern_monitor *m = NULL;
    ASSERT_EQ(lantern_monitor_open(gpus, "none", options, &m), LANTERN_OK);
    ASSERT(m != NULL);
    return m;
}

static void constant_power_gives_power_times_time(void)
{
    script("gpu GPU-aaaa1111 Fake-H100\npower 0 0 250000\n");
    lantern_monitor *m = open_monitor(NULL, 0);
    ASSERT_STR_EQ(lantern_monitor_disabled_reason(m), "");
    ASSERT_EQ(lantern_monitor_gpu_count(m), 1);
    ASSERT_EQ(lantern_monitor_gpu_index(m, 0), 0);
    lantern_measurement *r;
    ASSERT_EQ(lantern_window_begin(m, "steady"), LANTERN_OK);
    sleep_ms(450);
    ASSERT_EQ(lantern_window_end(m, "steady", &r), LANTERN_OK);
    double t = lantern_measurement_time(r), err;
    ASSERT(t >= 0.45 && t < 1.0);
    ASSERT(about_power_times_time(r, 0, 250));
    ASSERT(gpu_joules(r, 0, &err) > 0);
    ASSERT(lantern_measurement_gpu_updates(r, 0) >= 3);
    ASSERT_EQ(lantern_measurement_gpu_flags(r, 0) & LANTERN_ENERGY_TOO_SHORT, 0);
    ASSERT(lantern_measurement_gpu_flags(r, 0) & LANTERN_ENERGY_EXTRAPOLATED);
    lantern_measurement_free(r);
    lantern_monitor_close(m);
}

/* 100 W until 400 ms, then 400 W: a window across the step gets each part right. */
static void power_step_is_accounted_on_both_sides(void)
{
    uint64_t epoch = script("gpu GPU-aaaa1111 Fake-H100\npower 0 0 100000\npower 0 400 400000\n");
    lantern_monitor *m = open_monitor(NULL, 0);
    while (now_ns() < epoch + 150000000ull)
        sleep_ms(1);
    uint64_t before_begin = now_ns();
    ASSERT_EQ(lantern_window_begin(m, "step"), LANTERN_OK);
    uint64_t after_begin = now_ns();
    while (now_ns() < epoch + 750000000ull)
        sleep_ms(1);
    lantern_measurement *r;
    uint64_t before_end = now_ns();
    ASSERT_EQ(lantern_window_end(m, "step", &r), LANTERN_OK);
    uint64_t after_end = now_ns();
    /* joules for the earliest and latest possible edges */
    double most = 100 * (400e6 - (double)(before_begin - epoch)) / 1e9 +
                  400 * ((double)(after_end - epoch) - 400e6) / 1e9;
    double least = 100 * (400e6 - (double)(after_begin - epoch)) / 1e9 +
                   400 * ((double)(before_end - epoch) - 400e6) / 1e9;
    double bound, j = gpu_joules(r, 0, &bound);
    ASSERT(j >= least - bound - 0.002 && j <= most + bound + 0.002);
    lantern_measurement_free(r);
    lantern_monitor_close(m);
}

static void adjacent_windows_add_up_to_the_enclosing_one(void)
{
    script("gpu GPU-aaaa1111 Fake-H100\npower 0 0 300000\npower 0 250 120000\n"
           "power 0 420 500000\n");
    lantern_monitor *m = open_monitor(NULL, 0);
    lantern_measurement *outer, *parts[3];
    ASSERT_EQ(lantern_window_begin(m, "outer"), LANTERN_OK);
    for (int i = 0; i < 3; i++) {
        ASSERT_EQ(lantern_window_push(m), LANTERN_OK);
        sleep_ms(170);
        ASSERT_EQ(lantern_window_pop(m, &parts[i]), LANTERN_OK);
    }
    ASSERT_EQ(lantern_window_end(m, "outer", &outer), LANTERN_OK);
    double sum = 0, t = 0, bounds = 0, bound;
    for (int i = 0; i < 3; i++) {
        sum += gpu_joules(parts[i], 0, &bound);
        bounds += bound;
        t += lantern_measurement_time(parts[i]);
        lantern_measurement_free(parts[i]);
    }
    double whole = gpu_joules(outer, 0, &bound);
    /* each part was measured when it ended, its end edge extrapolated from the samples then;
     * the parts' bounds cover that, plus the microseconds between a pop and the next push */
    double gaps = lantern_measurement_time(outer) - t;
    ASSERT(gaps >= 0 && gaps < 0.05);
    ASSERT(fabs(whole - sum) <= bounds + bound + 500 * gaps);
    lantern_measurement_free(outer);
    lantern_monitor_close(m);
}

static void windows_nest_overlap_and_refuse_misuse(void)
{
    script("gpu GPU-aaaa1111 Fake-H100\npower 0 0 200000\n");
    lantern_monitor *m = open_monitor(NULL, 0);
    lantern_measurement *a, *b, *inner, *outer, *none;
    ASSERT_EQ(lantern_window_begin(m, "a"), LANTERN_OK);
    ASSERT_EQ(lantern_window_begin(m, "a"), LANTERN_ERR_WINDOW_OPEN);
    ASSERT_EQ(lantern_window_push(m), LANTERN_OK);
    sleep_ms(60);
    ASSERT_EQ(lantern_window_begin(m, "b"), LANTERN_OK);
    ASSERT_EQ(lantern_window_push(m), LANTERN_OK);
    sleep_ms(60);
    ASSERT_EQ(lantern_window_pop(m, &inner), LANTERN_OK);
    ASSERT_EQ(lantern_window_end(m, "a", &a), LANTERN_OK); /* overlaps b */
    sleep_ms(60);
    ASSERT_EQ(lantern_window_end(m, "b", &b), LANTERN_OK);
    ASSERT_EQ(lantern_window_pop(m, &outer), LANTERN_OK);
    ASSERT_EQ(lantern_window_pop(m, &none), LANTERN_ERR_NO_WINDOW);
    ASSERT(none == NULL);
    ASSERT_EQ(lantern_window_end(m, "a", &none), LANTERN_ERR_NO_WINDOW);
    ASSERT(lantern_measurement_time(inner) < lantern_measurement_time(a));
    ASSERT(lantern_measurement_time(outer) > lantern_measurement_time(b));
    lantern_measurement *all[] = {a, b, inner, outer};
    for (int i = 0; i < 4; i++) {
        ASSERT(about_power_times_time(all[i], 0, 200));
        lantern_measurement_free(all[i]);
    }
    ASSERT_EQ(lantern_window_begin(m, NULL), LANTERN_ERR_ARGUMENT);
    lantern_monitor_close(m);
}

static void short_windows_are_flagged(void)
{
    script("gpu GPU-aaaa1111 Fake-H100\npower 0 0 200000\n");
    lantern_monitor *m = open_monitor(NULL, 0);
    lantern_measurement *r;
    ASSERT_EQ(lantern_window_push(m), LANTERN_OK);
    sleep_ms(20);
    ASSERT_EQ(lantern_window_pop(m, &r), LANTERN_OK);
    ASSERT(lantern_measurement_gpu_updates(r, 0) <= 1);
    ASSERT(lantern_measurement_gpu_flags(r, 0) & LANTERN_ENERGY_TOO_SHORT);
    lantern_measurement_free(r);
    lantern_monitor_close(m);
}

static void power_only_method_integrates_the_sensor(void)
{
    /* the pre-Volta method, chosen explicitly on a GPU that has the counter, and forced on one
     * that has none */
    script("gpu GPU-aaaa1111 Fake-H100\ngpu GPU-bbbb2222 Fake-P100 no_energy\n"
           "power 0 0 150000\npower 1 0 90000\n");
    for (int forced = 0; forced < 2; forced++) {
        lantern_monitor *m = open_monitor(NULL, forced ? LANTERN_POWER_ONLY : 0);
        ASSERT_EQ(lantern_monitor_gpu_count(m), 2);
        lantern_measurement *r;
        ASSERT_EQ(lantern_window_push(m), LANTERN_OK);
        sleep_ms(250);
        ASSERT_EQ(lantern_window_pop(m, &r), LANTERN_OK);
        ASSERT(about_power_times_time(r, 0, 150));
        ASSERT(about_power_times_time(r, 1, 90));
        ASSERT_EQ(lantern_measurement_gpu_flags(r, 0) & LANTERN_ENERGY_POWER_ONLY,
                  forced ? LANTERN_ENERGY_POWER_ONLY : 0);
        ASSERT(lantern_measurement_gpu_flags(r, 1) & LANTERN_ENERGY_POWER_ONLY);
        lantern_measurement_free(r);
        lantern_monitor_close(m);
    }
}

static void gpus_are_chosen_by_cuda_index_or_uuid(void)
{
    script("gpu GPU-aaaa1111 Fake-A\ngpu GPU-bbbb2222 Fake-B\npower 0 0 100000\n"
           "power 1 0 200000\n");
    setenv("CUDA_VISIBLE_DEVICES", "GPU-bbbb,0", 1);
    lantern_monitor *m = open_monitor("1", 0); /* CUDA's 1 is NVML's 0 here */
    ASSERT_EQ(lantern_monitor_gpu_count(m), 1);
    ASSERT_EQ(lantern_monitor_gpu_index(m, 0), 1);
    lantern_measurement *r;
    ASSERT_EQ(lantern_window_push(m), LANTERN_OK);
    sleep_ms(150);
    ASSERT_EQ(lantern_window_pop(m, &r), LANTERN_OK);
    ASSERT(about_power_times_time(r, 0, 100));
    lantern_measurement_free(r);
    lantern_monitor_close(m);
    lantern_monitor *bad = NULL;
    ASSERT_EQ(lantern_monitor_open("GPU-cccc", "none", 0, &bad), LANTERN_ERR_GPU);
    ASSERT_STR_EQ(lantern_errdetail(), "GPU GPU-cccc does not exist (2 GPUs visible)");
    ASSERT_EQ(lantern_monitor_open("MIG-1234", "none", 0, &bad), LANTERN_ERR_GPU);
    ASSERT(strncmp(lantern_errdetail(), "MIG instance MIG-1234: ", 23) == 0);
    ASSERT(bad == NULL);
    unsetenv("CUDA_VISIBLE_DEVICES");
}

static void failed_counter_reads_are_survived(void)
{
    script("gpu GPU-aaaa1111 Fake-H100\npower 0 0 250000\n"
           "fail nvmlDeviceGetTotalEnergyConsumption 5\n"
           "fail nvmlDeviceGetTotalEnergyConsumption 40 15\n"
           "fail nvmlDeviceGetFieldValues 30\n");
    lantern_monitor *m = open_monitor(NULL, 0);
    lantern_measurement *r;
    ASSERT_EQ(lantern_window_push(m), LANTERN_OK);
    sleep_ms(300);
    ASSERT_EQ(lantern_window_pop(m, &r), LANTERN_OK);
    ASSERT(about_power_times_time(r, 0, 250));
    lantern_measurement_free(r);
    lantern_monitor_close(m);
}

static void unusable_nvml_leaves_one_reason_and_a_working_monitor(void)
{
    static const struct {
        const char *script;
        const char *reason;
    } cases[] = {
        {"init_error 4\n", "no permission to use NVML (init: Insufficient Permissions)"},
        {"init_error 9\n", "no NVIDIA driver loaded"},
        {"# no gpu lines\n", "no NVIDIA GPU"},
        {"gpu GPU-aaaa1111 Fake\nfail nvmlDeviceGetCount_v2 1 999\n",
         "NVML device count failed: Unknown Error"},
        {"gpu GPU-aaaa1111 Fake mig\npower 0 0 1000\n",
         "GPU 0 is in MIG mode: energy per MIG instance is not supported"},
    };
    for (int i = 0; i < 5; i++) {
        script(cases[i].script);
        lantern_monitor *m = open_monitor(NULL, 0);
        ASSERT_STR_EQ(lantern_monitor_disabled_reason(m), cases[i].reason);
        ASSERT_EQ(lantern_monitor_gpu_count(m), 0);
        lantern_measurement *r;
        ASSERT_EQ(lantern_window_begin(m, "still works"), LANTERN_OK);
        ASSERT_EQ(lantern_window_end(m, "still works", &r), LANTERN_OK);
        ASSERT_EQ(lantern_measurement_gpu_count(r), 0);
        ASSERT_EQ(lantern_measurement_gpu_energy(r, 0, NULL, NULL), LANTERN_ERR_ARGUMENT);
        lantern_measurement_free(r);
        lantern_monitor_close(m);
    }
    setenv("LANTERN_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    lantern_monitor *m = open_monitor(NULL, 0);
    ASSERT(strncmp(lantern_monitor_disabled_reason(m), "NVML not found (", 16) == 0);
    lantern_monitor_close(m);
    ASSERT_STR_EQ(lantern_errdetail(), "");
    lantern_monitor *bad = NULL;
    ASSERT_EQ(lantern_monitor_open("0", "none", 0, &bad), LANTERN_ERR_NO_NVML);
    ASSERT(strncmp(lantern_errdetail(), "NVML not available: NVML not found (", 36) == 0);
    ASSERT_STR_EQ(lantern_strerror(LANTERN_ERR_NO_NVML), "NVML not available");
}

/* A fake powercap tree: package 0 with a DRAM subzone, package 1 without one. */
static char powercap[] = "/tmp/lantern-powercap-XXXXXX";

static void write_file(const char *rel, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", powercap, rel);
    FILE *f = fopen(path, "w");
    ASSERT(f != NULL);
    fputs(text, f);
    fclose(f);
}

static void rapl_gives_package_and_dram_joules_across_a_wrap(void)
{
    ASSERT(mkdtemp(powercap) != NULL);
    char dir[256];
    const char *dirs[] = {"intel-rapl:0", "intel-rapl:0/intel-rapl:0:0", "intel-rapl:1"};
    for (int i = 0; i < 3; i++) {
        snprintf(dir, sizeof dir, "%s/%s", powercap, dirs[i]);
        ASSERT_EQ(mkdir(dir, 0755), 0);
    }
    write_file("intel-rapl:0/name", "package-0\n");
    write_file("intel-rapl:0/max_energy_range_uj", "262143328850\n");
    write_file("intel-rapl:0/energy_uj", "262140000000\n");
    write_file("intel-rapl:0/intel-rapl:0:0/name", "dram\n");
    write_file("intel-rapl:0/intel-rapl:0:0/max_energy_range_uj", "65712999613\n");
    write_file("intel-rapl:0/intel-rapl:0:0/energy_uj", "1000000\n");
    write_file("intel-rapl:1/name", "package-1\n");
    write_file("intel-rapl:1/max_energy_range_uj", "262143328850\n");
    write_file("intel-rapl:1/energy_uj", "5\n");
    setenv("LANTERN_POWERCAP_ROOT", powercap, 1);
    script("init_error 9\n");
    lantern_monitor *m = NULL;
    ASSERT_EQ(lantern_monitor_open(NULL, NULL, 0, &m), LANTERN_OK);
    ASSERT_EQ(lantern_monitor_cpu_count(m), 2);
    ASSERT_EQ(lantern_window_begin(m, "cpu"), LANTERN_OK);
    write_file("intel-rapl:0/energy_uj", "1000000\n"); /* wrapped: 3328850 + 1000000 µJ */
    write_file("intel-rapl:0/intel-rapl:0:0/energy_uj", "3500000\n");
    write_file("intel-rapl:1/energy_uj", "2000005\n");
    lantern_measurement *r;
    ASSERT_EQ(lantern_window_end(m, "cpu", &r), LANTERN_OK);
    double j = 0;
    ASSERT_EQ(lantern_measurement_cpu_index(r, 1), 1);
    ASSERT_EQ(lantern_measurement_cpu_energy(r, 0, &j), LANTERN_OK);
    ASSERT(fabs(j - 4.328850) < 1e-9);
    ASSERT_EQ(lantern_measurement_dram_energy(r, 0, &j), LANTERN_OK);
    ASSERT(fabs(j - 2.5) < 1e-9);
    ASSERT_EQ(lantern_measurement_cpu_energy(r, 1, &j), LANTERN_OK);
    ASSERT(fabs(j - 2.0) < 1e-9);
    ASSERT_EQ(lantern_measurement_dram_energy(r, 1, &j), LANTERN_ERR_UNAVAILABLE);
    lantern_measurement_free(r);
    lantern_monitor_close(m);
    ASSERT_EQ(lantern_monitor_open(NULL, "7", 0, &m), LANTERN_ERR_ARGUMENT);
    unsetenv("LANTERN_POWERCAP_ROOT");
}

static void version_and_errors_are_reported(void)
{
    ASSERT_EQ(lantern_libversion_number(), LANTERN_VERSION_NUMBER);
    ASSERT_STR_EQ(lantern_libversion(), "0.1.0");
    ASSERT_STR_EQ(lantern_strerror(LANTERN_ERR_NO_WINDOW), "no such window is open");
    ASSERT_STR_EQ(lantern_strerror(12345), "unknown error");
}

int main(int argc, char **argv)
{
    int fd = mkstemp(script_path);
    ASSERT(fd >= 0);
    close(fd);
    static const struct test_case tests[] = {
        {"constant_power_gives_power_times_time", constant_power_gives_power_times_time},
        {"power_step_is_accounted_on_both_sides", power_step_is_accounted_on_both_sides},
        {"adjacent_windows_add_up_to_the_enclosing_one",
         adjacent_windows_add_up_to_the_enclosing_one},
        {"windows_nest_overlap_and_refuse_misuse", windows_nest_overlap_and_refuse_misuse},
        {"short_windows_are_flagged", short_windows_are_flagged},
        {"power_only_method_integrates_the_sensor", power_only_method_integrates_the_sensor},
        {"gpus_are_chosen_by_cuda_index_or_uuid", gpus_are_chosen_by_cuda_index_or_uuid},
        {"failed_counter_reads_are_survived", failed_counter_reads_are_survived},
        {"unusable_nvml_leaves_one_reason_and_a_working_monitor",
         unusable_nvml_leaves_one_reason_and_a_working_monitor},
        {"rapl_gives_package_and_dram_joules_across_a_wrap",
         rapl_gives_package_and_dram_joules_across_a_wrap},
        {"version_and_errors_are_reported", version_and_errors_are_reported},
        {NULL, NULL},
    };
    int rc = test_main(tests, argc, argv);
    unlink(script_path);
    return rc;
}
