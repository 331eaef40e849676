"""Alternating rounds for the GPU overhead benchmarks (bench_cuda.py, bench_pytrace.py): each
mode is a command that prints `per_iter_us=X` (and, paired, `paired_ratio=R`; every other
`name=X` line is kept too); every round runs every mode once, in an order reversed every
other round, so drift (clocks, caches, neighbours) hits every mode alike."""
import subprocess
import time


def timed_run(cmd, cpus=None, timeout=240):
    """Runs one command (pinned to `cpus` if given); returns ({name: value} for every numeric
    `name=X` it printed, plus wall_s, the whole run's wall time), the run)."""
    # Every mode on the same CPUs, so where the scheduler puts a run does not decide its figure.
    if cpus:
        cmd = ["taskset", "-c", cpus] + cmd
    t0 = time.perf_counter()
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    values = {"wall_s": time.perf_counter() - t0}
    for token in run.stdout.split():
        name, sep, value = token.partition("=")
        if sep:
            try:
                values[name] = float(value)
            except ValueError:
                pass
    return values, run


def alternate_rounds(modes, workload, rounds, cpus, key="per_iter_us"):
    """modes: {name: f(workload, round) -> command, or None where the mode does not apply}.
    Returns {name: [{value name: value} for each run]}; a run that prints no `key=X` is
    reported with its stderr and left out."""
    samples = {m: [] for m in modes}
    for r in range(rounds):
        order = list(modes) if r % 2 == 0 else list(reversed(modes))
        for mode in order:
            cmd = modes[mode](workload, r)
            if cmd is None:
                continue
            values, run = timed_run(cmd, cpus)
            if key not in values:
                print(f"{workload}/{mode}: no timing (exit {run.returncode}):\n"
                      f"{run.stderr[-2000:]}", flush=True)
                continue
            samples[mode].append(values)
            print(f"{workload} round {r} {mode}: " +
                  "  ".join(f"{k} {v:.4f}" for k, v in values.items()), flush=True)
    return samples
