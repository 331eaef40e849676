"""Alternating rounds for the GPU overhead benchmarks (bench_cuda.py, bench_pytrace.py): each
mode is a command that prints `per_iter_us=X`; every round runs every mode once, in an order
reversed every other round, so drift (clocks, caches, neighbours) hits every mode alike."""
import subprocess


def timed_run(cmd, cpus):
    """Runs one command (pinned to `cpus` if given); returns (µs per iteration or None, run)."""
    # Every mode on the same CPUs, so where the scheduler puts a run does not decide its figure.
    if cpus:
        cmd = ["taskset", "-c", cpus] + cmd
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    for line in run.stdout.splitlines():
        if line.startswith("per_iter_us="):
            return float(line.split("=", 1)[1]), run
    return None, run


def alternate_rounds(modes, workload, rounds, cpus):
    """modes: {name: f(workload, round) -> command, or None where the mode does not apply}.
    Returns {name: [µs per iteration, ...]}; a run that prints no timing is reported with its
    stderr and left out."""
    samples = {m: [] for m in modes}
    for r in range(rounds):
        order = list(modes) if r % 2 == 0 else list(reversed(modes))
        for mode in order:
            cmd = modes[mode](workload, r)
            if cmd is None:
                continue
            value, run = timed_run(cmd, cpus)
            if value is None:
                print(f"{workload}/{mode}: no timing (exit {run.returncode}):\n"
                      f"{run.stderr[-2000:]}", flush=True)
                continue
            samples[mode].append(value)
            print(f"{workload} round {r} {mode}: {value:.3f} us/iter", flush=True)
    return samples
