"""Python multiprocessing workers that make NVTX ranges (test_lifecycle.py, row 5), through
ctypes into nvtx_shim.c ($NVTX_SHIM). For each start method named on the command line
(default: fork, forkserver, spawn): 3 Processes, a Pool left by its `with` block (its workers
are terminated: SIGTERM) and a Pool closed and joined (its workers leave on their own).
Prints the ranges it made, by name, as JSON: what the database must hold."""
import ctypes
import json
import multiprocessing
import os
import sys

_shim = None


def ranges(name, n):
    global _shim
    if _shim is None:
        _shim = ctypes.CDLL(os.environ["NVTX_SHIM"])
        _shim.lifecycle_push.argtypes = [ctypes.c_char_p]
    for _ in range(n):
        _shim.lifecycle_push(name.encode())
        _shim.lifecycle_pop()


def pool_task(arg):
    name, n = arg
    ranges(name, n)
    return n


def main(methods):
    ranges("main", 5)
    made = {"main": 5}
    for method in methods:
        ctx = multiprocessing.get_context(method)
        procs = [ctx.Process(target=ranges, args=(f"{method}-process", 4)) for _ in range(3)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
            assert p.exitcode == 0, (method, p.exitcode)
        made[f"{method}-process"] = 12
        with ctx.Pool(2) as pool:  # __exit__ terminates the workers
            made[f"{method}-pool"] = sum(pool.map(pool_task, [(f"{method}-pool", 3)] * 6))
        pool = ctx.Pool(2)
        made[f"{method}-pool-joined"] = sum(pool.map(pool_task, [(f"{method}-pool-joined", 3)] * 6))
        pool.close()
        pool.join()
    print(json.dumps(made, sort_keys=True))


if __name__ == "__main__":
    main(sys.argv[1:] or ["fork", "forkserver", "spawn"])
