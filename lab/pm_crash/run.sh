#!/bin/bash
# Runs pm_crash in each variant (lab/pm_crash/README.md) on a GPU machine, each under a timeout,
# and prints one verdict line per variant; full logs go to $OUT/pm_crash/ (or /tmp/pm_crash/).
# Usage: lab/pm_crash/run.sh [VARIANT...]   (default: all; the names are in the table below)
# With LANTERN=path/to/lantern set, it also profiles pm_crash's own GPU work with
# `lantern profile --gpu-metrics` at the end.
here=$(cd "$(dirname "$0")" && pwd)
bin=$here/pm_crash
logs=${OUT:-/tmp}/pm_crash
mkdir -p "$logs"
[ -x "$bin" ] || "$here/build.sh" || exit 1

# name | settings (PMC_* variables; the program's defaults are NVIDIA's pm_sampling sample's
# choices with Lantern's rates: one host object makes the config and evaluates, chip name and
# images alive throughout, counter data reset with cuptiPmSamplingCounterDataImageInitialize)
LANTERN_MIMIC="PMC_EVALHOST=separate PMC_CHURN=32 PMC_CONFIG=free PMC_RESET=memcpy PMC_CHIP=clobber"
variants=(
  "lantern|$LANTERN_MIMIC"
  "sample|"
  "lantern_chip_kept|$LANTERN_MIMIC PMC_CHIP=keep"
  "lantern_config_kept|$LANTERN_MIMIC PMC_CONFIG=keep"
  "lantern_one_host|$LANTERN_MIMIC PMC_EVALHOST=same"
  "lantern_reset_init|$LANTERN_MIMIC PMC_RESET=init"
  "lantern_no_churn|$LANTERN_MIMIC PMC_CHURN=0"
  "lantern_fixed|PMC_CHURN=32 PMC_RESET=memcpy"
  "sample_chip_clobbered|PMC_CHIP=clobber"
  "sample_config_clobbered|PMC_CONFIG=clobber"
  "sample_avail_clobbered|PMC_AVAIL=clobber"
  "sample_decode_only|PMC_EVAL=none"
  "sample_eval_first_only|PMC_EVAL=first"
  "sample_sm_active|PMC_METRICS=TPC.TriageCompute.sm__cycles_active.avg.pct_of_peak_sustained_elapsed"
  "sample_gr_active|PMC_METRICS=FE_B.TriageCompute.gr__cycles_active.avg.pct_of_peak_sustained_elapsed"
  "sample_nvidia_sizes|PMC_HWBUF_MB=512 PMC_MAXSAMPLES=10000 PMC_INTERVAL_NS=100000"
  "sample_main_thread|PMC_THREAD=0"
  "sample_big_stack|PMC_STACK_MB=64"
  "sample_load_before|PMC_LOAD_WHEN=before"
  "sample_no_load|PMC_LOAD=none"
  "sample_keep_latest|PMC_APPEND=latest"
  "sample_small_hwbuf|PMC_HWBUF_MB=8"
  "sample_1khz|PMC_INTERVAL_NS=1000000"
)

echo "== host: $(uname -r); driver $(cat /proc/driver/nvidia/version 2>/dev/null | head -1 | sed 's/.*Kernel Module *//;s/  .*//')"
echo "== libraries: $(ldconfig -p 2>/dev/null | grep -E 'libcupti.so.13|libnvperf_host' | sed 's/.*=> //' | tr '\n' ' ')"
echo "== LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-} ulimit -s=$(ulimit -s)"
nvidia-smi --query-gpu=index,name,driver_version,memory.used --format=csv,noheader 2>/dev/null | head -8

want=" $* "
t0=$(date +%s)
for v in "${variants[@]}"; do
  name=${v%%|*}
  settings=${v#*|}
  [ $# -gt 0 ] && [[ "$want" != *" $name "* ]] && continue
  log=$logs/$name.log
  if [ $(( $(date +%s) - t0 )) -gt ${PMC_BUDGET_S:-165} ]; then
    printf '%-26s skipped (the run is past %ss)\n' "$name" "${PMC_BUDGET_S:-165}"; continue
  fi
  start=$(date +%s.%N)
  env PMC_VARIANT="$name" $settings timeout -k 3 15 "$bin" >"$log" 2>&1
  rc=$?
  secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  result=$(grep -a -m1 '^RESULT' "$log" | cut -c8-)
  where=""
  if [[ "$result" == crash* ]]; then
    where=$(grep -a -m1 '^pc ' "$log" | sed 's/.*\///;s/\].*//')
    where="lib=$where; $(grep -a -m1 '^addr ' "$log" | sed 's/^addr *//' | cut -c1-120)"
  fi
  [ -z "$result" ] && result="no result (rc=$rc$([ $rc = 124 ] && echo ', timed out'))"
  printf '%-26s %5ss  %s %s\n' "$name" "$secs" "$result" "$where"
done

# the first crash's details in full, for the reader of this output
first=$(grep -l -a '^RESULT crash' "$logs"/*.log 2>/dev/null | head -1)
if [ -n "$first" ]; then
  echo "== first crash log: $first"
  sed -n '/===== FATAL/,/===== END/p' "$first" | head -40
  echo "-- its last calls:"
  grep -a -B8 '===== FATAL' "$first" | head -9
fi

if [ -n "${LANTERN:-}" ]; then
  echo "== lantern profile --gpu-metrics on pm_crash's GPU work (3 s)"
  PMC_LOADONLY=1 PMC_DURATION_MS=3000 timeout -k 5 40 "$LANTERN" profile -t gpu_metrics --gpu-metrics \
    -o "$logs/lantern.db" -- "$bin" >"$logs/lantern.log" 2>&1
  echo "lantern rc=$?"; tail -15 "$logs/lantern.log"
fi
