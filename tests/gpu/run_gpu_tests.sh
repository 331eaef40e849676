#!/bin/sh
# Runs Lantern's GPU tests on a machine with an NVIDIA GPU, from the repository root:
#   tests/gpu/run_gpu_tests.sh [BUILD_DIR]      (default: build)
# The build folder may come from another machine (the GPU machine needs no compiler or
# sqlite3.h): the tests are run directly, then `ctest -L gpu` where ctest exists and the
# build folder's paths are valid here.
set -u
build=${1:-build}
build=$(cd "$build" && pwd) || exit 2
here=$(cd "$(dirname "$0")" && pwd)
status=0
LANTERN_BUILD=$build LANTERN_CUDA_WORKLOAD=$build/bin/cuda_workload \
    python3 "$here/test_cuda_gpu.py" || status=$?
# ctest only where the build folder's recorded paths (its own, Python's) exist here.
python=$(grep -rhoE '"/[^"]*python3[^"]*"' "$build/tests" 2>/dev/null | head -1 | tr -d '"')
if command -v ctest >/dev/null 2>&1 && [ -f "$build/CTestTestfile.cmake" ] &&
   grep -q "$build" "$build/CTestTestfile.cmake" && [ -x "$python" ]; then
    ctest --test-dir "$build" -L gpu --output-on-failure || status=$?
fi
exit $status
