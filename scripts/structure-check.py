#!/usr/bin/env python3
"""Checks the structure rules of docs/architecture.md on the source tree and a build of it:
  1. floors: every #include between folders of src/ goes down the floors (FLOORS below);
  2. circles: no call circle between source files, by symbols in the built objects (file A
     calls a function or uses data defined in B, and B, directly or through others, in A);
  3. length: no function longer than 100 lines, from its name's line to its closing brace.
Usage: scripts/structure-check.py BUILD_DIR [--list] (--list: print the longest functions and
every arrow between folders). Exits 1 on a broken rule, naming each break."""
import collections
import os
import re
import subprocess
import sys

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
MAX_LINES = 100

# The floors, lowest first: a folder may include its own floor's headers only from itself, and
# any folder of a lower floor. A folder of src/ missing here is an error (say where it lives).
FLOORS = [
    ["trace", "nvml", "output"],
    ["common", "energy"],
    ["agent", "launcher", "api", "db"],
    ["model"],
    ["stats", "report", "analyze", "export", "diff"],
    ["html"],
    ["cli"],
]
# The floors' order as it stands in a tree not yet restructured: report/html is its own room.
SUBFOLDERS = {"report/html": "html"}
FLOOR = {name: i for i, names in enumerate(FLOORS) for name in names}


def folder_of(path):
    """The room of a path under src/: 'report/html' for src/report/html/x.c, else its folder."""
    rel = os.path.relpath(path, SRC)
    parts = rel.split(os.sep)
    two = "/".join(parts[:2])
    if two in SUBFOLDERS:
        return SUBFOLDERS[two]
    return parts[0]


def sources():
    for root, _, files in os.walk(SRC):
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                yield os.path.join(root, f)


def check_floors(breaks, arrows):
    include = re.compile(r'^#include "([a-z_]+)/([a-z_/]+\.(?:h|def))"')
    for path in sources():
        here = folder_of(path)
        if here not in FLOOR:
            breaks.append(f"floors: src/{os.path.relpath(path, SRC)}: folder '{here}' has no floor")
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                m = include.match(line)
                if not m:
                    continue
                target = folder_of(os.path.join(SRC, m.group(1), m.group(2)))
                if target == here:
                    continue
                arrows[(here, target)] += 1
                if target not in FLOOR or FLOOR[target] >= FLOOR[here]:
                    breaks.append(f"floors: src/{os.path.relpath(path, SRC)}:{n} ({here}, floor "
                                  f"{FLOOR[here]}) includes {m.group(1)}/{m.group(2)} ({target}, "
                                  f"floor {FLOOR.get(target, '?')})")


def objects(build):
    """(source path, object path) of every object built from src/."""
    for root, _, files in os.walk(build):
        for f in files:
            if not f.endswith(".c.o"):
                continue
            obj = os.path.join(root, f)
            m = re.match(r"src/(.+?)/CMakeFiles/[^/]+\.dir/(.+)\.o$", os.path.relpath(obj, build))
            if m:
                src = os.path.join(SRC, m.group(1), m.group(2))
                if os.path.exists(src):
                    yield os.path.normpath(src), obj


def symbols(obj):
    out = subprocess.run(["nm", "-P", obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            used.add(name)
        elif kind in "TDBRVWGS":
            defined.add(name)
    return defined, used


def libc_symbols():
    libc = subprocess.run(["gcc", "-print-file-name=libc.so.6"], capture_output=True,
                          text=True).stdout.strip()
    out = subprocess.run(["nm", "-D", "-P", "--defined-only", libc], capture_output=True,
                         text=True).stdout
    return {line.split()[0].split("@")[0] for line in out.splitlines() if line.strip()}


def check_circles(build, breaks):
    defined_by, uses = collections.defaultdict(set), collections.defaultdict(set)
    for src, obj in objects(build):
        d, u = symbols(obj)
        for s in d:
            defined_by[s].add(src)
        uses[src] |= u
    if not uses:
        breaks.append(f"circles: no objects built from src/ under {build}")
        return
    libc = libc_symbols()  # -t osrt's wrappers define read, write, ...: calls of libc, not of them
    edges = {a: {b for s in u - libc for b in defined_by.get(s, ()) if b != a}
             for a, u in uses.items()}
    for scc in strongly_connected(edges):
        if len(scc) > 1:
            names = ", ".join(sorted(os.path.relpath(p, SRC) for p in scc))
            breaks.append(f"circles: {names}")


def strongly_connected(edges):
    """Tarjan's strongly connected components, iteratively."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            node, it = work[-1]
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                    break
                if nxt in on:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    scc = set()
                    while True:
                        x = stack.pop()
                        on.discard(x)
                        scc.add(x)
                        if x == node:
                            break
                    out.append(scc)
    return out


def functions(path):
    """(name, first line, lines) of each function defined in a C file of our style: the
    signature starts in column 0, the body's braces stand alone in column 0."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    start = None
    for i, line in enumerate(lines):
        if line == "{" and i > 0:
            j = i - 1  # back to the line where the signature starts
            while j > 0 and lines[j] and (lines[j][0] in " \t" or lines[j - 1].rstrip().endswith(",")):
                j -= 1
            m = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(", lines[j])
            start = (m.group(1) if m else "?", j + 1)
        elif line.startswith("}") and start and not line.startswith("};"):
            yield start[0], start[1], i + 1 - start[1] + 1
            start = None


def check_length(breaks, longest):
    for path in sources():
        for name, first, n in functions(path):
            longest.append((n, f"src/{os.path.relpath(path, SRC)}:{first} {name}"))
            if n > MAX_LINES:
                breaks.append(f"length: src/{os.path.relpath(path, SRC)}:{first} {name} is {n} "
                              f"lines (at most {MAX_LINES})")


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    breaks, arrows, longest = [], collections.Counter(), []
    check_floors(breaks, arrows)
    check_circles(sys.argv[1], breaks)
    check_length(breaks, longest)
    if "--list" in sys.argv:
        for n, where in sorted(longest, reverse=True)[:15]:
            print(f"{n:5d} {where}")
        for (a, b), n in sorted(arrows.items()):
            print(f"{a} -> {b}: {n}")
    for b in breaks:
        print(b)
    kinds = collections.Counter(b.split(":")[0] for b in breaks)
    print(f"structure: {kinds['floors']} includes up the floors, {kinds['circles']} circles, "
          f"{kinds['length']} functions over {MAX_LINES} lines")
    return 1 if breaks else 0


if __name__ == "__main__":
    sys.exit(main())
