"""A PyTorch training loop whose backward pass runs on PyTorch's autograd thread (pt_autograd_0),
which opens no NVTX range, while the main thread's steps are NVTX ranges "step"
(test_cpu_lanes_gpu.py). At the end it prints the autograd thread's tid and CPU time
(/proc/self/task/TID/stat: utime + stime, in clock ticks), the truth the page's lane is checked
against. Usage: cpu_lanes_gpu.py [SECONDS=4]."""
import os
import sys
import time

import torch

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 4.0
# small layers: the launches, not the GPU, pace the step, so the backward pass keeps its
# thread busy on the CPU
model = torch.nn.Sequential(*[torch.nn.Linear(256, 256) for _ in range(16)]).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
x = torch.randn(32, 256, device="cuda")
end = time.monotonic() + seconds
steps = 0
while time.monotonic() < end:
    torch.cuda.nvtx.range_push("step")
    loss = model(x).square().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    steps += 1
ticks = os.sysconf("SC_CLK_TCK")
for tid in os.listdir("/proc/self/task"):
    with open(f"/proc/self/task/{tid}/comm") as f:
        if f.read().strip() != "pt_autograd_0":
            continue
    with open(f"/proc/self/task/{tid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields after the name: state is the 3rd of stat, utime and stime its 14th and 15th
    cpu_ns = (int(fields[11]) + int(fields[12])) * 1000000000 // ticks
    print(f"autograd tid {tid} cpu_ns {cpu_ns} steps {steps}")
