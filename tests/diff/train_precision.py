"""A training step of an MLP (four 4096-wide linear layers, AdamW), for test_diff_gpu.py:
`train_precision.py fp32|bf16 [STEPS]` runs 3 warm-up steps, then STEPS (default 20) steps,
each in an NVTX range "step" that ends after torch.cuda.synchronize(), so that the range is the
step's GPU time. fp32 keeps its GEMMs in full fp32 (no TF32: CUDA cores); bf16 runs the same
model under torch.autocast(bfloat16) (Tensor Cores)."""
import sys

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
mode = sys.argv[1]
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
model = nn.Sequential(nn.Linear(4096, 4096), nn.GELU(), nn.Linear(4096, 4096), nn.GELU(),
                      nn.Linear(4096, 4096), nn.GELU(), nn.Linear(4096, 4096)).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
x = torch.randn(4096, 4096, device="cuda")
target = torch.randn(4096, 4096, device="cuda")


def step():
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=mode == "bf16"):
        loss = nn.functional.mse_loss(model(x).float(), target)
    loss.backward()
    opt.step()


for _ in range(3):
    step()
torch.cuda.synchronize()
for _ in range(steps):
    torch.cuda.nvtx.range_push("step")
    step()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
