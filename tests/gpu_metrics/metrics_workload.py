#!/usr/bin/env python3
"""GPU work with known hardware behaviour, for tests/gpu_metrics: a bf16 GEMM loop (Tensor
Cores busy), an fp32 elementwise loop (DRAM-bound, no Tensor Cores) and a single-thread spin
kernel alone on the GPU (torch.cuda._sleep: the graphics engine busy, the SMs idle), each
phase between idle gaps. Prints the phases' names and lengths as JSON on stdout."""
import json
import sys
import time

import torch


def phase(name, fn, seconds, out):
    torch.cuda.synchronize()
    time.sleep(0.05)
    t0 = time.perf_counter()
    n = 0
    while time.perf_counter() - t0 < seconds:
        fn()
        n += 1
        if n % 8 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    out[name] = {"iterations": n, "seconds": time.perf_counter() - t0}


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 0.5
    dev = torch.device("cuda")
    a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    x = torch.randn(1 << 28, device=dev, dtype=torch.float32)
    y = torch.randn(1 << 28, device=dev, dtype=torch.float32)
    torch.matmul(a, b)
    torch.add(x, y)
    out = {}
    phase("gemm_bf16", lambda: torch.matmul(a, b), seconds, out)
    phase("add_fp32", lambda: torch.add(x, y, out=x), seconds, out)
    torch.cuda.synchronize()
    time.sleep(0.05)
    torch.cuda._sleep(40_000_000)  # one thread spinning ~20 ms (clock cycles)
    torch.cuda.synchronize()
    time.sleep(0.05)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
