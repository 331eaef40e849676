"""PyTorch's NCCL collectives with known sizes, on WORLD ranks (one GPU each, spawned here):
all-reduce, all-gather, reduce-scatter, broadcast, and a batch of send/recv (NCCL groups
them). Each rank writes OUT/rank<N>.json: its pid and the calls it made, as NCCL names them
with the bytes NCCL's payload gives ("Message size [bytes]": one rank's part of an all-gather
or reduce-scatter). Usage: nccl_collectives.py OUT WORLD"""
import json
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

SIZES = [1 << 20, 16 << 20]  # bytes of float32
ITERS = 5


def rank_main(rank, world, out, port):
    os.environ["RANK"] = str(rank)  # before CUDA loads the agent: the process's rank
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    calls = []
    for size in SIZES:
        x = torch.ones(size // 4, device="cuda")
        for _ in range(ITERS):
            dist.all_reduce(x)
            calls.append(["ncclAllReduce", size])
        part = torch.ones(size // 4 // world, device="cuda")
        full = torch.empty(part.numel() * world, device="cuda")
        dist.all_gather_into_tensor(full, part)
        calls.append(["ncclAllGather", part.numel() * 4])
        dist.reduce_scatter_tensor(part, full)
        if world > 1:  # one rank: PyTorch copies, NCCL is not called (seen on an H200)
            calls.append(["ncclReduceScatter", part.numel() * 4])
    dist.broadcast(x, src=0)
    calls.append(["ncclBroadcast", x.numel() * 4])
    if world > 1:
        peer = (rank + 1) % world, (rank - 1) % world
        send, recv = torch.ones(1 << 18, device="cuda"), torch.empty(1 << 18, device="cuda")
        ops = [dist.P2POp(dist.isend, send, peer[0]), dist.P2POp(dist.irecv, recv, peer[1])]
        for req in dist.batch_isend_irecv(ops):
            req.wait()
        calls += [["ncclSend", 1 << 20], ["ncclRecv", 1 << 20]]
    torch.cuda.synchronize()
    with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
        json.dump({"pid": os.getpid(), "world": world, "calls": calls}, f)
    dist.destroy_process_group()


def main():
    out, world = sys.argv[1], int(sys.argv[2])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(rank_main, args=(world, out, port), nprocs=world, join=True)


if __name__ == "__main__":
    main()
