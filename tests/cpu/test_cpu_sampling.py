"""CPU sampling (-t cpu) end to end: cpu_hot.c under `lantern profile`, checked with
cpu_sample_sum and SQL. Needs $LANTERN_BUILD, $CPU_HOT and $CPU_REFUSE (cpu_refuse.c, which
runs a command where perf_event_open fails with EACCES through a seccomp filter)."""
import json
import math
import os
import shutil
import sqlite3
import subprocess
import sys
import time

import pytest

from cpu_tests import perf_events_allowed  # tests/cpu/ is on the path

BUILD = os.environ.get("LANTERN_BUILD", "")
LANTERN = os.path.join(BUILD, "bin", "lantern")
CPU_HOT = os.environ.get("CPU_HOT", os.path.join(BUILD, "bin", "cpu_hot"))
CPU_REFUSE = os.environ.get("CPU_REFUSE", os.path.join(BUILD, "bin", "cpu_refuse"))


needs_perf = pytest.mark.skipif(not perf_events_allowed(),
                                reason="kernel.perf_event_paranoid > 2: no unprivileged sampling")


def run(cwd, *args, prefix=(), env=None, expect_status=0):
    done = subprocess.run([*prefix, LANTERN, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env={**os.environ, **(env or {})})
    assert done.returncode == expect_status, done.stderr
    return done


def measured_share(stdout):
    return float(next(l.split()[1] for l in stdout.splitlines() if l.startswith("hot_share")))


def cpu_rows(cwd, *options):
    out = run(cwd, "stats", "x.db", "-r", "cpu_sample_sum", "--format", "json", *options).stdout
    return json.loads(out)


@needs_perf
def test_hot_function_is_named_first_within_five_points_of_its_measured_share(tmp_path):
    prof = run(tmp_path, "profile", "-t", "nvtx", "--sample=cpu", "-o", "x.db", CPU_HOT, "2")
    share = measured_share(prof.stdout)
    assert 65 <= share <= 75, prof.stdout  # the program met its target
    report = cpu_rows(tmp_path, "--filter-nvtx", "work")
    rows = report["rows"]
    assert rows[0]["function"] == "hot_loop", rows[:3]
    assert abs(rows[0]["self_percent"] - share) <= 5, (rows[0], share)
    assert rows[1]["function"] == "warm_loop"
    assert report["session"]["cpu_sampling"].startswith("on, 1000 Hz")
    with sqlite3.connect(tmp_path / "x.db") as db:
        status, period, lost = db.execute(
            "SELECT status, period_ns, lost FROM cpu_sampling").fetchone()
        assert (status, period, lost) == ("on", 1000000, 0)
        # samples are on the common clock: inside the process's lifetime
        outside = db.execute("SELECT count(*) FROM cpu_samples s JOIN threads t"
                             " ON t.id = s.thread_id JOIN processes p ON p.id = t.process_id"
                             " WHERE s.ts_ns < p.start_ns OR s.ts_ns > p.end_ns").fetchone()[0]
        assert outside == 0
        # with frame pointers, hot_loop's caller chain reaches main
        callers = db.execute(
            "SELECT pf.name FROM cpu_callsites c JOIN cpu_frames f ON f.id = c.frame_id"
            " JOIN cpu_callsites p ON p.id = c.parent_id JOIN cpu_frames pf ON pf.id = p.frame_id"
            " WHERE f.name = 'hot_loop'").fetchall()
        assert ("main",) in callers  # run() is inlined into main


@needs_perf
def test_filter_nvtx_keeps_only_the_samples_inside_the_range(tmp_path):
    run(tmp_path, "profile", "-t", "nvtx,cpu", "-o", "x.db", CPU_HOT, "0.5")
    setup = cpu_rows(tmp_path, "--filter-nvtx", "setup")["rows"]
    assert all(r["function"] != "hot_loop" for r in setup), setup
    everything = cpu_rows(tmp_path)["rows"]
    assert sum(r["self"] for r in setup) < sum(r["self"] for r in everything)


@needs_perf
def test_threads_created_later_are_sampled(tmp_path):
    run(tmp_path, "profile", "-t", "nvtx,cpu", "-o", "x.db", CPU_HOT, "1",
        env={"CPU_HOT_THREADS": "2"})
    rows = cpu_rows(tmp_path)["rows"]
    threads = {r["thread"] for r in rows if r["function"] == "hot_loop"}
    assert len(threads) == 2, rows
    for r in rows:
        if r["function"] == "hot_loop":
            assert 60 <= r["self_percent"] <= 80, r


@needs_perf
def test_sampling_frequency_sets_the_period(tmp_path):
    run(tmp_path, "profile", "-t", "nvtx,cpu", "--sampling-frequency", "250", "-o", "x.db",
        CPU_HOT, "1")
    with sqlite3.connect(tmp_path / "x.db") as db:
        period, samples = db.execute("SELECT period_ns, samples FROM cpu_sampling").fetchone()
    assert period == 4000000
    assert 200 <= samples <= 300, samples  # ~1 s of CPU time at 250 Hz


def test_sample_none_records_no_samples_and_no_status(tmp_path):
    run(tmp_path, "profile", "-t", "nvtx,cpu", "--sample=none", "-o", "x.db", CPU_HOT, "0.2")
    with sqlite3.connect(tmp_path / "x.db") as db:
        assert db.execute("SELECT count(*) FROM cpu_sampling").fetchone()[0] == 0
        assert db.execute("SELECT count(*) FROM cpu_samples").fetchone()[0] == 0
        trace = db.execute("SELECT value FROM meta WHERE key = 'trace'").fetchone()[0]
    assert "cpu" not in trace.split(",")


def test_bad_sampling_options_are_usage_errors(tmp_path):
    for args in (["--sample=gpu"], ["--sampling-frequency", "0"],
                 ["--sampling-frequency", "20000"],
                 ["--sample=none", "--sampling-frequency", "100"]):
        done = run(tmp_path, "profile", "-t", "nvtx,cpu", *args, "-o", "x.db", CPU_HOT, "0.1",
                   expect_status=2)
        assert done.stderr.startswith("lantern:"), done.stderr


def timer_period_ns(hz=1000):
    """The CPU-time timers' period: the asked one, or the kernel's tick where that is longer
    (the resolution of CLOCK_MONOTONIC_COARSE, 6 on Linux)."""
    return max(1000000000 // hz, round(time.clock_getres(6) * 1e9))


def timer_share_bounds(cpu_s, wall_s):
    """How far a CPU-time timer's share may be under and over the program's own measure: 5
    points either way (the issue's) where the thread had a CPU to itself; where other programs
    kept it off its CPU for a tenth of its time or more, 5 under and 30 over. The ticks then
    see less of the code that calls the kernel and more of the long stretches, so a hot loop
    reads high, never low (docs/cpu.md, "Limits of the CPU-time timers": 4.7-6.0 points over
    with two busy loops beside cpu_hot on the dev VM's 2 CPUs, 37 % of its time off them; up
    to 16.2 over with three times more work than CPUs; 1.2-3.0 alone). The perf path's tests
    keep 5 points under any load."""
    return (5, 5) if wall_s - cpu_s < 0.1 * wall_s else (5, 30)


def within(sampled, measured, bounds):
    under, over = bounds
    return measured - under <= sampled <= measured + over


def cpu_hot_bounds(stdout):
    """timer_share_bounds of cpu_hot's main thread over its range "work"."""
    printed = dict(l.split()[:2] for l in stdout.splitlines()
                   if l.startswith(("cpu_ns ", "wall_ns ")))
    return timer_share_bounds(int(printed["cpu_ns"]) / 1e9, int(printed["wall_ns"]) / 1e9)


def test_refused_perf_events_fall_back_to_cpu_time_timers(tmp_path):
    """perf_event_open refused for real (cpu_refuse's seccomp filter): the threads are sampled
    by CPU-time timers, and the hot function's share is the program's own measure."""
    prof = run(tmp_path, "profile", "-t", "nvtx,cpu", "-o", "x.db", CPU_HOT, "3",
               prefix=[CPU_REFUSE])
    lines = [l for l in prof.stderr.splitlines() if "CPU sampling" in l]
    assert len(lines) == 1, prof.stderr
    assert lines[0].startswith("lantern: CPU sampling falls back to CPU-time timers"), lines
    assert "perf_event_open was refused" in lines[0]
    share = measured_share(prof.stdout)
    cpu_ns = int(next(l.split()[1] for l in prof.stdout.splitlines() if l.startswith("cpu_ns")))
    report = cpu_rows(tmp_path, "--filter-nvtx", "work")
    rows = report["rows"]
    assert rows[0]["function"] == "hot_loop", rows[:3]
    bounds = cpu_hot_bounds(prof.stdout)
    assert within(rows[0]["self_percent"], share, bounds), (rows[0], share, bounds)
    assert rows[1]["function"] == "warm_loop"
    header = report["session"]["cpu_sampling"]
    assert header.startswith("on (CPU-time timers"), header
    assert "perf_event_open was refused" in header
    period = timer_period_ns()
    assert f", {1000000000 // period} Hz: " in header, header
    text = run(tmp_path, "stats", "x.db").stdout
    assert "CPU sampling:    on (CPU-time timers" in text, text
    with sqlite3.connect(tmp_path / "x.db") as db:
        status, period_ns, reason, samples, lost = db.execute(
            "SELECT status, period_ns, reason, samples, lost FROM cpu_sampling").fetchone()
        assert status == "on" and reason.startswith("CPU-time timers"), reason
        assert period_ns == period
        # each period of the thread's CPU time is a sample's row (a late tick folds expiries
        # into one signal: its sample stands for them) or counted lost: the work's CPU time,
        # and the process's start and setup
        stored = db.execute("SELECT count(*) FROM cpu_samples").fetchone()[0]
        assert 0.9 * cpu_ns / period <= samples + lost <= 1.1 * cpu_ns / period + 10, (
            samples, lost, cpu_ns / period)
        assert stored == samples, (stored, samples, lost)
        assert_few_lost(db, samples, lost)
        outside = db.execute("SELECT count(*) FROM cpu_samples s JOIN threads t"
                             " ON t.id = s.thread_id JOIN processes p ON p.id = t.process_id"
                             " WHERE s.ts_ns < p.start_ns OR s.ts_ns > p.end_ns").fetchone()[0]
        assert outside == 0
        # the handler walked the frame pointers: hot_loop's caller is main
        callers = db.execute(
            "SELECT pf.name FROM cpu_callsites c JOIN cpu_frames f ON f.id = c.frame_id"
            " JOIN cpu_callsites p ON p.id = c.parent_id JOIN cpu_frames pf ON pf.id = p.frame_id"
            " WHERE f.name = 'hot_loop'").fetchall()
        assert ("main",) in callers
        ranges = db.execute("SELECT s.value FROM ranges r JOIN strings s ON s.id = r.name_id"
                            " WHERE r.end_ns IS NOT NULL ORDER BY r.start_ns").fetchall()
    assert ranges == [("setup",), ("work",)]  # the rest of the profile is there


def assert_few_lost(db, samples, lost, *context):
    """A late tick's folded expiries are weighted, not lost (unweighted, two threads sharing a
    CPU lost 28 % of their periods). What may still be lost, counted: a fold of 16 or more (the
    signal blocked, or a vCPU the host stole and the guest charged as CPU time; a loaded CI run
    lost 22 of 750 periods) and samples a stalled writer had no room for."""
    dropped = db.execute("SELECT value FROM meta WHERE key = 'dropped_events'").fetchone()
    assert lost <= 0.05 * (samples + lost), (samples, lost, "dropped", dropped, *context)


def thread_cpu_ns(stdout):
    """cpu_hot's "thread_cpu_ns TID NS" lines: {tid: its CPU time}."""
    return {int(l.split()[1]): int(l.split()[2]) for l in stdout.splitlines()
            if l.startswith("thread_cpu_ns ")}


@pytest.mark.skipif(not shutil.which("taskset"), reason="no taskset to share one CPU")
def test_cpu_time_timers_weigh_the_expiries_a_late_tick_folds(tmp_path):
    """Two spinning threads share one CPU (taskset): a thread's tick often comes late, and the
    kernel folds its timer's expiries into one signal (si_overrun). The sample stands for all
    of them: each thread's samples are its CPU time over the period, within 10 %, and none of
    the folded expiries is counted lost."""
    prof = run(tmp_path, "profile", "-t", "nvtx,cpu", "-o", "x.db", CPU_HOT, "2",
               prefix=["taskset", "-c", "0", CPU_REFUSE], env={"CPU_HOT_THREADS": "2"})
    cpu = thread_cpu_ns(prof.stdout)
    assert len(cpu) == 2, prof.stdout
    period = timer_period_ns()
    with sqlite3.connect(tmp_path / "x.db") as db:
        samples, lost = db.execute("SELECT samples, lost FROM cpu_sampling").fetchone()
        stored = dict(db.execute("SELECT t.tid, count(*) FROM cpu_samples s"
                                 " JOIN threads t ON t.id = s.thread_id GROUP BY t.tid"))
        folded = db.execute("SELECT count(*) FROM (SELECT 1 FROM cpu_samples"
                            " GROUP BY thread_id, ts_ns HAVING count(*) > 1)").fetchone()[0]
    for tid, ns in cpu.items():
        assert 0.9 * ns / period <= stored.get(tid, 0) <= 1.1 * ns / period + 5, (
            tid, stored, ns / period, folded)
    assert sum(stored.values()) == samples, (stored, samples)
    assert_few_lost(db, samples, lost, folded)


def test_refused_sampling_says_one_line_and_keeps_the_rest(tmp_path):
    """perf_event_open refused (the seccomp filter) and the timers too (LANTERN_TEST_CPU_REFUSE):
    sampling is off, said once, and the rest is recorded."""
    done = run(tmp_path, "profile", "-t", "nvtx,cpu", "-o", "x.db", CPU_HOT, "0.3",
               prefix=[CPU_REFUSE], env={"LANTERN_TEST_CPU_REFUSE": "1"})
    lines = [l for l in done.stderr.splitlines() if "CPU sampling" in l]
    assert len(lines) == 1 and lines[0].startswith("lantern: CPU sampling is off"), done.stderr
    assert "refused" in lines[0] and "no CPU-time timer either" in lines[0]
    with sqlite3.connect(tmp_path / "x.db") as db:
        status, = db.execute("SELECT status FROM cpu_sampling").fetchone()
        assert status == "not permitted"
        assert db.execute("SELECT count(*) FROM cpu_samples").fetchone()[0] == 0
        ranges = db.execute("SELECT s.value FROM ranges r JOIN strings s ON s.id = r.name_id"
                            " WHERE r.end_ns IS NOT NULL ORDER BY r.start_ns").fetchall()
    assert ranges == [("setup",), ("work",)]  # the rest of the profile is there
    header = run(tmp_path, "stats", "x.db").stdout
    assert "CPU sampling:    off in pid" in header and "not permitted" in header
    empty = run(tmp_path, "stats", "x.db", "-r", "cpu_sample_sum")
    assert "not permitted" in empty.stderr


def test_cpu_time_timers_sample_threads_and_a_fork_child(tmp_path):
    """Under the refusal: a thread created later gets its timer, and a fork child (which
    inherits no timer) its own, in its own file."""
    prof = run(tmp_path, "profile", "-t", "nvtx,cpu", "-o", "x.db", CPU_HOT, "1",
               prefix=[CPU_REFUSE], env={"CPU_HOT_FORK": "1", "CPU_HOT_THREADS": "2"})
    with sqlite3.connect(tmp_path / "x.db") as db:
        statuses = db.execute("SELECT c.status, c.reason, c.samples, c.lost FROM cpu_sampling c"
                              " JOIN processes p ON p.id = c.process_id ORDER BY p.start_ns"
                              ).fetchall()
    assert [s[0] for s in statuses] == ["on", "on"], statuses
    assert all(s[1].startswith("CPU-time timers") for s in statuses), statuses
    per_second = 1e9 / timer_period_ns()
    # two threads of ~1 s of CPU each, and setup
    assert all(1.6 * per_second <= s[2] + s[3] <= 2.6 * per_second for s in statuses), statuses
    hot = [r for r in cpu_rows(tmp_path)["rows"] if r["function"] == "hot_loop"]
    assert len({r["thread"] for r in hot}) == 4, hot  # two threads in each process
    assert len({r["process"] for r in hot}) == 2
    # four threads on the VM's two loaded cores: many ticks come late, and their folded periods
    # are weighted at the stack the tick lands on, which favours the code that runs in long
    # stretches: hot_loop read 71-86 in three runs here (one run unweighted: 78), against 70
    # (docs/cpu.md, "Limits of the CPU-time timers"), and 76-91 in the ASan build with two busy
    # loops beside it (~200 samples a thread: three standard errors are 9 points)
    assert all(60 <= r["self_percent"] <= 95 for r in hot), hot


def test_a_program_that_takes_the_timers_signal_keeps_working(tmp_path):
    """cpu_hot installs its own handler for SIGRTMAX (the timers' signal) halfway: its handler
    runs, it ends normally, sampling stops there (said once) and the samples before stay."""
    prof = run(tmp_path, "profile", "-t", "nvtx,cpu", "-o", "x.db", CPU_HOT, "2",
               prefix=[CPU_REFUSE], env={"CPU_HOT_TAKE_SIGNAL": "1"})
    out = dict(l.split()[:2] for l in prof.stdout.splitlines())
    assert out["own_signals"] == "1", prof.stdout  # its raise() reached its handler
    lines = [l for l in prof.stderr.splitlines() if "CPU sampling stops" in l]
    assert len(lines) == 1 and "its own handler for signal" in lines[0], prof.stderr
    with sqlite3.connect(tmp_path / "x.db") as db:
        reason, samples = db.execute("SELECT reason, samples FROM cpu_sampling").fetchone()
        last = db.execute("SELECT max(ts_ns) FROM cpu_samples").fetchone()[0]
    assert "stopped: the program installed its own handler" in reason, reason
    # ~1 s of CPU before the handler, none after it: the agent's handler no longer runs
    assert samples >= 0.6 * 1e9 / timer_period_ns(), samples
    assert last <= int(out["own_signal_at"]), (last, out)


def test_cpu_time_timers_on_an_alternate_stack_and_a_blocked_signal(tmp_path):
    """The worker runs handlers on an alternate signal stack (the handler still walks the
    interrupted stack: its registers come from the ucontext), and blocks every signal for the
    first half of its CPU time: it is sampled in the second half only, the first half's periods
    are counted lost (the kernel folds them into the signal delivered at the unblock), and
    the program runs to its end."""
    prof = run(tmp_path, "profile", "-t", "nvtx,cpu", "-o", "x.db", CPU_HOT, "3",
               prefix=[CPU_REFUSE], env={"CPU_HOT_ALTSTACK": "1", "CPU_HOT_BLOCK": "1"})
    share = measured_share(prof.stdout)
    cpu_ns = int(next(l.split()[1] for l in prof.stdout.splitlines() if l.startswith("cpu_ns")))
    rows = cpu_rows(tmp_path, "--filter-nvtx", "work")["rows"]
    assert rows[0]["function"] == "hot_loop", rows[:3]
    # half the run sampled at the tick's rate: a few hundred samples, whose share of a 70 %
    # function spreads by ~2.4 points (a CI run read 64.5 for 69.9): 5 points or three
    # standard errors, whichever is more (timer_share_bounds: 30 over where others competed)
    n = rows[0]["self"] * 100 / rows[0]["self_percent"]
    spread = 300 * math.sqrt(share / 100 * (1 - share / 100) / n)
    bounds = tuple(max(b, spread) for b in cpu_hot_bounds(prof.stdout))
    assert within(rows[0]["self_percent"], share, bounds), (rows[0], share, n, bounds)
    periods = cpu_ns / timer_period_ns()
    with sqlite3.connect(tmp_path / "x.db") as db:
        samples, lost = db.execute("SELECT samples, lost FROM cpu_sampling").fetchone()
        callers = db.execute(
            "SELECT pf.name FROM cpu_callsites c JOIN cpu_frames f ON f.id = c.frame_id"
            " JOIN cpu_callsites p ON p.id = c.parent_id JOIN cpu_frames pf ON pf.id = p.frame_id"
            " WHERE f.name = 'hot_loop'").fetchall()
    assert ("main",) in callers
    assert samples <= 0.6 * periods and lost >= 0.4 * periods, (samples, lost, periods)
    assert 0.9 * periods <= samples + lost <= 1.1 * periods + 10, (samples, lost, periods)


def test_a_thread_that_blocks_the_timers_signal_is_counted_unsampled(tmp_path):
    """The second worker blocks every signal all its life: it takes no sample, and the header
    says one thread was not sampled; the first is sampled as ever."""
    run(tmp_path, "profile", "-t", "nvtx,cpu", "-o", "x.db", CPU_HOT, "1", prefix=[CPU_REFUSE],
        env={"CPU_HOT_THREADS": "2", "CPU_HOT_BLOCK": "2"})
    with sqlite3.connect(tmp_path / "x.db") as db:
        threads, unsampled = db.execute(
            "SELECT threads, threads_unsampled FROM cpu_sampling").fetchone()
        sampled = db.execute("SELECT count(DISTINCT thread_id) FROM cpu_samples").fetchone()[0]
    assert (threads, unsampled, sampled) == (1, 1, 1), (threads, unsampled, sampled)
    header = run(tmp_path, "stats", "x.db").stdout
    assert "samples of 1 thread (" in header and "; 1 threads not sampled" in header, header


PY_HOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "py_hot.py")


def test_a_python_program_under_the_refusal_gets_python_frames(tmp_path):
    prof = run(tmp_path, "profile", "-t", "cpu", "-o", "x.db", sys.executable, PY_HOT, "2",
               prefix=[CPU_REFUSE])
    main = next(l.split() for l in prof.stdout.splitlines() if l.startswith("main hot_share"))
    hot, off_cpu_s, cpu_s = float(main[2]), float(main[6]), float(main[8])
    bounds = timer_share_bounds(cpu_s, cpu_s + off_cpu_s)
    rows = cpu_rows(tmp_path)["rows"]
    assert (rows[0]["function"], rows[0]["module"]) == ("hot", "py_hot.py"), rows[:3]
    assert within(rows[0]["self_percent"], hot, bounds), (rows[0], hot, bounds)
    with sqlite3.connect(tmp_path / "x.db") as db:
        reason, python_status, matched, samples = db.execute(
            "SELECT reason, python_status, python_matched, samples FROM cpu_sampling").fetchone()
    assert reason.startswith("CPU-time timers") and python_status == "on", reason
    assert matched >= 0.7 * samples, (matched, samples)


@needs_perf
def test_a_fork_child_is_sampled_in_its_own_file(tmp_path):
    prof = run(tmp_path, "profile", "-t", "nvtx,cpu", "-o", "x.db", CPU_HOT, "1",
               env={"CPU_HOT_FORK": "1"})
    with sqlite3.connect(tmp_path / "x.db") as db:
        statuses = db.execute("SELECT p.pid, c.status, c.samples FROM cpu_sampling c"
                              " JOIN processes p ON p.id = c.process_id ORDER BY p.start_ns").fetchall()
        assert [s[1] for s in statuses] == ["on", "on"], statuses
        assert all(600 <= s[2] <= 1400 for s in statuses), statuses  # ~1 s of CPU each
    rows = cpu_rows(tmp_path, "--filter-nvtx", "work")["rows"]
    firsts = {}
    for r in rows:  # the first row of each thread
        firsts.setdefault(r["thread"], r)
    assert len(firsts) == 2, rows
    assert all(r["function"] == "hot_loop" and 60 <= r["self_percent"] <= 80
               for r in firsts.values()), firsts


@needs_perf
def test_ten_kilohertz_loses_nothing(tmp_path):
    run(tmp_path, "profile", "-t", "nvtx,cpu", "--sampling-frequency", "10000", "-o", "x.db",
        CPU_HOT, "0.5")
    with sqlite3.connect(tmp_path / "x.db") as db:
        samples, lost = db.execute("SELECT samples, lost FROM cpu_sampling").fetchone()
        stored = db.execute("SELECT count(*) FROM cpu_samples").fetchone()[0]
    assert lost == 0 and stored == samples and samples >= 4000, (samples, lost, stored)


PYTHON_HOT = """
import time
def hot(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
t0 = time.process_time()
while time.process_time() - t0 < 0.5:
    hot(30000)
"""


@needs_perf
def test_a_python_program_without_nvtx_is_sampled_from_its_start(tmp_path):
    run(tmp_path, "profile", "-t", "nvtx,cpu", "-o", "x.db", sys.executable, "-c", PYTHON_HOT)
    with sqlite3.connect(tmp_path / "x.db") as db:
        status, samples = db.execute("SELECT status, samples FROM cpu_sampling").fetchone()
        assert status == "on" and samples >= 300, samples  # 0.5 s of CPU, and start-up
        # the interpreter's own functions are named (native frames; Python frames: docs/cpu.md)
        named = db.execute("SELECT count(*) FROM cpu_frames WHERE name LIKE '%Eval%'").fetchone()[0]
        assert named >= 1
    # without -t cpu the bootstrap starts nothing: no raw file, no process
    run(tmp_path, "profile", "-t", "nvtx", "-f", "-o", "x.db", sys.executable, "-c", "pass")
    with sqlite3.connect(tmp_path / "x.db") as db:
        assert db.execute("SELECT count(*) FROM processes").fetchone()[0] == 0
