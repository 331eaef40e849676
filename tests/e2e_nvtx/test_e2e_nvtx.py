"""NVTX end to end: programs run under `lantern profile -o x.db -- ...`, then the
database (src/db/schema.sql) is queried. Needs $LANTERN_BUILD (the build folder) and
$NVTX_WORKLOAD (tests/agent/nvtx_workload); Python tests need the `nvtx` package."""
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

BUILD = os.environ.get("LANTERN_BUILD", "")
LANTERN = os.path.join(BUILD, "bin", "lantern")
WORKLOAD = os.environ.get("NVTX_WORKLOAD", os.path.join(BUILD, "bin", "nvtx_workload"))

try:
    import nvtx  # noqa: F401
    HAVE_NVTX = True
except ImportError:
    HAVE_NVTX = False
needs_nvtx = pytest.mark.skipif(not HAVE_NVTX, reason="Python package 'nvtx' not installed (pip install nvtx)")


def profile(tmp_path, *command, expect_status=0):
    """Runs command under lantern profile; returns an open database."""
    db = tmp_path / "x.db"
    env = dict(os.environ)
    if os.environ.get("LANTERN_TEST_PRELOAD"):  # sanitizer build: see CMakeLists.txt
        env.update(LD_PRELOAD=os.environ["LANTERN_TEST_PRELOAD"], ASAN_OPTIONS="detect_leaks=0")
    run = subprocess.run([LANTERN, "profile", "-t", "nvtx", "-o", str(db), "--", *command],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == expect_status, run.stderr
    assert db.exists(), run.stderr
    return sqlite3.connect(db)


def ranges(db, where="1"):
    """(name, domain name, depth, parent name, style, category, color, payload) rows."""
    return db.execute(f"""
        SELECT s.value, ds.value, r.depth, ps.value, r.style, r.category, r.color, r.payload
        FROM ranges r
        LEFT JOIN strings s ON s.id = r.name_id
        LEFT JOIN domains d ON d.id = r.domain_id LEFT JOIN strings ds ON ds.id = d.name_id
        LEFT JOIN ranges p ON p.id = r.parent_id LEFT JOIN strings ps ON ps.id = p.name_id
        WHERE {where} ORDER BY r.start_ns""").fetchall()


def test_plain_push_pop_like_torch(tmp_path):
    """nvtxRangePushA/Pop as torch.cuda.nvtx calls them, a mark, a start/end range."""
    db = profile(tmp_path, WORKLOAD, "basic")
    assert ranges(db) == [
        ("outer", None, 0, None, 0, 0, None, None),
        ("inner", None, 1, "outer", 0, 0, None, None),
        ("span", None, None, None, 1, 0, None, None),
    ]
    for start, end in db.execute("SELECT start_ns, end_ns FROM ranges"):
        assert end is not None and end >= start
    assert db.execute("SELECT s.value FROM marks m JOIN strings s ON s.id = m.name_id").fetchall() == [("here",)]
    (pid, clean, unbalanced, dropped), = db.execute(
        "SELECT pid, clean_exit, unbalanced_pops, dropped_events FROM processes").fetchall()
    assert (clean, unbalanced, dropped) == (1, 1, 0)


@needs_nvtx
def test_python_nvtx_package(tmp_path):
    """annotate (nested, decorator), domains, categories, registered strings, payloads, colors."""
    script = tmp_path / "app.py"
    script.write_text(textwrap.dedent("""
        import nvtx
        with nvtx.annotate("outer", color="red", domain="app", category="phase", payload=42):
            with nvtx.annotate("inner", domain="app", payload=1.5):
                nvtx.mark("tick", domain="app", payload=7)
        d = nvtx.get_domain("app")
        d.push_range(d.get_event_attributes(message="registered", payload=3))
        d.pop_range()
        @nvtx.annotate("decorated")
        def work():
            pass
        for _ in range(5):
            work()
    """))
    db = profile(tmp_path, sys.executable, str(script))
    rows = ranges(db)
    assert rows[0][:5] == ("outer", "app", 0, None, 0) and rows[0][7] == 42
    assert rows[0][5] != 0  # the category named "phase"
    assert db.execute("SELECT s.value FROM categories c JOIN strings s ON s.id = c.name_id "
                      "WHERE c.category = ?", (rows[0][5],)).fetchall() == [("phase",)]
    assert rows[0][6] is not None and rows[0][6] & 0xFFFFFF == 0xFF0000
    assert rows[1][:5] == ("inner", "app", 1, "outer", 0) and rows[1][7] == 1.5
    assert rows[2][:5] == ("registered", "app", 0, None, 0) and rows[2][7] == 3
    assert [r[:5] for r in rows[3:]] == [("decorated", None, 0, None, 0)] * 5
    assert db.execute("SELECT s.value, m.payload FROM marks m JOIN strings s ON s.id = m.name_id"
                      ).fetchall() == [("tick", 7)]


POOL_ENDINGS = {
    # workers exit normally
    "close_join": "pool = ctx.Pool(2)\n{work}\npool.close()\npool.join()",
    # leaving `with` terminates the workers with SIGTERM: the agent ends their files first
    "with_terminate": "with ctx.Pool(2) as pool:\n    {work}",
}


@needs_nvtx
@pytest.mark.parametrize("ending", sorted(POOL_ENDINGS))
def test_multiprocessing_spawn_children_are_traced(tmp_path, ending):
    """spawn children load the agent themselves through the inherited NVTX_INJECTION64_PATH."""
    work = "assert sum(pool.map(task, range(20), chunksize=1)) == sum(i * i for i in range(20))"
    body = POOL_ENDINGS[ending].format(work=work)
    script = tmp_path / "pool.py"
    script.write_text(textwrap.dedent("""
        import multiprocessing as mp
        import nvtx

        def task(i):
            with nvtx.annotate("child-task"):
                return i * i

        if __name__ == "__main__":
            ctx = mp.get_context("spawn")
            with nvtx.annotate("parent"):
        """) + textwrap.indent(body, " " * 8) + "\n")
    db = profile(tmp_path, sys.executable, str(script))
    parent_pid, = db.execute("SELECT p.pid FROM ranges r JOIN strings s ON s.id = r.name_id "
                             "JOIN processes p ON p.id = r.process_id WHERE s.value = 'parent'").fetchone()
    children = db.execute("""SELECT p.pid, p.ppid, count(*) FROM ranges r
                             JOIN strings s ON s.id = r.name_id JOIN processes p ON p.id = r.process_id
                             WHERE s.value = 'child-task' GROUP BY p.id""").fetchall()
    assert sum(n for _, _, n in children) == 20
    assert 1 <= len(children) <= 2
    for pid, ppid, _ in children:
        assert pid != parent_pid and ppid == parent_pid
    unclean = db.execute("SELECT count(*) FROM processes WHERE clean_exit = 0").fetchone()[0]
    assert unclean == (0 if ending == "close_join" else len(children))


def test_a_trace_of_format_version_3_still_imports(tmp_path):
    """tests/import/v3-session: nvtx_workload attributes recorded by Lantern before trace format
    4 (extended payloads); imported now, it gives the rows the Lantern of then gave."""
    session = tmp_path / "v3"
    shutil.copytree(Path(__file__).resolve().parents[1] / "import" / "v3-session", session)
    run = subprocess.run([LANTERN, "import", str(session), "-o", str(tmp_path / "v3.db")],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and "warning" not in run.stderr, run.stderr
    db = sqlite3.connect(tmp_path / "v3.db")
    assert db.execute("""
        SELECT s.value, ds.value, r.depth, r.style, r.category, r.color, r.payload,
               r.end_ns - r.start_ns FROM ranges r LEFT JOIN strings s ON s.id = r.name_id
        LEFT JOIN domains d ON d.id = r.domain_id LEFT JOIN strings ds ON ds.id = d.name_id
        ORDER BY r.start_ns""").fetchall() == [
        ("plain", None, 0, 0, 0, None, None, 15363),
        ("default-domain", None, 1, 0, 0, None, None, 1392),
        ("registered", "io", 0, 0, 3, 4278255360, -5, 931),
        ("registered", "io", 1, 0, 0, None, 281474976710655, 531),
        ("wide-push", None, 0, 0, 0, None, None, 370),
        ("registered-2", "io", None, 1, 0, None, None, 350)]
    assert db.execute("""SELECT s.value, m.payload FROM marks m LEFT JOIN strings s
                         ON s.id = m.name_id ORDER BY m.ts_ns""").fetchall() == [
        ("h\u00e9llo \u2713 \U0001d11e", 2.25), ("float-mark", 1.5), ("wide-mark", None)]
    assert db.execute("SELECT pid, clean_exit, end_record FROM processes").fetchall() == [(8429, 1, 1)]
    assert db.execute("SELECT count(*) FROM nvtx_payloads").fetchone() == (0,)


def test_shell_pipeline_of_two_nvtx_programs(tmp_path):
    db = profile(tmp_path, "/bin/sh", "-c", f"'{WORKLOAD}' basic | '{WORKLOAD}' cross_thread")
    procs = db.execute("SELECT id, ppid FROM processes ORDER BY id").fetchall()
    assert len(procs) == 2
    assert procs[0][1] == procs[1][1]  # both children of the same shell
    by_process = {pid: sorted(r[0] for r in ranges(db, f"r.process_id = {pid}")) for pid, _ in procs}
    assert sorted(by_process.values()) == [["handed over"], ["inner", "outer", "span"]]


def stats_header(db_path):
    """The stats report's header lines, as a dict."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}  # whole lines, not fitted
    run = subprocess.run([LANTERN, "stats", "--report", "nvtx_sum", str(db_path)],
                         capture_output=True, text=True, timeout=60, env=env)
    assert run.returncode == 0, run.stderr
    return run.stdout, {k.strip(): v.strip() for k, _, v in
                        (line.partition(":") for line in run.stdout.splitlines() if ":" in line)}


def test_ranges_ended_on_another_thread(tmp_path):
    """1000 ranges started on the main thread, ended on another 5 ms later: all whole, with
    both threads, in nvtx_sum; none unended, nothing lost."""
    db = profile(tmp_path, WORKLOAD, "cross_thread_many")
    (count, ended, starters, enders, crossed, shortest), = db.execute("""
        SELECT count(*), count(end_ns), count(DISTINCT start_thread_id),
               count(DISTINCT end_thread_id), sum(start_thread_id != end_thread_id),
               min(end_ns - start_ns) FROM ranges WHERE style = 1""").fetchall()
    assert (count, ended, starters, enders, crossed) == (1000, 1000, 1, 1, 1000)
    assert shortest >= 5_000_000
    (main_tid,), = db.execute("""SELECT t.tid FROM ranges r JOIN threads t
                                 ON t.id = r.start_thread_id LIMIT 1""").fetchall()
    (pid,), = db.execute("SELECT pid FROM processes").fetchall()
    assert main_tid == pid
    out, header = stats_header(tmp_path / "x.db")
    assert header["Lost events"] == "none" and header["Unended ranges"] == "0", out
    row = next(line for line in out.splitlines() if line.endswith(":handed over"))
    assert row.split()[3] == "1000", out  # instances


def test_nesting_200000_levels_deep(tmp_path):
    """Every level of a 200000-deep push/pop nest is a range; nothing skipped or lost."""
    db = profile(tmp_path, WORKLOAD, "deep")
    assert db.execute("""SELECT count(*), count(end_ns), min(depth), max(depth),
                         count(parent_id) FROM ranges""").fetchone() == (200000, 200000, 0, 199999, 199999)
    assert db.execute("SELECT import_warning FROM processes").fetchall() == [(None,)]
    out, header = stats_header(tmp_path / "x.db")
    assert header["Lost events"] == "none" and header["Import warnings"] == "0", out


def test_sigkill_keeps_the_flushed_events(tmp_path):
    """The program kills itself 300 ms after its last event: all events are in the file."""
    db = profile(tmp_path, WORKLOAD, "sigkill", expect_status=128 + signal.SIGKILL)
    assert db.execute("SELECT clean_exit FROM processes").fetchall() == [(0,)]
    assert db.execute("SELECT count(*), count(end_ns) FROM ranges").fetchone() == (100, 100)
