"""Python stacks in the CPU samples end to end: py_hot.py under `lantern profile`, checked with
cpu_sample_sum and SQL against what the program measured itself (time.thread_time() around
its calls), and against py-spy's own samples where py-spy is installed. Needs $LANTERN_BUILD
and $CPU_HOT; $PY_SPY may name py-spy (else it is looked for on PATH)."""
import collections
import json
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

from cpu_tests import perf_events_allowed  # tests/cpu/ is on the path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "export"))

BUILD = os.environ.get("LANTERN_BUILD", "")
LANTERN = os.path.join(BUILD, "bin", "lantern")
CPU_HOT = os.environ.get("CPU_HOT", os.path.join(BUILD, "bin", "cpu_hot"))
PY_HOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "py_hot.py")
PY_FIVE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "py_five.py")
PY_SPY = os.environ.get("PY_SPY") or shutil.which("py-spy")


pytestmark = pytest.mark.skipif(not perf_events_allowed(),
                                reason="kernel.perf_event_paranoid > 2: no unprivileged sampling")


def run(cwd, *args):
    done = subprocess.run([LANTERN, *args], cwd=cwd, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    return done


def measured(stdout):
    """{worker: (hot %, warm %, wall not on a CPU s, CPU s)} as py_hot.py printed them."""
    out = {}
    for line in stdout.splitlines():
        f = line.split()
        if len(f) == 9 and f[1] == "hot_share":
            out[f[0]] = (float(f[2]), float(f[4]), float(f[6]), float(f[8]))
    return out


def rows_by_thread(cwd):
    out = run(cwd, "stats", "x.db", "-r", "cpu_sample_sum", "--format", "json").stdout
    by_thread = collections.defaultdict(list)
    for r in json.loads(out)["rows"]:
        by_thread[r["thread"]].append(r)
    return by_thread


def static_python():
    """A CPython 3.10-3.13 executable with the interpreter linked in (no libpython), as
    Debian's and Ubuntu's /usr/bin/python3.X are; None if this machine has none."""
    for minor in (13, 12, 11, 10):
        path = shutil.which(f"python3.{minor}", path="/usr/bin:/usr/local/bin")
        if path and "libpython" not in subprocess.run(["ldd", path], capture_output=True,
                                                      text=True).stdout:
            return path
    return None


def test_a_venv_link_to_an_interpreter_linked_into_its_executable(tmp_path):
    """A venv's python3 is a link to /usr/bin/python3.X, whose interpreter is in the executable
    itself: the interpreter's frames (stripped: python3.X+0x...) are still told apart by its
    real path. The venv's name for it made them the leaf of 58 % of a hot loop's samples (the
    GPU host's Python 3.12.3); the hot function is first again."""
    python = static_python()
    if not python:
        pytest.skip("no python3.X executable with the interpreter linked in")
    (tmp_path / "venv").mkdir()
    os.symlink(python, tmp_path / "venv" / "python3")
    prof = run(tmp_path, "profile", "-t", "cpu", "-o", "x.db", str(tmp_path / "venv" / "python3"),
               PY_HOT, "2")
    hot, _, _, _ = measured(prof.stdout)["main"]
    (rows,) = rows_by_thread(tmp_path).values()
    assert (rows[0]["function"], rows[0]["module"]) == ("hot", "py_hot.py"), rows[:3]
    assert abs(rows[0]["self_percent"] - hot) <= 5, (rows[0], hot)


def test_the_hot_python_function_is_named_first_within_five_points(tmp_path):
    prof = run(tmp_path, "profile", "-t", "cpu", "-o", "x.db", sys.executable, PY_HOT, "2")
    hot, warm, _, _ = measured(prof.stdout)["main"]
    assert 50 <= hot <= 90, prof.stdout  # about its 70 % (57.7 once on a loaded CI machine)
    (rows,) = rows_by_thread(tmp_path).values()
    assert (rows[0]["function"], rows[0]["module"]) == ("hot", "py_hot.py"), rows[:3]
    assert abs(rows[0]["self_percent"] - hot) <= 5, (rows[0], hot)
    assert rows[1]["function"] == "warm" and abs(rows[1]["self_percent"] - warm) <= 5, rows[1]
    work = next(r for r in rows if r["function"] == "work")
    assert work["total_percent"] >= 90, work  # the callers are there too
    with sqlite3.connect(tmp_path / "x.db") as db:
        status, lost, unreadable, matched, unmatched, samples = db.execute(
            "SELECT python_status, python_lost, python_unreadable, python_matched,"
            " python_unmatched, samples FROM cpu_sampling").fetchone()
        assert (status, lost) == ("on", 0)
        assert matched >= 0.9 * samples and matched + unmatched <= samples
        # a Python frame names its file and first line
        file, line = db.execute("SELECT file, line FROM cpu_frames WHERE name = 'hot'").fetchone()
        with open(PY_HOT) as source:
            defined = next(i for i, l in enumerate(source, 1) if l.startswith("def hot("))
        assert (file, line) == (PY_HOT, defined)


def test_threading_workers_are_named_by_their_python_functions(tmp_path):
    prof = run(tmp_path, "profile", "-t", "cpu", "-o", "x.db", sys.executable, PY_HOT, "1", "2")
    shares = measured(prof.stdout)
    by_thread = rows_by_thread(tmp_path)
    for name in ("w0", "w1"):
        rows = next(v for k, v in by_thread.items() if k.endswith(f"({name})"))
        assert rows[0]["function"] == "hot", rows[:3]
        assert rows[1]["function"] == "warm", rows[:3]
        # among the samples that got a Python stack: on a loaded machine the sampler thread
        # waits for a CPU too, and a sample with no look near keeps its native frames
        python = sum(r["self"] for r in rows if r["module"].endswith(".py"))
        share = 100 * rows[0]["self"] / python
        assert abs(share - shares[name][0]) <= 5, (rows[0], python, shares[name])
    with sqlite3.connect(tmp_path / "x.db") as db:
        matched, samples = db.execute(
            "SELECT python_matched, samples FROM cpu_sampling").fetchone()
    assert matched >= 0.7 * samples, (matched, samples)


def test_gil_waits_are_the_other_workers_time_and_not_a_join(tmp_path):
    prof = run(tmp_path, "profile", "-t", "cpu", "-o", "x.db", sys.executable, PY_HOT, "1", "2")
    shares = measured(prof.stdout)
    with sqlite3.connect(tmp_path / "x.db") as db:
        waits = dict(db.execute(
            "SELECT t.label, sum(w.duration_ns) / 1e9 FROM cpu_gil_waits w"
            " JOIN thread_labels t ON t.id = w.thread_id GROUP BY t.id").fetchall())
        # a wait has the Python stack it waits in (none while a thread starts or ends)
        assert db.execute("SELECT count(*) FROM cpu_gil_waits WHERE stack_id IS NULL"
                          ).fetchone()[0] <= 0.05 * db.execute(
                              "SELECT count(*) FROM cpu_gil_waits").fetchone()[0]
    for name, other in (("w0", "w1"), ("w1", "w0")):
        # it waits while the other one holds the GIL, and never longer than it was off-CPU;
        # at least a fifth of the other's CPU time is seen: on a loaded 2-core machine the
        # sampler thread waits for a CPU too and misses looks (half failed 1 run in 3 there)
        _, _, off_cpu, _ = shares[name]
        assert 0.2 * shares[other][3] <= waits.get(name, 0) <= 1.1 * off_cpu + 0.05, (
            name, waits, shares)
    main = sum(v for k, v in waits.items() if k not in ("w0", "w1"))
    assert main < 0.1, waits  # the main thread's join() is no GIL wait


def test_python_gil_sum_and_the_exports_show_the_workers_gil_waits(tmp_path):
    """Two workers taking the GIL in turn: python_gil_sum lists both, each row's wait and count
    the sums of its cpu_gil_waits rows, its share of the thread's wall time as much as the
    program's own measure allows (it waits while the other one runs: at least a fifth of the
    other's CPU time, never more than its wall time off a CPU), waiting in hot and warm; the
    Chrome and Perfetto exports put each wait on its thread as a "GIL wait" slice."""
    prof = run(tmp_path, "profile", "-t", "cpu", "-o", "x.db", sys.executable, PY_HOT, "1", "2")
    shares = measured(prof.stdout)
    report = json.loads(run(tmp_path, "stats", "x.db", "-r", "python_gil_sum", "--format",
                            "json").stdout)
    with sqlite3.connect(tmp_path / "x.db") as db:
        truth = {tid: (ns, n) for tid, ns, n in db.execute(
            "SELECT t.tid, sum(w.duration_ns), count(*) FROM cpu_gil_waits w"
            " JOIN threads t ON t.id = w.thread_id GROUP BY t.id")}
        waits = collections.Counter((tid, start, end) for tid, start, end in db.execute(
            "SELECT t.tid, w.ts_ns - w.duration_ns, w.ts_ns FROM cpu_gil_waits w"
            " JOIN threads t ON t.id = w.thread_id"))
        origin = db.execute("SELECT value FROM meta WHERE key = 'start_ns'").fetchone()[0]
    rows = {int(r["thread"].split()[0]): r for r in report["rows"]}
    assert {tid: (r["wait_ns"], r["waits"]) for tid, r in rows.items()} == truth
    for name, other in (("w0", "w1"), ("w1", "w0")):
        row = next(r for r in report["rows"] if r["thread"].endswith(f"({name})"))
        off_cpu, cpu = shares[name][2], shares[name][3]
        assert 0.2 * shares[other][3] <= row["wait_ns"] / 1e9 <= 1.1 * off_cpu + 0.05, (row, shares)
        # its span from its first record to its last: the worker's wall time, but for up to
        # 100 ms before its first sample (new threads are found every 100 ms)
        wall = off_cpu + cpu
        assert 0.85 * wall <= row["wall_ns"] / 1e9 <= 1.1 * wall + 0.05, (row, shares)
        assert abs(row["wait_percent"] - 100 * row["wait_ns"] / row["wall_ns"]) < 0.01
        assert row["functions"].split()[0] in ("hot", "warm"), row
    run(tmp_path, "export", "x.db", "--format", "chrome", "-o", "x.json")
    events = json.loads((tmp_path / "x.json").read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    # the JSON's microseconds from the session's start keep 3 decimals: exact ns
    chrome = collections.Counter(
        (e["tid"], origin + round(e["ts"] * 1000), origin + round((e["ts"] + e["dur"]) * 1000))
        for e in events if e.get("cat") == "python_gil" and e["name"] == "GIL wait")
    assert chrome == waits
    perfetto_check = pytest.importorskip("perfetto_check", reason="Python packages perfetto and "
                                         "protobuf (scripts/deps.sh installs them)")
    run(tmp_path, "export", "x.db", "--format", "perfetto", "-o", "x.perfetto-trace")
    decoded = perfetto_check.decode(str(tmp_path / "x.perfetto-trace"))
    assert decoded.problems == []
    gil = [s for s in decoded.slices if "python_gil" in s["category"]]
    assert {s["name"] for s in gil} == {"GIL wait"}
    assert {decoded.tracks[s["track"]].name for s in gil} == {"Python GIL"}
    def tid(s):
        return decoded.tracks[decoded.tracks[s["track"]].parent_uuid].thread.tid
    assert collections.Counter((tid(s), s["ts"], s["end"]) for s in gil) == waits


def test_a_process_without_python_has_no_python_sampler(tmp_path):
    run(tmp_path, "profile", "-t", "nvtx,cpu", "-o", "x.db", CPU_HOT, "0.3")
    with sqlite3.connect(tmp_path / "x.db") as db:
        status, threads = db.execute("SELECT python_status, threads FROM cpu_sampling").fetchone()
        assert status is None and threads == 1  # no sampler thread of ours
        assert db.execute("SELECT count(*) FROM cpu_frames WHERE file IS NOT NULL"
                          ).fetchone()[0] == 0


def py_spy_top(raw, n):
    """The n functions py-spy saw running most: its raw format is `frame;...;leaf COUNT`, each
    frame `function (file:line)`."""
    counts = collections.Counter()
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        leaf = stack.split(";")[-1]
        counts[leaf.split(" (")[0]] += int(count)
    return [name for name, _ in counts.most_common(n)]


@pytest.mark.skipif(not PY_SPY, reason="py-spy not installed (pip install py-spy; $PY_SPY)")
def test_the_top_five_functions_agree_with_py_spy(tmp_path):
    """The issue's check: py-spy and cpu_sample_sum, each on its own run of py_five.py, name the
    same five functions in the same order, and Lantern's shares are the program's own
    measurements within 5 points (the five are 6 to 40 % of its CPU time, 9 points apart at
    the least). py-spy's side leaves out main, whose own time is the clock reads between the
    calls: py-spy samples the wall clock, and a machine busy with other work preempts the
    thread at those system calls, which py-spy then charges to main (a loaded CI run, and the
    dev VM with three times more work than CPUs, put main fifth). Lantern samples CPU time:
    its main stays under 2 %."""
    spy = subprocess.run([PY_SPY, "record", "--format", "raw", "-o", str(tmp_path / "spy.txt"),
                          "-r", "250", "--", sys.executable, PY_FIVE, "3"],
                         capture_output=True, text=True, timeout=180)
    if spy.returncode != 0 and "ptrace" in spy.stderr.lower():
        pytest.skip(f"py-spy cannot trace here: {spy.stderr.strip().splitlines()[-1]}")
    assert spy.returncode == 0, spy.stderr
    theirs = [f for f in py_spy_top((tmp_path / "spy.txt").read_text(), 6) if f != "main"][:5]
    done = run(tmp_path, "profile", "-t", "cpu", "-o", "x.db", sys.executable, PY_FIVE, "3")
    shares = {f: float(p) for f, _, p in (line.split() for line in done.stdout.splitlines())}
    (rows,) = rows_by_thread(tmp_path).values()
    ours = [r for r in rows if r["module"] == "py_five.py"][:5]
    assert [r["function"] for r in ours] == theirs == ["f1", "f2", "f3", "f4", "f5"], (ours, theirs)
    main = [r["self_percent"] for r in rows
            if (r["function"], r["module"]) == ("main", "py_five.py")]
    assert sum(main) < 2, main
    for r in ours:
        assert abs(r["self_percent"] - shares[r["function"]]) <= 5, (r, shares)


SWITCHED = """
import os, sys, time
first, cpu_first = time.monotonic_ns(), time.thread_time_ns()
switch = os.environ["LANTERN_TEST_CPU_SWITCH"]
def spin(s):
    end = time.monotonic() + s
    while time.monotonic() < end:
        pass
spin(0.4)
off, cpu_off = time.monotonic_ns(), time.thread_time_ns()
open(switch, "w").close()
spin(0.4)
on, cpu_on = time.monotonic_ns(), time.thread_time_ns()
os.unlink(switch)
spin(0.4)
print("times", first, off, on, time.monotonic_ns(), cpu_first, cpu_off, cpu_on,
      time.thread_time_ns())
"""


def test_the_benchmarks_switch_pauses_native_and_python_sampling_alone(tmp_path):
    """bench/cpu_interrupt_cost.py's kind 9 pairs blocks with Lantern's sampling switched on and
    off inside one process (LANTERN_TEST_CPU_SWITCH): while the file exists, neither sampler
    looks. The writer sees the switch within a drain (10 ms): 100 ms allowed."""
    (tmp_path / "switched.py").write_text(SWITCHED)
    env = dict(os.environ, LANTERN_TEST_CPU_SWITCH=str(tmp_path / "off"))
    done = subprocess.run([LANTERN, "profile", "-t", "nvtx,cpu", "-o", "x.db", sys.executable,
                           "switched.py"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    first, off, on, end, cpu_first, cpu_off, cpu_on, cpu_end = map(int, done.stdout.split()[1:9])
    with sqlite3.connect(tmp_path / "x.db") as db:
        ts = [r[0] for r in db.execute("SELECT ts_ns FROM cpu_samples")]
        looks = db.execute(
            "SELECT python_snapshots FROM cpu_sampling").fetchone()[0]
    during = [t for t in ts if off + 100_000_000 < t < on]
    before, after = [t for t in ts if t < off], [t for t in ts if t > on]
    assert not during, f"{len(during)} native samples while switched off"
    # one sample per ms of the spinning thread's CPU time, on however loaded a machine (half of
    # them asked: a tick in the kernel takes none; after the switch back, 100 ms to see it)
    assert len(before) >= (cpu_off - cpu_first) / 2e6, (len(before), cpu_off - cpu_first)
    assert len(after) >= (cpu_end - cpu_on - 100_000_000) / 2e6, (len(after), cpu_end - cpu_on)
    # the Python sampler looks at most once a millisecond at a running thread: not while off
    # (start-up before `first` allowed 100 looks; a sampler that went on looking adds ~300)
    assert 0 < looks <= (end - first - (on - off - 100_000_000)) / 1e6 + 100, looks
