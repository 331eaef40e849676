"""The package whose functions tests/pyfunctions records (see test_python_functions.py)."""
from .core import Frame  # noqa: F401  (Frame.groupby is also reachable as mypkg.Frame.groupby)


def work(n):
    return sum(range(n))


class Model:
    def forward(self, x):
        return helper(x) + 1


def helper(x):
    return x * 2


def gen(n):
    for i in range(n):
        yield i


def fails():
    raise ValueError("raised on purpose")
