"""The process life-cycle suite (docs/testing.md): a traced program may close every
descriptor, exit its main thread first, fork children that _exit, exec from a thread,
daemonize, nest 200,000 deep, end ranges on other threads, record in its exit handlers, be
statically linked or built with ASan, or end by any signal. Under `lantern profile` each such
program must run as it runs alone (same output, same exit status, no hang) and the database
must hold exactly the ranges the program says it made; a loss that cannot be avoided must be
said in the `Lost events` line, never be silent.

Every run is bounded (a hang fails its test, it never hangs ctest): the launcher runs in its
own process group, killed whole when its time is up. In the ASan+UBSan build every C program
here is sanitized; the Python workers get the sanitizer runtimes preloaded.
"""
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
BUILD = Path(os.environ.get("LANTERN_BUILD", HERE.parents[1] / "build"))
LANTERN = BUILD / "bin" / "lantern"
WORKLOAD = os.environ.get("LIFECYCLE_WORKLOAD", str(BUILD / "bin" / "lifecycle_workload"))
EXIT_HANDLERS = os.environ.get("EXIT_HANDLERS_WORKLOAD", str(BUILD / "bin" / "exit_handlers_workload"))
STATIC = os.environ.get("STATIC_WORKLOAD", "")
ASAN = os.environ.get("ASAN_WORKLOAD", "")
SHIM = os.environ.get("NVTX_SHIM", str(BUILD / "lib" / "libnvtx_shim.so"))

# lantern and the C workloads are C programs: in the sanitized build they run with the full
# checks (the preload and relaxed ASAN_OPTIONS that scripts/test.sh gives python-hosted tests
# are for Python only). Nothing of an outer lantern session leaks in either.
PYTHON_PRELOAD = os.environ.get("LD_PRELOAD", "")
ENV = {k: v for k, v in os.environ.items()
       if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "NVTX_INJECTION64_PATH", "CUDA_INJECTION64_PATH")
       and not k.startswith("LANTERN_")}
ENV["NVTX_SHIM"] = SHIM


