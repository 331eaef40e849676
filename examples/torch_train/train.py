"""A small PyTorch training loop annotated with NVTX, to profile with
`lantern profile -t cuda,nvtx python3 examples/torch_train/train.py`: every step is an NVTX
range holding "copy_in", "forward", "backward" and "optimizer" ranges, so nvtx_kern_sum and
nvtx_gpu_proj_sum show which kernels each phase launched and how long they ran on the GPU."""

import argparse
import sys
import time

import torch
from torch.cuda import nvtx


def make_model(width, depth):
    layers = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    layers.append(torch.nn.Linear(width, 10))
    return torch.nn.Sequential(*layers)


def train(args):
    device = torch.device("cuda")
    torch.manual_seed(0)
    model = make_model(args.width, args.depth).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    # Synthetic data on the host, copied each step like a real input pipeline would.
    inputs = torch.randn(args.steps, args.batch, args.width).pin_memory()
    labels = torch.randint(0, 10, (args.steps, args.batch)).pin_memory()

    torch.cuda.synchronize()
    started = time.perf_counter()
    for step in range(args.steps):
        # One name for every step, so the reports aggregate the steps (median, spread).
        with nvtx.range("step"):
            with nvtx.range("copy_in"):
                x = inputs[step].to(device, non_blocking=True)
                y = labels[step].to(device, non_blocking=True)
            with nvtx.range("forward"):
                loss = loss_fn(model(x), y)
            with nvtx.range("backward"):
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
            with nvtx.range("optimizer"):
                optimizer.step()
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - started
    print(f"trained {args.steps} steps (batch {args.batch}, width {args.width}, "
          f"depth {args.depth}) in {elapsed * 1e3:.1f} ms, final loss {loss.item():.4f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--depth", type=int, default=4)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("train.py: no CUDA device, nothing to profile", file=sys.stderr)
        return 77
    train(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
