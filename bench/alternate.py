"""Alternating rounds for the GPU overhead benchmarks (bench_cuda.py, bench_pytrace.py): each
mode is a command that prints `per_iter_us=X` (and, paired, `paired_ratio=R`); every round
runs every mode once, in an order reversed every other round, so drift (clocks, caches,
neighbours) hits every mode alike."""
import subprocess


def timed_run(cmd, cpus, key="per_iter_us"):
    """Runs one command (pinned to `cpus` if given); returns (the value it printed as
    `key=X`, or None; the run)."""
    # Every mode on the same CPUs, so where the scheduler puts a run does not decide its figure.
    if cpus:
        cmd = ["taskset", "-c", cpus] + cmd
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    for line in run.stdout.splitlines():
        if line.startswith(key + "="):
            return float(line.split("=", 1)[1]), run
    return None, run


def alternate_rounds(modes, workload, rounds, cpus, key="per_iter_us"):
    """modes: {name: f(workload, round) -> command, or None where the mode does not apply}.
    Returns {name: [the value each run printed as `key=X`, ...]}; a run that prints none is
    reported with its stderr and left out."""
    samples = {m: [] for m in modes}
    for r in range(rounds):
        order = list(modes) if r % 2 == 0 else list(reversed(modes))
        for mode in order:
            cmd = modes[mode](workload, r)
            if cmd is None:
                continue
            value, run = timed_run(cmd, cpus, key)
            if value is None:
                print(f"{workload}/{mode}: no timing (exit {run.returncode}):\n"
                      f"{run.stderr[-2000:]}", flush=True)
                continue
            samples[mode].append(value)
            print(f"{workload} round {r} {mode}: {key} {value:.4f}", flush=True)
    return samples
