"""MiniDebugInfo (docs/cpu.md "Symbols"): a file given a .gnu_debugdata section the way Fedora's
find-debuginfo does (gdb's manual, "MiniDebugInfo": the functions missing from .dynsym kept in a
debug file, xz-compressed, added to the stripped file). cpu_static's static function is named
from it under `lantern profile`; the agent library's every function is named at its address
(the union of .dynsym and the section's .symtab) by the importer's lookup (symbol_probe); a
damaged, foreign or oversized section is refused and the file keeps .dynsym, as it does where
liblzma is missing. Needs $LANTERN_BUILD, $CPU_STATIC, $SYMBOL_PROBE, $NO_LIBLZMA,
$AGENT_LIBRARY, binutils, xz and liblzma."""
import ctypes
import lzma
import os
import re
import shutil
import struct
import subprocess

import pytest

import cpu_tests  # tests/cpu/ is on the path
from cpu_tests import perf_events_allowed

BUILD = os.environ.get("LANTERN_BUILD", "")
LANTERN = os.path.join(BUILD, "bin", "lantern")
CPU_STATIC = os.environ.get("CPU_STATIC", os.path.join(BUILD, "bin", "cpu_static"))
SYMBOL_PROBE = os.environ.get("SYMBOL_PROBE", os.path.join(BUILD, "bin", "symbol_probe"))
NO_LIBLZMA = os.environ.get("NO_LIBLZMA", os.path.join(BUILD, "lib", "libno_liblzma.so"))
AGENT_LIBRARY = os.environ.get("AGENT_LIBRARY",
                               os.path.join(BUILD, "lib", "liblantern-agent.so"))


def liblzma_present():
    try:
        ctypes.CDLL("liblzma.so.5")
        return True
    except OSError:
        return False


pytestmark = [
    pytest.mark.skipif(not all(shutil.which(t) for t in ("objcopy", "strip", "nm", "xz")),
                       reason="binutils (objcopy, strip, nm) or xz not installed"),
    pytest.mark.skipif(not liblzma_present(), reason="liblzma.so.5 not installed"),
]
needs_sampling = pytest.mark.skipif(
    not perf_events_allowed(), reason="kernel.perf_event_paranoid > 2: no unprivileged sampling")


def tool(*args):
    return subprocess.run([str(a) for a in args], check=True, capture_output=True,
                          text=True).stdout


def mini_debuginfo(program, tmp_path):
    """find-debuginfo's mini debug file of program, uncompressed: its function symbols that
    .dynsym lacks, nothing else of its debug information."""
    dynsyms = set(tool("nm", "-D", "--format=posix", "--defined-only", program).split("\n"))
    dynsyms = {line.split()[0] for line in dynsyms if line.strip()}
    funcs = {line.split("|")[0].strip()
             for line in tool("nm", "--format=sysv", "--defined-only", program).splitlines()
             if "|" in line and "FUNC" in line.split("|")[3]}
    keep = tmp_path / "keep_symbols"
    keep.write_text("".join(f"{name}\n" for name in sorted(funcs - dynsyms)))
    debug, mini = tmp_path / "full.debug", tmp_path / "mini.debug"
    tool("objcopy", "--only-keep-debug", program, debug)
    tool("objcopy", "-S", "--remove-section", ".gdb_index", "--remove-section", ".comment",
         f"--keep-symbols={keep}", debug, mini)
    return mini.read_bytes()


def xz(data, tmp_path):
    """data compressed by the xz tool, as find-debuginfo does."""
    raw = tmp_path / "section"
    raw.write_bytes(data)
    tool("xz", "-f", raw)
    return (tmp_path / "section.xz").read_bytes()


def with_section(program, section, tmp_path, name):
    """program stripped (--strip-all) into tmp/name, given section as .gnu_debugdata (None:
    none)."""
    target = tmp_path / name
    shutil.copy(program, target)
    tool("strip", "--strip-all", target)
    if section is not None:
        contents = tmp_path / f"{name}.gnu_debugdata"
        contents.write_bytes(section)
        tool("objcopy", f"--add-section=.gnu_debugdata={contents}", target)
    return target


