#!/bin/sh
# Runs Lantern's GPU tests on a machine with an NVIDIA GPU, from the repository root:
#   tests/gpu/run_gpu_tests.sh [BUILD_DIR]      (default: build)
# The build folder may come from another machine (the GPU machine needs no compiler or
# sqlite3.h). Where ctest exists and the build folder's recorded paths (its own, Python's)
# are valid here, this is `ctest -L gpu`; otherwise the CUDA tracing test runs directly.
# Exit status: 0 passed, 77 skipped (no GPU), else failed.
set -u
build=$(cd "${1:-build}" && pwd) || exit 2
here=$(cd "$(dirname "$0")" && pwd)
python=$(grep -rhoE '"/[^"]*python3[^"]*"' "$build/tests" 2>/dev/null | head -1 | tr -d '"')
if command -v ctest >/dev/null 2>&1 && grep -qs "$build" "$build/CTestTestfile.cmake" &&
   [ -x "$python" ]; then
    exec ctest --test-dir "$build" -L gpu --output-on-failure
fi
LANTERN_BUILD=$build LANTERN_CUDA_WORKLOAD=$build/bin/cuda_workload exec python3 "$here/test_cuda_gpu.py"
