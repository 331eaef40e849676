"""Every process kept, every loss shown: programs of lifetime_workload.c under
`lantern profile`, the database checked with SQL and the reports' headers read.
Needs $LANTERN_BUILD (the build folder) and $LIFETIME_WORKLOAD."""
import os
import re
import signal
import sqlite3
import subprocess
import time

BUILD = os.environ.get("LANTERN_BUILD", "")
LANTERN = os.path.join(BUILD, "bin", "lantern")
WORKLOAD = os.environ.get("LIFETIME_WORKLOAD", os.path.join(BUILD, "bin", "lifetime_workload"))


# whole lines: no $COLUMNS to fit them to (pytest's children may inherit one)
PIPE_ENV = {k: v for k, v in os.environ.items() if k != "COLUMNS"}


def lantern(tmp_path, *args, expect_status=0):
    run = subprocess.run([LANTERN, *args], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120, env=PIPE_ENV)
    assert run.returncode == expect_status, run.stderr
    return run


def profile(tmp_path, *options_and_command, expect_status=0):
    return lantern(tmp_path, "profile", "-t", "nvtx", "-o", "x.db", *options_and_command,
                   expect_status=expect_status)


def count_ranges(db_path, name):
    with sqlite3.connect(db_path) as db:
        return db.execute("SELECT count(*), count(r.end_ns) FROM ranges r"
                          " JOIN strings s ON s.id = r.name_id WHERE s.value = ?", (name,)).fetchone()