def function_symbols(program):
    """{address: names} of program's defined function symbols, as readelf reads them."""
    out = {}
    for line in tool("readelf", "-sW", program).splitlines():
        f = line.split()
        if len(f) >= 8 and f[3] in ("FUNC", "IFUNC") and f[6] != "UND" and int(f[1], 16):
            out.setdefault(int(f[1], 16), set()).add(f[7].split("@")[0])
    return out


def probe(path, addresses, env=None):
    """The importer's name at each address, None where it has none."""
    out = subprocess.run([SYMBOL_PROBE, path] + [f"{a:x}" for a in addresses], check=True,
                         capture_output=True, text=True, timeout=60, env=env).stdout.splitlines()
    return [None if name == "-" else name for name in out]


def local_and_exported(program):
    """Addresses of program's local functions (not in .dynsym) and of its exported ones (in
    .dynsym: global or weak)."""
    exported = {int(line.split()[1], 16)
                for line in tool("readelf", "-W", "--dyn-syms", program).splitlines()
                if re.search(r"\b(I?FUNC)\b", line) and " UND " not in line}
    local = set(function_symbols(program)) - exported
    return sorted(local), sorted(exported)


def test_every_function_of_a_library_is_named_from_dynsym_and_its_minidebuginfo(tmp_path):
    """The agent library (~850 local functions, ~70 exported) stripped with MiniDebugInfo: each
    function's address gets one of the names readelf gives it in the unstripped file, the
    locals' from the section and the exported from .dynsym."""
    truth = function_symbols(AGENT_LIBRARY)
    local, exported = local_and_exported(AGENT_LIBRARY)
    assert len(local) > 100 and len(exported) > 10, (len(local), len(exported))
    target = with_section(AGENT_LIBRARY, xz(mini_debuginfo(AGENT_LIBRARY, tmp_path), tmp_path),
                          tmp_path, "liblantern-agent.so")
    addresses = local + exported
    names = probe(target, addresses)
    wrong = [(hex(a), n, truth[a]) for a, n in zip(addresses, names) if n not in truth[a]]
    assert not wrong, wrong[:5]


def test_without_minidebuginfo_only_the_exported_functions_are_named(tmp_path):
    local, exported = local_and_exported(AGENT_LIBRARY)
    target = with_section(AGENT_LIBRARY, None, tmp_path, "liblantern-agent.so")
    truth = function_symbols(AGENT_LIBRARY)
    assert all(n in truth[a] for a, n in zip(exported, probe(target, exported)))
    named = [n for a, n in zip(local, probe(target, local)) if n in truth[a]]
    assert not named, named[:5]


def test_without_liblzma_the_file_keeps_dynsym(tmp_path):
    """The same file, liblzma refused to the importer (no_liblzma preloaded after whatever is
    preloaded already, e.g. the sanitizers' runtimes): the exported functions still named, the
    locals not, nothing failed."""
    local, exported = local_and_exported(AGENT_LIBRARY)
    truth = function_symbols(AGENT_LIBRARY)
    target = with_section(AGENT_LIBRARY, xz(mini_debuginfo(AGENT_LIBRARY, tmp_path), tmp_path),
                          tmp_path, "liblantern-agent.so")
    preload = ":".join(p for p in (os.environ.get("LD_PRELOAD"), NO_LIBLZMA) if p)
    without = {**os.environ, "LD_PRELOAD": preload}
    assert all(n in truth[a] for a, n in zip(local, probe(target, local)))  # with liblzma
    assert not [n for a, n in zip(local, probe(target, local, without)) if n in truth[a]]
    assert all(n in truth[a] for a, n in zip(exported, probe(target, exported, without)))


def test_a_file_without_function_symbols_names_nothing(tmp_path):
    """cpu_static stripped, no section: its .dynsym has no function of its own."""
    target = with_section(CPU_STATIC, None, tmp_path, "cpu_static")
    local, exported = local_and_exported(CPU_STATIC)
    assert probe(target, local + exported) == [None] * len(local + exported)


def elf_machine_patched(image, machine):
    return image[:18] + struct.pack("<H", machine) + image[20:]