def run_bounded(argv, timeout, cwd=None, env=None):
    """Runs argv in a process group of its own; past `timeout` s the whole group is killed and
    the test fails as a hang. Whatever of the group outlives a normal end is killed too."""
    p = subprocess.Popen([str(a) for a in argv], cwd=cwd, env=env or ENV, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, errors="replace", start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(p.pid)
        out, err = p.communicate()
        pytest.fail(f"hang: {' '.join(map(str, argv))} had not ended after {timeout} s "
                    f"(then killed); stderr:\n{err[-3000:]}")
    kill_group(p.pid)
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


def kill_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def profile(tmp_path, *command, timeout=60, db="x.db", options=()):
    return run_bounded([LANTERN, "profile", "-t", "nvtx", "-o", db, *options, "--", *command],
                       timeout, cwd=tmp_path)


def alone(tmp_path, *command, timeout=60):
    """The command without lantern: the output and status a traced run must reproduce."""
    return run_bounded(command, timeout, cwd=tmp_path)


def shell_status(returncode):
    """A status as lantern (and a shell) reports it: 128+N for death by signal N."""
    return 128 - returncode if returncode < 0 else returncode


def same_as_alone(traced, untraced):
    assert traced.returncode == shell_status(untraced.returncode), traced.stderr
    assert traced.stdout == untraced.stdout, traced.stderr


def lantern_lines(stderr):
    """The lines lantern (launcher or agent) wrote, but its closing 'report written'."""
    return [l for l in stderr.splitlines()
            if l.startswith("lantern:") and not l.startswith("lantern: report written to ")]


def query(db, sql, *args):
    con = sqlite3.connect(db)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def ranges_by_name(db):
    """{name: (ranges, ended ranges)} of the whole session."""
    rows = query(db, "SELECT s.value, count(*), count(r.end_ns) FROM ranges r"
                     " LEFT JOIN strings s ON s.id = r.name_id GROUP BY s.value")
    return {name: (n, ended) for name, n, ended in rows}


def header(tmp_path, db="x.db"):
    """The report header's lines, {'Lost events': ..., 'Import warnings': ..., ...}."""
    r = run_bounded([LANTERN, "stats", db], 60, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = {}
    for line in r.stdout.splitlines():
        key, sep, value = line.partition(":")
        if sep and key and not line.startswith(" "):
            lines.setdefault(key.strip(), value.strip())
    return lines


def assert_kept(tmp_path, expected, db="x.db"):
    """Every range the program made is in the database and ended, exactly."""
    found = ranges_by_name(tmp_path / db)
    got = {name: found.get(name, (0, 0)) for name in expected}
    want = {name: (n, n) for name, n in expected.items()}
    assert got == want, f"(ranges, ended) by name; Lost events: {header(tmp_path, db).get('Lost events')}"


# ---- 1. the program closes every descriptor, then opens a file of its own ---------------------

@pytest.mark.parametrize("how", ["range", "loop"])
def test_row01_closed_descriptors_never_receive_trace_chunks(tmp_path, how):
    """close_range(3, ~0U, 0) or a close() loop, then open(), 9 bytes, ~1 s of ranges."""
    r = profile(tmp_path, WORKLOAD, "close_fds", how, "user.txt")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "before 50 after 100\n"
    assert (tmp_path / "user.txt").read_bytes() == b"user-data"  # the program's file, only its bytes
    assert_kept(tmp_path, {"before": 50, "after": 100})


# ---- 2. main() calls pthread_exit while a worker goes on -------------------------------------

def test_row02_main_thread_exit_then_worker_return_ends_the_run(tmp_path):
    r = profile(tmp_path, WORKLOAD, "main_thread_exits", 300, timeout=30)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "worker 300\n"
    assert_kept(tmp_path, {"main": 10, "worker": 300})


# ---- 3. a statically linked NVTX program -----------------------------------------------------

def test_row03_static_binary_runs_as_it_runs_alone(tmp_path):
    if not STATIC:
        pytest.skip("no static libc (libc.a) in this toolchain: static_workload not built")
    untraced = alone(tmp_path, STATIC)
    assert (untraced.returncode, untraced.stdout) == (5, "static 40\n"), untraced.stderr
    # In the sanitized build the agent brings the ASan runtime into the static program, whose
    # LeakSanitizer cannot work there: its exit check is off (the normal build has none).
    r = run_bounded([LANTERN, "profile", "-t", "nvtx", "-o", "x.db", "--", STATIC], 60,
                    cwd=tmp_path, env={**ENV, "ASAN_OPTIONS": "detect_leaks=0"})
    same_as_alone(r, untraced)
    db = tmp_path / "x.db"
    found = ranges_by_name(db).get("static", (0, 0)) if db.exists() else (0, 0)
    if found != (0, 0):  # traced: all of it
        assert found == (40, 40), r.stderr
    else:  # untraced: one line says why
        assert len(lantern_lines(r.stderr)) == 1, r.stderr


# ---- 4. fork children that end with _exit ----------------------------------------------------

@pytest.mark.parametrize("threads", [1, 5], ids=["single-threaded-parent", "multithreaded-parent"])
def test_row04_fork_children_ending_with__exit_keep_their_ranges(tmp_path, threads):
    """50 children x 50 ranges, each child _exit(0)s right after its ranges."""
    r = profile(tmp_path, WORKLOAD, "fork_exit", 50, 50, threads, "_exit", timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "children 50 child 2500 parent 110\n"
    assert_kept(tmp_path, {"child": 2500, "parent": 110})


# ---- 5. Python multiprocessing workers -------------------------------------------------------

@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
def test_row05_python_multiprocessing_workers_keep_their_ranges(tmp_path, method):
    python = [sys.executable, HERE / "mp_workload.py", method]
    if PYTHON_PRELOAD:  # the sanitized build: an unsanitized python loads sanitized libraries
        python = ["env", f"LD_PRELOAD={PYTHON_PRELOAD}", "ASAN_OPTIONS=detect_leaks=0", *python]
    r = profile(tmp_path, *python, timeout=120)
    assert r.returncode == 0, r.stderr
    made = json.loads(r.stdout)
    assert sum(made.values()) == 5 + 48
    assert_kept(tmp_path, made)
    assert sum(n for n, _ in ranges_by_name(tmp_path / "x.db").values()) == 5 + 48


# ---- 6. exec from a thread that is not main --------------------------------------------------

@pytest.mark.parametrize("who", ["thread", "main"])
def test_row06_exec_keeps_the_ranges_made_before_it(tmp_path, who):
    r = profile(tmp_path, WORKLOAD, "thread_exec", 200, who)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "pre-exec 200\nnoop\n"
    assert_kept(tmp_path, {"pre-exec": 200})


# ---- 7. a daemon whose first NVTX call follows the daemonizing -------------------------------

def wait_until_gone(pid, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in "ZX":
                    return True
        except (FileNotFoundError, ProcessLookupError):  # gone, or reaped while we read
            return True
        time.sleep(0.05)
    return False


def test_row07_daemon_started_before_any_nvtx_call_keeps_its_ranges(tmp_path):
    pidfile = tmp_path / "daemon.pid"
    try:
        r = profile(tmp_path, WORKLOAD, "daemonize", 400, pidfile)
        assert r.returncode == 0, r.stderr
        assert r.stdout == "daemon started\n"
        assert_kept(tmp_path, {"daemon-work": 400})
    finally:  # the daemon left its session: never leave it behind
        if pidfile.exists():
            pid = int(pidfile.read_text())
            if not wait_until_gone(pid, 10):
                os.kill(pid, signal.SIGKILL)


# ---- 8. ranges started on one thread and ended on another ------------------------------------

def test_row08_range_ended_on_another_thread_is_kept_with_its_duration(tmp_path):
    """40 start/end ranges, each ended on another thread than the one that started it (both
    ways) 2 ms later: often within one of the agent's drain periods, so that the thread that
    ends a range may be drained before the one that started it."""
    r = profile(tmp_path, WORKLOAD, "cross_thread", 40, 2)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "handoff 40\n"
    rows = query(tmp_path / "x.db", "SELECT r.end_ns - r.start_ns, r.start_thread_id != r.end_thread_id"
                 " FROM ranges r JOIN strings s ON s.id = r.name_id WHERE s.value = 'handoff'")
    unended = sum(d is None for d, _ in rows)
    assert (len(rows), unended) == (40, 0), f"{unended} of {len(rows)} ranges left unended: {rows}"
    assert all(2_000_000 <= d < 5_000_000_000 for d, _ in rows), rows
    assert all(other for _, other in rows), rows
    assert header(tmp_path)["Unended ranges"] == "0"


# ---- 9. NVTX in exit handlers and destructors ------------------------------------------------

def test_row09_ranges_in_exit_handlers_and_destructors_are_kept(tmp_path):
    untraced = alone(tmp_path, EXIT_HANDLERS)
    r = profile(tmp_path, EXIT_HANDLERS)
    same_as_alone(r, untraced)
    words = r.stdout.split()
    made = {name: int(n) for name, n in zip(words[::2], words[1::2])}
    assert sum(made.values()) == 62, r.stdout
    assert_kept(tmp_path, made)


# ---- 10. nesting deeper than 4096 ------------------------------------------------------------

@pytest.mark.parametrize("depth", [10_000, 200_000])
def test_row10_deep_nesting_is_kept_or_its_loss_said(tmp_path, depth):
    r = profile(tmp_path, WORKLOAD, "deep", depth, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"deep {depth}\n"
    found = ranges_by_name(tmp_path / "x.db").get("deep", (0, 0))
    if found == (depth, depth):
        return
    missing = depth - found[1]
    lost = header(tmp_path)["Lost events"]
    assert lost != "none", f"{found} of {depth} ranges (ranges, ended), yet 'Lost events: none'"
    assert any(int(n) >= missing for n in re.findall(r"\d+", lost.replace(",", ""))), \
        f"{missing} ranges missing; Lost events: {lost}"


# ---- 11. a program built with ASan that forks ------------------------------------------------

def test_row11_asan_program_that_forks_never_hangs(tmp_path):
    """8 runs of an ASan-built program whose 4 threads fork 96 children in all, each making 20
    ranges and leaving with exit(). A hang here is a race (the agent starting a thread in
    its fork handler, inside ASan's fork), so one run alone proves little: 8 runs of 96 forks;
    and each child checks that it has one thread until its first NVTX call (exit status 3
    otherwise, which fails the program). LeakSanitizer's exit check is off: in a child forked
    by a multithreaded program it deadlocks without Lantern too (gcc 12's runtime: 4 hangs
    in 8 runs of this program alone), which is not what this row is about."""
    if not ASAN:
        pytest.skip("no AddressSanitizer runtime in this toolchain: no ASan-built workload")
    env = {**ENV, "ASAN_OPTIONS": "detect_leaks=0"}
    hangs, wrong = [], []
    for i in range(8):
        run_dir = tmp_path / f"run{i}"
        run_dir.mkdir()
        try:
            r = run_bounded([LANTERN, "profile", "-t", "nvtx", "-o", "x.db", "--", ASAN, "fork_exit",
                             96, 20, 4, "exit"], 15, cwd=run_dir, env=env)
        except pytest.fail.Exception as e:
            hangs.append(f"run {i}: {str(e).splitlines()[0]}")
            break  # one hang is the failure; more would only cost CI time
        found = ranges_by_name(run_dir / "x.db") if (run_dir / "x.db").exists() else {}
        if r.returncode != 0 or r.stdout != "children 96 child 1920 parent 202\n" or \
                (found.get("child"), found.get("parent")) != ((1920, 1920), (202, 202)):
            wrong.append(f"run {i}: status {r.returncode}, {r.stdout!r}, {found}, {r.stderr[-500:]!r}")
    assert not hangs and not wrong, "\n".join(hangs + wrong)


# ---- 12. two profiles onto one database at once ----------------------------------------------

def agent_file_exists(folder):
    raw = folder / "same.db.raw"
    return raw.is_dir() and any(p.name != "launcher.lrt" for p in raw.glob("*.lrt"))


def two_profiles(tmp_path, runs, staggered):
    """`lantern profile -f -o same.db` twice: at once, or the second once the first's program
    records (its agent's raw file exists). {name: (status, stderr)}."""
    procs = {}
    try:
        for name, n in runs.items():
            if staggered and procs:
                deadline = time.monotonic() + 30
                while not agent_file_exists(tmp_path) and time.monotonic() < deadline:
                    time.sleep(0.005)
            procs[name] = subprocess.Popen(
                [str(LANTERN), "profile", "-f", "-t", "nvtx", "-o", "same.db", "--", WORKLOAD,
                 "named", name, str(n), "2000"], cwd=tmp_path, env=ENV, stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE, text=True, start_new_session=True)
        return {name: (p.wait(timeout=60), p.stderr.read()) for name, p in procs.items()}
    except subprocess.TimeoutExpired:
        pytest.fail("hang: two lantern profile runs onto one database")
    finally:
        for p in procs.values():
            kill_group(p.pid)
            p.stderr.close()


def one_run_only(tmp_path, runs, results):
    """What is wrong with same.db and the two runs' statuses, or None: it must hold exactly
    one run, which exited 0; the other was refused (non-zero, saying why) or wrote elsewhere."""
    db = tmp_path / "same.db"
    if not db.exists():
        return f"no same.db: {results}"
    found = ranges_by_name(db)
    if len(found) != 1 or query(db, "SELECT count(*) FROM processes") != [(1,)]:
        return f"a mix of the two runs in same.db: {found}; {results}"
    (winner,) = found
    ((command,),) = query(db, "SELECT value FROM meta WHERE key = 'command'")
    if found[winner] != (runs[winner], runs[winner]) or f" named {winner} " not in command:
        return f"same.db holds {found} of '{command}'"
    if results[winner][0] != 0:
        return f"{winner}, whose data same.db holds, exited {results[winner][0]}: {results[winner][1]}"
    (loser,) = set(runs) - {winner}
    status, err = results[loser]
    if status != 0:
        return None if lantern_lines(err) else f"{loser} exited {status} without a word: {err!r}"
    written = [l[len("lantern: report written to "):] for l in err.splitlines()
               if l.startswith("lantern: report written to ")]
    if not written or (tmp_path / written[-1]).resolve() == db.resolve():
        return f"{loser} exited 0 but same.db holds {winner}: {err!r}"
    elsewhere = ranges_by_name(tmp_path / written[-1])
    return None if elsewhere == {loser: (runs[loser], runs[loser])} else \
        f"{loser} wrote {written[-1]}, which holds {elsewhere}"


def test_row12_two_profiles_onto_one_database_never_mix(tmp_path):
    """The second started while the first's program records, then three rounds of both at
    once (they race): each time, same.db holds exactly one run, and the other says so."""
    runs = {"run-a": 200, "run-b": 250}  # ~0.5 s each
    problems = []
    for round, staggered in enumerate([True, False, False, False]):
        folder = tmp_path / f"round{round}"
        folder.mkdir()
        problem = one_run_only(folder, runs, two_profiles(folder, runs, staggered))
        if problem:
            problems.append(f"round {round} ({'staggered' if staggered else 'at once'}): {problem}")
    assert not problems, "\n".join(problems)


# ---- 13. a raw file with a duplicated chunk --------------------------------------------------

def chunks(data):
    """(offset, length) of each chunk of a raw trace file (docs/trace-format.md: a 32-byte
    header from format version 5)."""
    offset, out = 16, []
    while offset + 32 <= len(data):
        length = 32 + int.from_bytes(data[offset + 4:offset + 8], "little")
        out.append((offset, length))
        offset += length
    return out


@pytest.mark.parametrize("where", ["adjacent", "later"])
def test_row13_duplicated_chunk_is_skipped_and_said(tmp_path, where):
    """A real session's file with one of its event chunks written twice: right after itself,
    or again just before the end record. The import counts nothing twice and warns, naming
    the file."""
    r = profile(tmp_path, WORKLOAD, "named", "step", 200, 2000, options=["--keep-raw"])
    assert r.returncode == 0, r.stderr
    (trace,) = [p for p in (tmp_path / "x.db.raw").iterdir()
                 if p.suffix == ".lrt" and p.name != "launcher.lrt"]
    data = trace.read_bytes()
    spans = chunks(data)
    assert len(spans) >= 4, f"too few chunks to duplicate one between others: {spans}"
    start, length = spans[1]  # the first chunk of events (after TRACE_PROCESS's)
    copy = data[start:start + length]
    at = start + length if where == "adjacent" else spans[-1][0]
    trace.write_bytes(data[:at] + copy + data[at:])
    r = run_bounded([LANTERN, "import", "x.db.raw", "-o", "dup.db"], 60, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    db = tmp_path / "dup.db"
    assert ranges_by_name(db) == {"step": (200, 200)}, r.stderr  # no double count
    assert query(db, "SELECT count(*) FROM ranges WHERE end_ns < start_ns") == [(0,)]
    ((warned,),) = query(db, "SELECT value FROM meta WHERE key = 'import_warnings'")
    assert warned >= 1, r.stderr
    warnings = [l for l in r.stderr.splitlines() if l.startswith("lantern: warning: ")]
    assert any(trace.name in w for w in warnings), r.stderr  # the file and what was skipped
    assert header(tmp_path, "dup.db")["Import warnings"] != "0"


# ---- 14. threads x fork x the way the process ends -------------------------------------------

ENDS = ["return", "exit", "_exit", "exec", "sigkill", "sigsegv", "sigabrt", "sigterm"]


@pytest.mark.parametrize("end", ENDS)
@pytest.mark.parametrize("fork", ["none", "child"])
@pytest.mark.parametrize("threads", [1, 4])
def test_row14_every_range_ended_before_the_process_end_is_kept(tmp_path, threads, fork, end):
    """Each thread makes 50 ranges; then main ends the process (the other threads alive).
    With a fork child, the parent makes 50 ranges, forks a child that does all this, waits for
    it, then does it too. The status is the one the program has alone (its signal)."""
    command = [WORKLOAD, "matrix", threads, fork, end, 50]
    untraced = alone(tmp_path, *command)
    r = profile(tmp_path, *command)
    same_as_alone(r, untraced)
    processes = 2 if fork == "child" else 1
    expected = {"work": processes * threads * 50}
    if fork == "child":
        expected["pre-fork"] = 50
    assert_kept(tmp_path, expected)
