#!/usr/bin/env python3
"""A GPT-2-style decode loop for the CPU side's GPU proof (tests/cpu/test_cpu_gpu.py): GPT-2
small's shape from a config, random weights (no download), fp16 on the GPU, greedy decoding of
NEW tokens one at a time for batch 1 inside an NVTX range ':generate'. Launch-bound: the GPU
waits on the host, which spends its time in PyTorch's and transformers' Python."""
import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel

new = int(sys.argv[1]) if len(sys.argv) > 1 else 96
torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config()).half().cuda().eval()
prompt = torch.randint(0, 50257, (1, 16), device="cuda")
with torch.no_grad():
    model.generate(prompt, max_new_tokens=8, do_sample=False, pad_token_id=0)  # warm-up
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("generate")
    out = model.generate(prompt, max_new_tokens=new, min_new_tokens=new, do_sample=False,
                         pad_token_id=0)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
print(f"generated {out.shape[1] - prompt.shape[1]} tokens")
