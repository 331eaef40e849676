#!/bin/sh
# Builds lab/pm_crash/pm_crash on a machine with the CUDA toolkit's headers (no GPU needed:
# libcupti and libcuda are opened at run time). C++ only to include CUPTI's real
# cupti_profiler_host.h; libstdc++ linked statically so the binary runs wherever it is carried.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
g++ -std=gnu++17 -O1 -g -fno-omit-frame-pointer -rdynamic -Wall -Wextra -Wno-missing-field-initializers \
    -I"$cuda/include" -o "$here/pm_crash" "$here/pm_crash.cpp" \
    -static-libstdc++ -static-libgcc -ldl -lpthread
echo "built $here/pm_crash"
