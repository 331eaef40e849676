#!/usr/bin/env python3
"""A steady bf16 matmul load for SECONDS (argv[1]), to probe NVML under load (run.sh)."""
import sys
import time

import torch

a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    a @ a
torch.cuda.synchronize()
