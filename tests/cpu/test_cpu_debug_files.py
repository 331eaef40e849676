"""Separate debug files (docs/cpu.md "Symbols"): cpu_static.c stripped (`strip --strip-all`,
its symbols kept by `objcopy --only-keep-debug`, linked by `objcopy --add-gnu-debuglink`) under
`lantern profile`; cpu_sample_sum names its static function only when the importer finds the
debug file: by build-id under a LANTERN_DEBUG_DIRS root, or by the link's name beside it, in
.debug/ or under ROOT/<its folder>/. A debug file of another build (cpu_static_other, its
function renamed other_spin) is refused. Needs $LANTERN_BUILD, $CPU_STATIC, $CPU_STATIC_OTHER,
binutils."""
import json
import os
import re
import shutil
import subprocess

import pytest

import cpu_tests  # tests/cpu/ is on the path
from cpu_tests import perf_events_allowed

BUILD = os.environ.get("LANTERN_BUILD", "")
LANTERN = os.path.join(BUILD, "bin", "lantern")
CPU_STATIC = os.environ.get("CPU_STATIC", os.path.join(BUILD, "bin", "cpu_static"))
CPU_STATIC_OTHER = os.environ.get("CPU_STATIC_OTHER",
                                  os.path.join(BUILD, "bin", "cpu_static_other"))


pytestmark = [
    pytest.mark.skipif(not perf_events_allowed(),
                       reason="kernel.perf_event_paranoid > 2: no unprivileged sampling"),
    pytest.mark.skipif(not all(shutil.which(t) for t in ("objcopy", "strip", "readelf")),
                       reason="binutils (objcopy, strip, readelf) not installed"),
]


def tool(*args):
    subprocess.run(args, check=True, capture_output=True, text=True)


def build_id(path):
    """The build-id as readelf, not Lantern, reads it."""
    notes = subprocess.run(["readelf", "-n", path], check=True, capture_output=True,
                           text=True).stdout
    return re.search(r"Build ID: ([0-9a-f]+)", notes).group(1)


