"""NVTX ranges for the examples, from whichever binding is installed: the nvtx package, else
CuPy's or PyTorch's NVTX bindings (all three go through NVTX 3, which `lantern profile`
injects into), else none (the program still runs, with a warning)."""
import contextlib
import sys


def _push_pop():
    try:
        import nvtx
        return lambda name: nvtx.push_range(name), nvtx.pop_range
    except ImportError:
        pass
    try:
        from cupy.cuda import nvtx
        return nvtx.RangePush, nvtx.RangePop
    except ImportError:
        pass
    try:
        from torch.cuda import nvtx
        return nvtx.range_push, nvtx.range_pop
    except ImportError:
        pass
    print("annotate: no NVTX binding (pip install nvtx): ranges are not recorded", file=sys.stderr)
    return (lambda name: None), (lambda: None)


_push, _pop = _push_pop()


@contextlib.contextmanager
def annotate(name):
    """A push/pop NVTX range around a block."""
    _push(name)
    try:
        yield
    finally:
        _pop()
