"""The agent's Python stack walker (src/agent/pystack.c) inside a real interpreter: built as a
test-only library, called through ctypes from known call sites, with the GIL held (PyDLL) and
released (CDLL, as PyTorch releases it around a launch), and checked against Python's own
traceback with the folding rule applied to it (docs/kernels.md, "trace"). Run by every
CPython 3.10-3.13 found (tests/pytrace/CMakeLists.txt); as a script it runs pytest itself."""
import ctypes
import os
import sys
import traceback

try:
    import pytest
except ImportError:  # an interpreter without pytest, running this file: skip visibly
    if __name__ != "__main__":
        raise
    print(f"SKIPPED: no pytest for {sys.executable}")
    sys.exit(77)

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


@pytest.fixture(scope="module", params=["gil_held", "gil_released"])
def probe(request):
    if not os.path.exists(PROBE):
        pytest.fail(f"PYSTACK_PROBE={PROBE!r} is not a built library")
    # PyDLL keeps the GIL during the call; CDLL releases it, as PyTorch does around a launch
    lib = (ctypes.PyDLL if request.param == "gil_held" else ctypes.CDLL)(PROBE)
    lib.pystack_python.restype = ctypes.c_size_t
    lib.pystack_python.argtypes = (ctypes.c_char_p, ctypes.c_size_t)
    return lib


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
    n, text, truth = level_one(probe)
    assert text == folded(truth)
    assert n == len(text.encode())
    here = os.path.abspath(__file__)
    frames = text.split("<-")
    assert len(frames) == USER_FRAMES
    assert frames[0].startswith(f"{here}:") and frames[0].endswith(":walk")
    assert frames[1].endswith(":level_two") and frames[2].endswith(":level_one")


def run_as(filename, source, scope):
    exec(compile(source, filename, "exec"), scope)


def test_library_frames_are_folded_out(probe):
    # a "library" function (its code claims a site-packages path) launches on behalf of the
    # user's line that called it: the stack starts at that user line
    scope = {"lib": probe, "traceback": traceback, "ctypes": ctypes}
    run_as("/venv/lib/python3.11/site-packages/fakelib/ops.py",
           "def launch(size=4096):\n    " + WALK.replace("\n", "\n    ") + "return result\n",
           scope)
    n, text, truth = scope["launch"]()  # the user line
    assert "site-packages" not in text
    assert text == folded(truth)
    assert text.split("<-")[0].endswith(":test_library_frames_are_folded_out")


def test_only_library_frames_keep_the_innermost(probe):
    scope = {"lib": probe, "traceback": traceback, "ctypes": ctypes}
    run_as("/usr/lib/python3/dist-packages/fakelib/deep.py",
           "def inner(size=4096):\n    " + WALK.replace("\n", "\n    ") + "return result\n"
           "def outer(depth):\n    return inner() if depth == 0 else outer(depth - 1)\n"
           "final = outer(40)\n", scope)  # deeper than the walk's 32 frames
    n, text, truth = scope["final"]
    assert text == "/usr/lib/python3/dist-packages/fakelib/deep.py:3:inner"
    assert text == folded(truth)  # no user frame within 32: the innermost frame


def test_cdll_calls_run_without_the_gil(probe):
    # what makes the "gil_released" runs mean what they say: through CDLL the thread state
    # holding the GIL (3.12+: attached) is none while the call runs, through PyDLL it is ours
    name = "PyThreadState_GetUnchecked" if sys.version_info >= (3, 13) \
        else "_PyThreadState_UncheckedGet"
    holder = getattr(type(probe)(None), name)
    holder.restype = ctypes.c_void_p
    assert (holder() is None) == (type(probe) is ctypes.CDLL)


def test_the_process_is_known_as_python(probe):
    assert probe.pystack_in_python() == 1


def test_frames_of_a_thread_are_its_own(probe):
    # another Python thread, parked on a lock in its own frames, does not change ours
    import threading
    release, parked = threading.Event(), threading.Event()

    def park():
        parked.set()
        release.wait()

    other = threading.Thread(target=park)
    other.start()
    parked.wait()
    try:
        n, text, truth = walk(probe)
    finally:
        release.set()
        other.join()
    assert text == folded(truth)
    assert text.split("<-")[1].endswith(":test_frames_of_a_thread_are_its_own")


def test_generator_and_nested_frames(probe):
    def gen():
        yield walk(probe)

    n, text, truth = next(gen())
    assert text == folded(truth)
    assert text.split("<-")[1].endswith(":gen")


def test_non_ascii_names_come_from_their_cached_utf8(probe):
    # a non-ASCII str keeps no UTF-8 copy until asked for one; the walker reads that copy and
    # never makes it (that would allocate), so it is made here first, as a print would
    scope = {"lib": probe, "traceback": traceback, "ctypes": ctypes}
    run_as("/home/user/prüfung.py",
           "def größe(size=4096):\n    " + WALK.replace("\n", "\n    ") + "return result\n",
           scope)
    code = scope["größe"].__code__
    as_utf8 = ctypes.pythonapi.PyUnicode_AsUTF8
    as_utf8.restype, as_utf8.argtypes = ctypes.c_char_p, (ctypes.py_object,)
    assert as_utf8(code.co_filename) == "/home/user/prüfung.py".encode()
    assert as_utf8(code.co_name) == "größe".encode()
    n, text, truth = scope["größe"]()
    assert text == folded(truth)
    assert text.startswith("/home/user/prüfung.py:3:größe<-")
    assert n == len(text.encode())


def test_truncates_to_the_buffer(probe):
    n, text, _ = walk(probe, size=16)
    assert n == 15 and len(text) == 15
    here = os.path.abspath(__file__)
    assert here.startswith(text)


if __name__ == "__main__":
    sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", __file__]))
