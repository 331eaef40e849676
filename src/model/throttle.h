/* NVML's clock event reasons (gpu_samples.throttle_reasons) that mean the GPU ran slower than
 * it could: one definition for the readers that judge them (the energy rule of `lantern
 * analyze`, the comparability checks of `lantern diff`). */
#ifndef LANTERN_MODEL_THROTTLE_H
#define LANTERN_MODEL_THROTTLE_H

#include <stddef.h>

/* The slowdown bits (nvml.h: SwPowerCap 0x4, HwSlowdown 0x8, SwThermalSlowdown 0x20,
 * HwThermalSlowdown 0x40, HwPowerBrakeSlowdown 0x80); GpuIdle, application clocks, sync boost
 * and display clocks are not throttling. */
#define THROTTLE_MASK 0xECu

/* The slowdown bits of reasons named into out, comma-separated ("SW power cap, HW thermal");
 * empty when none. */
void throttle_text(unsigned reasons, char *out, size_t size);

#endif
