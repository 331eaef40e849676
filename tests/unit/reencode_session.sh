#!/bin/sh
# A real session (the launcher with the fake NVML, and the agent on the NVTX test program):
# every record of every raw file re-encodes to its bytes through the generated codec, and
# the launcher's and the sampler's record types are all there. Usage: reencode_session.sh BUILD
set -eu
build=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
now=$(python3 -c 'import time; print(time.clock_gettime_ns(time.CLOCK_MONOTONIC))')
printf 'epoch_ns %s\ngpu GPU-aaaa1111 Fake-H100\npower 0 0 250000\npower 0 300 100000\n' "$now" \
    >"$dir/nvml.script"
LANTERN_FAKE_NVML_SCRIPT="$dir/nvml.script" LANTERN_NVML_LIBRARY="$build/lib/liblantern_fake_nvml.so" \
    "$build/bin/lantern" profile -t nvtx,nvml --keep-raw -o "$dir/s.db" -- \
    "$build/bin/nvtx_workload" attributes >/dev/null
"$build/bin/trace_reencode" "$dir"/s.db.raw/*.lrt >"$dir/out.txt"
cat "$dir/out.txt"
# launcher.lrt: process, end, the processes it reaped, and the sampler's gpu, power, state,
# footprint records
grep -q "launcher.lrt: .* 0 differ, 0 of unknown types; types 1 2 13 80 81.* 83 85$" "$dir/out.txt"
# the agent's file: process, end, thread, string, names, clock, info, the thread event streams
# and every NVTX record (from the streams)
grep -q "[0-9]-[0-9]*.lrt: .* 0 differ, 0 of unknown types; types 1 2 3 4 5 7 9 11 12 20 21 22 23 24 25 26 27 28 29$" \
    "$dir/out.txt"
