"""Lockstep rounds for the GPU overhead benchmarks (bench_cuda.py): every mode (baseline,
Lantern, torch.profiler, nsys...) runs as its own process, all at the same time, and the
driver lets one timed block run at a time, mode after mode, the order reversed every other
round. Each traced block is then timed a few tens of milliseconds from a baseline block, so the
lent machines' slow swings (a whole run 25 % faster or slower than the next, docs/benchmarks.md)
hit both alike, and the figure is the median over rounds of each round's ratio to the baseline.

Protocol: the driver makes two FIFOs per mode in a folder it passes to the program
(`--lockstep DIR`); the program warms up, then for each line "g" read from DIR/go runs one block
(ending with a device synchronization) and writes its seconds per iteration as a line to
DIR/done; "q" ends it. Processes that wait sit blocked in read(), off the CPU and the GPU."""
import os
import select
import statistics
import subprocess


def serve(fifo_dir, run_block):
    """The program's side: run_block() -> seconds per iteration, once per "g"."""
    with open(os.path.join(fifo_dir, "go")) as go, open(os.path.join(fifo_dir, "done"), "w") as done:
        for line in go:
            if line.strip() != "g":
                break
            done.write(f"{run_block():.9f}\n")
            done.flush()


class _Mode:
    def __init__(self, name, argv, fifo_dir, cpus, log):
        self.name = name
        os.makedirs(fifo_dir, exist_ok=True)
        for end in ("go", "done"):
            os.mkfifo(os.path.join(fifo_dir, end))
        # O_RDWR opens a FIFO without waiting for the other side, and keeps our end open
        self.go = os.open(os.path.join(fifo_dir, "go"), os.O_RDWR)
        self.done = os.open(os.path.join(fifo_dir, "done"), os.O_RDWR)
        self.pending = b""
        self.log = open(log, "w")
        self.proc = subprocess.Popen((["taskset", "-c", cpus] if cpus else []) + argv,
                                     stdout=self.log, stderr=subprocess.STDOUT)

    def block(self, timeout):
        """One timed block: seconds per iteration, or None if the program died or hung."""
        os.write(self.go, b"g\n")
        waited = 0
        while b"\n" not in self.pending:
            ready, _, _ = select.select([self.done], [], [], 1.0)
            if ready:
                self.pending += os.read(self.done, 4096)
                continue
            waited += 1
            if self.proc.poll() is not None or waited > timeout:
                return None
        line, self.pending = self.pending.split(b"\n", 1)
        return float(line)

    def finish(self, timeout):
        os.write(self.go, b"q\n")
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        os.close(self.go)
        os.close(self.done)
        self.log.close()


def run(commands, rounds, cpus, work_dir, warmup_rounds=2, block_timeout=300):
    """commands: {name: f(fifo_dir) -> argv}, "baseline" among them. Returns {name: {"us":
    [µs per iteration per round], "ratio": [that / the round's baseline]}}; a mode whose
    program dies is reported (its log's end) and dropped."""
    modes = {name: _Mode(name, make(os.path.join(work_dir, name)), os.path.join(work_dir, name),
                         cpus, os.path.join(work_dir, name + ".log"))
             for name, make in commands.items()}
    samples = {name: {"us": [], "ratio": []} for name in modes}
    for r in range(warmup_rounds + rounds):
        order = list(modes) if r % 2 == 0 else list(reversed(modes))
        times = {}
        for name in order:
            seconds = modes[name].block(block_timeout)
            if seconds is None:
                print(f"{name}: no reply; dropped. Its output ends:", flush=True)
                modes[name].finish(5)
                print(open(os.path.join(work_dir, name + ".log")).read()[-2000:], flush=True)
                del modes[name]
                continue
            times[name] = seconds
        if r < warmup_rounds or "baseline" not in times:
            continue
        for name, seconds in times.items():
            samples[name]["us"].append(seconds * 1e6)
            samples[name]["ratio"].append(seconds / times["baseline"])
        print(f"round {r - warmup_rounds}: " + "  ".join(
            f"{n} {times[n] * 1e6:.3f}" for n in times), flush=True)
    for mode in modes.values():
        mode.finish(600)  # Lantern imports its trace here
    return {n: s for n, s in samples.items() if s["us"]}


def summary(name, s):
    """One line: median µs, median ratio to the baseline and its interquartile range."""
    q = statistics.quantiles(s["ratio"], n=4) if len(s["ratio"]) > 1 else [s["ratio"][0]] * 3
    return (f"{name:16s} median {statistics.median(s['us']):10.3f} us/iter  "
            f"x{statistics.median(s['ratio']):.4f}  (IQR {q[0]:.4f}-{q[2]:.4f}, {len(s['ratio'])} rounds)")
