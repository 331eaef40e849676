"""What thread states (the sampled threads' context switches, docs/cpu.md "Thread states") cost:
`lantern profile --sample=cpu` with them (the default) against LANTERN_CPU_STATES=0, in
alternating rounds (bench/alternate.py's habit), on
  pingpong  tests/cpu/cpu_states.c's pipe ping-pong (two threads, a switch each way per round
            trip: the switch-heavy case), round trips per second of the ping thread's CPU time
            (user and system: the kernel writes the switch records in the switching thread);
  hot       tests/cpu/cpu_hot.c (a CPU-bound thread, few switches), work per second of CPU time.
The ratio per pair (without / with: above 1 is a slowdown), its median and range; with them,
the switches and rows (cpu_thread_states) per second, and the raw trace's bytes per switch
(the growth of the trace files over the arm without states, per switch-out recorded).
Usage: python3 bench/bench_thread_states.py BUILD [ROUNDS] [PROGRAM] [AMOUNT]"""
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile


def command(build, program, amount):
    if program == "pingpong":
        return [os.path.join(build, "bin", "cpu_states"), "pingpong", str(amount)]
    return [os.path.join(build, "bin", "cpu_hot"), str(amount)]


def measure(program, out, amount):
    for line in out.splitlines():
        words = line.split()
        if program == "pingpong" and words[:1] == ["ping"]:  # per second of ping's CPU time
            return amount / (int(words[words.index("cpu_ns") + 1]) / 1e9)
        if program == "hot" and words[:1] == ["iterations_per_cpu_s"]:
            return float(words[1])
    raise ValueError(out)


def raw_bytes(folder):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(folder) for f in fs)


def run(build, program, amount, states, folder):
    db = os.path.join(folder, f"{states}.db")
    args = [os.path.join(build, "bin", "lantern"), "profile", "-f", "-t", "nvtx", "--sample=cpu",
            "--keep-raw", "-o", db]
    env = {**os.environ, "LANTERN_CPU_STATES": str(states)}
    out = subprocess.run(args + command(build, program, amount), capture_output=True, text=True,
                         check=True, env=env).stdout
    with sqlite3.connect(db) as con:
        switches, lost = con.execute("SELECT ifnull(sum(switches), 0), sum(lost)"
                                     " FROM cpu_sampling").fetchone()
        rows = con.execute("SELECT count(*) FROM cpu_thread_states").fetchone()[0]
        seconds = con.execute("SELECT (max(end_ns) - min(start_ns)) / 1e9 FROM processes").fetchone()[0]
    return measure(program, out, amount), switches, rows, seconds, lost, raw_bytes(db + ".raw")


def main():
    build = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    program = sys.argv[3] if len(sys.argv) > 3 else "pingpong"
    amount = sys.argv[4] if len(sys.argv) > 4 else ("100000" if program == "pingpong" else "2")
    amount = int(amount) if program == "pingpong" else float(amount)
    ratios, per_s, rows_s, per_switch, lost = [], [], [], [], 0
    rates = {0: [], 1: []}
    with tempfile.TemporaryDirectory() as folder:
        for i in range(rounds):
            order = (0, 1) if i % 2 == 0 else (1, 0)
            got = {s: run(build, program, amount, s, folder) for s in order}
            ratios.append(got[0][0] / got[1][0])
            for arm in (0, 1):
                rates[arm].append(got[arm][0])
            rate, switches, rows, seconds, lost_now, size = got[1]
            per_s.append(switches / seconds)
            rows_s.append(rows / seconds)
            lost += lost_now
            if switches:
                per_switch.append((size - got[0][5]) / switches)
    med = statistics.median(ratios)
    print(f"{program} {amount}: {rounds} rounds")
    print(f"slowdown without / with thread states: median x{med:.4f} ({(med - 1) * 100:+.2f} %),"
          f" range x{min(ratios):.4f}-x{max(ratios):.4f}")
    print(f"switch-outs recorded: median {statistics.median(per_s):.0f}/s; rows written: median"
          f" {statistics.median(rows_s):.0f}/s; kernel records lost: {lost}")
    if program == "pingpong":  # ping's CPU per round trip: one switch-out each way
        trip = {arm: 1e6 / statistics.median(rates[arm]) for arm in (0, 1)}
        print(f"ping's CPU per round trip: median {trip[0]:.2f} us without, {trip[1]:.2f} us with")
    if per_switch:
        print(f"raw trace bytes per switch-out: median {statistics.median(per_switch):.1f}")


if __name__ == "__main__":
    main()
