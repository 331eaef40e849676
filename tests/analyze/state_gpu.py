"""A PyTorch program whose GPU idles while its launching thread sleeps or spins
(test_analyze_state_gpu.py): warm-up kernels, then N times a tiny kernel, a synchronize and a
50 ms gap of the host: time.sleep (the thread blocked) or a busy loop (the thread running).
Prints the gaps' time as the program measured it. Usage: state_gpu.py sleep|spin [N]."""
import sys
import time

import torch

mode = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 20
x = torch.ones(1024, device="cuda")
for _ in range(20):
    x = x * 1.0001
torch.cuda.synchronize()
gaps = 0.0
for _ in range(n):
    x = x * 1.0001
    torch.cuda.synchronize()
    start = time.monotonic()
    if mode == "sleep":
        time.sleep(0.05)
    else:
        while time.monotonic() - start < 0.05:
            pass
    gaps += time.monotonic() - start
print(f"gaps_s {gaps:.6f}")
