"""Thread states (docs/cpu.md, "Thread states"): cpu_states.c under `lantern profile`, its
threads' blocked and preempted time (cpu_thread_states, from the kernel's context switches)
checked against what the program measured itself: the sleeps (CLOCK_MONOTONIC around each),
its CPU time (CLOCK_THREAD_CPUTIME_ID), the wall time two threads pinned to one CPU shared.
Needs $LANTERN_BUILD and $CPU_STATES."""
import collections
import json
import os
import re
import sqlite3
import subprocess
import sys

import pytest

from cpu_tests import perf_events_allowed  # tests/cpu/ is on the path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "export"))
BUILD = os.environ.get("LANTERN_BUILD", "")
LANTERN = os.path.join(BUILD, "bin", "lantern")
CPU_STATES = os.environ.get("CPU_STATES", os.path.join(BUILD, "bin", "cpu_states"))


needs_perf = pytest.mark.skipif(not perf_events_allowed(),
                                reason="kernel.perf_event_paranoid > 2: no unprivileged sampling")


def profile(tmp_path, *args, env=None):
    # no -t cuda: on a GPU host CUPTI's own thread would be one more sampled thread
    done = subprocess.run([LANTERN, "profile", "-t", "nvtx,cpu", "-o", "x.db", CPU_STATES, *args],
                          cwd=tmp_path,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})
    assert done.returncode == 0, done.stderr
    threads = {}
    for line in done.stdout.splitlines():
        words = line.split()
        if len(words) > 2 and words[1] == "tid":
            threads[words[0]] = {k: int(v) for k, v in zip(words[1::2], words[2::2])}
            threads[words[0]]["marks"] = []
        elif words[:1] == ["mark"]:
            threads[words[1]]["marks"].append(tuple(int(v) for v in words[2:5]))
    return threads


def watched(db, w):
    """The thread's measure from its first mark after the agent started to watch it (its first
    sample or state: a new thread is found within 100 ms, later on a loaded machine) to t1:
    its wall time, CPU time and sleeps there, and the window."""
    first = db.execute(
        "SELECT min(ts) FROM (SELECT min(s.ts_ns) AS ts FROM cpu_samples s JOIN threads t"
        " ON t.id = s.thread_id WHERE t.tid = ?1 UNION ALL SELECT min(s.start_ns)"
        " FROM cpu_thread_states s JOIN threads t ON t.id = s.thread_id WHERE t.tid = ?1)",
        (w["tid"],)).fetchone()[0]
    assert first is not None, w
    mono, cpu, slept = next(m for m in w["marks"] if m[0] >= first)
    wall = w["t1"] - mono
    assert wall >= 0.5 * w["wall_ns"], ("the agent watched the thread too late", first, w["t0"])
    return {"wall_ns": wall, "cpu_ns": w["cpu_ns"] - cpu, "slept_ns": w["slept_ns"] - slept,
            "t0": mono, "t1": w["t1"]}


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
    sleeper = profile(tmp_path, "sleep", "20")["sleeper"]
    with sqlite3.connect(tmp_path / "x.db") as db:
        assert db.execute("SELECT thread_states, switches > 0 FROM cpu_sampling").fetchone() == (1, 1)
        # no Python here: the Python sampler's totals stay NULL (the states' fields follow them)
        assert db.execute("SELECT python_snapshots FROM cpu_sampling").fetchone() == (None,)
        w = watched(db, sleeper)
        states = state_ns(db, sleeper["tid"], w["t0"], w["t1"])
    blocked, preempted = states.get("blocked", 0), states.get("preempted", 0)
    assert abs(blocked - w["slept_ns"]) <= 0.05 * w["slept_ns"], (states, w)
    running = w["wall_ns"] - blocked - preempted
    assert abs(running - w["cpu_ns"]) <= 0.05 * w["cpu_ns"] + 2e6, (running, states, w)


@needs_perf
def test_two_spinners_on_one_cpu_are_preempted_about_half_their_time(tmp_path):
    threads = profile(tmp_path, "preempt", "400")
    with sqlite3.connect(tmp_path / "x.db") as db:
        for name in ("spinA", "spinB"):
            w = watched(db, threads[name])
            states = state_ns(db, threads[name]["tid"], w["t0"], w["t1"])
            preempted = states.get("preempted", 0)
            # off the CPU while runnable: the wall time it did not run (the machine may be
            # loaded: the other spinner is not the only one taking the CPU)
            assert abs(preempted - (w["wall_ns"] - w["cpu_ns"])) <= 0.1 * w["wall_ns"], (states, w)
            assert 0.3 * w["wall_ns"] <= preempted <= 0.98 * w["wall_ns"], (states, w)
            assert states.get("blocked", 0) < 0.05 * w["wall_ns"], (states, w)


