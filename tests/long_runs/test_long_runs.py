"""Start and stop on demand (docs/long-runs.md): a server that is never restarted
(server_workload.c: a range "step" with its number as payload, and "work" inside it, about
every millisecond; "side" likewise on a second thread) under `lantern profile --start-paused`,
windows started and stopped from this process as from another shell, each database checked
with SQL against the times this process saw. Needs $LANTERN_BUILD and $SERVER_WORKLOAD."""
import os
import pwd
import shutil
import signal
import sqlite3
import subprocess
import time

import pytest

BUILD = os.environ.get("LANTERN_BUILD", "")
LANTERN = os.path.join(BUILD, "bin", "lantern")
WORKLOAD = os.environ.get("SERVER_WORKLOAD", os.path.join(BUILD, "bin", "server_workload"))
PIPE_ENV = {k: v for k, v in os.environ.items() if k != "COLUMNS"}


def lantern(cwd, *args, expect_status=0):
    run = subprocess.run([LANTERN, *args], cwd=cwd, capture_output=True, text=True, timeout=120,
                         env=PIPE_ENV)
    assert run.returncode == expect_status, (args, run.stderr)
    return run


class Server:
    """`lantern profile OPTIONS -- server_workload STOP` in tmp_path, until stop()."""

    def __init__(self, tmp_path, *options, raw="run-1.db.raw", env=None):
        self.dir = tmp_path
        self.stop_file = tmp_path / "stop"
        self.proc = subprocess.Popen([LANTERN, "profile", "-t", "nvtx", *options, "--", WORKLOAD,
                                      str(self.stop_file)], cwd=tmp_path,
                                     env={**PIPE_ENV, **(env or {})},
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        control = tmp_path / raw / "session.lrc"
        deadline = time.monotonic() + 30
        while not (control.exists() and control.stat().st_size and
                   control.read_bytes()[:8] == b"LNTRCTL1" and self.traced()):
            assert self.proc.poll() is None, self.proc.communicate()
            assert time.monotonic() < deadline, "the session did not start"
            time.sleep(0.01)

    def traced(self):
        """The program has loaded the agent (its trace file exists)."""
        return any(p.name.endswith(".lrt") and p.name != "launcher.lrt"
                   for p in (self.dir / "run-1.db.raw").iterdir()) \
            if (self.dir / "run-1.db.raw").exists() else True

    def stop(self):
        self.stop_file.touch()
        out, err = self.proc.communicate(timeout=120)
        assert self.proc.returncode == 0, err
        return err


def ranges(db_path, name):
    """(payload, start_ns, end_ns) of the ranges named name, by payload."""
    with sqlite3.connect(db_path) as db:
        return db.execute("SELECT r.payload, r.start_ns, r.end_ns FROM ranges r"
                          " JOIN strings s ON s.id = r.name_id WHERE s.value = ?"
                          " ORDER BY r.payload", (name,)).fetchall()


def meta(db_path, key):
    with sqlite3.connect(db_path) as db:
        row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None


def check_window(db_path, opened, closed):
    """Every step and side range began inside [opened, closed] (the times around lantern
    start and lantern stop), and none is missing between the first and the last: their
    numbers are consecutive."""
    for name in ("step", "side"):
        rows = ranges(db_path, name)
        assert len(rows) >= 20, (db_path, name, len(rows))
        numbers = [r[0] for r in rows]
        assert numbers == list(range(numbers[0], numbers[0] + len(numbers))), (db_path, name)
        assert all(opened <= r[1] <= closed for r in rows), (db_path, name)
        # only the range in flight at the stop may lack its end (its pop came while paused)
        assert sum(r[2] is None for r in rows) <= 1, (db_path, name)
    return ranges(db_path, "step")


def test_three_windows_from_another_shell_give_three_databases(tmp_path):
    server = Server(tmp_path, "--start-paused", "-o", "run-%n.db")
    times = []
    for i in range(3):
        time.sleep(0.3)  # paused: these steps are in no database
        opened = time.monotonic_ns()
        # by lantern's pid, by the session folder, by the database's name (a bare `lantern
        # start` finds the one session running: not tried here, where others' may run)
        lantern(tmp_path, "start", *([str(server.proc.pid)], ["--session", "run-1.db.raw"],
                                      ["--session", "run-1.db"])[i])
        time.sleep(0.3)
        run = lantern(tmp_path, "stop", str(server.proc.pid))
        closed = time.monotonic_ns()
        assert f"window {i + 1} written to run-{i + 1}.db" in run.stderr
        assert (tmp_path / f"run-{i + 1}.db").exists()  # written when lantern stop returns
        times.append((opened, closed))
    time.sleep(0.2)
    err = server.stop()
    assert sorted(p.name for p in tmp_path.glob("run-*")) == ["run-1.db", "run-2.db", "run-3.db"]
    steps = [check_window(tmp_path / f"run-{i + 1}.db", *times[i]) for i in range(3)]
    for before, after in zip(steps, steps[1:]):
        assert after[0][0] - before[-1][0] > 2  # steps ran paused between them (~300)
    for i in range(3):
        assert meta(tmp_path / f"run-{i + 1}.db", "windows") == 1
        start, end = (meta(tmp_path / f"run-{i + 1}.db", k) for k in ("start_ns", "end_ns"))
        assert times[i][0] <= start < end <= times[i][1]
        # the program ran on after the window: not a loss
        header = lantern(tmp_path, "stats", f"run-{i + 1}.db").stdout
        assert "Lost events:     none" in header, header
    assert "nothing was recorded" not in err


def test_signals_and_single_file_put_every_window_in_one_database(tmp_path):
    server = Server(tmp_path, "--start-paused", "--single-file", "-o", "run-%n.db")
    control = tmp_path / "run-1.db.raw" / "session.lrc"
    times = []
    for i in range(2):
        time.sleep(0.2)
        opened = time.monotonic_ns()
        os.kill(server.proc.pid, signal.SIGUSR1)
        time.sleep(0.3)
        os.kill(server.proc.pid, signal.SIGUSR2)
        while int.from_bytes(control.read_bytes()[16:20], "little"):  # recording
            time.sleep(0.005)
        times.append((opened, time.monotonic_ns() + 1))
    err = server.stop()
    assert "2 windows written to run-1.db" in err
    assert sorted(p.name for p in tmp_path.glob("run-*")) == ["run-1.db"]
    assert meta(tmp_path / "run-1.db", "windows") == 2
    rows = ranges(tmp_path / "run-1.db", "step")
    first = [r for r in rows if r[1] <= times[0][1]]
    second = [r for r in rows if r[1] >= times[1][0]]
    assert first and second and len(first) + len(second) == len(rows)
    assert second[0][0] - first[-1][0] > 2


def test_a_window_open_at_the_end_is_written_then(tmp_path):
    """Not paused at the start: window 1 is the run from its start to the stop; the one the
    program's end closes is window 2."""
    server = Server(tmp_path, "-o", "run-%n.db")
    time.sleep(0.3)
    lantern(tmp_path, "stop", str(server.proc.pid))
    lantern(tmp_path, "start", str(server.proc.pid))
    time.sleep(0.3)
    err = server.stop()
    assert "window 2 written to run-2.db" in err
    one, two = ranges(tmp_path / "run-1.db", "step"), ranges(tmp_path / "run-2.db", "step")
    assert one[0][0] == 1 and two[0][0] - one[-1][0] >= 1
    assert not (tmp_path / "run-1.db.raw").exists()


def test_paused_to_the_end_writes_nothing_and_says_so(tmp_path):
    server = Server(tmp_path, "--start-paused", "-o", "run-%n.db")
    time.sleep(0.2)
    err = server.stop()
    assert "no window was started" in err
    assert not list(tmp_path.glob("run-*"))


def test_start_without_a_running_session_is_one_error(tmp_path):
    """(A bare `lantern start`, which looks for the one session of this user that runs, is
    not tried: on a shared machine another test's session may be running.)"""
    (tmp_path / "old.db.raw").mkdir()  # a session folder whose run is over
    for args in (["start", "--session", str(tmp_path)], ["stop", "--session", "old.db"],
                 ["stop", "999999999"], ["start", str(os.getpid())], ["start", "x"]):
        run = lantern(tmp_path, *args, expect_status=1)
        lines = run.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("lantern: "), run.stderr
    assert "no running 'lantern profile' session in" in lantern(
        tmp_path, "stop", "--session", "old.db", expect_status=1).stderr
    assert "is not in a running 'lantern profile' session" in lantern(
        tmp_path, "start", str(os.getpid()), expect_status=1).stderr
    lantern(tmp_path, "start", "1", "--session", "x", expect_status=2)


def test_another_users_session_is_refused(tmp_path):
    if os.getuid() != 0:
        # any process of another user: pid 1 is root's
        run = lantern(tmp_path, "start", "1", expect_status=1)
        assert "belongs to another user" in run.stderr
        run = lantern(tmp_path, "stop", "--session", "/", expect_status=1)
        assert "belongs to another user" in run.stderr
        return
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user 'nobody' to run a session as")
    if not shutil.which("setpriv"):
        pytest.skip("no setpriv to run a session as another user")
    os.chmod(tmp_path, 0o777)
    for parent in tmp_path.parents:  # nobody must reach the folder
        if parent.stat().st_mode & 0o001 == 0 and str(parent).startswith("/tmp"):
            os.chmod(parent, parent.stat().st_mode | 0o001)
    proc = subprocess.Popen(["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}",
                             "--clear-groups", LANTERN, "profile", "-t", "nvtx", "--start-paused",
                             "-o", "theirs.db", "--", WORKLOAD, str(tmp_path / "stop")],
                            cwd=tmp_path, env=PIPE_ENV, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "theirs.db.raw" / "session.lrc").exists():
            if proc.poll() is not None:
                pytest.skip("cannot run a session as nobody here: " + proc.stderr.read())
            assert time.monotonic() < deadline
            time.sleep(0.01)
        run = lantern(tmp_path, "start", str(proc.pid), expect_status=1)
        assert "belongs to another user" in run.stderr
        run = lantern(tmp_path, "start", "--session", "theirs.db.raw", expect_status=1)
        assert "belongs to another user" in run.stderr
    finally:
        (tmp_path / "stop").touch()
        proc.wait(timeout=60)


def test_repeated_capture_range_gives_one_database_per_instance(tmp_path):
    """--capture-range=nvtx:step --capture-range-end=repeat:3 over 10 steps: cap-1.db to
    cap-3.db, the i-th holding step i and what began inside it (its "work", the other
    thread's "side" ranges that began then), nothing before or after."""
    run = lantern(tmp_path, "profile", "-t", "nvtx", "--capture-range=nvtx:step",
                  "--capture-range-end=repeat:3", "-o", "cap-%n.db", "--", WORKLOAD, "stop",
                  "2000", "10")
    assert sorted(p.name for p in tmp_path.glob("cap-*")) == ["cap-1.db", "cap-2.db", "cap-3.db"]
    for i in range(1, 4):
        db = tmp_path / f"cap-{i}.db"
        ((number, start, end),) = ranges(db, "step")
        assert number == i and end is not None
        (work,) = ranges(db, "work")
        assert start <= work[1] <= work[2] <= end
        assert all(start <= r[1] <= end for r in ranges(db, "side"))
        assert meta(db, "windows") == 1
        assert f"capture {i} written to cap-{i}.db" in run.stderr
    assert not (tmp_path / "cap-1.db.raw").exists()


def test_repeated_capture_range_every_instance_or_one_file(tmp_path):
    lantern(tmp_path, "profile", "-t", "nvtx", "--capture-range=nvtx:step",
            "--capture-range-end=repeat", "-o", "all-%n.db", "--", WORKLOAD, "stop", "1000", "5")
    assert len(list(tmp_path.glob("all-*.db"))) == 5
    run = lantern(tmp_path, "profile", "-t", "nvtx", "--capture-range=nvtx:step",
                  "--capture-range-end=repeat:2", "--single-file", "-o", "one.db", "--", WORKLOAD,
                  "stop", "1000", "5")
    assert "2 captures written to one.db" in run.stderr
    assert [r[0] for r in ranges(tmp_path / "one.db", "step")] == [1, 2]
    assert meta(tmp_path / "one.db", "windows") == 2


def test_repeated_capture_range_errors(tmp_path):
    run = lantern(tmp_path, "profile", "-t", "nvtx", "--capture-range=nvtx:nope",
                  "--capture-range-end=repeat", "-o", "n.db", "--", WORKLOAD, "stop", "1000", "2")
    assert "no instance of the capture range 'nvtx:nope' was recorded" in run.stderr
    assert not list(tmp_path.glob("n.db*"))
    for options in (["--capture-range-end=repeat"], ["--capture-range-end=repeat:0"],
                    ["--capture-range-end=again", "--capture-range=nvtx:a"],
                    ["--capture-range=nvtx:a", "--capture-range-end=repeat", "--start-paused"]):
        lantern(tmp_path, "profile", *options, "--", "true", expect_status=2)
    # cudaProfilerApi repeats too (each cudaProfilerStart..Stop its database: tests/gpu's
    # gpu_windows); a program that never calls them gets nothing, said
    run = lantern(tmp_path, "profile", "--capture-range=cudaProfilerApi",
                  "--capture-range-end=repeat:2", "-o", "p.db", "--", "true")
    assert "no instance of the capture range 'cudaProfilerApi' was recorded" in run.stderr
    assert not list(tmp_path.glob("p.db*"))


def test_sigterm_to_lantern_during_a_window_writes_it_and_ends_the_program(tmp_path):
    """As a scheduler ends a job: the program gets the SIGTERM as before (it dies of it), and
    the window open then is written, within 5 s."""
    server = Server(tmp_path, "--start-paused", "-o", "run-%n.db")
    lantern(tmp_path, "start", str(server.proc.pid))
    time.sleep(0.3)
    sent = time.monotonic()
    server.proc.send_signal(signal.SIGTERM)
    _, err = server.proc.communicate(timeout=60)
    assert time.monotonic() - sent < 5
    assert server.proc.returncode == 128 + signal.SIGTERM, err
    assert "window 1 written to run-1.db" in err
    rows = ranges(tmp_path / "run-1.db", "step")
    assert len(rows) >= 20 and [r[0] for r in rows] == list(range(rows[0][0], rows[-1][0] + 1))


def test_a_forked_worker_pauses_and_records_with_the_session(tmp_path):
    """A server's worker process (forked after the agent started) follows the session: its
    ranges are in the window's database, and none from while it was paused."""
    stop = tmp_path / "stop"
    server = Server(tmp_path, "--start-paused", "-o", "run-%n.db")
    server.proc.kill()  # (the Server helper's program has no fork: this one does)
    server.proc.wait()
    for p in tmp_path.iterdir():
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    proc = subprocess.Popen([LANTERN, "profile", "-t", "nvtx", "--start-paused", "-o",
                             "run-%n.db", "--", WORKLOAD, str(stop), "1000", "0", "fork"],
                            cwd=tmp_path, env=PIPE_ENV, stderr=subprocess.PIPE, text=True)
    time.sleep(1)
    opened = time.monotonic_ns()
    lantern(tmp_path, "start", str(proc.pid))
    time.sleep(0.3)
    lantern(tmp_path, "stop", str(proc.pid))
    closed = time.monotonic_ns()
    stop.touch()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    check_window(tmp_path / "run-1.db", opened, closed)
    with sqlite3.connect(tmp_path / "run-1.db") as db:
        assert db.execute("SELECT count(DISTINCT process_id) FROM ranges").fetchone() == (2,)
    assert not (tmp_path / "run-2.db").exists()


def test_a_start_during_a_windows_import_waits_for_it_and_is_not_lost(tmp_path):
    """A stop, then at once a start while the stop's window is being imported: the start
    takes effect after that import, as window 2."""
    server = Server(tmp_path, "--start-paused", "-o", "run-%n.db")
    lantern(tmp_path, "start", str(server.proc.pid))
    time.sleep(0.3)
    os.kill(server.proc.pid, signal.SIGUSR2)
    os.kill(server.proc.pid, signal.SIGUSR1)
    control = tmp_path / "run-1.db.raw" / "session.lrc"
    deadline = time.monotonic() + 60
    while int.from_bytes(control.read_bytes()[24:32], "little") != 2:  # window 2 begun
        assert time.monotonic() < deadline, "the start was lost"
        time.sleep(0.01)
    time.sleep(0.3)
    err = server.stop()
    assert "window 1 written to run-1.db" in err and "window 2 written to run-2.db" in err
    one, two = ranges(tmp_path / "run-1.db", "step"), ranges(tmp_path / "run-2.db", "step")
    assert one[-1][1] < two[0][1]


@pytest.mark.parametrize("method", ["perf", "timers"])
def test_cpu_samples_pause_with_the_session(tmp_path, method):
    """CPU sampling (--sample=cpu, docs/cpu.md) pauses with the session: each window's database
    holds samples taken inside it only, and the raw folder none of the paused time's (the
    program spins on the CPU throughout, paused or not); and the pause switches the kernel's
    sampling off (paused_samples: those it took before the writer's next drain, then dropped).
    Both methods: perf events, and the CPU-time timers (LANTERN_TEST_CPU_TIMERS: disarmed)."""
    timers = {"LANTERN_TEST_CPU_TIMERS": "1"} if method == "timers" else {}
    server = Server(tmp_path, "--sample=cpu", "--start-paused", "--keep-raw", "-o", "run-%n.db",
                    env={"SERVER_WORKLOAD_SPIN": "1", **timers})
    times = []
    for i in range(2):
        time.sleep(0.3)  # paused, on the CPU
        opened = time.monotonic_ns()
        lantern(tmp_path, "start", str(server.proc.pid))
        time.sleep(0.3)
        lantern(tmp_path, "stop", str(server.proc.pid))
        times.append((opened, time.monotonic_ns()))
    time.sleep(0.3)
    server.stop()
    lantern(tmp_path, "import", "run-1.db.raw", "-o", "all.db")

    def samples(db_path):
        with sqlite3.connect(db_path) as db:
            status = db.execute("SELECT group_concat(DISTINCT status) FROM cpu_sampling").fetchone()
            if status != ("on",):
                pytest.skip(f"CPU sampling is not permitted here: {status}")
            reason = db.execute("SELECT group_concat(DISTINCT reason) FROM cpu_sampling").fetchone()
            assert (reason[0] or "").startswith("CPU-time timers") == (method == "timers"), reason
            return [ts for ts, in db.execute("SELECT ts_ns FROM cpu_samples")]

    for i, (opened, closed) in enumerate(times):
        window = samples(tmp_path / f"run-{i + 1}.db")
        assert window and all(opened <= ts <= closed for ts in window), (i, len(window))
        with sqlite3.connect(tmp_path / f"run-{i + 1}.db") as db:  # the window's count
            assert db.execute("SELECT sum(samples) FROM cpu_sampling").fetchone() == (len(window),)
    raw = samples(tmp_path / "all.db")
    assert raw and all(any(o <= ts <= c for o, c in times) for ts in raw)
    # thread states (context switches: off with the sampling) only in the recorded time too
    for path in [tmp_path / f"run-{i + 1}.db" for i in range(2)] + [tmp_path / "all.db"]:
        with sqlite3.connect(path) as db:
            states = db.execute("SELECT start_ns, end_ns, state_ns FROM cpu_thread_states").fetchall()
        assert all(any(o <= s and e <= c for o, c in times) and 0 < n <= e - s
                   for s, e, n in states), (path.name, states[:5])
    # the program's sampling rate while recording, from the windows; paused it ran 1.2 s (three
    # 0.3 s pauses and 0.3 s before its end) and would have been sampled as often, had the pause
    # only dropped the samples; switched off, the kernel takes those of <= a drain (~10 ms) per
    # pause (bound: a quarter of what the paused time would hold, for a loaded machine)
    recorded_s = sum(c - o for o, c in times) / 1e9
    with sqlite3.connect(tmp_path / "all.db") as db:
        paused = db.execute("SELECT sum(paused_samples) FROM cpu_sampling").fetchone()[0]
    would_be = len(raw) / recorded_s * 1.2
    print(f"samples taken while paused: {paused} (a sampling that ran on: ~{would_be:.0f})")
    assert paused is not None and paused < would_be / 4, (paused, would_be)
