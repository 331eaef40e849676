#!/usr/bin/env python3
"""All-reduce bus bandwidth measured as nccl-tests measures it (started by torchrun): per
size, warm-up iterations, then ITERS back-to-back all-reduces between two CUDA events on the
collective's stream; time = elapsed / ITERS, algorithm bandwidth = bytes / time, bus bandwidth
= algbw x 2 (n - 1) / n. Rank 0 prints one JSON line: {size: {"time_us", "algbw", "busbw"}}."""
import json
import os
import sys

import torch
import torch.distributed as dist

WARMUP, ITERS = 10, 40


def main():
    sizes = [int(s) for s in sys.argv[1].split(",")] if len(sys.argv) > 1 else [64 << 20]
    rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl")
    n = dist.get_world_size()
    out = {}
    for size in sizes:
        x = torch.ones(size // 4, device="cuda")
        for _ in range(WARMUP):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(ITERS):
            dist.all_reduce(x)
        end.record()
        torch.cuda.synchronize()
        t = start.elapsed_time(end) / 1000 / ITERS
        algbw = size / t
        out[size] = {"time_us": t * 1e6, "algbw": algbw, "busbw": algbw * 2 * (n - 1) / n}
    if rank == 0:
        print(json.dumps(out))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
