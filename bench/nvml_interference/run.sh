#!/bin/sh
# Runs the interference measurements on a GPU machine (docs/benchmarks.md, "Power sampling"):
#   bench/nvml_interference/run.sh BUILD_DIR OUT_DIR [ROUNDS]
# probe: how the energy counter and the driver's power samples behave; then driver_victim's
# malloc, context and launch workloads against each NVML call pattern, in alternating blocks.
set -u
b=$1 out=$2 rounds=${3:-4}
mkdir -p "$out"
"$b/bin/nvml_pattern" probe 6 >"$out/probe.txt" 2>&1
grep -E "changes=|getsamples" "$out/probe.txt"
awk '/^change/ {print $3}' "$out/probe.txt" | head -3
"$b/bin/driver_victim" "$b/bin/nvml_pattern" malloc 400 "$rounds" \
    energy_b2b,energy_10hz,energy_5hz,power_100hz,state_10hz,samples_10hz,sampler \
    >"$out/malloc.txt" 2>&1
grep -A1 '^summary' "$out/malloc.txt"
"$b/bin/driver_victim" "$b/bin/nvml_pattern" ctx 1000 3 energy_10hz,sampler,energy_b2b \
    >"$out/ctx.txt" 2>&1
grep -A1 '^summary' "$out/ctx.txt"
"$b/bin/driver_victim" "$b/bin/nvml_pattern" launch 300 "$rounds" energy_b2b,sampler \
    >"$out/launch.txt" 2>&1
grep -A1 '^summary' "$out/launch.txt"
