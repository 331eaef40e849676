"""A training step of a small CNN and a transformer block in bf16 (forward, backward, AdamW),
for tests/gpu_kernels/test_kernels_gpu.py.

  torch_step.py nvtx      one step under torch.autograd.profiler.emit_nvtx(record_shapes=True)
                          inside an NVTX range "step" (run under `lantern profile -t cuda,nvtx`)
  torch_step.py profiler  the same step under torch.profiler; prints {"kernels": N} (its count
                          of GPU kernels) as JSON
Both run two warm-up steps first, so lazy initialisation is out of the measured step."""
import json
import sys

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.backends.cudnn.benchmark = False
DEVICE = "cuda"
DTYPE = torch.bfloat16


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(64)
        self.conv2 = nn.Conv2d(64, 128, 3, stride=2, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(128, 10)

    def forward(self, x):
        torch.cuda.nvtx.range_push("conv1")
        x = torch.relu(self.bn1(self.conv1(x)))
        torch.cuda.nvtx.range_pop()
        torch.cuda.nvtx.range_push("conv2")
        x = torch.relu(self.conv2(x))
        torch.cuda.nvtx.range_pop()
        torch.cuda.nvtx.range_push("head")
        x = self.fc(self.pool(x).flatten(1))
        torch.cuda.nvtx.range_pop()
        return x


def build():
    cnn = Cnn().to(DEVICE, DTYPE)
    block = nn.TransformerEncoderLayer(d_model=1024, nhead=16, dim_feedforward=4096,
                                       batch_first=True).to(DEVICE, DTYPE)
    params = list(cnn.parameters()) + list(block.parameters())
    opt = torch.optim.AdamW(params, lr=1e-4)
    images = torch.randn(32, 3, 64, 64, device=DEVICE, dtype=DTYPE)
    labels = torch.randint(0, 10, (32,), device=DEVICE)
    tokens = torch.randn(8, 512, 1024, device=DEVICE, dtype=DTYPE)
    return cnn, block, opt, images, labels, tokens


def step(cnn, block, opt, images, labels, tokens):
    opt.zero_grad(set_to_none=True)
    torch.cuda.nvtx.range_push("cnn")
    loss = nn.functional.cross_entropy(cnn(images).float(), labels)
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_push("transformer")
    loss = loss + block(tokens).float().square().mean()
    torch.cuda.nvtx.range_pop()
    loss.backward()
    opt.step()


def main():
    mode = sys.argv[1]
    model = build()
    for _ in range(2):
        step(*model)
    torch.cuda.synchronize()
    if mode == "nvtx":
        with torch.autograd.profiler.emit_nvtx(record_shapes=True):
            torch.cuda.nvtx.range_push("step")
            step(*model)
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()
        return
    activities = [torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as prof:
        step(*model)
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
               and not e.name.startswith("Memcpy") and not e.name.startswith("Memset")]
    print(json.dumps({"kernels": len(kernels)}))


if __name__ == "__main__":
    main()
