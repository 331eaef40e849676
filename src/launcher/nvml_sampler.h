/* The launcher's GPU sampler (`lantern profile -t nvml`, `lantern energy`): background threads
 * in the launcher, never in the profiled program, that read NVML and append TRACE_NVML_*
 * records (src/trace/format.h) to the launcher's raw file. */
#ifndef LANTERN_LAUNCHER_NVML_SAMPLER_H
#define LANTERN_LAUNCHER_NVML_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

/* Power sensors change every ~100-150 ms (measured on H200) and ~50 ms on H100 (NVIDIA): at
 * 100 Hz every change is seen within 10 ms. Power reads cost ~0.3 µs, so this is cheap. */
#define NVML_SAMPLER_DEFAULT_HZ 100.0

struct nvml_sampler;

/* Starts sampling the GPUs named by gpus (see nvml_select: NULL for all visible to CUDA) at
 * rate_hz (<= 0: the default) into f, launcher.lrt (samplers.h). The
 * energy counter is read back-to-back by one thread per GPU (a read costs 3-4 ms), power and
 * the other fields by one thread at rate_hz (clocks, utilization, memory, temperature and
 * throttle reasons every 100 ms). Returns 0, or a negative errno (-ENOMEM, nvml_open's or
 * nvml_select's, pthread_create's) with why[] set ("NVML not found (...)", "no NVIDIA GPU",
 * ...) after writing a TRACE_NVML_DISABLED record with the same reason. */
struct launcher_file;
int nvml_sampler_start(struct launcher_file *f, const char *gpus, double rate_hz,
                       struct nvml_sampler **out, char *why, size_t why_len);

/* Stops the threads, writes what is buffered and frees the sampler. The file stays open (the
 * launcher writes its end record after). NULL is allowed. */
void nvml_sampler_stop(struct nvml_sampler *s);

#endif
