"""A PyTorch program whose launching thread contends for the GIL (test_analyze_gil_gpu.py):
warm-up kernels, then, inside the NVTX range 'contended', SECONDS of tiny kernels launched
from the main thread while a second thread runs pure Python (it takes the GIL every switch
interval, 5 ms, and the GPU then idles until the main thread has it back). Prints the main
thread's launches. Usage: gil_gpu.py [SECONDS]."""
import sys
import threading
import time

import torch

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
x = torch.ones(1024, device="cuda")
for _ in range(20):
    x = x * 1.0001
torch.cuda.synchronize()
stop = threading.Event()


def hog():
    s = 0
    while not stop.is_set():
        for i in range(1000):
            s += i * i


worker = threading.Thread(target=hog, name="hog")
worker.start()
launches = 0
torch.cuda.nvtx.range_push("contended")
end = time.monotonic() + seconds
while time.monotonic() < end:
    x = x * 1.0001
    launches += 1
torch.cuda.synchronize()
torch.cuda.nvtx.range_pop()
stop.set()
worker.join()
print(f"launches {launches}")