@needs_perf
def test_a_pipe_ping_pong_is_merged_into_few_rows_that_keep_every_switch(tmp_path):
    """100 000 round trips through two pipes (on a quiet machine 20 000 were over before the
    agent's scan, 100 ms apart, found the threads): thousands of switches, written as rows of at
    most 1 ms that count every switch-out the kernel reported (but a thread's last, its exit)."""
    threads = profile(tmp_path, "pingpong", "100000")
    with sqlite3.connect(tmp_path / "x.db") as db:
        lost, reported = db.execute("SELECT lost, switches FROM cpu_sampling").fetchone()
        kept, nthreads = db.execute("SELECT sum(switches), count(DISTINCT thread_id)"
                                    " FROM cpu_thread_states").fetchone()
        if lost == 0:
            assert reported - nthreads <= kept <= reported, (kept, reported)
        for name in ("ping", "pong"):
            rows, switches, span = db.execute(
                "SELECT count(*), sum(s.switches),"
                " max(CASE WHEN s.switches > 1 THEN s.end_ns - s.start_ns ELSE 0 END)"
                " FROM cpu_thread_states s JOIN threads t ON t.id = s.thread_id WHERE t.tid = ?",
                (threads[name]["tid"],)).fetchone()
            assert switches > 1000, (name, rows, switches)
            assert span <= 1000000  # a merged row spans at most 1 ms
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


