#!/usr/bin/env python3
"""The driver-heavy programs of bench/bench_sampler.py (issue #11): each does its work once and
prints `program_ms=X` (from just before the work's imports to its end, so interpreter start-up is
out of the figure). Run as `python3 bench/sampler_workloads.py NAME`.

- cupy_blog: the NVTX blog's CuPy example (100 random 1024x1024 arrays, squared differences,
  then the cupy.fuse version), with CuPy's default allocator (cudaMalloc through its pool).
- torch_warmup: a CNN + transformer block built and moved to the GPU, then the first 5
  training steps with Adam (allocation-heavy warm-up).
- jax_jit: a jitted function compiled and called 20 times.
- window: torch_warmup inside Lantern energy windows (lantern.Monitor), one per step;
  `window_off` is the same program without the monitor, its reference.
"""

import os
import sys
import time


def nvtx_range():
    """push/pop through whatever NVTX binding is installed (the blog uses `nvtx`)."""
    try:
        import nvtx

        return nvtx.push_range, nvtx.pop_range
    except ImportError:
        from cupy.cuda import nvtx as cnvtx

        return cnvtx.RangePush, cnvtx.RangePop


def cupy_blog():
    import cupy

    push, pop = nvtx_range()

    def squared_diff(x, y):
        return (x - y) * (x - y)

    push("data generation")
    imgs = [cupy.random.random((1024, 1024)) for _ in range(100)]
    pop()
    push("compute")
    squares = [squared_diff(x, y) for x, y in zip(imgs, imgs[1:])]
    pop()
    fused = cupy.fuse(squared_diff)
    push("compute fast")
    squares = [fused(x, y) for x, y in zip(imgs, imgs[1:])]
    pop()
    cupy.cuda.Device().synchronize()
    return squares


def torch_steps(monitor=None):
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Sequential(
                nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 128, 3, padding=1),
                nn.ReLU(), nn.AdaptiveAvgPool2d(8))
            self.proj = nn.Linear(128, 512)
            self.block = nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True)
            self.head = nn.Linear(512, 10)

        def forward(self, x):
            x = self.conv(x).flatten(2).transpose(1, 2)
            return self.head(self.block(self.proj(x)).mean(1))

    model = Net().cuda()
    opt = torch.optim.Adam(model.parameters())
    x = torch.randn(64, 3, 64, 64, device="cuda")
    y = torch.randint(0, 10, (64,), device="cuda")
    for step in range(5):
        if monitor:
            monitor.begin_window(f"step{step}")
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if monitor:
            monitor.end_window(f"step{step}")
    torch.cuda.synchronize()


def torch_warmup():
    torch_steps()


def window():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import lantern

    torch_steps(lantern.Monitor(gpu_indices=[0]))


def window_off():
    torch_steps()


def jax_jit():
    import jax
    import jax.numpy as jnp

    @jax.jit
    def f(a, b):
        return jnp.tanh(a @ b).sum()

    key = jax.random.PRNGKey(0)
    a = jax.random.normal(key, (2048, 2048))
    b = jax.random.normal(key, (2048, 2048))
    for _ in range(20):
        r = f(a, b)
    r.block_until_ready()


WORKLOADS = {f.__name__: f for f in (cupy_blog, torch_warmup, jax_jit, window, window_off)}

if __name__ == "__main__":
    t0 = time.perf_counter()
    WORKLOADS[sys.argv[1]]()
    print(f"program_ms={(time.perf_counter() - t0) * 1e3:.1f}", flush=True)
