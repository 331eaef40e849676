#!/bin/sh
# Runs Lantern's GPU tests and GPU benchmarks on a machine with an NVIDIA GPU, from the
# repository root, with a build folder configured elsewhere (the GPU machine needs neither a
# compiler nor sqlite3.h):
#   scripts/gpu-check.sh BUILD_DIR OUT_DIR [tests|bench|all] [bench_cuda.py options...]
# Logs and JSON results go to OUT_DIR. Exit status: that of the GPU tests (0 passed).
set -u
build=$(cd "$1" && pwd) || exit 2
out=$2
what=${3:-all}
shift 3 2>/dev/null || shift $#
mkdir -p "$out"

# ctest files hold the absolute paths of the checkout and of the python3 the build was
# configured with: recreate them where this machine lacks them (python3 as a wrapper, not a
# link: a linked venv interpreter would not find its venv's packages).
checkout=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
[ -e "$checkout" ] || { mkdir -p "$(dirname "$checkout")" && ln -s "$PWD" "$checkout"; }
python=$(sed -n 's/^_Python3_EXECUTABLE:INTERNAL=//p' "$build/CMakeCache.txt")
if [ -n "$python" ] && { [ -L "$python" ] || [ ! -e "$python" ]; }; then
    rm -f "$python" && mkdir -p "$(dirname "$python")" &&
        printf '#!/bin/sh\nexec %s "$@"\n' "$(command -v python3)" >"$python" && chmod +x "$python"
fi

# Python packages the GPU machine lacks travel as wheels in .whl/ (docs/benchmarks.md).
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/lantern-site .whl/*.whl &&
        export PYTHONPATH=/tmp/lantern-site${PYTHONPATH:+:$PYTHONPATH}
fi
nvidia-smi -L | tee "$out/gpu.txt"

rc=0
if [ "$what" != bench ]; then
    ctest --test-dir "$build" -L gpu --output-on-failure --timeout 300 >"$out/gpu-tests.log" 2>&1
    rc=$?
    tail -n 25 "$out/gpu-tests.log"
fi
if [ "$what" != tests ]; then
    export PYTHONUNBUFFERED=1
    # Every run on the same CPUs where there are enough (docs/benchmarks.md: the training
    # step's traced runs spread x1.06-x1.35 unpinned, within 0.5 % pinned).
    pin=""
    [ "$(nproc)" -ge 10 ] && pin="--cpus 2-9"
    # shellcheck disable=SC2086 # BENCH_WORKLOADS is a list of workload names, pin options
    python3 bench/bench_cuda.py --build "$build" --rounds 3 --no-nsys $pin --json "$out/bench_cuda.json" \
        --workloads ${BENCH_WORKLOADS:-loop transformer_gpu} "$@" >"$out/bench_cuda.log" 2>&1
    grep -E "median|nsys" "$out/bench_cuda.log"
fi
exit $rc
