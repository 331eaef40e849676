"""OS runtime calls (-t osrt) end to end: osrt_workload.c under `lantern profile -t osrt`, its
calls checked against what it measured itself around each one (CLOCK_MONOTONIC, the database's
clock): the calls at least the threshold are all there and only them, each within 5 % of the
program's duration; errno and return values; cancellation, fork, exec, _exit, threads, a
program that closes every descriptor; a Python program. Needs $LANTERN_BUILD and
$OSRT_WORKLOAD."""
import collections
import json
import os
import sqlite3
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "export"))

BUILD = os.environ.get("LANTERN_BUILD", "")
LANTERN = os.path.join(BUILD, "bin", "lantern")
WORKLOAD = os.environ.get("OSRT_WORKLOAD", os.path.join(BUILD, "bin", "osrt_workload"))
THRESHOLD = 500000  # 500 us: the sleeps and blocking reads (>= 1 ms) are kept, the writes not
EBADF, EAGAIN, ENOENT = 9, 11, 2


def run(cwd, *args, expect_status=0):
    done = subprocess.run([LANTERN, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == expect_status, done.stdout + done.stderr
    return done


def profile(cwd, mode, threshold=THRESHOLD):
    return run(cwd, "profile", "-t", "osrt", "--osrt-threshold", str(threshold), "-o", "x.db",
               WORKLOAD, mode)


def measured(stdout):
    """The program's own measurements: (name, start_ns, duration_ns) per call."""
    return [(n, int(s), int(d)) for _, n, s, d in
            (l.split() for l in stdout.splitlines() if l.startswith("call "))]


def calls(cwd, where="1"):
    with sqlite3.connect(cwd / "x.db") as db:
        return db.execute(
            "SELECT s.value, o.start_ns, o.end_ns - o.start_ns, o.ret, o.errno, t.tid, p.pid"
            " FROM osrt_calls o JOIN strings s ON s.id = o.name_id"
            " JOIN threads t ON t.id = o.thread_id JOIN processes p ON p.id = t.process_id"
            " WHERE " + where + " ORDER BY o.start_ns").fetchall()


def osrt_sum(cwd):
    out = run(cwd, "stats", "x.db", "-r", "osrt_sum", "--format", "json").stdout
    return json.loads(out)


CLOCKS_NS = 1000  # the agent's clock against the program's: the test below says why


def test_sleeps_and_reads_are_counted_exactly_with_their_measured_durations(tmp_path):
    prof = profile(tmp_path, "counts")
    truth = measured(prof.stdout)
    # the calls the program saw last at least the threshold (a call within 2 us of it could
    # fall either side: the wrapper's clock reads sit inside the program's)
    ambiguous = [c for c in truth if abs(c[2] - THRESHOLD) < 2000]
    assert not ambiguous, ambiguous
    long_calls = [c for c in truth if c[2] >= THRESHOLD]
    assert sum(1 for c in long_calls if c[0] == "nanosleep") == 50
    kept = calls(tmp_path)
    assert len(kept) == len(long_calls), (kept, long_calls)
    expected_counts = {}
    for name, _, _ in long_calls:
        expected_counts[name] = expected_counts.get(name, 0) + 1
    report = osrt_sum(tmp_path)
    assert {r["name"]: r["num_calls"] for r in report["rows"]} == expected_counts
    # the rows by total time, as nsys orders them; each row's total is its calls' (which of
    # nanosleep's ~100 ms and read's ~90 ms comes first is the machine's load)
    totals = [r["total_ns"] for r in report["rows"]]
    assert totals == sorted(totals, reverse=True), report["rows"]
    for r in report["rows"]:
        assert r["total_ns"] == sum(k[2] for k in kept if k[0] == r["name"]), r
    assert report["session"]["osrt"].startswith("on, threshold 500000 ns: %d calls kept of "
                                                 % len(long_calls))
    # each kept call is inside the program's own bracket, and within 5 % of its duration; the
    # wrapper's times are the TSC through the writer's calibration, the bracket's
    # clock_gettime: two clocks that agree to ~50 ns (docs/architecture.md, "Clock"; one CI run
    # saw a call start 62 ns before its bracket), hence CLOCKS_NS of slack at the edges
    # (a loaded machine can preempt the program between the call's return and its clock read,
    # which stretches the bracket alone: one CI run's 2.2 ms bracket held a 2.09 ms sleep, so a
    # call may miss 5 % of its own bracket; no more than one in ten, and each name's total is
    # within 5 % of its brackets' total, as osrt_sum reports it)
    off = []
    for (name, start, duration), row in zip(long_calls, kept):
        assert row[0] == name
        assert start - CLOCKS_NS <= row[1] and row[1] + row[2] <= start + duration + CLOCKS_NS, \
            (row, start, duration)
        if abs(row[2] - duration) > 0.05 * duration:
            off.append((row, duration))
    assert len(off) <= len(long_calls) // 10, off
    for name in expected_counts:
        ours = sum(k[2] for k in kept if k[0] == name)
        theirs = sum(c[2] for c in long_calls if c[0] == name)
        # a name of few calls: a preempted bracket of the one in ten let off above is in its
        # total too (a loaded ASan run: one write of 1.44 ms in a 1.57 ms bracket)
        stretched = sum(duration - row[2] for row, duration in off if row[0] == name)
        assert abs(ours - theirs) <= 0.05 * theirs + stretched, (name, ours, theirs, off)
    with sqlite3.connect(tmp_path / "x.db") as db:
        seen, kept_count, lost = db.execute("SELECT seen, kept, lost FROM osrt").fetchone()
    assert kept_count == len(long_calls) and lost == 0
    assert seen >= len(truth)  # every wrapped call of the program (and its start-up's)


def test_errno_and_return_values_are_kept_and_recorded(tmp_path):
    prof = profile(tmp_path, "errors", threshold=0)
    assert "errno_ok" in prof.stdout
    reads = [r for r in calls(tmp_path, "s.value = 'read'") if r[3] == -1]
    errnos = sorted(r[4] for r in reads)
    assert EBADF in errnos and EAGAIN in errnos, reads
    timed_out = next(r for r in reads if r[4] == EAGAIN)
    assert timed_out[2] >= 4000000  # the socket's 5 ms timeout
    # only the contended lock was timed: the uncontended one took the trylock path. The holder
    # keeps it 5 ms (more on a loaded machine) from a moment the main thread sees only after a
    # 1 ms sleep: the wait lies inside the program's bracket of the call and lasts milliseconds
    locks = calls(tmp_path, "s.value = 'pthread_mutex_lock'")
    (_, start, duration), = [m for m in measured(prof.stdout) if m[0] == "pthread_mutex_lock"]
    assert len(locks) == 1 and locks[0][3] == 0 and locks[0][2] >= 1000000, locks
    assert start - CLOCKS_NS <= locks[0][1] <= locks[0][1] + locks[0][2] <= start + duration + \
        CLOCKS_NS, (locks, start, duration)


def test_a_thread_blocked_in_a_wrapped_read_can_be_cancelled(tmp_path):
    prof = profile(tmp_path, "cancel")
    assert "cancelled" in prof.stdout


def test_threads_each_have_their_calls(tmp_path):
    profile(tmp_path, "threads")
    sleeps = calls(tmp_path, "s.value = 'nanosleep'")
    by_thread = {}
    for row in sleeps:
        by_thread[row[5]] = by_thread.get(row[5], 0) + 1
    assert sorted(by_thread.values()) == [5, 5, 5, 5], by_thread


def test_fork_exec_and_exit_children_are_traced(tmp_path):
    prof = profile(tmp_path, "fork")
    quick, execed = (int(x) for x in
                     next(l for l in prof.stdout.splitlines() if l.startswith("children")).split()[1:3])
    sleeps = calls(tmp_path, "s.value = 'nanosleep'")
    per_pid = {}
    for row in sleeps:
        per_pid[row[6]] = per_pid.get(row[6], 0) + 1
    assert per_pid == {quick: 3, execed: 4}, per_pid
    assert len(calls(tmp_path, "s.value = 'waitpid'")) >= 1  # at least the exec'd child's wait


def test_vfork_is_timed_until_the_parent_resumes_and_its_children_run_on_its_stack(tmp_path):
    """Two vforks: a child that writes the parent's memory, reuses the stack below and
    _exits, and one that execls `child`. The program's own checks hold (the child's write is
    seen, the caller's frame is intact: a wrapper that returned through its own frame would
    have crashed or corrupted it); each vfork is one kept call returning the child's pid,
    inside the program's bracket; the children's calls (a failed execl, which returns on the
    parent's thread) are not recorded in the parent; the exec'd child is traced in its own
    process."""
    prof = profile(tmp_path, "vfork", threshold=0)
    line = next(l for l in prof.stdout.splitlines() if l.startswith("vforked")).split()
    quick, execed = int(line[1]), int(line[2])
    assert line[3:] == ["3", "0", "42", "1"], line
    vforks = calls(tmp_path, "s.value = 'vfork'")
    parent = vforks[0][6]
    assert [r[3] for r in vforks] == [quick, execed] and {r[6] for r in vforks} == {parent}
    assert all(r[4] is None for r in vforks)
    truth = [c for c in measured(prof.stdout) if c[0] == "vfork"]
    for (name, start, duration), row in zip(truth, vforks):
        assert start - CLOCKS_NS <= row[1] and row[1] + row[2] <= start + duration + CLOCKS_NS, \
            (row, start, duration)
    assert not calls(tmp_path, "s.value IN ('execl', 'execv') AND p.pid = %d" % parent)
    sleeps = calls(tmp_path, "s.value = 'nanosleep'")
    assert collections.Counter(r[6] for r in sleeps) == {execed: 4}


def test_the_execl_family_builds_the_argv_and_is_recorded_under_its_own_name(tmp_path):
    """execl, execlp and execle of a missing file each fail with ENOENT, seen by the program
    and recorded once with ret -1 and errno 2; children that execl, execlp and execle `child`
    run it (their argv built from the arguments) and are traced; execle's environment is the
    one it was given."""
    prof = profile(tmp_path, "execl", threshold=0)
    lines = [l.split() for l in prof.stdout.splitlines()]
    assert [l for l in lines if l[0] in ("execl", "execlp", "execle")] == [
        ["execl", "-1", "2"], ["execlp", "-1", "2"], ["execle", "-1", "2"]]
    children = [int(l[2]) for l in lines if l[0] == "execl-child" and l[3] == "0"]
    assert len(children) == 3
    marks = {int(l[1]): l[2] for l in lines if l[0] == "child-env"}
    assert [marks.get(pid) for pid in children] == ["-", "-", "execle"]
    root = calls(tmp_path, "p.parent_id IS NULL")[0][6]
    for name in ("execl", "execlp", "execle"):
        rows = calls(tmp_path, "s.value = '%s'" % name)
        assert [(r[3], r[4], r[6]) for r in rows] == [(-1, ENOENT, root)], (name, rows)
    sleeps = calls(tmp_path, "s.value = 'nanosleep'")
    assert collections.Counter(r[6] for r in sleeps) == {pid: 4 for pid in children}


def test_accept_accept4_and_connect_are_timed(tmp_path):
    """accept and accept4 block until the thread connects (3 ms each, unless a loaded machine
    runs the thread first): kept, returning a descriptor, inside the program's bracket and at
    least half of it; the thread's two connects and a failed one (ENOENT) are there too, and
    only they. (Not within 5 % of the bracket, as the sleeps and reads are: on the loaded CI
    machine the sanitized build was once preempted 165 us between accept4's return and the
    program's clock read, 5.1 % of it; under two busy loops an accept found its peer waiting and
    the bracket was 127 us, the call 84 us: the sanitizer's own work is in the bracket.)"""
    prof = profile(tmp_path, "sockets", threshold=0)
    assert "sockets 1 1 -1 2" in prof.stdout, prof.stdout
    truth = {c[0]: c for c in measured(prof.stdout)}
    for name in ("accept", "accept4"):
        (row,) = calls(tmp_path, "s.value = '%s'" % name)
        _, start, duration = truth[name]
        assert row[3] >= 0 and row[4] is None, (row, truth)
        assert start - CLOCKS_NS <= row[1] and row[1] + row[2] <= start + duration + CLOCKS_NS, \
            (row, start, duration)
        assert row[2] >= duration / 2, (row, duration)
    connects = calls(tmp_path, "s.value = 'connect'")
    assert sorted((r[3], r[4]) for r in connects) == [(-1, ENOENT), (0, None), (0, None)]


def test_a_program_that_closes_every_descriptor_is_still_recorded(tmp_path):
    profile(tmp_path, "closeall")
    assert len(calls(tmp_path, "s.value = 'nanosleep'")) == 5


PYTHON_PROGRAM = r"""
import os, threading, time
r, w = os.pipe()
def feed():  # its sleeps are on its own thread: the test counts the main thread's
    for _ in range(10):
        time.sleep(0.003)
        os.write(w, b"x")
def measure(name, call):
    start = time.monotonic_ns()
    result = call()
    print("call", name, start, time.monotonic_ns() - start)
    return result
for _ in range(20):
    measure("sleep", lambda: time.sleep(0.002))
t = threading.Thread(target=feed)
t.start()
for _ in range(10):
    assert measure("read", lambda: os.read(r, 1)) == b"x"
t.join()
"""


def test_python_sleeps_and_reads_go_through_the_interpreter(tmp_path):
    """Each time.sleep and os.read of the main thread that the program timed at least the
    threshold holds exactly one kept call of that function (time.sleep is clock_nanosleep on
    Linux), within 5 %."""
    script = tmp_path / "prog.py"
    script.write_text(PYTHON_PROGRAM)
    threshold = 1000000
    prof = run(tmp_path, "profile", "-t", "osrt", "--osrt-threshold", str(threshold), "-o",
               "x.db", sys.executable, str(script))
    truth = measured(prof.stdout)
    assert sum(1 for c in truth if c[0] == "sleep") == 20
    functions = {"sleep": ("clock_nanosleep", "nanosleep", "select"), "read": ("read",)}
    kept = calls(tmp_path, "t.tid = p.pid")
    counted, off, totals = 0, [], collections.defaultdict(lambda: [0, 0])
    for name, start, duration in truth:
        inside = [r for r in kept if r[0] in functions[name] and start <= r[1]
                  and r[1] + r[2] <= start + duration]
        if duration >= threshold + 200000:  # well above: the interpreter's own time aside
            assert len(inside) == 1, (name, start, duration, inside)
            assert inside[0][2] <= duration
            if name == "sleep":  # the kernel never ends a 2 ms sleep early
                assert inside[0][2] >= 2000000, inside
            # within 5 %, besides the interpreter's own time inside the program's bracket
            # (0.13 ms of a 2.2 ms time.sleep once, on a loaded CI machine; another run was
            # preempted 0.38 ms inside a 2.68 ms bracket): one call in ten may miss, and each
            # name's total is within 5 % of its brackets' total, 0.2 ms a call aside
            if inside[0][2] < duration - 0.05 * duration - 200000:
                off.append((name, inside, duration))
            totals[name][0] += inside[0][2]
            totals[name][1] += duration
            counted += 1
        assert len(inside) <= 1
    assert counted >= 25, truth  # the 20 sleeps and most blocking reads
    assert len(off) <= counted // 10, off
    for name, (ours, theirs) in totals.items():
        n = sum(1 for c in truth if c[0] == name and c[2] >= threshold + 200000)
        stretched = sum(duration - inside[0][2] for o, inside, duration in off if o == name)
        assert ours >= theirs - 0.05 * theirs - 200000 * n - stretched, (name, ours, theirs, off)


def test_exports_put_each_call_on_its_thread(tmp_path):
    profile(tmp_path, "threads")
    with sqlite3.connect(tmp_path / "x.db") as db:
        expect = collections.Counter(db.execute(
            "SELECT s.value, t.tid, o.start_ns, o.end_ns FROM osrt_calls o"
            " JOIN strings s ON s.id = o.name_id JOIN threads t ON t.id = o.thread_id").fetchall())
    assert sum(expect.values()) >= 20
    run(tmp_path, "export", "x.db", "--format", "chrome", "-o", "x.json")
    events = json.loads((tmp_path / "x.json").read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    chrome = collections.Counter((e["name"], e["tid"]) for e in events if e.get("cat") == "osrt")
    assert chrome == collections.Counter((n, tid) for n, tid, _, _ in expect.elements())
    assert all(e["args"]["return"] == 0 for e in events if e.get("cat") == "osrt"
               and e["name"] == "nanosleep")
    perfetto_check = pytest.importorskip("perfetto_check", reason="Python packages perfetto and "
                                         "protobuf (scripts/deps.sh installs them)")
    run(tmp_path, "export", "x.db", "--format", "perfetto", "-o", "x.perfetto-trace")
    decoded = perfetto_check.decode(str(tmp_path / "x.perfetto-trace"))
    assert decoded.problems == []
    slices = collections.Counter((s["name"], s["ts"], s["end"]) for s in decoded.slices
                                 if "osrt" in s["category"])
    assert slices == collections.Counter((n, s, e) for n, _, s, e in expect.elements())
    assert {decoded.tracks[s["track"]].name for s in decoded.slices
            if "osrt" in s["category"]} == {"OS runtime"}


def test_merge_renumbers_the_calls_with_their_threads(tmp_path):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        profile(tmp_path / name, "threads")
    run(tmp_path, "merge", "a/x.db", "b/x.db", "-o", "x.db")
    query = ("SELECT s.value, t.tid, p.pid, o.start_ns, o.end_ns, o.ret FROM osrt_calls o"
             " JOIN strings s ON s.id = o.name_id JOIN threads t ON t.id = o.thread_id"
             " JOIN processes p ON p.id = t.process_id")
    parts = collections.Counter()
    for name in ("a", "b"):
        with sqlite3.connect(tmp_path / name / "x.db") as db:
            parts.update(db.execute(query).fetchall())
    with sqlite3.connect(tmp_path / "x.db") as db:
        merged = collections.Counter(db.execute(query).fetchall())
        assert db.execute("SELECT count(*) FROM osrt").fetchone()[0] == 2
    assert merged == parts


def test_the_agent_is_preloaded_after_the_users_own_preloads(tmp_path):
    agent = os.path.realpath(os.path.join(BUILD, "lib", "liblantern-agent.so"))
    mine = os.environ.get("LD_PRELOAD", "")  # the sanitizer runtimes in the ASan build
    out = run(tmp_path, "profile", "-t", "osrt", "-o", "x.db", "/usr/bin/env").stdout
    preload = next(l for l in out.splitlines() if l.startswith("LD_PRELOAD="))
    assert preload == "LD_PRELOAD=" + (mine + ":" if mine else "") + agent
    out = run(tmp_path, "profile", "-f", "-t", "nvtx", "-o", "x.db", "/usr/bin/env").stdout
    assert not any(l.startswith("LD_PRELOAD=") and agent in l for l in out.splitlines())


def test_the_threshold_needs_osrt_and_digits(tmp_path):
    assert "needs -t osrt" in run(tmp_path, "profile", "-t", "nvtx", "--osrt-threshold", "5",
                                   WORKLOAD, "child", expect_status=2).stderr
    assert "needs nanoseconds" in run(tmp_path, "profile", "-t", "osrt", "--osrt-threshold",
                                      "1e3", WORKLOAD, "child", expect_status=2).stderr


def agent_lookups(trace):
    """The libc functions the agent looked up (dlsym) while loaded into a program that calls
    none of them, with LANTERN_TRACE=trace (None: unset) and no session (the agent stays
    inert), as the dynamic linker reports its bindings (LD_DEBUG)."""
    agent = os.path.realpath(os.path.join(BUILD, "lib", "liblantern-agent.so"))
    env = {k: v for k, v in os.environ.items() if k not in ("LANTERN_TRACE",
                                                             "LANTERN_SESSION_DIR")}
    mine = os.environ.get("LD_PRELOAD", "")  # the sanitizer runtimes in the ASan build
    env.update(LD_PRELOAD=(mine + ":" if mine else "") + agent, LD_DEBUG="bindings")
    if trace is not None:
        env["LANTERN_TRACE"] = trace
    done = subprocess.run(["/bin/true"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    # functions only the wrappers name (the agent's own code calls none of them)
    wrapped_only = ("epoll_pwait", "__recvfrom_chk", "sem_timedwait", "execvpe")
    return {name for name in wrapped_only for l in done.stderr.splitlines()
            if "binding file " + agent in l and "symbol `%s'" % name in l}


def test_the_wrapped_functions_are_looked_up_at_load_only_for_osrt():
    assert agent_lookups("osrt") == {"epoll_pwait", "__recvfrom_chk", "sem_timedwait",
                                     "execvpe"}
    assert agent_lookups("nvtx,cuda,osrt") == agent_lookups("osrt")
    assert agent_lookups(None) == set()
    assert agent_lookups("nvtx,cuda") == set()
