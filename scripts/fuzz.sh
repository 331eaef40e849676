#!/usr/bin/env bash
# Fuzzes the raw-trace reader and the importer (tests/fuzz/fuzz_import.c) with clang's
# libFuzzer for SECONDS (default 60), on a seed corpus of real traces that the real agent
# writes here and now (lantern profile --keep-raw of the test programs in BUILD, default
# build/), plus tests/fuzz/regressions/ (inputs that once failed: they must pass first); then
# the importer's ELF reading (tests/fuzz/fuzz_symbols.c) for a quarter of SECONDS on
# cpu_static without its DWARF, without sections, and stripped with MiniDebugInfo.
# Failures are saved as build-fuzz/crash-* (leak-*, timeout-*, oom-*); the script then fails.
#   scripts/fuzz.sh [SECONDS] [BUILD]      e.g. scripts/fuzz.sh 3600 for a longer local run
# CI (scripts/test.sh) runs it for 60 s. docs/testing.md reports runs and findings.
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
build=${2:-build}
fuzz=build-fuzz
jobs=$(nproc)

echo "=== building $fuzz (clang, libFuzzer, ASan+UBSan)"
cmake -S . -B "$fuzz" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
    -DCMAKE_CXX_COMPILER=clang++ -DLANTERN_FUZZ=ON >"$fuzz.cmake.log" 2>&1 &&
    cmake --build "$fuzz" -j"$jobs" --target fuzz_import fuzz_symbols >"$fuzz.build.log" 2>&1 ||
    { tail -40 "$fuzz.cmake.log" "$fuzz.build.log"; echo "lantern: build of $fuzz failed"; exit 1; }

# The seeds: every raw file (agent and launcher) of a few real sessions.
seeds=$fuzz/seeds
rm -rf "$seeds" "$fuzz/sessions"
mkdir -p "$seeds" "$fuzz/sessions"
session() { # NAME COMMAND...
    local name=$1
    shift
    "$build/bin/lantern" profile -t nvtx --keep-raw -o "$fuzz/sessions/$name.db" -- "$@" \
        >/dev/null 2>&1 # its exit status is the program's
    [ -f "$fuzz/sessions/$name.db.raw/launcher.lrt" ] || { echo "lantern: seed session $name failed"; exit 1; }
    for f in "$fuzz/sessions/$name.db.raw"/*.lrt; do cp "$f" "$seeds/$name-$(basename "$f")"; done
}
session demo "$build/bin/nvtx_demo" 1
session no_message "$build/bin/fault_workload" no_message
session pushes "$build/bin/fault_workload" pushes 20 3
session big_name "$build/bin/fault_workload" big_name 5000
for scenario in basic attributes cross_thread fork; do
    session "$scenario" "$build/bin/nvtx_workload" "$scenario"
done
# CPU samples, stacks and mappings (records 120-124), from a short sampled run
"$build/bin/lantern" profile -t nvtx,cpu --keep-raw -o "$fuzz/sessions/cpu.db" -- \
    "$build/bin/cpu_hot" 0.1 >/dev/null 2>&1
for f in "$fuzz/sessions/cpu.db.raw"/*.lrt; do cp "$f" "$seeds/cpu-$(basename "$f")"; done
# OS runtime calls (records 140-142, the first two-byte types; OSRT_CALL events), every call kept
"$build/bin/lantern" profile -t nvtx,osrt --osrt-threshold 0 --keep-raw -o "$fuzz/sessions/osrt.db" \
    -- "$build/bin/osrt_workload" errors >/dev/null 2>&1
for f in "$fuzz/sessions/osrt.db.raw"/*.lrt; do cp "$f" "$seeds/osrt-$(basename "$f")"; done
# NVTX payload schemas, enumerations and extended payloads (records 30-34), as NCCL emits them
session nccl_payloads "$build/bin/nccl_nvtx_workload"
session nccl_payloads_fork "$build/bin/nccl_nvtx_workload" fork
# GPU hardware metrics have no agent to write them here: the test session's files, small
mkdir -p "$fuzz/sessions/gpu_metrics"
"$build/bin/gpu_metrics_session" "$fuzz/sessions/gpu_metrics" 100 ||
    { echo "lantern: seed session gpu_metrics failed"; exit 1; }
for f in "$fuzz/sessions/gpu_metrics"/*.lrt; do cp "$f" "$seeds/gpu_metrics-$(basename "$f")"; done
cp tests/fuzz/regressions/* "$seeds/"
# The ELF reader's seeds: a program with its .symtab (its DWARF stripped), its section headers
# gone (e_shnum 0: no symbol table at all, which found a qsort of NULL at once), and stripped
# with MiniDebugInfo by test_cpu_minidebug.py's recipe (find-debuginfo's)
elf_seeds=$fuzz/elf_seeds
rm -rf "$elf_seeds" "$fuzz/elf_work" && mkdir -p "$elf_seeds" "$fuzz/elf_work"
strip --strip-debug -o "$elf_seeds/symtab" "$build/bin/cpu_static" &&
    python3 -c "import sys; d = bytearray(open(sys.argv[1], 'rb').read()); d[0x3C:0x40] = bytes(4)
open(sys.argv[2], 'wb').write(d)" "$elf_seeds/symtab" "$elf_seeds/no_sections" &&
    python3 -c "import sys, pathlib, shutil
sys.path.insert(0, 'tests/cpu')
import test_cpu_minidebug as recipe
program, work = sys.argv[1], pathlib.Path(sys.argv[2])
packed = recipe.xz(recipe.mini_debuginfo(program, work), work)
shutil.copy(recipe.with_section(program, packed, work, 'minidebug'), sys.argv[3])" \
        "$build/bin/cpu_static" "$fuzz/elf_work" "$elf_seeds/minidebug" ||
    { echo "lantern: ELF seeds failed"; exit 1; }

# fuzz TARGET SECONDS CORPUS SEEDS MAX_LEN: runs one target, fails the script on what it finds
fuzz() {
    local target=$1 time=$2 corpus=$3 seed_dir=$4 max_len=$5
    echo "=== fuzzing $target for ${time}s on $(ls "$seed_dir" | wc -l) seed files"
    mkdir -p "$fuzz/$corpus"
    rm -f "$fuzz"/crash-* "$fuzz"/leak-* "$fuzz"/timeout-* "$fuzz"/oom-*
    (cd "$fuzz" && ./bin/"$target" -max_total_time="$time" -timeout=10 -rss_limit_mb=2048 \
        -max_len="$max_len" -print_final_stats=1 "$corpus" "${seed_dir#$fuzz/}") >"$fuzz/$target.log" 2>&1
    local status=$?
    grep -E "^#[0-9]+[[:space:]]+(INITED|DONE)|runtime error|ERROR|SUMMARY|stat::number_of_executed_units" \
        "$fuzz/$target.log"
    found=$(cd "$fuzz" && ls | grep -E '^(crash|leak|timeout|oom)-')
    if [ -n "$found" ] || [ "$status" -ne 0 ]; then
        echo "lantern: the fuzzer found a failure (exit $status): ${found:-see $fuzz/$target.log}" \
            "(replay: $fuzz/bin/$target $fuzz/${found%%$'\n'*})"
        exit 1
    fi
}
fuzz fuzz_import "$seconds" corpus "$seeds" 65536
fuzz fuzz_symbols $(((seconds + 3) / 4)) corpus_elf "$elf_seeds" 65536
echo "lantern: fuzzing found nothing in ${seconds}s + $(((seconds + 3) / 4))s"
