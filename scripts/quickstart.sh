#!/usr/bin/env bash
# Lantern's quick start: installs what is missing, builds into build/, and profiles the
# bundled NVTX example (examples/nvtx_demo) with `lantern profile --stats`; on a machine with
# an NVIDIA GPU, also the CUDA example (examples/cuda_normalize) with its kernel summary.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
lantern_install_deps

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
echo "lantern: built build/bin/lantern"

# Same command as in the README; the report database lands in build/quickstart.db.
./build/bin/lantern profile --force -o build/quickstart.db --stats -- ./build/bin/nvtx_demo 5
if [ -e /dev/nvidiactl ] && [ -x build/examples/normalize ]; then
    echo
    ./build/bin/lantern profile --force -o build/quickstart-cuda.db -- \
        ./build/examples/normalize --pinned --streams 4
    ./build/bin/lantern stats build/quickstart-cuda.db --report cuda_gpu_kern_sum
fi
echo
echo "Next: ./build/bin/lantern export build/quickstart.db --format perfetto --force   (open build/quickstart.perfetto-trace in https://ui.perfetto.dev)"
