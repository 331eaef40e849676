"""The launcher and the processes it did not start itself (docs/testing.md): daemons made
before their first NVTX call are waited for (the launcher is their subreaper), one that never
ends is named after --wait-timeout, how every reaped process ended is recorded and said, the
signals sent to lantern still reach the program, and two runs on one output never mix. Each
case runs the real `lantern profile` on fault_workload (its `daemon` scenario: a double fork
and setsid before any NVTX call).
"""
import os
import signal
import subprocess
import time

import pytest

# the fault matrix's runner and readers (its module, beside this one)
from test_faults import ENV, LANTERN, WORKLOAD, error_line, lantern, query


def lost_events(db):
    r = lantern("stats", db)
    assert r.returncode == 0, r.stderr
    (line,) = [l for l in (r.stdout + r.stderr).splitlines() if l.startswith("Lost events:")]
    return line


def daemon(status, pairs, ms, end="exit", code=0):
    """fault_workload's daemon scenario: the program exits `status` at once; its daemon sleeps
    `ms`, makes `pairs` push/pop pairs and ends by `end` with `code`."""
    return [WORKLOAD, "daemon", status, pairs, ms, end, code]


def gone(pid):
    try:
        os.kill(pid, 0)
        return False
    except ProcessLookupError:
        return True


# ---- every descendant is waited for -------------------------------------------------------------

def test_daemon_made_before_its_first_nvtx_call_is_waited_for(tmp_path):
    db = tmp_path / "d.db"
    r = lantern("profile", "-o", db, "--", *daemon(3, 400, 300))
    assert r.returncode == 3, r.stderr  # the program's own status, not the daemon's
    assert "still running" not in r.stderr
    assert query(db, "SELECT count(*), count(end_ns) FROM ranges") == [(400, 400)]
    assert query(db, "SELECT pid, end_record FROM processes") == [(int(r.stdout), 1)]
    assert not (tmp_path / "d.db.raw").exists()


def test_daemon_that_never_ends_is_named_after_the_timeout(tmp_path):
    db = tmp_path / "n.db"
    started = time.monotonic()
    r = lantern("profile", "--wait-timeout", "0.5", "-o", db, "--", *daemon(4, 0, 60_000), timeout=60)
    pid = int(r.stdout)
    try:
        assert r.returncode == 4, r.stderr
        assert time.monotonic() - started < 30
        line = [l for l in r.stderr.splitlines() if "still running" in l]
        assert line and "after waiting 0.5 s: --wait-timeout" in line[0], r.stderr
        assert f"pid {pid} ({WORKLOAD} daemon 4 0 60000 exit 0)" in line[0]
        assert db.exists() and (tmp_path / "n.db.raw").is_dir()  # it may still write there
        assert not gone(pid)  # left running, as a daemon should be
    finally:
        os.kill(pid, signal.SIGKILL)


def test_wait_primary_waits_for_no_daemon(tmp_path):
    db = tmp_path / "p.db"
    started = time.monotonic()
    r = lantern("profile", "--wait=primary", "-o", db, "--", *daemon(0, 0, 60_000), timeout=60)
    pid = int(r.stdout)
    try:
        assert r.returncode == 0, r.stderr
        assert time.monotonic() - started < 30
        assert "not waited for: --wait=primary" in r.stderr and f"pid {pid} (" in r.stderr
    finally:
        os.kill(pid, signal.SIGKILL)


