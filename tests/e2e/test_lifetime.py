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


def lantern(tmp_path, *args, expect_status=0):
    run = subprocess.run([LANTERN, *args], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == expect_status, run.stderr
    return run


def profile(tmp_path, *options_and_command, expect_status=0):
    return lantern(tmp_path, "profile", "-t", "nvtx", "-o", "x.db", *options_and_command,
                   expect_status=expect_status)


def count_ranges(db_path, name):
    with sqlite3.connect(db_path) as db:
        return db.execute("SELECT count(*), count(r.end_ns) FROM ranges r"
                          " JOIN strings s ON s.id = r.name_id WHERE s.value = ?", (name,)).fetchone()


def wait_until_gone(pid, seconds=60):
    """The daemon is not our child: watch /proc until it has exited (or is a zombie)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in "ZX":
                    return
        except FileNotFoundError:
            return
        time.sleep(0.05)
    raise AssertionError(f"pid {pid} still running after {seconds} s")


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


def still_running_pid(stderr):
    """The pid the one 'still running' line names, and the line."""
    lines = [l for l in stderr.splitlines() if "still running" in l]
    assert len(lines) == 1, stderr
    line = lines[0]
    assert line.startswith("lantern: 1 traced process still running")
    m = re.search(r"pid (\d+) \((\S+) daemon 400\)", line)
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


def test_wait_options_are_checked(tmp_path):
    for bad in (["--wait=some"], ["--wait-timeout", "-1"], ["--wait-timeout", "soon"]):
        run = profile(tmp_path, *bad, WORKLOAD, "daemon", "1", expect_status=2)
        assert run.stderr.startswith("lantern: --wait")
        assert not (tmp_path / "x.db.raw").exists()
