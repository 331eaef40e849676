# Sourced by quickstart.sh and test.sh: installs what building and testing Lantern needs,
# and only what is missing (so a prepared machine is left alone): cmake, a C compiler,
# SQLite's headers and static library, python3's venv, clang with libFuzzer (scripts/fuzz.sh),
# pytest, the nvtx Python package and perfetto + protobuf (the tests decode the Perfetto export
# with them) (scripts/wheel.sh installs the wheel tools into a venv of its own); for the tests
# only, py-spy and Chromium (the HTML report is loaded in a headless browser). The CUDA toolkit (NVTX
# headers) is expected to be installed already.

lantern_apt_install() {
    local missing=("$@")
    [ ${#missing[@]} -eq 0 ] && return 0
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    echo "lantern: installing ${missing[*]} with apt-get"
    $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
}

# clang that links a libFuzzer target (Debian: clang, and libclang-rt-dev for the runtime)
lantern_has_libfuzzer() {
    command -v clang >/dev/null || return 1
    local dir
    dir=$(mktemp -d) || return 1
    echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' >"$dir/f.c"
    clang -fsanitize=fuzzer "$dir/f.c" -o "$dir/f" >/dev/null 2>&1
    local rc=$?
    rm -rf "$dir"
    return $rc
}

lantern_install_deps() {
    local apt=()
    command -v cmake >/dev/null || apt+=(cmake)
    command -v cc >/dev/null && command -v make >/dev/null || apt+=(gcc make)
    # libsqlite3-dev: sqlite3.h, and libsqlite3.a for the wheel (docs/packaging.md)
    [ -f /usr/include/sqlite3.h ] && [ -n "$(find /usr/lib /usr/lib64 -name libsqlite3.a 2>/dev/null)" ] ||
        apt+=(libsqlite3-dev)
    command -v python3 >/dev/null || apt+=(python3 python3-pip)
    command -v python3 >/dev/null && ! python3 -m venv --help >/dev/null 2>&1 && apt+=(python3-venv)
    lantern_has_libfuzzer || apt+=(clang libclang-rt-dev)
    lantern_apt_install "${apt[@]}"
    local pip=()
    python3 -c "import pytest" 2>/dev/null || pip+=(pytest)
    python3 -c "import nvtx" 2>/dev/null || pip+=(nvtx)
    # the Perfetto export's tests decode it with the perfetto package's protobuf definitions
    python3 -c "import perfetto.protos.perfetto.trace.perfetto_trace_pb2" 2>/dev/null ||
        pip+=(perfetto protobuf)
    if [ ${#pip[@]} -gt 0 ]; then
        echo "lantern: installing ${pip[*]} with pip"
        python3 -m pip install -q "${pip[@]}" || python3 -m pip install -q --break-system-packages "${pip[@]}"
    fi
}

# Chromium for the HTML report's browser test (tests/analyze): Debian's package, only where
# apt has one; without it that test skips, saying so.
lantern_install_test_deps() {
    # py-spy: the CPU samples' top functions are compared with its (tests/cpu)
    command -v py-spy >/dev/null || python3 -m pip install -q py-spy >/dev/null 2>&1 ||
        python3 -m pip install -q --break-system-packages py-spy >/dev/null 2>&1 ||
        echo "lantern: py-spy could not be installed: the py-spy comparison will skip"
    command -v chromium >/dev/null || command -v chromium-browser >/dev/null && return 0
    command -v apt-get >/dev/null || { echo "lantern: no apt-get: the browser test will skip"; return 0; }
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq || return 0
    if apt-cache policy chromium 2>/dev/null | grep -q 'Candidate: [0-9]'; then
        echo "lantern: installing chromium with apt-get (for the HTML report test)"
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null ||
            echo "lantern: chromium could not be installed: the browser test will skip"
    else
        echo "lantern: apt has no chromium package: the browser test will skip"
    fi
    return 0
}
