"""A training loop measured the Zeus way (zeus.monitor.ZeusMonitor windows per epoch and step,
and the seed document's zeus.profiling.ZeusProfilingService push/pop), written for Zeus and
run unchanged on Lantern:

    python -m lantern.zeus examples/zeus/train.py [--epochs N] [--steps N] [--step-seconds S]

Training is simulated (sleep, or PyTorch matrix products when --torch and a GPU are present),
so it runs anywhere; without a GPU only time is measured. See README.md beside it."""

import argparse
import time

from zeus.monitor import ZeusMonitor
from zeus.profiling import ZeusProfilingService


def train_one_step(args, work):
    if work is None:
        time.sleep(args.step_seconds)
        return
    for _ in range(20):
        work = work @ work
        work = work / work.norm()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--step-seconds", type=float, default=0.05)
    parser.add_argument("--torch", action="store_true", help="multiply matrices on GPU 0")
    args = parser.parse_args()
    work = None
    if args.torch:
        import torch
        work = torch.randn(4096, 4096, device="cuda")

    monitor = ZeusMonitor()  # every GPU; time only where there is none
    print(f"gpus {monitor.gpu_indices}")
    for epoch in range(args.epochs):
        monitor.begin_window("epoch")
        steps = []
        for _ in range(args.steps):
            monitor.begin_window("step")
            train_one_step(args, work)
            steps.append(monitor.end_window("step"))
        mes = monitor.end_window("epoch")
        per_gpu = " ".join(f"gpu{i}={j:.6f}" for i, j in sorted(mes.gpu_energy.items()))
        print(f"epoch {epoch} time={mes.time:.6f} total={mes.total_energy:.6f} {per_gpu}".rstrip())
        avg_time = sum(m.time for m in steps) / len(steps)
        avg_energy = sum(m.total_energy for m in steps) / len(steps)
        print(f"step average time={avg_time:.6f} total={avg_energy:.6f}")

    service = ZeusProfilingService()
    service.push_window()
    train_one_step(args, work)
    result = service.pop_window()
    energies = " ".join(f"gpu{i}={j:.6f}" for i, j in zip(service.gpu_indices, result.energy))
    print(f"window time={result.time:.6f} {energies}".rstrip())


if __name__ == "__main__":
    main()
