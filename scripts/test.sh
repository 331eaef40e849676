#!/usr/bin/env bash
# Builds Lantern normally into build/ and with AddressSanitizer+UBSan into build-asan/ (both
# with -Werror: -DLANTERN_WERROR=ON) and runs the whole test suite (ctest) on both; builds the
# Release configuration users build (build-release/); builds the Python wheel and tests it
# installed in a fresh venv (scripts/wheel.sh); fuzzes the importer for 60 s (scripts/fuzz.sh;
# LANTERN_FUZZ_SECONDS changes it). Exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
lantern_install_deps || exit 1
lantern_install_test_deps
jobs=$(nproc)
status=0

build() { # build DIR [cmake options...]
    local dir=$1
    shift
    echo "=== building $dir"
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLANTERN_WERROR=ON "$@" >"$dir.cmake.log" 2>&1 &&
        cmake --build "$dir" -j"$jobs" >"$dir.build.log" 2>&1 ||
        { tail -40 "$dir.cmake.log" "$dir.build.log" 2>/dev/null; echo "lantern: build of $dir failed"; return 1; }
}

run_ctest() { # DIR [ctest options...]
    local dir=$1
    shift
    (cd "$dir" && ctest --output-on-failure -j"$jobs" "$@")
}

mkdir -p build build-asan build-release
if build build; then
    echo "=== ctest build/"
    run_ctest build || status=1
else
    status=1
fi

# In the sanitized build, programs that load a sanitized library into an unsanitized host
# (python loading liblantern.so or the agent) need the sanitizer runtimes preloaded; Python
# itself "leaks" at exit by design, so leak checking is off for those tests only. Every
# other test runs with the full ASan+UBSan+LeakSanitizer checks.
if build build-asan -DLANTERN_SANITIZE=ON; then
    preload="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
    echo "=== ctest build-asan/ (C and launcher tests, leak checks on)"
    run_ctest build-asan -LE python || status=1
    echo "=== ctest build-asan/ (tests hosted by python, sanitizer runtimes preloaded)"
    LD_PRELOAD="$preload" ASAN_OPTIONS=detect_leaks=0 run_ctest build-asan -L python || status=1
else
    status=1
fi

# The Python wheel: built, checked against manylinux, installed in a fresh venv and tested there
# (scripts/wheel.sh, build-wheel/).
echo "=== wheel (build-wheel/)"
./scripts/wheel.sh || status=1

# The build users make (cmake's Release): configured and built, with -Werror here so that a
# warning only the optimizer sees (gcc's -Wformat-truncation at -O2) cannot come back (a later
# -DCMAKE_BUILD_TYPE overrides build()'s RelWithDebInfo). Users build without -Werror.
build build-release -DCMAKE_BUILD_TYPE=Release || status=1

# The importer fuzzed for a bounded time on seeds the real agent writes now (docs/testing.md).
./scripts/fuzz.sh "${LANTERN_FUZZ_SECONDS:-60}" build || status=1

if [ $status -eq 0 ]; then echo "lantern: all tests passed (build/, build-asan/, the wheel, build-release/, fuzzing)"; else echo "lantern: TESTS FAILED"; fi
exit $status
