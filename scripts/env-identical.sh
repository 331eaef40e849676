#!/usr/bin/env bash
# Compares the environment two builds' `lantern profile` hands the profiled program, option set
# by option set: the names, values and order of every variable the launcher sets (the session
# folder's path and the capture window's CLOCK_MONOTONIC bounds masked, as they differ by run).
# Usage: scripts/env-identical.sh BASE_BUILD NEW_BUILD
set -uo pipefail
base=$(realpath "$1") new=$(realpath "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
option_sets=(
    ""
    "-t nvtx"
    "-t nvtx,osrt --osrt-threshold 5000"
    "-t cuda,nvtx --capture-range=nvtx:step --delay 2 --duration 3 --cuda-api=all --cuda-memory-usage=true"
    "-t cuda --capture-range=cudaProfilerApi --cuda-api=none --delay 0.5"
    "-t cuda --python-backtrace --duration 1"
    "--sample=cpu --sampling-frequency 250"
    "--python-functions mypkg.*,json.dumps -t nvtx"
    "--ring 5 --ring-trigger nvtx:boom -t nvtx"
    "--start-paused --single-file -t nvtx"
    "--wait=primary --wait-timeout 3 --keep-raw -t nvtx"
)
differ=0
for i in "${!option_sets[@]}"; do
    for side in base new; do
        bin=${!side}/bin/lantern
        mkdir -p "$work/$side/$i" && cd "$work/$side/$i" || exit 2
        # shellcheck disable=SC2086
        env -i PATH=/usr/bin:/bin HOME="$HOME" "$bin" profile -f -o run.db ${option_sets[$i]} -- \
            sh -c 'env -0 > env.txt' >/dev/null 2>"stderr.txt"
        echo "rc $?" >>stderr.txt
        tr '\0' '\n' <env.txt | grep -E '^(LANTERN|NVTX|CUDA_INJ|LD_PRELOAD|PYTHONPATH)' |
            sed -E "s#$work/$side/$i#DIR#g; s#^(LANTERN_CAPTURE_(FROM|UNTIL)_NS)=[0-9]+#\1=NS#; s#${!side}#BUILD#g" >vars.txt
    done
    if ! cmp -s "$work/base/$i/vars.txt" "$work/new/$i/vars.txt"; then
        differ=$((differ + 1))
        echo "DIFFERS: lantern profile ${option_sets[$i]}"
        diff "$work/base/$i/vars.txt" "$work/new/$i/vars.txt"
    fi
done
echo "env-identical: ${#option_sets[@]} option sets, $differ environments differ"
[ "$differ" -eq 0 ]
