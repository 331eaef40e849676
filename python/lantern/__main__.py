"""`python -m lantern ARGS` and the `lantern` command of the wheel (a console script): both
replace this Python process with the lantern executable bundled in the package
(lantern/bin/lantern), which finds the agent beside it in lantern/lib/. From a clone, the
executable of build/ is used."""

import os
import sys
from pathlib import Path


def executable() -> Path:
    """The bundled lantern executable: the wheel's, else a clone's build/bin/lantern."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "bin" / "lantern", here.parents[1] / "build" / "bin" / "lantern"):
        if os.access(candidate, os.X_OK):
            return candidate
    raise FileNotFoundError(f"no lantern executable in {here / 'bin'} (reinstall the wheel, or "
                            f"build the clone with cmake)")


def main() -> None:
    try:
        path = executable()
        os.execv(str(path), ["lantern"] + sys.argv[1:])
    except OSError as err:  # FileNotFoundError included
        sys.stderr.write(f"lantern: cannot run the lantern executable: {err}\n")
        sys.exit(127)


if __name__ == "__main__":
    main()
