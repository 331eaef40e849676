"""Thread states (docs/cpu.md, "Thread states"): cpu_states.c under `lantern profile`, its
threads' blocked and preempted time (cpu_thread_states, from the kernel's context switches)
checked against what the program measured itself: the sleeps (CLOCK_MONOTONIC around each),
its CPU time (CLOCK_THREAD_CPUTIME_ID), the wall time two threads pinned to one CPU shared.
Needs $LANTERN_BUILD and $CPU_STATES."""
import json
import os
import sqlite3
import subprocess

import pytest

BUILD = os.environ.get("LANTERN_BUILD", "")
LANTERN = os.path.join(BUILD, "bin", "lantern")
CPU_STATES = os.environ.get("CPU_STATES", os.path.join(BUILD, "bin", "cpu_states"))


def perf_events_allowed():
    try:
        with open("/proc/sys/kernel/perf_event_paranoid") as f:
            return int(f.read()) <= 2
    except OSError:
        return False


needs_perf = pytest.mark.skipif(not perf_events_allowed(),
                                reason="kernel.perf_event_paranoid > 2: no unprivileged sampling")


def profile(tmp_path, *args, env=None):
    done = subprocess.run([LANTERN, "profile", "-o", "x.db", CPU_STATES, *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})
    assert done.returncode == 0, done.stderr
    threads = {}
    for line in done.stdout.splitlines():
        words = line.split()
        if len(words) > 2 and words[1] == "tid":
            threads[words[0]] = {k: int(v) for k, v in zip(words[1::2], words[2::2])}
    return threads


def state_ns(db, tid, t0, t1):
    """Each state's time of thread tid inside [t0, t1]: a row's state_ns spread over the row."""
    rows = db.execute(
        "SELECT s.state, sum(CAST(max(0, min(s.end_ns, ?2) - max(s.start_ns, ?1)) AS REAL)"
        " * s.state_ns / (s.end_ns - s.start_ns))"
        " FROM cpu_thread_states s JOIN threads t ON t.id = s.thread_id"
        " WHERE t.tid = ?3 GROUP BY s.state", (t0, t1, tid)).fetchall()
    return {state: ns for state, ns in rows}


@needs_perf
def test_blocked_time_is_the_sleeps_and_running_time_the_cpu_time(tmp_path):
    w = profile(tmp_path, "sleep", "20")["sleeper"]
    with sqlite3.connect(tmp_path / "x.db") as db:
        assert db.execute("SELECT thread_states, switches > 0 FROM cpu_sampling").fetchone() == (1, 1)
        states = state_ns(db, w["tid"], w["t0"], w["t1"])
    blocked, preempted = states.get("blocked", 0), states.get("preempted", 0)
    assert abs(blocked - w["slept_ns"]) <= 0.05 * w["slept_ns"], (states, w)
    running = w["wall_ns"] - blocked - preempted
    assert abs(running - w["cpu_ns"]) <= 0.05 * w["cpu_ns"] + 2e6, (running, states, w)


@needs_perf
def test_two_spinners_on_one_cpu_are_preempted_about_half_their_time(tmp_path):
    threads = profile(tmp_path, "preempt", "400")
    with sqlite3.connect(tmp_path / "x.db") as db:
        for name in ("spinA", "spinB"):
            w = threads[name]
            states = state_ns(db, w["tid"], w["t0"], w["t1"])
            preempted = states.get("preempted", 0)
            # off the CPU while runnable: the wall time it did not run (the machine may be
            # loaded: the other spinner is not the only one taking the CPU)
            assert abs(preempted - (w["wall_ns"] - w["cpu_ns"])) <= 0.1 * w["wall_ns"], (states, w)
            assert 0.3 * w["wall_ns"] <= preempted <= 0.95 * w["wall_ns"], (states, w)
            assert states.get("blocked", 0) < 0.05 * w["wall_ns"], (states, w)


@needs_perf
def test_a_pipe_ping_pong_is_merged_into_few_rows_that_keep_every_switch(tmp_path):
    threads = profile(tmp_path, "pingpong", "20000")
    with sqlite3.connect(tmp_path / "x.db") as db:
        lost = db.execute("SELECT lost FROM cpu_sampling").fetchone()[0]
        for name in ("ping", "pong"):
            rows, switches, span, off = db.execute(
                "SELECT count(*), sum(s.switches),"
                " max(CASE WHEN s.switches > 1 THEN s.end_ns - s.start_ns ELSE 0 END),"
                " sum(s.state_ns)"
                " FROM cpu_thread_states s JOIN threads t ON t.id = s.thread_id WHERE t.tid = ?",
                (threads[name]["tid"],)).fetchone()
            assert span <= 1000000  # a merged row spans at most 1 ms
            assert off <= threads["ping"]["wall_ns"] + 300e6
            if lost == 0:  # every switch of a round trip (a read that blocks) is counted
                assert switches >= 0.5 * 20000, (name, rows, switches)
            assert rows < switches / 2, (name, rows, switches)


def report(tmp_path, *options):
    done = subprocess.run([LANTERN, "stats", "x.db", "-r", "thread_state_sum", "--format", "json",
                           *options], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["rows"], done.stderr


@needs_perf
def test_thread_state_sum_is_the_rows_of_the_table(tmp_path):
    w = profile(tmp_path, "sleep", "10")["sleeper"]
    rows, _ = report(tmp_path)
    row = next(r for r in rows if r["thread"].startswith(f"{w['tid']} "))
    with sqlite3.connect(tmp_path / "x.db") as db:
        tid = db.execute("SELECT id FROM threads WHERE tid = ?", (w["tid"],)).fetchone()[0]
        blocked, preempted, switches = db.execute(
            "SELECT sum(CASE WHEN state = 'blocked' THEN state_ns ELSE 0 END),"
            " sum(CASE WHEN state = 'preempted' THEN state_ns ELSE 0 END), sum(switches)"
            " FROM cpu_thread_states WHERE thread_id = ?", (tid,)).fetchone()
        first, last = db.execute(
            "SELECT min(s), max(e) FROM (SELECT start_ns AS s, start_ns AS e FROM threads"
            " WHERE id = ?1 UNION ALL SELECT min(ts_ns), max(ts_ns) FROM cpu_samples"
            " WHERE thread_id = ?1 UNION ALL SELECT min(start_ns), max(end_ns)"
            " FROM cpu_thread_states WHERE thread_id = ?1)", (tid,)).fetchone()
    assert (row["blocked_ns"], row["preempted_ns"], row["switches"]) == (blocked, preempted, switches)
    assert row["wall_ns"] == last - first
    assert abs(row["running_ns"] - (last - first - blocked - preempted)) <= 1
    assert abs(row["running_percent"] + row["blocked_percent"] + row["preempted_percent"] - 100) < 0.01
    # the sleeper sleeps 2/3 of its measured time: blocked is its largest share
    assert row["blocked_percent"] > row["running_percent"], row
    # --filter-nvtx: the main thread's range "states" holds its whole join (blocked)
    main = [r for r in report(tmp_path, "--filter-nvtx", "states")[0] if r["thread"] != row["thread"]]
    assert len(main) == 1 and main[0]["blocked_percent"] > 90, main


def test_thread_states_are_unknown_where_sampling_is_refused(tmp_path):
    profile(tmp_path, "sleep", "1", env={"LANTERN_TEST_CPU_REFUSE": "1"})
    rows, note = report(tmp_path)
    assert rows == [] and "thread states unknown: CPU sampling was not permitted" in note, note
