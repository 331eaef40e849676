/* Lantern's public C API (liblantern.so): energy windows over the GPU's energy counter and
 * power sensor (through NVML) and the CPU's RAPL counters. This is the only header a program
 * includes; everything is C-callable from ctypes (opaque handles, no structs by value).
 *
 * A monitor samples its GPUs on a background thread from lantern_monitor_open until
 * lantern_monitor_close. Windows are begun and ended by name (they may nest or overlap) or
 * pushed and popped (a stack); ending one returns a measurement: elapsed time, energy per GPU
 * with an error bound, and CPU package and DRAM energy where readable. Window edges cost
 * microseconds: no NVML call is made on them. Under `lantern profile` every window also shows
 * as an NVTX range in the domain "lantern.energy". */
#ifndef LANTERN_H
#define LANTERN_H

#ifdef __cplusplus
extern "C" {
#endif

/* ---- version ----------------------------------------------------------------------------- */

/* major * 1000000 + minor * 1000 + patch of this header; compare with lantern_libversion_number()
 * to detect a header/library mismatch. */
#define LANTERN_VERSION_NUMBER 1000
/* The library's version as a string ("0.1.0") and a number (as above). */
const char *lantern_libversion(void);
int lantern_libversion_number(void);

/* ---- errors ------------------------------------------------------------------------------ */

#define LANTERN_OK 0
#define LANTERN_ERR_ARGUMENT -1 /* a NULL handle or name, an index out of range */
#define LANTERN_ERR_NO_MEMORY -2
#define LANTERN_ERR_GPU -3         /* unknown GPU, MIG instance, or ambiguous UUID prefix */
#define LANTERN_ERR_NO_WINDOW -4   /* ending a window that was not begun; popping an empty stack */
#define LANTERN_ERR_WINDOW_OPEN -5 /* beginning a window whose name is already open */
#define LANTERN_ERR_UNAVAILABLE -6 /* that quantity cannot be measured here (see below) */
#define LANTERN_ERR_THREAD -7      /* the sampling thread could not be started */
#define LANTERN_ERR_NO_NVML -8     /* GPUs were named but NVML cannot be used (no driver, ...) */

/* A static English sentence for an error code; never NULL. */
const char *lantern_strerror(int code);

/* The detail of the last error lantern_monitor_open returned on this thread, one line:
 * "NVML not available: NVML not found (libnvidia-ml.so.1: ...)", "GPU 3 does not exist (2 GPUs
 * visible)", "MIG instance MIG-...: ...", "CPU packages '3': not all exist with RAPL (powercap)
 * here"; "" after a success.
 * Owned by the library, valid until the thread's next lantern_monitor_open. */
const char *lantern_errdetail(void);

/* ---- monitors ---------------------------------------------------------------------------- */

typedef struct lantern_monitor lantern_monitor;

/* Options for lantern_monitor_open (bits). */
#define LANTERN_POWER_ONLY                                                                         \
    0x1u                     /* integrate power only, ignore the energy counter: the method        \
                              * for GPUs older than Volta, selectable to compare with it           \
                              * (also with LANTERN_ENERGY_METHOD=power in the environment) */
#define LANTERN_NO_NVTX 0x2u /* do not emit NVTX ranges for windows */

/* Opens a monitor and starts sampling.
 *   gpus: NULL or "" for every GPU CUDA shows this process, "none" for none, else a
 *         comma-separated list of CUDA indices (after CUDA_VISIBLE_DEVICES) or UUIDs (full or
 *         unique prefix).
 *   cpus: NULL or "" for every CPU package with RAPL, "none" for none, else package indices.
 * A machine without usable NVML (no driver, no GPU, no permission) still gets a monitor: GPU
 * energy is then unavailable and lantern_monitor_disabled_reason says why.
 * Returns LANTERN_OK and *out (owned by the caller: lantern_monitor_close), or an error code
 * (LANTERN_ERR_GPU when the list names a GPU that does not exist, LANTERN_ERR_NO_NVML when it
 * names GPUs but NVML cannot be used), with lantern_errdetail() saying which and why. */
int lantern_monitor_open(const char *gpus, const char *cpus, unsigned int options,
                         lantern_monitor **out);

/* Stops sampling and frees the monitor and the windows still open. NULL is allowed. */
void lantern_monitor_close(lantern_monitor *m);

/* Why GPU energy is unavailable ("NVML not found (...)", "no NVIDIA GPU", ...), or "" when it
 * works. Owned by the monitor. */
const char *lantern_monitor_disabled_reason(const lantern_monitor *m);

/* The monitored GPUs: how many, and the CUDA index of the i-th (as given in `gpus`). */
int lantern_monitor_gpu_count(const lantern_monitor *m);
int lantern_monitor_gpu_index(const lantern_monitor *m, int i);

/* The monitored CPU packages: how many, and the package index of the i-th. */
int lantern_monitor_cpu_count(const lantern_monitor *m);
int lantern_monitor_cpu_index(const lantern_monitor *m, int i);

/* ---- windows ----------------------------------------------------------------------------- */

typedef struct lantern_measurement lantern_measurement;

/* Begins the window `name` now (the name is copied). Windows of different names may nest or
 * overlap. Thread-safe. Returns LANTERN_OK or LANTERN_ERR_WINDOW_OPEN. */
int lantern_window_begin(lantern_monitor *m, const char *name);

/* Ends the window `name` now and returns its measurement in *out (owned by the caller:
 * lantern_measurement_free). Returns LANTERN_OK or LANTERN_ERR_NO_WINDOW. */
int lantern_window_end(lantern_monitor *m, const char *name, lantern_measurement **out);

/* Unnamed windows on a stack: push begins one, pop ends the innermost (LANTERN_ERR_NO_WINDOW
 * when the stack is empty). */
int lantern_window_push(lantern_monitor *m);
int lantern_window_pop(lantern_monitor *m, lantern_measurement **out);

/* ---- measurements ------------------------------------------------------------------------ */

/* Seconds between the window's begin and end. */
double lantern_measurement_time(const lantern_measurement *r);

/* GPUs measured (those of the monitor, in the same order). */
int lantern_measurement_gpu_count(const lantern_measurement *r);
int lantern_measurement_gpu_index(const lantern_measurement *r, int i);

/* Flags of a GPU's measurement (bits). */
#define LANTERN_ENERGY_EXTRAPOLATED                                                                \
    0x1u                               /* an edge lies past the last counter update: that part     \
                                        * is power integrated, scaled by the counter's gain */
#define LANTERN_ENERGY_POWER_ONLY 0x2u /* power integrated only (no counter, or chosen) */
#define LANTERN_ENERGY_TOO_SHORT                                                                   \
    0x4u /* the window spans fewer than 2 counter updates: its                                     \
          * energy rests on the power sensor's shape; trust the                                    \
          * error bound, not the digits */

/* The i-th GPU's energy in joules and its error bound (joules; either pointer may be NULL).
 * Returns LANTERN_OK, LANTERN_ERR_UNAVAILABLE (GPU energy disabled, or no sample yet) or
 * LANTERN_ERR_ARGUMENT. */
int lantern_measurement_gpu_energy(const lantern_measurement *r, int i, double *joules,
                                   double *error_joules);
/* Counter updates seen strictly inside the window, and LANTERN_ENERGY_* flags. */
int lantern_measurement_gpu_updates(const lantern_measurement *r, int i);
unsigned int lantern_measurement_gpu_flags(const lantern_measurement *r, int i);

/* CPU packages measured; the i-th package's energy and its DRAM energy (RAPL), in joules.
 * Return LANTERN_OK or LANTERN_ERR_UNAVAILABLE (no RAPL, no permission to read it, no DRAM
 * domain) or LANTERN_ERR_ARGUMENT. */
int lantern_measurement_cpu_count(const lantern_measurement *r);
int lantern_measurement_cpu_index(const lantern_measurement *r, int i);
int lantern_measurement_cpu_energy(const lantern_measurement *r, int i, double *joules);
int lantern_measurement_dram_energy(const lantern_measurement *r, int i, double *joules);

void lantern_measurement_free(lantern_measurement *r);

#ifdef __cplusplus
}
#endif

#endif
