#!/usr/bin/env python3
"""A data-parallel PyTorch training job for tests/gpu_ranks, started by torchrun (RANK,
LOCAL_RANK, WORLD_SIZE): a small MLP under DistributedDataParallel, each step an NVTX range
"step" whose gradients NCCL all-reduces. --slow-rank R --slow-ms MS makes rank R a straggler
(its CPU sleeps MS before each step's forward pass, so the others wait in the all-reduce).
--torch-profiler DIR profiles the steps with torch.profiler instead and writes
DIR/rank<R>.json: the CUDA kernels it saw, by name (the truth a profile is checked against).
The steps run inside an NVTX range "train", after a warm-up step outside it."""
import argparse
import collections
import json
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--slow-rank", type=int, default=-1)
    p.add_argument("--slow-ms", type=float, default=0)
    p.add_argument("--torch-profiler")
    a = p.parse_args()
    rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl")
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(4096, 4096) for _ in range(8)]).cuda()
    ddp = DistributedDataParallel(model, device_ids=[local])
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
    x = torch.randn(256, 4096, device="cuda")

    def step():
        if rank == a.slow_rank:
            time.sleep(a.slow_ms / 1000)
        torch.cuda.nvtx.range_push("step")
        opt.zero_grad(set_to_none=True)
        ddp(x).square().mean().backward()
        opt.step()
        torch.cuda.nvtx.range_pop()

    step()  # warm-up: DDP's buckets, cuBLAS' handles
    torch.cuda.synchronize()
    dist.barrier()
    prof = None
    if a.torch_profiler:
        prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
        prof.__enter__()
    torch.cuda.nvtx.range_push("train")
    for _ in range(a.steps):
        step()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    if prof:
        prof.__exit__(None, None, None)
        kernels = collections.Counter(e.name for e in prof.events()
                                      if e.device_type == torch.autograd.DeviceType.CUDA
                                      and getattr(e, "device_resource_id", 0) is not None
                                      and not e.name.startswith("Memcpy")
                                      and not e.name.startswith("Memset"))
        with open(os.path.join(a.torch_profiler, f"rank{rank}.json"), "w") as f:
            json.dump({"pid": os.getpid(), "kernels": kernels}, f)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