@needs_perf
def test_the_page_draws_each_lanes_thread_states_under_it(tmp_path):
    """lantern report: under the NVTX lane of the main thread (its range "states" holds its
    join, blocked), blue shades whose widths times opacities add up to its blocked time over
    the session's 1000 px (each run of columns is within 0.05 of its shade, runs under 1 %
    are left out: 10 % allowed), and no red where it was never preempted for long."""
    profile(tmp_path, "sleep", "10")
    done = subprocess.run([LANTERN, "report", "x.db", "-o", "x.html"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    html = (tmp_path / "x.html").read_text()
    svg = html[html.index('id="nvtx-lanes"'):]
    svg = svg[:svg.index("</svg>")]
    lanes = svg.split('<text class="lane"')[1:]
    assert len(lanes) == 1, len(lanes)  # the main thread: the only one with ranges
    blue = sum(float(w) * float(o) for w, o in re.findall(
        r'width="(\d+)" height="3" fill="#3b6fb6" fill-opacity="([\d.]+)"', lanes[0]))
    with sqlite3.connect(tmp_path / "x.db") as db:
        start, end = (int(db.execute("SELECT value FROM meta WHERE key = ?", (k,)).fetchone()[0])
                      for k in ("start_ns", "end_ns"))
        tid = db.execute("SELECT start_thread_id FROM ranges").fetchone()[0]
        blocked = db.execute("SELECT sum(state_ns) FROM cpu_thread_states WHERE thread_id = ?"
                             " AND state = 'blocked'", (tid,)).fetchone()[0]
    expected = blocked * 1000 / (end - start)
    assert expected > 100 and abs(blue - expected) <= 0.1 * expected, (blue, expected)
    assert "blue while it was blocked" in html
    # the sleeper opens no range: its own lane below, named, its strip its blocked rows
    lanes = cpu_lanes(html)
    assert list(lanes) == ["sleeper"], list(lanes)
    with sqlite3.connect(tmp_path / "x.db") as db:
        blocked = db.execute(
            "SELECT sum(s.state_ns) FROM cpu_thread_states s JOIN threads t ON t.id = s.thread_id"
            " WHERE t.tid = ? AND s.state = 'blocked'", (lanes["sleeper"]["tid"],)).fetchone()[0]
    expected = blocked * 1000 / (end - start)
    blue = shade(lanes["sleeper"]["body"], 3, BLUE)
    assert expected > 100 and abs(blue - expected) <= 0.1 * expected, (blue, expected)


GREEN, BLUE, RED = "#3f9a58", "#3b6fb6", "#d1495b"  # html_timeline.c's running, blocked, preempted


def shade(body, height, fill):
    """The px of a lane's strip (height 13: samples, 3: states) in one color: each run's width
    times its opacity."""
    return sum(float(w) * float(o) for w, o in re.findall(
        rf'width="(\d+)" height="{height}" fill="{fill}" fill-opacity="([\d.]+)"', body))


def cpu_lanes(html):
    """{thread name: {tid, pid, title, body}} of the page's lanes of sampled threads without an
    NVTX lane, in page order."""
    svg = html[html.index('id="cpu-lanes"'):]
    svg = svg[:svg.index("</svg>")]
    lanes = {}
    for name, tid, pid, title, body in re.findall(
            r'<text class="lane" x="2" y="\d+"><title>thread (\S+) \(tid (\d+)\) of process '
            r'\S+ \(pid (\d+)\)</title>[^<]*</text>\n<g class="cpu-lane"><title>([^<]*)</title>'
            r'(.*?)</g>', svg, re.S):
        lanes[name] = {"tid": int(tid), "pid": int(pid), "title": title, "body": body}
    assert svg.count('<text class="lane"') == len(lanes), svg[:2000]
    return lanes


@needs_perf
def test_the_page_draws_a_lane_for_each_sampled_thread_without_an_nvtx_range(tmp_path):
    """Two spinners sharing one CPU open no NVTX range: each gets a lane under the NVTX lanes,
    named, whose green (its samples x the period over each column's time) adds up to the CPU
    time the thread measured itself (from where the agent watched it), whose red adds up to its
    preempted rows, and whose tooltip gives its samples."""
    threads = profile(tmp_path, "preempt", "400")
    done = subprocess.run([LANTERN, "report", "x.db", "-o", "x.html"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    html = (tmp_path / "x.html").read_text()
    lanes = cpu_lanes(html)
    assert sorted(lanes) == ["spinA", "spinB"], list(lanes)  # main has its NVTX lane
    assert "more threads sampled" not in html
    with sqlite3.connect(tmp_path / "x.db") as db:
        start, end = (int(db.execute("SELECT value FROM meta WHERE key = ?", (k,)).fetchone()[0])
                      for k in ("start_ns", "end_ns"))
        for name in ("spinA", "spinB"):
            lane, w = lanes[name], watched(db, threads[name])
            assert lane["tid"] == threads[name]["tid"], lane
            samples, preempted = db.execute(
                "SELECT (SELECT count(*) FROM cpu_samples WHERE thread_id = t.id),"
                " (SELECT sum(state_ns) FROM cpu_thread_states WHERE thread_id = t.id"
                " AND state = 'preempted') FROM threads t WHERE t.tid = ?",
                (lane["tid"],)).fetchone()
            assert lane["title"].startswith(f"{samples} samples: "), lane["title"]
            # the samples before the first mark the comparison starts from: 10 ms at most
            running_ns = shade(lane["body"], 13, GREEN) * (end - start) / 1000
            assert abs(running_ns - w["cpu_ns"]) <= 0.1 * w["cpu_ns"] + 12e6, (running_ns, w)
            red = shade(lane["body"], 3, RED)
            expected = preempted * 1000 / (end - start)
            assert expected > 50 and abs(red - expected) <= 0.1 * expected, (red, expected)


def test_the_page_bounds_its_lanes_of_sampled_threads(tmp_path):
    """A recording given 40 more sampled threads (samples and states written into its database:
    no sampling needed), each switching state every 20 µs: 4 lanes, the threads with the most
    samples, the others counted and pointed at cpu_sample_sum, each lane's strips at most a
    rectangle per column."""
    done = subprocess.run([LANTERN, "profile", "-t", "nvtx", "-o", "x.db", CPU_STATES, "sleep",
                           "1"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(tmp_path / "x.db") as db:
        start, end = (int(db.execute("SELECT value FROM meta WHERE key = ?", (k,)).fetchone()[0])
                      for k in ("start_ns", "end_ns"))
        process = db.execute("SELECT process_id FROM threads LIMIT 1").fetchone()[0]
        db.execute("INSERT OR REPLACE INTO cpu_sampling(process_id, status, period_ns)"
                   " VALUES(?, 'on', 100000)", (process,))
        for i in range(40):
            name = db.execute("INSERT INTO strings(value) VALUES(?)", (f"worker-{i}",)).lastrowid
            thread = db.execute("INSERT INTO threads(process_id, tid, os_name_id, start_ns)"
                                " VALUES(?, ?, ?, ?)", (process, 900000 + i, name, start)).lastrowid
            step = (end - start) // (100 + 10 * i)  # worker-39 has the most samples
            db.executemany("INSERT INTO cpu_samples(thread_id, ts_ns) VALUES(?, ?)",
                           ((thread, t) for t in range(start, end, step)))
            db.executemany(
                "INSERT INTO cpu_thread_states VALUES(?, ?, ?, ?, 10000, 1)",
                ((thread, t, t + 10000, ("blocked", "preempted")[(t // 20000) % 2])
                 for t in range(start, end, 20000)))
    done = subprocess.run([LANTERN, "report", "x.db", "-o", "x.html"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    html = (tmp_path / "x.html").read_text()
    lanes = cpu_lanes(html)
    assert list(lanes) == ["worker-39", "worker-38", "worker-37", "worker-36"], list(lanes)
    assert "36 more threads sampled: see <code>lantern stats -r cpu_sample_sum</code>" in html
    for lane in lanes.values():
        assert lane["body"].count("<rect") <= 3 * 1000, lane["body"].count("<rect")
        assert shade(lane["body"], 3, BLUE) > 100 and shade(lane["body"], 3, RED) > 100


def test_thread_states_are_unknown_where_sampling_is_refused(tmp_path):
    profile(tmp_path, "sleep", "1", env={"LANTERN_TEST_CPU_REFUSE": "1"})
    rows, note = report(tmp_path)
    assert rows == [] and "thread states unknown: CPU sampling was not permitted" in note, note


@needs_perf
def test_the_exports_carry_every_state_as_a_slice_on_its_thread(tmp_path):
    """Chrome: a complete event "Blocked"/"Preempted" (category thread_state) on the thread;
    Perfetto: a slice on a "Thread state" child track of the thread; each row exactly."""
    profile(tmp_path, "sleep", "5")
    with sqlite3.connect(tmp_path / "x.db") as db:
        rows = collections.Counter(
            (tid, state.capitalize(), start, end, switches) for tid, state, start, end, switches
            in db.execute("SELECT t.tid, s.state, s.start_ns, s.end_ns, s.switches"
                          " FROM cpu_thread_states s JOIN threads t ON t.id = s.thread_id"))
        origin = db.execute("SELECT value FROM meta WHERE key = 'start_ns'").fetchone()[0]
    assert sum(rows.values()) >= 5  # the sleeps at least
    subprocess.run([LANTERN, "export", "x.db", "--format", "chrome", "-o", "x.json"],
                   cwd=tmp_path, check=True, capture_output=True)
    events = json.loads((tmp_path / "x.json").read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    chrome = collections.Counter(
        (e["tid"], e["name"], origin + round(e["ts"] * 1000),
         origin + round((e["ts"] + e["dur"]) * 1000), e["args"]["switches"])
        for e in events if e.get("cat") == "thread_state")
    assert chrome == rows
    perfetto_check = pytest.importorskip("perfetto_check", reason="Python packages perfetto and "
                                         "protobuf (scripts/deps.sh installs them)")
    subprocess.run([LANTERN, "export", "x.db", "--format", "perfetto", "-o", "x.perfetto-trace"],
                   cwd=tmp_path, check=True, capture_output=True)
    decoded = perfetto_check.decode(str(tmp_path / "x.perfetto-trace"))
    assert decoded.problems == []
    states = [s for s in decoded.slices if "thread_state" in s["category"]]
    assert {decoded.tracks[s["track"]].name for s in states} == {"Thread state"}

    def tid(s):
        return decoded.tracks[decoded.tracks[s["track"]].parent_uuid].thread.tid
    assert collections.Counter((tid(s), s["name"], s["ts"], s["end"]) for s in states) == \
        collections.Counter(k[:4] for k in rows.elements())


@needs_perf
def test_lantern_cpu_states_0_records_none_and_says_so(tmp_path):
    profile(tmp_path, "sleep", "1", env={"LANTERN_CPU_STATES": "0"})
    with sqlite3.connect(tmp_path / "x.db") as db:
        assert db.execute("SELECT status, thread_states, switches FROM cpu_sampling").fetchone() \
            == ("on", 0, 0)
    rows, note = report(tmp_path)
    assert rows == [] and "no context switches were recorded (LANTERN_CPU_STATES=0" in note, note