def test_sigterm_while_waiting_for_a_daemon_ends_the_wait(tmp_path):
    p = subprocess.Popen([str(LANTERN), "profile", "--wait-timeout", "100", "-o", str(tmp_path / "t.db"),
                          "--", *map(str, daemon(0, 0, 60_000))], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=ENV)
    pid = int(p.stdout.readline())
    try:
        time.sleep(0.5)  # the program has ended: lantern waits for its daemon
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=30)
        assert p.returncode == -signal.SIGTERM, err
        assert "lantern: the raw files are kept in" in err
    finally:
        os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signals_sent_to_lantern_still_reach_the_program(tmp_path, sig):
    db = tmp_path / "w.db"
    p = subprocess.Popen([str(LANTERN), "profile", "-o", str(db), "--", str(WORKLOAD), "wait"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    assert p.stdout.readline() == "ready\n"
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 41, err  # the program got exactly one signal; lantern lived on
    assert query(db, "SELECT exit_status, exit_signal FROM processes") == [(41, None)]


# ---- how every reaped process ended -------------------------------------------------------------

def test_program_exit_code_is_on_its_process_row(tmp_path):
    db = tmp_path / "e.db"
    r = lantern("profile", "-o", db, "--", WORKLOAD, "pushes", 3, 7)
    assert r.returncode == 7, r.stderr
    assert query(db, "SELECT exit_status, exit_signal, core_dumped, end_record FROM processes") == \
        [(7, None, 0, 1)]
    assert lost_events(db) == "Lost events:     none"


def test_daemon_ended_by_exit_without_hooks_keeps_everything_and_its_status(tmp_path):
    """_exit runs no exit hook: the launcher appends what the daemon had buffered (its buffer
    file, salvaged = 1) and knows its exit code, since it reaped it."""
    db = tmp_path / "x.db"
    r = lantern("profile", "-o", db, "--", *daemon(0, 5, 0, "_exit", 5))
    assert r.returncode == 0, r.stderr
    assert query(db, "SELECT pid, exit_status, exit_signal, end_record, salvaged, clean_exit"
                     " FROM processes") == [(int(r.stdout), 5, None, 1, 1, 0)]
    assert query(db, "SELECT count(*) FROM ranges WHERE end_ns IS NOT NULL") == [(5,)]
    assert lost_events(db) == "Lost events:     none"


def test_daemon_ended_by_a_signal_says_which_and_keeps_everything(tmp_path):
    db = tmp_path / "k.db"
    r = lantern("profile", "-o", db, "--", *daemon(0, 5, 0, "signal", signal.SIGKILL))
    assert r.returncode == 0, r.stderr
    assert query(db, "SELECT exit_status, exit_signal, end_record, salvaged FROM processes") == \
        [(None, 9, 1, 1)]
    assert query(db, "SELECT count(*) FROM ranges WHERE end_ns IS NOT NULL") == [(5,)]
    assert lost_events(db) == "Lost events:     none"


# ---- concurrent runs on one output --------------------------------------------------------------

def test_second_run_on_a_busy_output_refuses_and_touches_nothing(tmp_path):
    first = subprocess.Popen([str(LANTERN), "profile", "-f", "-o", "same.db", "--", str(WORKLOAD), "wait"],
                             cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    assert first.stdout.readline() == "ready\n"
    raw_before = sorted(p.name for p in (tmp_path / "same.db.raw").iterdir())
    second = lantern("profile", "-f", "-o", "same.db", "--", "touch", "ran", cwd=tmp_path)
    assert error_line(second, 1) == \
        "lantern: session folder 'same.db.raw' is in use by another 'lantern profile' run " \
        "(wait for it to end, or use -o another name)"
    assert not (tmp_path / "ran").exists()  # refused before its program ran
    assert sorted(p.name for p in (tmp_path / "same.db.raw").iterdir()) == raw_before
    first.send_signal(signal.SIGTERM)
    _, err = first.communicate(timeout=60)
    assert first.returncode == 41, err
    assert query(tmp_path / "same.db", "SELECT s.value FROM ranges r JOIN strings s ON s.id = r.name_id") \
        == [("waiting",)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["same.db"]


def test_runs_started_at_once_on_one_output_never_mix(tmp_path):
    runs = [subprocess.Popen([str(LANTERN), "profile", "-f", "-o", "same.db", "--", str(WORKLOAD),
                              "pushes", str(1000 * (i + 1)), str(10 + i)], cwd=tmp_path, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=ENV) for i in range(4)]
    won = []
    for i, p in enumerate(runs):
        _, err = p.communicate(timeout=120)
        if p.returncode == 10 + i:
            assert "lantern: report written to same.db" in err, err
            won.append(i)
        else:
            assert p.returncode == 1 and err.splitlines()[-1].startswith(
                "lantern: session folder 'same.db.raw' is in use by another"), err
    assert won
    ((status,),) = query(tmp_path / "same.db", "SELECT value FROM meta WHERE key = 'exit_status'")
    assert status - 10 in won
    # the database is one run's, whole: its ranges and its status agree
    assert query(tmp_path / "same.db", "SELECT count(*), count(end_ns) FROM ranges") == \
        [(1000 * (status - 9), 1000 * (status - 9))]
    assert query(tmp_path / "same.db", "SELECT exit_status FROM processes") == [(status,)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["same.db"]