def stripped(tmp_path, program):
    """program stripped into tmp/bin/cpu_static, its debug file (cpu_static.debug, linked by
    name and CRC) left in tmp/staging. Returns (stripped path, debug file path)."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "staging").mkdir()
    debug = tmp_path / "staging" / "cpu_static.debug"
    target = tmp_path / "bin" / "cpu_static"
    tool("objcopy", "--only-keep-debug", program, debug)
    shutil.copy(program, target)
    tool("strip", "--strip-all", target)
    tool("objcopy", f"--add-gnu-debuglink={debug}", target)
    assert build_id(target) == build_id(program)
    return target, debug


def place(debug, where):
    where.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(debug, where)


def hot_functions(tmp_path, program, root):
    """cpu_sample_sum's functions; root is the second of LANTERN_DEBUG_DIRS's folders (the
    first does not exist)."""
    return cpu_tests.hot_functions(LANTERN, tmp_path, program, f"{root}-absent::{root}")


def placements(tmp_path, program):
    """Where each way of finding the debug file looks (LANTERN_DEBUG_DIRS = tmp/root)."""
    hexid = build_id(program)
    folder = str(tmp_path / "bin").lstrip("/")
    return {
        "build-id": tmp_path / "root" / ".build-id" / hexid[:2] / f"{hexid[2:]}.debug",
        "beside": tmp_path / "bin" / "cpu_static.debug",
        "debug-folder": tmp_path / "bin" / ".debug" / "cpu_static.debug",
        "root-folder": tmp_path / "root" / folder / "cpu_static.debug",
    }


@pytest.mark.parametrize("how", ["build-id", "beside", "debug-folder", "root-folder"])
def test_static_function_named_from_the_debug_file(tmp_path, how):
    target, debug = stripped(tmp_path, CPU_STATIC)
    place(debug, placements(tmp_path, target)[how])
    functions = hot_functions(tmp_path, target, tmp_path / "root")
    assert functions[0] == "static_spin", functions[:3]


def test_without_the_debug_file_the_static_function_is_not_named(tmp_path):
    target, _ = stripped(tmp_path, CPU_STATIC)
    functions = hot_functions(tmp_path, target, tmp_path / "root")
    assert "static_spin" not in functions
    assert functions[0].startswith("cpu_static+0x"), functions[:3]


@pytest.mark.parametrize("how", ["build-id", "beside"])
def test_a_debug_file_of_another_build_is_refused(tmp_path, how):
    """cpu_static_other's debug file (other build-id, CRC and names) where cpu_static's
    belongs: nothing is named from it."""
    target, _ = stripped(tmp_path, CPU_STATIC)
    other = tmp_path / "other.debug"
    tool("objcopy", "--only-keep-debug", CPU_STATIC_OTHER, other)
    assert build_id(CPU_STATIC_OTHER) != build_id(target)
    place(other, placements(tmp_path, target)[how])
    functions = hot_functions(tmp_path, target, tmp_path / "root")
    assert "other_spin" not in functions and "static_spin" not in functions, functions[:3]
    assert functions[0].startswith("cpu_static+0x"), functions[:3]


def test_a_matching_build_id_without_the_links_crc_is_refused_by_name(tmp_path):
    """A debug file found by the link's name must carry the link's CRC32: the right debug file
    altered after linking (one byte appended: same build-id, other CRC) is refused."""
    target, debug = stripped(tmp_path, CPU_STATIC)
    with open(debug, "ab") as f:
        f.write(b"\0")
    place(debug, placements(tmp_path, target)["beside"])
    functions = hot_functions(tmp_path, target, tmp_path / "root")
    assert "static_spin" not in functions, functions[:3]


def libc_debug_file():
    """The distribution's debug file of the libc python3 runs on (libc6-dbg), or None."""
    maps = subprocess.run(["python3", "-c", "print(open('/proc/self/maps').read())"],
                          check=True, capture_output=True, text=True).stdout
    libc = next((l.split()[-1] for l in maps.splitlines() if "/libc.so" in l), None)
    if not libc:
        return None, None
    hexid = build_id(libc)
    debug = f"/usr/lib/debug/.build-id/{hexid[:2]}/{hexid[2:]}.debug"
    return libc, debug if os.path.exists(debug) else None


def test_a_distribution_librarys_local_function_is_named_from_usr_lib_debug(tmp_path):
    """A Python loop copying 64 MiB buffers spends its time in libc's memcpy variant, a local
    symbol of the stripped libc.so.6: named from the distribution's debug file under the
    default root, as readelf reads it there (and not in libc's .dynsym)."""
    libc, debug = libc_debug_file()
    if not debug:
        pytest.skip("no /usr/lib/debug/.build-id file for this libc (install libc6-dbg)")
    (tmp_path / "copy.py").write_text(
        "import time\nb = bytearray(64 << 20)\nend = time.process_time() + 1\n"
        "while time.process_time() < end:\n    bytes(b)\n")
    env = {**os.environ, "LANTERN_CPU_PYTHON": "0", "LANTERN_DEBUG_DIRS": ""}
    done = subprocess.run([LANTERN, "profile", "-t", "cpu", "-o", "x.db", "python3", "copy.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    out = subprocess.run([LANTERN, "stats", "x.db", "-r", "cpu_sample_sum", "--format", "json"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    top = json.loads(out.stdout)["rows"][0]
    assert top["module"] == os.path.basename(libc), top
    local = subprocess.run(["readelf", "-sW", debug], capture_output=True, text=True).stdout
    exported = subprocess.run(["readelf", "-sW", "--dyn-syms", libc], capture_output=True,
                              text=True).stdout
    assert re.search(rf"FUNC\s+LOCAL\s+\S+\s+\S+\s+{re.escape(top['function'])}$", local,
                     re.M), top
    assert not re.search(rf"\s{re.escape(top['function'])}(@\S*)?$", exported, re.M), top
