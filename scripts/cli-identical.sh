#!/usr/bin/env bash
# Compares what two builds' lantern says to the command lines a user types before any work:
# every subcommand's --help (at 80 columns and wrapped to 40), and a set of usage errors and
# option spellings (unknown options, missing values, bad values, --long prefixes, bundled short
# flags, --, options after operands): stdout, stderr and the exit status must be byte-identical.
# Usage: scripts/cli-identical.sh BASE_BUILD NEW_BUILD [CASES_FILE]
# CASES_FILE (default: the list below) holds one command line per line, shell words.
set -uo pipefail
base=$(realpath "$1") new=$(realpath "$2")
cases=${3:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
default_cases() {
    for c in profile start stop dump stats export merge import kernels energy analyze report upgrade diff; do
        echo "$c --help"
        echo "$c -h"
        echo "$c --hel"
        echo "$c --bogus"
        echo "$c -Z"
        echo "$c --help=x"
    done
    cat <<'CASES'
--help
help
--version
nosuch
profile
profile -o
profile --output
profile -t
profile -t bogus -- true
profile -t nvtx,bogus true
profile --nvml-rate 0 true
profile --nvml-rate 10001 true
profile --nvml-rate abc true
profile --capture-range=bad true
profile --capture-range=nvtx: true
profile --delay -1 true
profile --delay 1x true
profile --duration -1 true
profile --cuda-api=some true
profile --cuda-memory-usage=yes true
profile --python-functions ", " true
profile --wait=some true
profile --wait-timeout x true
profile --wait-timeout 1e7 true
profile --gpu-metrics=bogus true
profile --gpu-metrics=sm_active,nope true
profile --gpu-metrics-frequency 5 true
profile --gpu-metrics-frequency 1000 true
profile --gpu-metrics-devices 0 true
profile --gpu-metrics-source bad true
profile --gpu-metrics-source pm true
profile --sample=gpu true
profile --sampling-frequency 0 true
profile --sampling-frequency 10001 true
profile --sampling-frequency 100 -t nvtx true
profile --sample=none --sampling-frequency 100 true
profile --osrt-threshold 12a true
profile --osrt-threshold 1234567890123456 true
profile --osrt-threshold 100 -t nvtx true
profile --capture-range-end=bad true
profile --capture-range-end=repeat:0 true
profile --capture-range-end=repeat true
profile --capture-range-end=repeat --capture-range=nvtx:a --start-paused true
profile --ring 0.1 true
profile --ring-trigger nvtx:x true
profile --ring-trigger bad true
profile --ring 5 --start-paused true
profile --ring 5 --single-file true
profile --python-backtrace -t nvtx true
profile --python-backtrace --cuda-api=none -t cuda true
profile --stat=1 true
profile --sta true
profile --s true
profile --gpu-metrics-f 100 true
profile -ft
profile -fZ true
profile -Zf true
profile -o %z.db true
profile -o %q{LANTERN_NO_SUCH_VAR}.db true
profile -- 
stats
stats a.db b.db
stats --report bogus a.db
stats a.db --report bogus
stats --format bad a.db
stats -w -1 a.db
stats -w x a.db
stats -w5x a.db
stats -fo
stats -of x a.db
stats --rep bogus a.db
stats --f x a.db
stats -- -a.db
stats /nonexistent.db
stats /nonexistent.db -r cuda_gpu_trace --sort duration --filter-nvtx x -w 0 --format=json
export
export a.db
export a.db -f chrome
export a.db -f
export a.db --format bad
export --format chrome /nonexistent.db
export /nonexistent.db --format=perfetto -o - -f
merge
merge a.db
merge -o out.db
merge -o out.db /nonexistent.db
import
import dir
import -o x.db
import -o x.db a b
import -o x.db /nonexistent.raw
kernels
kernels --format bad a.db
kernels --csv --format json /nonexistent.db
kernels -c bogus /nonexistent.db
kernels -w
energy
energy --gpus
energy --power-only
analyze
analyze --format bad a.db
analyze -d -r x /nonexistent.db
analyze -w -2 a.db
report
report a b
report -o x.html /nonexistent.db
upgrade
upgrade /nonexistent.db -f -o x.db
diff
diff a.db
diff a.db b.db c.db
diff --threshold -1 a.db b.db
diff --threshold x a.db b.db
diff --alpha 1 a.db b.db
diff --alpha 0 a.db b.db
diff --format xml a.db b.db
diff --base a.db --new
diff --base a.db --new b.db c.db d.db
diff --base a.db --new b.db extra.db -- x.db
diff a.db b.db --base c.db
diff -w x a.db b.db
diff --fail /nonexistent.db /nonexistent2.db
diff --a a.db b.db
start a b
start --session x 123
start --timeout -1
start --timeout x
stop --timeout 1e7
dump --timeout
dump 1 2
CASES
}
run_all() { # BUILD OUTDIR
    local bin=$1/bin/lantern out=$2 i=0
    mkdir -p "$out"
    while IFS= read -r line; do
        i=$((i + 1))
        eval "set -- $line"
        for width in 80 40; do
            (cd "$work/cwd" && COLUMNS=$width LANTERN_AGENT=/nonexistent timeout 20 "$bin" "$@" \
                >"$out/$i.$width.out" 2>"$out/$i.$width.err" </dev/null; echo "rc $?" >"$out/$i.$width.rc")
        done
        echo "$line" >"$out/$i.cmd"
    done < <(if [ -n "$cases" ]; then cat "$cases"; else default_cases; fi)
}
mkdir -p "$work/cwd"
run_all "$base" "$work/base"
run_all "$new" "$work/new"
differ=0 total=0
for f in "$work/base"/*.cmd; do
    n=$(basename "$f" .cmd)
    total=$((total + 1))
    for width in 80 40; do
        for part in out err rc; do
            if ! cmp -s "$work/base/$n.$width.$part" "$work/new/$n.$width.$part"; then
                differ=$((differ + 1))
                echo "DIFFERS (COLUMNS=$width, $part): lantern $(cat "$f")"
                diff "$work/base/$n.$width.$part" "$work/new/$n.$width.$part" | head -10
            fi
        done
    done
done
echo "cli-identical: $total command lines x 2 widths, $differ outputs differ"
[ "$differ" -eq 0 ]