def read_proc(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError as e:
        return f"({e.strerror})"


def describe(pids):
    """What each process is doing, for a failure's message: each thread's state, wait channel
    and system call, its kernel stack where readable, and gdb's backtraces where gdb is."""
    lines = []
    for pid in pids:
        lines.append(f"pid {pid}: {read_proc(f'/proc/{pid}/stat')[:120]}")
        try:
            tids = sorted(os.listdir(f"/proc/{pid}/task"), key=int)
        except OSError:
            continue
        for tid in tids:
            task = f"/proc/{pid}/task/{tid}"
            stat = read_proc(f"{task}/stat").rsplit(")", 1)
            lines.append(f"  tid {tid} ({read_proc(f'{task}/comm')}) state "
                         f"{stat[1].split()[0] if len(stat) == 2 else '?'} wchan "
                         f"{read_proc(f'{task}/wchan')} syscall {read_proc(f'{task}/syscall')[:40]}")
            lines += ["    " + l for l in read_proc(f"{task}/stack").splitlines()[:8]]
        try:
            gdb = subprocess.run(["gdb", "-batch", "-nx", "-p", str(pid), "-ex",
                                  "thread apply all bt 25"], capture_output=True, text=True,
                                 timeout=60)
            lines += ["    " + l for l in gdb.stdout.splitlines() if l.startswith(("#", "Thread"))]
        except (OSError, subprocess.TimeoutExpired) as e:
            lines.append(f"  (no gdb backtrace: {e})")
    return "\n".join(lines)


def ended(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return (f.read().rsplit(")", 1)[1].split()[0] in "ZX"
                    and len(os.listdir(f"/proc/{pid}/task")) <= 1)
    except (FileNotFoundError, ProcessLookupError):  # gone, or reaped while we read
        return True


def wait_until_gone(pid, seconds=60, others=()):
    """The daemon is not our child: watch /proc until it has exited (or is a zombie whose
    other threads have ended too: until then a signal sent to it is taken by none and lost).
    Past the time, the failure describes pid and `others` (the session's other processes)."""
    deadline = time.monotonic() + seconds
    while not ended(pid):
        if time.monotonic() >= deadline:
            raise AssertionError(f"pid {pid} still running after {seconds} s\n"
                                 + describe([pid, *others]))
        time.sleep(0.05)


def test_daemon_that_outlives_the_program_keeps_all_its_events(tmp_path):
    """Default --wait=all: lantern waits for the daemon's ~1 s of work after the program."""
    run = profile(tmp_path, WORKLOAD, "daemon", "400")
    assert count_ranges(tmp_path / "x.db", "daemon-work") == (400, 400), run.stderr
    assert "still running" not in run.stderr
    assert not (tmp_path / "x.db.raw").exists()
    with sqlite3.connect(tmp_path / "x.db") as db:
        # the program and the daemon ended cleanly; the middle process, which forked from the
        # program and so has a raw file too, left with _exit (no exit handler: not clean)
        rows = db.execute("SELECT p.pid, p.clean_exit, count(r.id) FROM processes p"
                          " LEFT JOIN ranges r ON r.process_id = p.id"
                          " GROUP BY p.id ORDER BY p.start_ns").fetchall()
        assert [(clean, ranges) for _, clean, ranges in rows] == [(1, 0), (0, 0), (1, 400)]


def still_running_pid(stderr, pairs=400):
    """The pid the one 'still running' line names (the daemon doing pairs), and the line."""
    lines = [l for l in stderr.splitlines() if "still running" in l]
    assert len(lines) == 1, stderr
    line = lines[0]
    assert line.startswith("lantern: 1 traced process still running")
    m = re.search(rf"pid (\d+) \((\S+) daemon {pairs}\)", line)
    assert m and m.group(2) == WORKLOAD, line
    return int(m.group(1)), line


def check_kept_and_imported_again(tmp_path, line, pid):
    """The raw folder is kept and said, with the command that imports it again; run later,
    that command gets every event."""
    assert "'x.db.raw' is kept" in line and "'lantern import x.db.raw -o x.db --force'" in line
    assert (tmp_path / "x.db.raw").is_dir()
    assert count_ranges(tmp_path / "x.db", "daemon-work")[0] < 400
    wait_until_gone(pid)
    lantern(tmp_path, "import", "x.db.raw", "-o", "x.db", "--force")
    assert count_ranges(tmp_path / "x.db", "daemon-work") == (400, 400)


def test_wait_primary_names_the_daemon_and_keeps_the_raw_folder(tmp_path):
    run = profile(tmp_path, "--wait=primary", WORKLOAD, "daemon", "400")
    pid, line = still_running_pid(run.stderr)
    assert "(not waited for: --wait=primary)" in line
    check_kept_and_imported_again(tmp_path, line, pid)


def test_short_wait_timeout_names_the_daemon_and_keeps_the_raw_folder(tmp_path):
    run = profile(tmp_path, "--wait-timeout", "0.2", WORKLOAD, "daemon", "400")
    pid, line = still_running_pid(run.stderr)
    assert "(after waiting 0.2 s: --wait-timeout)" in line
    check_kept_and_imported_again(tmp_path, line, pid)


def test_process_with_the_agent_but_no_file_yet_is_waited_for(tmp_path):
    """A process of the session that maps the agent but has not made its raw file (as a
    traced process's child between fork and its first run): here `sleep`, the agent preloaded
    but never started, left running by a shell that exits once it sees the agent mapped."""
    preload = " ".join(p for p in (os.environ.get("LANTERN_TEST_PRELOAD"),
                                   os.environ.get("LANTERN_AGENT_PATH",
                                                  os.path.join(BUILD, "lib", "liblantern-agent.so"))) if p)
    script = (f"LD_PRELOAD='{preload}' ASAN_OPTIONS=detect_leaks=0 sleep 1 & echo $! > pid;"
              " until grep -q liblantern-agent /proc/$!/maps; do sleep 0.01; done")
    run = profile(tmp_path, "sh", "-c", script)
    pid = int((tmp_path / "pid").read_text())
    assert "still running" not in run.stderr, run.stderr
    wait_until_gone(pid, seconds=0)  # lantern returned only once it had ended
    assert not (tmp_path / "x.db.raw").exists()
    (tmp_path / "x.db").unlink()
    run = profile(tmp_path, "--wait-timeout", "0.1", "sh", "-c", script)
    pid = int((tmp_path / "pid").read_text())
    line, = [l for l in run.stderr.splitlines() if "still running" in l]
    assert f"pid {pid} (sleep 1)" in line and (tmp_path / "x.db.raw").is_dir(), line
    wait_until_gone(pid)


def test_wait_options_are_checked(tmp_path):
    for bad in (["--wait=some"], ["--wait-timeout", "-1"], ["--wait-timeout", "soon"]):
        run = profile(tmp_path, *bad, WORKLOAD, "daemon", "1", expect_status=2)
        assert run.stderr.startswith("lantern: --wait")
        assert not (tmp_path / "x.db.raw").exists()


def test_sigkill_loses_nothing(tmp_path):
    """A push/pop every 1 ms for 1 s, then SIGKILL: every range is in the database, those the
    agent had not written yet appended from its buffer file (salvaged = 1), each at the time
    the program's own clock gave it."""
    times = tmp_path / "times.txt"
    profile(tmp_path, WORKLOAD, "ticks_then_kill", str(times), expect_status=128 + signal.SIGKILL)
    lines = times.read_text().split("\n")
    ends = [int(l.split()[1]) for l in lines if l.startswith("end ")]
    (kill_ns, _), = [tuple(map(int, l.split()[1:])) for l in lines if l.startswith("kill ")]
    assert len(ends) == 1000
    with sqlite3.connect(tmp_path / "x.db") as db:
        recorded = [e for e, in db.execute(
            "SELECT r.end_ns FROM ranges r JOIN strings s ON s.id = r.name_id"
            " WHERE s.value = 'tick' ORDER BY r.start_ns")]
        (clean, end_record, salvaged, signal_), = db.execute(
            "SELECT clean_exit, end_record, salvaged, exit_signal FROM processes").fetchall()
    assert (clean, end_record, salvaged, signal_) == (0, 1, 1, signal.SIGKILL)
    # every range, each ended before the program saw it end (give or take the agent's
    # TSC-to-ns conversion: 0.5 ms, half the spacing of the ranges)
    assert len(recorded) == len(ends) == 1000
    assert all(r is not None and r <= e + 500_000 for r, e in zip(recorded, ends)), \
        max(r - e for r, e in zip(recorded, ends))
    assert recorded[-1] < kill_ns
    header = lantern(tmp_path, "stats", "x.db").stdout
    lost, = [l for l in header.splitlines() if l.startswith("Lost events:")]
    assert lost == "Lost events:     none"


def pid_of(tmp_path):
    with sqlite3.connect(tmp_path / "x.db") as db:
        return db.execute("SELECT pid FROM processes").fetchone()[0]


def killed_session_with_drops(tmp_path):
    """The SIGKILLed program's database, with 7 drops on its thread written in as the
    importer writes a TRACE_DROPPED (process, thread, meta), and no end record (as when its
    buffer file could not be made): what every output must show."""
    profile(tmp_path, WORKLOAD, "ticks_then_kill", str(tmp_path / "times.txt"),
            expect_status=128 + signal.SIGKILL)
    with sqlite3.connect(tmp_path / "x.db") as db:
        db.execute("UPDATE processes SET end_record = 0, salvaged = 0")
        db.execute("UPDATE processes SET dropped_events = 7")
        db.execute("UPDATE threads SET dropped_events = 7")
        db.execute("UPDATE meta SET value = 7 WHERE key = 'dropped_events'")
        (pid, tid, thread), = db.execute("SELECT p.pid, t.tid, l.label FROM threads t"
                                         " JOIN processes p ON p.id = t.process_id"
                                         " JOIN thread_labels l ON l.id = t.id").fetchall()
    why = "events after the last write missing: unknown"
    line = (f"7 events dropped (pid {pid} lifetime_workload: 7 [tid {tid} {thread}: 7]); "
            f"1 process ended without its end record ({why}): pid {pid} lifetime_workload "
            "(ended by SIGKILL)")
    return pid, line, f"7 events dropped; ended by SIGKILL without its end record ({why})"


def test_every_report_header_and_export_shows_the_losses(tmp_path):
    pid, line, process_losses = killed_session_with_drops(tmp_path)
    for command in (["stats", "x.db"], ["stats", "x.db", "--report", "energy_sum"],
                    ["analyze", "x.db"]):
        run = subprocess.run([LANTERN, *command], cwd=tmp_path, capture_output=True, text=True,
                             env=PIPE_ENV)
        assert f"Lost events:     {line}\n" in run.stdout, (command, run.stdout)
    doc = __import__("json").loads(lantern(tmp_path, "stats", "x.db", "--format", "json").stdout)
    assert doc["session"]["lost_events"] == line
    assert doc["session"]["unfinished_processes"] == 1 and doc["session"]["dropped_events"] == 7
    assert f"lantern: lost events: {line}\n" in lantern(tmp_path, "kernels", "x.db").stderr
    lantern(tmp_path, "report", "x.db", "-o", "x.html")
    assert f"<tr><th>Lost events</th><td>{line}</td></tr>" in (tmp_path / "x.html").read_text()
    # Chrome JSON: the session's line in otherData, each process's losses as its label
    lantern(tmp_path, "export", "x.db", "--format", "chrome", "-o", "x.json")
    trace = __import__("json").loads((tmp_path / "x.json").read_text())
    assert trace["otherData"] == {"lantern_lost_events": line}
    labels = [(e["pid"], e["args"]["labels"]) for e in trace["traceEvents"]
              if e["name"] == "process_labels"]
    assert labels == [(pid, process_losses)]
    # how it ended unknown (the launcher did not reap it): said not to have ended
    with sqlite3.connect(tmp_path / "x.db") as db:
        db.execute("UPDATE processes SET exit_signal = NULL")
    assert ("1 process did not end (no end record: killed, or still running when imported; "
            f"events after the last write missing: unknown): pid {pid} lifetime_workload\n") \
        in lantern(tmp_path, "stats", "x.db").stdout


def test_perfetto_tracks_describe_the_losses(tmp_path):
    pb = __import__("pytest").importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2",
                                          reason="Python package perfetto (scripts/deps.sh)")
    pid, _, process_losses = killed_session_with_drops(tmp_path)
    lantern(tmp_path, "export", "x.db", "--format", "perfetto", "-o", "x.pftrace")
    trace = pb.Trace()
    trace.ParseFromString((tmp_path / "x.pftrace").read_bytes())
    tracks = [p.track_descriptor for p in trace.packet if p.HasField("track_descriptor")]
    process, = [t for t in tracks if t.HasField("process")]
    assert (process.process.pid, process.description) == (pid, process_losses)
    assert list(process.process.process_labels) == [process_losses]
    thread, = [t for t in tracks if t.HasField("thread")]
    assert thread.description == "7 events dropped"


def test_sigterm_during_the_wait_stops_it_and_keeps_the_raw_folder(tmp_path):
    """A signal for lantern while it waits ends the wait at once (not the daemon's 10 s): the
    daemon is named, nothing half-written is left, the raw folder is kept, and lantern dies by
    the signal, as a signal during the import does."""
    err = open(tmp_path / "stderr", "w")  # a file: the daemon keeps a pipe open to its end
    lantern_run = subprocess.Popen([LANTERN, "profile", "-t", "nvtx", "-o", "x.db", WORKLOAD,
                                    "daemon", "4000"], cwd=tmp_path, stderr=err)
    raw = tmp_path / "x.db.raw"
    deadline = time.monotonic() + 60
    while len(list(raw.glob("*-*.lrt"))) < 3:  # the program, the middle process, the daemon
        assert time.monotonic() < deadline and lantern_run.poll() is None
        time.sleep(0.01)
    first, *others = sorted(raw.glob("*-*.lrt"), key=lambda p: int(p.stem.split("-")[1]))
    # the program has ended: lantern waits (a failure describes the program, the middle
    # process, the daemon and lantern)
    wait_until_gone(int(first.stem.split("-")[0]),
                    others=[*(int(p.stem.split("-")[0]) for p in others), lantern_run.pid])
    # once: one that comes before lantern reaped the program is lantern's too (the test below)
    lantern_run.send_signal(signal.SIGTERM)
    lantern_run.wait(timeout=120)
    err.close()
    stderr = (tmp_path / "stderr").read_text()
    assert lantern_run.returncode == -signal.SIGTERM, stderr
    pid, line = still_running_pid(stderr, pairs=4000)
    assert os.path.exists(f"/proc/{pid}"), "lantern waited for the daemon's end"
    assert "(the wait stopped by a signal)" in line and "imported" not in line, line
    assert "interrupted" in stderr and not (tmp_path / "x.db").exists() and raw.is_dir()
    os.kill(pid, signal.SIGKILL)
    wait_until_gone(pid)


def test_sigterm_after_the_program_ended_before_lantern_reaped_it_is_not_lost(tmp_path):
    """A signal for lantern that comes once the program has ended but before lantern reaped
    it (a loaded machine may leave lantern unscheduled that long: here lantern is stopped
    meanwhile) is lantern's: not forwarded to the dead program and lost, it ends the wait."""
    err = open(tmp_path / "stderr", "w")
    # the program waits for the file "go" (sh, then exec: the same process)
    lantern_run = subprocess.Popen(
        [LANTERN, "profile", "-t", "nvtx", "-o", "x.db", "sh", "-c",
         'while [ ! -e go ]; do sleep 0.01; done; exec "$0" "$@"', WORKLOAD, "daemon", "4000"],
        cwd=tmp_path, stderr=err)
    children = f"/proc/{lantern_run.pid}/task/{lantern_run.pid}/children"
    deadline = time.monotonic() + 60
    while not read_proc(children).split()[:1]:
        assert time.monotonic() < deadline and lantern_run.poll() is None
        time.sleep(0.01)
    program = int(read_proc(children).split()[0])
    lantern_run.send_signal(signal.SIGSTOP)
    try:
        (tmp_path / "go").touch()
        raw = tmp_path / "x.db.raw"
        while len(list(raw.glob("*-*.lrt"))) < 3:  # the program, the middle process, the daemon
            assert time.monotonic() < deadline, describe([program])
            time.sleep(0.01)
        # the program has ended; lantern, stopped, has not reaped it
        while not ended(program):
            assert time.monotonic() < deadline, describe([program])
            time.sleep(0.01)
        lantern_run.send_signal(signal.SIGTERM)
    finally:
        lantern_run.send_signal(signal.SIGCONT)
    lantern_run.wait(timeout=120)
    err.close()
    stderr = (tmp_path / "stderr").read_text()
    assert lantern_run.returncode == -signal.SIGTERM, stderr
    pid, line = still_running_pid(stderr, pairs=4000)
    assert os.path.exists(f"/proc/{pid}"), "lantern waited for the daemon's end"
    assert "(the wait stopped by a signal)" in line and "imported" not in line, line
    assert "interrupted" in stderr and not (tmp_path / "x.db").exists() and raw.is_dir()
    os.kill(pid, signal.SIGKILL)
    wait_until_gone(pid)
