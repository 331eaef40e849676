#!/usr/bin/env python3
"""What 1 kHz interruptions cost a launch-bound PyTorch thread, with no profiler at all
(docs/benchmarks.md, "CPU sampling's cost, paired"): the program times blocks of its own work
with one source of interruptions of its thread switched on, against blocks with it off, in
pairs of alternating order (bench/cpu_interrupt_lib.c: perf's cpu-clock bare, with callchains,
with context-switch records, on every thread of the process; a POSIX CPU-time timer and a wall-clock timer with an empty signal
handler; a second thread reading the thread's clock and stack at the rate, as the agent's
Python sampler does). Per kind it prints the median on/off ratio and the extra time per interruption.

  python3 bench/cpu_interrupt_cost.py LIB.so [--workload loop|cpu_loop|transformer]
                                      [--rounds 3] [--pairs 40] [--hz 1000] [--idle]
                                      [--kinds 0,1,2,3,4,5]

Kind 9 is Lantern's own CPU sampling, switched inside one recording session: run the script
under `lantern profile -t cuda,nvtx,cpu` with LANTERN_TEST_CPU_SWITCH=PATH (while PATH exists,
the agent's CPU sampling alone is paused; the script creates it at its start, so the other
kinds run without Lantern's sampling; the agent looks at it every 10 ms). Every block, of every
kind, follows 30 ms of the same work untimed (after kind 9's switch, before the others' on),
so that no block starts from an idle CPU or a switch not yet seen; --idle sleeps those 30 ms
instead (blocks that start from an idle thread).

Rounds rotate the kinds' order, so a CPU speed change mid-run touches every kind alike."""
import argparse
import ctypes
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_cuda  # noqa: E402  (the same workloads as the paired tracing benchmark)

KINDS = {0: "none (A/A)", 1: "perf cpu-clock, bare", 2: "perf cpu-clock + callchain",
         3: "perf + callchain + switches", 4: "CPU-time timer, signal",
         5: "wall-clock timer, signal", 6: "a reader thread at the rate",
         7: "its wake-ups alone", 8: "perf + callchain + reader",
         9: "Lantern's CPU sampling", 10: "callchain event on every thread"}
LANTERN = 9
SETTLE_S = 0.03  # untimed work before each block: three of the writer's drains


def thread_switches():
    with open("/proc/thread-self/status") as f:
        fields = dict(line.split(":", 1) for line in f if "ctxt_switches" in line)
    return {k.strip(): int(v) for k, v in fields.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lib")
    ap.add_argument("--workload", default="loop", choices=["loop", "cpu_loop", "transformer"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pairs", type=int, default=40)
    ap.add_argument("--hz", type=int, default=1000)
    ap.add_argument("--kinds", default="0,1,2,3,4,5")
    ap.add_argument("--idle", action="store_true", help="sleep before each block, not work")
    a = ap.parse_args()
    import torch
    lib = ctypes.CDLL(os.path.abspath(a.lib))
    if a.workload == "loop":
        run, warmup, block = bench_cuda.loop_workload(torch)
        block = 2000
    elif a.workload == "cpu_loop":
        run, warmup, block = bench_cuda.loop_cpu_reference(torch), 3000, 2000
    else:
        run, warmup, block = bench_cuda.transformer_workload(torch)
        block = 3
    sync = torch.cuda.synchronize if a.workload != "cpu_loop" else (lambda: None)
    run(warmup)
    sync()
    start = time.perf_counter()
    run(block)
    sync()
    settle = max(1, round(block * SETTLE_S / (time.perf_counter() - start)))
    kinds = [int(k) for k in a.kinds.split(",")]
    switch = os.environ.get("LANTERN_TEST_CPU_SWITCH")
    if LANTERN in kinds and not switch:
        sys.exit("kind 9 needs lantern profile -t cpu,... with LANTERN_TEST_CPU_SWITCH=PATH")

    def lantern_sampling(on):
        if on:
            os.unlink(switch)
        else:
            open(switch, "w").close()
    if switch:
        lantern_sampling(False)
    ratios = {k: [] for k in kinds}
    per_sample = {k: [] for k in kinds}
    before, t0 = thread_switches(), time.perf_counter()
    for r in range(a.rounds):
        order = kinds[r % len(kinds):] + kinds[:r % len(kinds)]
        for k in order:
            if k != LANTERN and lib.ci_open(k, a.hz) != 0:
                print(f"kind {k}: could not open ({os.strerror(ctypes.get_errno()) or 'error'})")
                continue
            for p in range(a.pairs):
                t = {}
                for on in ((1, 0) if p % 2 == 0 else (0, 1)):
                    if k == LANTERN and on:
                        lantern_sampling(True)
                    if a.idle:
                        time.sleep(SETTLE_S)
                    else:
                        run(settle)
                        sync()
                    if k != LANTERN and on:
                        lib.ci_on()
                    start = time.perf_counter_ns()
                    run(block)
                    sync()
                    t[on] = time.perf_counter_ns() - start
                    if on and k == LANTERN:
                        lantern_sampling(False)
                        n = 0
                    elif on:
                        lib.ci_off()
                        n = lib.ci_samples()
                ratios[k].append(t[1] / t[0])
                if n:
                    per_sample[k].append((t[1] - t[0]) / n / 1000)
            if k != LANTERN:
                lib.ci_close()
    wall = time.perf_counter() - t0
    after = thread_switches()
    print(f"workload {a.workload}, blocks of {block} after {settle} untimed, {a.rounds} rounds x {a.pairs} pairs, "
          f"{a.hz} Hz; main thread's switches per second: " + ", ".join(
              f"{k} {(after[k] - before[k]) / wall:.0f}" for k in after))
    for k in kinds:
        if not ratios[k]:
            continue
        q = statistics.quantiles(ratios[k], n=10)
        extra = (f"  {statistics.median(per_sample[k]):6.1f} us per interruption"
                 if per_sample[k] else "")
        print(f"  {KINDS[k]:30s} on/off x{statistics.median(ratios[k]):.4f} "
              f"(10-90 %: {q[0]:.4f}-{q[-1]:.4f}){extra}")


if __name__ == "__main__":
    main()
