"""Calls functions of mypkg a known number of times, on the main thread, a named thread and in
a child Python process; plus functions that no pattern names. Prints what the test checks."""
import os
import subprocess
import sys
import threading

import mypkg


def other(n):
    return n + 1


def step(i):
    return other(i)


def main():
    for _ in range(5):
        mypkg.work(100)
    model = mypkg.Model()
    for i in range(3):
        model.forward(i)
    for i in range(7):
        step(i)
    assert list(mypkg.gen(3)) == [0, 1, 2]
    for _ in range(2):
        try:
            mypkg.fails()
        except ValueError:
            pass
    mypkg.Frame().groupby("k")
    worker = threading.Thread(target=mypkg.work, args=(10,), name="worker")
    worker.start()
    worker.join()
    subprocess.run([sys.executable, "-c", "import mypkg; mypkg.work(1); mypkg.work(2)"],
                   check=True)
    print("user sitecustomize", os.environ.get("USER_SITECUSTOMIZE_RAN"))
    print("bootstrap on sys.path", any(p.endswith("lantern-python") for p in sys.path))
    print("hook", sys.modules["lantern_pyfunctions"].hot_path)


if __name__ == "__main__":
    main()
