"""The agent's Python stack walker (src/agent/pystack.c) inside a real interpreter: built as a
test-only library, called through ctypes from known call sites, and checked against Python's
own traceback with the folding rule applied to it (docs/kernels.md, "trace")."""
import ctypes
import os
import traceback

import pytest

PROBE = os.environ.get("PYSTACK_PROBE", "")
USER_FRAMES = 3
LIBRARY_MARKS = ("/site-packages/", "/dist-packages/", "/lib/python3", "/torch/")


def is_library(filename):
    return filename.startswith("<frozen ") or any(m in filename for m in LIBRARY_MARKS)


def folded(summaries):
    """What the walker should say for traceback.extract_stack() output (outermost first)."""
    frames = list(reversed(summaries))[:32]
    users = [f for f in frames if not is_library(f.filename)][:USER_FRAMES]
    chosen = users or frames[:1]
    return "<-".join(f"{f.filename}:{f.lineno}:{f.name}" for f in chosen)


@pytest.fixture(scope="module")
def probe():
    if not os.path.exists(PROBE):
        pytest.fail(f"PYSTACK_PROBE={PROBE!r} is not a built library")
    with_gil = ctypes.PyDLL(PROBE)  # PyDLL keeps the GIL during the call, as a launch does
    without_gil = ctypes.CDLL(PROBE)  # CDLL releases it
    for lib in (with_gil, without_gil):
        lib.pystack_python.restype = ctypes.c_size_t
        lib.pystack_python.argtypes = (ctypes.c_char_p, ctypes.c_size_t)
    return with_gil, without_gil


# The walk and Python's own view of the stack, taken on one line (the same line number).
WALK = ("buf = ctypes.create_string_buffer(size)\n"
        "n, truth = lib.pystack_python(buf, size), traceback.extract_stack()\n"
        "result = n, buf.value.decode(), truth\n")


def walk(lib, size=4096):
    buf = ctypes.create_string_buffer(size)
    n, truth = lib.pystack_python(buf, size), traceback.extract_stack()
    return n, buf.value.decode(), truth


def level_two(lib):
    return walk(lib)


def level_one(lib):
    return level_two(lib)


def test_user_frames_innermost_first_match_traceback(probe):
    n, text, truth = level_one(probe[0])
    assert text == folded(truth)
    assert n == len(text.encode())
    here = os.path.abspath(__file__)
    frames = text.split("<-")
    assert len(frames) == USER_FRAMES
    assert frames[0].startswith(f"{here}:") and frames[0].endswith(":walk")
    assert frames[1].endswith(":level_two") and frames[2].endswith(":level_one")


def run_as(filename, source, scope):
    exec(compile(source, filename, "exec"), scope)


def test_library_frames_are_folded_out(probe, tmp_path):
    # a "library" function (its code claims a site-packages path) launches on behalf of the
    # user's line that called it: the stack starts at that user line
    scope = {"lib": probe[0], "traceback": traceback, "ctypes": ctypes}
    run_as("/venv/lib/python3.11/site-packages/fakelib/ops.py",
           "def launch(size=4096):\n    " + WALK.replace("\n", "\n    ") + "return result\n",
           scope)
    n, text, truth = scope["launch"]()  # the user line
    assert "site-packages" not in text
    assert text == folded(truth)
    assert text.split("<-")[0].endswith(":test_library_frames_are_folded_out")


def test_only_library_frames_keep_the_innermost(probe):
    scope = {"lib": probe[0], "traceback": traceback, "ctypes": ctypes}
    run_as("/usr/lib/python3/dist-packages/fakelib/deep.py",
           "def inner(size=4096):\n    " + WALK.replace("\n", "\n    ") + "return result\n"
           "def outer(depth):\n    return inner() if depth == 0 else outer(depth - 1)\n"
           "final = outer(40)\n", scope)  # deeper than the walk's 32 frames
    n, text, truth = scope["final"]
    assert text == "/usr/lib/python3/dist-packages/fakelib/deep.py:3:inner"
    assert text == folded(truth)  # no user frame within 32: the innermost frame


def test_without_the_gil_nothing_is_read(probe):
    assert walk(probe[1])[:2] == (0, "")


def test_truncates_to_the_buffer(probe):
    n, text, _ = walk(probe[0], size=16)
    assert n == 15 and len(text) == 15
    here = os.path.abspath(__file__)
    assert here.startswith(text)
