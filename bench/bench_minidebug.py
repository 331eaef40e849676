"""What a MiniDebugInfo section (.gnu_debugdata, docs/cpu.md "Symbols") costs the importer's
symbol lookup: tests/cpu's symbol_probe (one file's symbols read, one address named) on FILE
stripped with and without the section find-debuginfo would add (test_cpu_minidebug.py's
recipe), the fastest of ROUNDS runs of each; the difference is the section's decompression and
reading, liblzma's dlopen included (once per import).
Usage: python3 bench/bench_minidebug.py BUILD FILE [ROUNDS]"""
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "cpu"))
import test_cpu_minidebug as recipe  # noqa: E402  the test's find-debuginfo recipe


def fastest(probe, path, address, rounds):
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run([probe, str(path), f"{address:x}"], check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    build, program = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    probe = os.path.join(build, "bin", "symbol_probe")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        mini = recipe.mini_debuginfo(program, tmp)
        packed = recipe.xz(mini, tmp)
        plain = recipe.with_section(program, None, tmp, "plain")
        with_section = recipe.with_section(program, packed, tmp, "with_section")
        local, exported = recipe.local_and_exported(program)
        without = fastest(probe, plain, local[0], rounds)
        with_ = fastest(probe, with_section, local[0], rounds)
    print(f"{os.path.basename(program)}: {len(local)} local + {len(exported)} exported "
          f"functions; section {len(packed)} B xz, {len(mini)} B decompressed; lookup "
          f"{without * 1e3:.2f} ms without, {with_ * 1e3:.2f} ms with: "
          f"+{(with_ - without) * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
