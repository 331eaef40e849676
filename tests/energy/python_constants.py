"""The Python module's copy of lantern.h's constants, generated from include/lantern.h: every
error code (LANTERN_OK, LANTERN_ERR_*) and every option or result bit (a hexadecimal value),
without the LANTERN_ prefix, between the module's two marker lines
    # lantern.h's constants: generated from include/lantern.h (...)
    # end of lantern.h's constants
`python_constants.py lantern.h __init__.py` fails, saying how to fix it, when they differ
(ctest python_constants); with --update it rewrites them (cmake --build build --target
python-constants). The module is pure Python run from the source tree too (PYTHONPATH=python),
so the block lives in it rather than in a file the build writes."""
import re
import sys

BEGIN = "# lantern.h's constants: generated from include/lantern.h"
END = "# end of lantern.h's constants"


def constants(header):
    """(name, value text) of the header's codes and bits, in its order."""
    text = re.sub(r"/\*.*?\*/", " ", open(header).read(), flags=re.S).replace("\\\n", " ")
    out = []
    for m in re.finditer(r"^#define LANTERN_(\w+)\s+(-?\d+|0x[0-9a-fA-F]+)u?\s*$", text, re.M):
        name, value = m.groups()
        if name == "OK" or name.startswith("ERR_") or value.startswith("0x"):
            out.append((name, value))
    return out


def main(argv):
    if len(argv) not in (3, 4) or (len(argv) == 4 and argv[3] != "--update"):
        print("usage: python_constants.py include/lantern.h python/lantern/__init__.py [--update]",
              file=sys.stderr)
        return 2
    header, module = argv[1], argv[2]
    lines = open(module).read().split("\n")
    try:
        begin = next(i for i, line in enumerate(lines) if line.startswith(BEGIN))
        end = next(i for i in range(begin, len(lines)) if lines[i] == END)
    except StopIteration:
        print(f"lantern: {module}: no '{BEGIN}' ... '{END}' block", file=sys.stderr)
        return 1
    block = [f"{name} = {value}" for name, value in constants(header)]
    if lines[begin + 1:end] == block:
        return 0
    if len(argv) == 4:
        open(module, "w").write("\n".join(lines[:begin + 1] + block + lines[end:]))
        print(f"updated {module}")
        return 0
    print(f"lantern: {module}: its constants differ from {header}'s; run "
          "`cmake --build build --target python-constants`", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
