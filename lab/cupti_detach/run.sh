#!/bin/sh
# CUPTI's own cost inside one process (docs/benchmark-history.md, "Fourth session"). The agent,
# patched (agent.patch) to let the program detach CUPTI (cuptiFinalize) and re-attach it,
# runs programs that alternate blocks with CUPTI in some state and blocks with it detached;
# a sampler then shows whose code the traced loop's extra CPU time runs in.
#   lab/cupti_detach/run.sh build DIR              here (CMake, a C compiler): DIR gets
#                                                    the patched agent and libsampler.so
#   lab/cupti_detach/run.sh measure DIR OUT [BUILD]  on the GPU machine, from the repository
#                                                    root; BUILD (default build) has lantern
#                                                    and cuda_launch (the C loop's pairs);
#                                                    ROUNDS=N repeats (default 2)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
case ${1:-} in
build)
    dir=$(mkdir -p "$2" && cd "$2" && pwd)
    rm -rf "$dir/src" && mkdir "$dir/src"
    git -C "$here/../.." archive HEAD | tar -x -C "$dir/src"
    patch -s -d "$dir/src" -p1 <"$here/agent.patch"
    cmake -S "$dir/src" -B "$dir/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build "$dir/build" -j2 --target lantern-agent >/dev/null
    cp "$dir/build/lib/liblantern-agent.so" "$dir/"
    rm -rf "$dir/src" "$dir/build"
    cc -O2 -Wall -Wextra -Werror -shared -fPIC -o "$dir/libsampler.so" "$here/sampler.c"
    ;;
measure)
    dir=$(cd "$2" && pwd) out=$3 build=${4:-build}
    mkdir -p "$out"
    export PYTHONUNBUFFERED=1
    agent=$dir/liblantern-agent.so
    lantern="$build/bin/lantern profile -f -t cuda,nvtx --capture-range=cudaProfilerApi -o /tmp/cupti_detach.db --"
    # name, program, mode (notool:MODE runs it without Lantern), then variables for the agent
    pair() {
        name=$1 program=$2 mode=$3
        shift 3
        if [ "${mode#notool:}" != "$mode" ]; then
            taskset -c 2-9 $program "${mode#notool:}" >"$out/$name.log" 2>&1
        else
            taskset -c 2-9 env LANTERN_AGENT="$agent" "$@" $lantern $program "$mode" >"$out/$name.log" 2>&1
        fi || echo "$name: exit $?"
        echo "$name $(grep -h 'paired_ratio\|_us=' "$out/$name.log" | tr '\n' ' ')"
    }
    py="python3 $here/pairs.py" cloop="$build/bin/cuda_launch 20000"
    for round in $(seq "${ROUNDS:-2}"); do
        pair "loop-control-$round" "$py" notool:control
        pair "loop-full-$round" "$py" full
        pair "loop-idle-$round" "$py" idle
        pair "loop-paused-$round" "$py" paused
        pair "loop-record-$round" "$py" record
        pair "loop-kernel-$round" "$py" full LANTERN_CUDA_KINDS=kernel
        pair "loop-api-$round" "$py" full LANTERN_CUDA_KINDS=api
        pair "loop-no-translation-$round" "$py" full LANTERN_EXP_NO_TRANSLATE=1
        pair "loop-cupti-clock-$round" "$py" full LANTERN_EXP_NO_TSCB=1
        pair "loop-no-flush-period-$round" "$py" full LANTERN_EXP_NO_FLUSH_PERIOD=1
        pair "loop-1mb-buffers-$round" "$py" full LANTERN_EXP_BUFFER_KB=1024
        pair "loop-default-thread-ids-$round" "$py" full LANTERN_EXP_THREAD_DEFAULT=1
        pair "loop-pinned-$round" "$py" full LANTERN_CUDA_KINDS=kernel LANTERN_EXP_PINNED=1
        pair "loop-32mb-devbuf-$round" "$py" full LANTERN_CUDA_KINDS=kernel LANTERN_EXP_DEVBUF=33554432
        pair "cloop-control-$round" "$cloop" notool:paired
        pair "cloop-full-$round" "$cloop" full
        pair "cloop-kernel-$round" "$cloop" full LANTERN_CUDA_KINDS=kernel
        pair "cloop-api-$round" "$cloop" full LANTERN_CUDA_KINDS=api
        pair "cloop-idle-$round" "$cloop" idle
    done
    for round in $(seq "${ROUNDS:-2}"); do
        SAMPLER_OUT=$out/sampled-baseline-$round.txt LD_PRELOAD=$dir/libsampler.so \
            taskset -c 2-9 $py long 300000 >"$out/sampled-baseline-$round.log" 2>&1
        taskset -c 2-9 "$build/bin/lantern" profile -f -t cuda,nvtx -o /tmp/cupti_detach.db -- \
            env SAMPLER_OUT="$out/sampled-lantern-$round.txt" LD_PRELOAD="$dir/libsampler.so" \
            $py long 300000 >"$out/sampled-lantern-$round.log" 2>&1
        echo "sampled $round: baseline $(grep -h per_iter "$out/sampled-baseline-$round.log")," \
            "lantern $(grep -h per_iter "$out/sampled-lantern-$round.log")"
    done
    ;;
*)
    sed -n '2,11p' "$0" >&2
    exit 2
    ;;
esac