def section_header_patched(path, name, **fields):
    """The section header of the named section in the ELF64 file at path rewritten with
    fields (sh_offset, sh_size)."""
    data = bytearray(path.read_bytes())
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shnum, shstrndx = struct.unpack_from("<HH", data, 0x3C)
    names_offset, = struct.unpack_from("<Q", data, shoff + shstrndx * 64 + 24)
    for i in range(shnum):
        at = shoff + i * 64
        name_at = names_offset + struct.unpack_from("<I", data, at)[0]
        if data[name_at:name_at + len(name) + 1] == name.encode() + b"\0":
            for field, value in fields.items():
                struct.pack_into("<Q", data, at + {"sh_offset": 24, "sh_size": 32}[field],
                                 value)
            path.write_bytes(bytes(data))
            return
    raise AssertionError(f"no section {name}")


def damaged_section(damage, mini, tmp_path):
    """Contents of .gnu_debugdata that must be refused, by name (None: mini intact)."""
    made = {
        "truncated": lambda: xz(mini, tmp_path)[:len(xz(mini, tmp_path)) // 2],
        "garbage": lambda: bytes(range(256)) * 16,
        "not ELF": lambda: lzma.compress(b"not an ELF file\n" * 1000),
        "ELF32": lambda: lzma.compress(mini[:4] + b"\x01" + mini[5:]),
        "other machine": lambda: lzma.compress(elf_machine_patched(mini, 183)),  # EM_AARCH64
        # e_shoff, e_shnum and e_shstrndx zero: no sections
        "no .symtab": lambda: lzma.compress(mini[:0x28] + bytes(8) + mini[0x30:0x3C] + bytes(4)
                                            + mini[0x40:]),
        "over 64 MiB": lambda: lzma.compress(mini + bytes(65 << 20), preset=0),
    }
    return made[damage]() if damage in made else xz(mini, tmp_path)


@pytest.mark.parametrize("damage", ["truncated", "garbage", "not ELF", "ELF32", "other machine",
                                    "no .symtab", "over 64 MiB", "bigger than the file",
                                    "past the file's end"])
def test_a_damaged_section_is_refused_and_dynsym_kept(tmp_path, damage):
    mini = mini_debuginfo(AGENT_LIBRARY, tmp_path)
    target = with_section(AGENT_LIBRARY, damaged_section(damage, mini, tmp_path), tmp_path,
                          "liblantern-agent.so")
    size = target.stat().st_size
    if damage == "bigger than the file":
        section_header_patched(target, ".gnu_debugdata", sh_size=size + 4096)
    elif damage == "past the file's end":
        section_header_patched(target, ".gnu_debugdata", sh_offset=size - 16)
    local, exported = local_and_exported(AGENT_LIBRARY)
    truth = function_symbols(AGENT_LIBRARY)
    assert not [n for a, n in zip(local, probe(target, local)) if n in truth[a]]
    assert all(n in truth[a] for a, n in zip(exported, probe(target, exported)))


def hot_functions(tmp_path, program):
    """cpu_sample_sum's functions (no debug roots: only the file itself can name them)."""
    return cpu_tests.hot_functions(LANTERN, tmp_path, program, str(tmp_path / "absent"))


@needs_sampling
def test_a_static_function_is_named_from_minidebuginfo(tmp_path):
    target = with_section(CPU_STATIC, xz(mini_debuginfo(CPU_STATIC, tmp_path), tmp_path),
                          tmp_path, "cpu_static")
    functions = hot_functions(tmp_path, target)
    assert functions[0] == "static_spin", functions[:3]


@needs_sampling
@pytest.mark.parametrize("damage", [None, "truncated", "garbage"])
def test_without_a_readable_section_the_static_function_is_not_named(tmp_path, damage):
    mini = mini_debuginfo(CPU_STATIC, tmp_path)
    section = damaged_section(damage, mini, tmp_path) if damage else None
    target = with_section(CPU_STATIC, section, tmp_path, "cpu_static")
    functions = hot_functions(tmp_path, target)
    assert "static_spin" not in functions, functions[:3]
    assert functions[0].startswith("cpu_static+0x"), functions[:3]
