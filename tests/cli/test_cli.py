"""End-to-end tests of the lantern command line, run against the real binary.

Reports and exports are checked on databases built here from schema.sql with known values
(the expected numbers come from Python's statistics module, not from Lantern); the launcher
is checked by running real programs under it.
"""
import json
import os
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import terminal  # noqa: E402  (tests/terminal.py)

BUILD = Path(os.environ.get("LANTERN_BUILD", Path(__file__).resolve().parents[2] / "build"))
SOURCE = Path(os.environ.get("LANTERN_SOURCE", Path(__file__).resolve().parents[2]))
LANTERN = BUILD / "bin" / "lantern"
AGENT = BUILD / "lib" / "liblantern-agent.so"
NVTX_DEMO = BUILD / "bin" / "nvtx_demo"
NVTX_WAIT = BUILD / "bin" / "lantern_test_nvtx_wait"

needs_agent = pytest.mark.skipif(not AGENT.exists(), reason=f"agent not built: {AGENT}")


# In the sanitized build scripts/test.sh preloads the sanitizer runtimes for tests hosted by
# Python, with leak checks off (Python leaks at exit); lantern itself needs neither, so it
# runs with the full checks.
# No $COLUMNS either (pytest may set it): tables and help are not fitted to a width unless a test
# asks for one.
LANTERN_ENV = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "COLUMNS")}


def run(*args, cwd=None, timeout=60, env=None):
    return subprocess.run([str(LANTERN), *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, errors="replace", env=env or LANTERN_ENV)


def one_error_line(result, code):
    """The CLI's error convention: the exit code and one 'lantern: ' line on stderr."""
    assert result.returncode == code, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lantern: "), result.stderr
    return lines[0]


# ---- a database with known contents ----------------------------------------------------------

START = 1_000_000_000  # meta.start_ns


def make_db(path, ranges, marks=(), strings=None):
    """ranges: (name, domain_id, style, start_ns, end_ns or None, extra dict) on pid 4242."""
    db = sqlite3.connect(path)
    db.executescript((SOURCE / "src/db/schema.sql").read_text())
    meta = {"schema_version": 9, "lantern_version": "0.1.0", "command": "./app --x", "host": "h",
            "start_wall_ns": 0, "start_ns": START, "end_ns": START + 5_000_000, "clock": "CLOCK_MONOTONIC",
            "trace": "nvtx", "exit_status": 0, "dropped_events": 2, "import_warnings": 0}
    db.executemany("INSERT INTO meta VALUES(?, ?)", meta.items())
    db.execute("INSERT INTO processes(id, pid, exe, start_ns, end_ns, clean_exit) VALUES(1, 4242, '/bin/app', ?, ?, 1)",
               (START, START + 5_000_000))
    db.execute("INSERT INTO threads(id, process_id, tid, name_id) VALUES(1, 1, 4243, NULL), (2, 1, 4244, NULL)")
    names = {}

    def intern(text):
        if text not in names:
            names[text] = len(names) + 1
            db.execute("INSERT INTO strings(id, value) VALUES(?, ?)", (names[text], text))
        return names[text]

    db.execute("INSERT INTO domains(id, name_id) VALUES(0, NULL), (1, ?)", (intern("io"),))
    db.execute("INSERT INTO categories VALUES(1, 3, ?)", (intern("disk"),))
    for i, (name, domain, style, start, end, extra) in enumerate(ranges, 1):
        db.execute("INSERT INTO ranges(id, process_id, domain_id, name_id, category, color, payload, style, depth, "
                   "start_thread_id, end_thread_id, start_ns, end_ns) VALUES(?, 1, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)",
                   (i, domain, intern(name), extra.get("category", 0), extra.get("color"), extra.get("payload"),
                    style, 0 if style == 0 else None, extra.get("end_thread", 1), start, end))
    for name, ts in marks:
        db.execute("INSERT INTO marks(process_id, thread_id, domain_id, name_id, ts_ns) VALUES(1, 2, 0, ?, ?)",
                   (intern(name), ts))
    db.commit()
    db.close()


DURATIONS = {("a", 0, 0): [10, 20, 30, 40], ("b", 0, 1): [7, 1000, 5], ("a", 1, 0): [50_000]}


@pytest.fixture
def known_db(tmp_path):
    ranges, t = [], START
    for (name, domain, style), durations in DURATIONS.items():
        for d in durations:
            ranges.append((name, domain, style, t, t + d, {}))
            t += 100_000
    ranges.append(("a", 0, 0, t, None, {}))  # never ended: not in the summary
    path = tmp_path / "known.db"
    make_db(path, ranges)
    return path


# ---- usage ----------------------------------------------------------------------------------------

def test_help_lists_commands_and_version():
    r = run("--help")
    assert r.returncode == 0
    for command in ("profile", "stats", "export", "import"):
        assert f"  {command} " in r.stdout
    r = run("--version")
    assert r.returncode == 0 and r.stdout.strip() == "lantern 0.1.0"


def test_profile_help_lists_every_option():
    r = run("profile", "--help")
    assert r.returncode == 0
    for option in ("-o, --output", "-t, --trace", "--stats", "--keep-raw", "-f, --force", "-h, --help"):
        assert option in r.stdout


@pytest.mark.parametrize("command", ["profile", "start", "stop", "dump", "stats", "export", "merge",
                                     "import", "kernels", "energy", "analyze", "report", "upgrade",
                                     "diff"])
def test_each_command_helps_with_its_own_usage(command):
    r = run(command, "--help")  # dump's help was stop's until its options became rows
    assert r.returncode == 0 and r.stdout.startswith(f"Usage: lantern {command} "), r.stdout


def test_stats_help_lists_reports():
    r = run("stats", "--help")
    assert r.returncode == 0 and "nvtx_sum" in r.stdout


@pytest.mark.parametrize("args", [
    [], ["frobnicate"], ["stats"], ["stats", "--bogus", "x.db"], ["stats", "a.db", "b.db"],
    ["stats", "--report", "nope", "x.db"], ["stats", "--format", "xml", "x.db"], ["export", "x.db"],
    ["export", "--format", "svg", "x.db"], ["profile"], ["profile", "--frob", "--", "true"],
    ["profile", "-t", "nvtx,bogus", "--", "true"], ["profile", "-t", "", "--", "true"], ["import", "dir"],
    ["import", "-o"],
])
def test_usage_errors_exit_2(args, tmp_path):
    r = run(*args, cwd=tmp_path)
    assert r.returncode == 2, r
    assert r.stderr.startswith("lantern: ")
    assert not list(tmp_path.iterdir())  # nothing was created


# ---- -f is --force in every command (issue #28) -------------------------------------------------------

@pytest.mark.parametrize("command", ["profile", "stats", "export", "import", "report", "merge"])
def test_f_means_force_in_every_command_that_writes(command):
    help_text = run(command, "--help").stdout
    assert "  -f, --force " in help_text, help_text


def test_export_f_replaces_the_output_and_format_is_long_only(tmp_path, known_db):
    out = tmp_path / "out.json"
    out.write_text("mine")
    assert one_error_line(run("export", known_db, "--format", "chrome", "-o", out), 1).endswith(
        "exists (use --force to replace it)")
    r = run("export", known_db, "--format", "chrome", "-o", out, "-f")
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text())["traceEvents"]
    r = run("export", known_db, "-f")  # a flag now, never "needs a value"
    assert r.returncode == 2 and r.stderr.startswith("lantern: missing --format (chrome, perfetto)\n")
    r = run("export", known_db, "-f", "perfetto")  # the old spelling gets the new one
    assert r.returncode == 2 and r.stderr.startswith(
        "lantern: '-f' means --force; give the format as --format perfetto\n")


# ---- bad files --------------------------------------------------------------------------------------

def bad_files(tmp_path, known_db):
    (tmp_path / "empty.db").write_bytes(b"")
    (tmp_path / "text.db").write_text("hello, I am not a database\n" * 100)
    data = known_db.read_bytes()
    (tmp_path / "truncated.db").write_bytes(data[: len(data) // 3])
    other = sqlite3.connect(tmp_path / "other.db")
    other.execute("CREATE TABLE foo(x)")
    other.commit()
    other.close()
    (tmp_path / "folder.db").mkdir()
    return ["missing.db", "empty.db", "text.db", "truncated.db", "other.db", "folder.db"]


@pytest.mark.parametrize("command", [["stats"], ["stats", "--format", "json"], ["export", "--format", "chrome"]])
def test_bad_files_give_one_line_and_exit_1(command, tmp_path, known_db):
    for name in bad_files(tmp_path, known_db):
        r = run(*command, name, "-o", tmp_path / "out.txt", cwd=tmp_path)
        line = one_error_line(r, 1)
        assert name in line, line
    r = run("stats", "other.db", cwd=tmp_path)
    assert one_error_line(r, 1) == "lantern: cannot open 'other.db': not a Lantern database"
    r = run("stats", "missing.db", cwd=tmp_path)
    assert one_error_line(r, 1) == "lantern: cannot open 'missing.db': No such file or directory"


def test_newer_schema_is_refused(tmp_path, known_db):
    db = sqlite3.connect(known_db)
    db.execute("UPDATE meta SET value = 99 WHERE key = 'schema_version'")
    db.commit()
    db.close()
    line = one_error_line(run("stats", known_db), 1)
    assert line.endswith("schema version 99, this lantern reads versions 1 to 9 (a newer Lantern wrote it)")


def test_older_schema_is_read_through_an_upgraded_copy(tmp_path, known_db):
    """Databases of each real older schema: tests/upgrade/."""
    db = sqlite3.connect(known_db)
    db.execute("UPDATE meta SET value = 2 WHERE key = 'schema_version'")
    db.commit()
    db.close()
    r = run("stats", known_db)
    assert r.returncode == 0 and ":a" in r.stdout
    assert r.stderr.startswith(f"lantern: '{known_db}' is of schema version 2 (an older Lantern)")


# ---- nvtx_sum -----------------------------------------------------------------------------------------

def expected_rows():
    rows = []
    for (name, domain, style), d in DURATIONS.items():
        rows.append({"range": ("io:" if domain else ":") + name, "style": "StartEnd" if style else "PushPop",
                     "total_ns": sum(d), "instances": len(d), "avg_ns": statistics.mean(d),
                     "med_ns": statistics.median(d), "min_ns": min(d), "max_ns": max(d),
                     "stddev_ns": statistics.stdev(d) if len(d) > 1 else 0})
    rows.sort(key=lambda r: -r["total_ns"])
    everything = sum(r["total_ns"] for r in rows)
    for r in rows:
        r["time_percent"] = 100 * r["total_ns"] / everything
    return rows


def test_nvtx_sum_json_matches_independent_statistics(known_db):
    r = run("stats", known_db, "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["report"] == "nvtx_sum"
    assert doc["session"]["command"] == "./app --x"
    assert doc["session"]["duration_ns"] == 5_000_000
    assert doc["session"]["processes"] == 1 and doc["session"]["threads"] == 2
    assert doc["session"]["dropped_events"] == 2 and doc["session"]["unended_ranges"] == 1
    expected = expected_rows()
    assert [row["range"] for row in doc["rows"]] == [row["range"] for row in expected]
    for got, want in zip(doc["rows"], expected):
        for key in ("style", "total_ns", "instances", "min_ns", "max_ns", "med_ns"):
            assert got[key] == want[key], key
        assert got["avg_ns"] == pytest.approx(want["avg_ns"], abs=0.001)
        assert got["stddev_ns"] == pytest.approx(want["stddev_ns"], abs=0.001)
        assert got["time_percent"] == pytest.approx(want["time_percent"], abs=0.001)


def test_nvtx_sum_csv_has_exact_ns_and_header_on_stderr(known_db):
    r = run("stats", known_db, "--format", "csv")
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert lines[0] == ("Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),"
                        "Style,Range")
    assert lines[1] == "97.824,50000,1,50000,50000,50000,50000,0,PushPop,io:a"
    assert lines[2] == "1.980,1012,3,337.333,7,5,1000,573.887,StartEnd,:b"
    assert lines[3] == "0.196,100,4,25,25,10,40,12.91,PushPop,:a"
    assert "Command:         ./app --x" in r.stderr


def test_nvtx_sum_table_uses_human_units(known_db, tmp_path):
    out = tmp_path / "report.txt"
    r = run("stats", known_db, "-o", out)
    assert r.returncode == 0 and r.stdout == ""
    text = out.read_text()
    assert "Dropped events:  2" in text and "Duration:        5.000 ms" in text
    row = next(line for line in text.splitlines() if line.endswith("io:a"))
    assert row.split() == ["97.8", "50.000", "µs", "1", "50.000", "µs", "50.000", "µs", "50.000", "µs",
                           "50.000", "µs", "0", "ns", "PushPop", "io:a"]


# ---- output that fits the terminal (issue #28) ---------------------------------------------------------

LONG_NAME = "data_loader_" + "x" * 200


def test_stats_fits_the_terminal_and_keeps_names_whole_elsewhere(tmp_path):
    path = tmp_path / "long.db"
    make_db(path, [(LONG_NAME, 0, 0, START, START + 1000, {}), ("short", 0, 0, START, START + 10, {})])
    narrow = {**LANTERN_ENV, "COLUMNS": "80"}
    out = run("stats", path, env=narrow).stdout
    assert max(len(line) for line in out.splitlines()) <= 80, out
    row = next(line for line in out.splitlines() if ":data_loader_" in line)
    assert row.endswith("~") and "(left out to fit: " in out
    for args in (["-w", "0"], []):  # -w 0, or a pipe without $COLUMNS: every name whole
        assert f":{LONG_NAME}" in run("stats", path, *args, env=narrow if args else None).stdout
    assert f":{LONG_NAME}" in run("stats", path, "--format", "csv", env=narrow).stdout
    rows = json.loads(run("stats", path, "--format", "json", env=narrow).stdout)["rows"]
    assert rows[0]["range"] == f":{LONG_NAME}"
    assert run("stats", path, "-w", "x").returncode == 2


@pytest.mark.parametrize("command", ["profile", "stats", "export", "import", "kernels", "energy",
                                     "analyze", "report", "merge", "start", "stop"])
def test_help_fits_80_columns_or_the_terminal(command):
    for columns, width in ((None, 80), ("60", 60)):
        env = {**LANTERN_ENV, "COLUMNS": columns} if columns else None
        lines = run(command, "--help", env=env).stdout.splitlines()
        assert max(len(line) for line in lines) <= width, [l for l in lines if len(l) > width]


# ---- control characters never reach a terminal (issue #28) -----------------------------------------------

def test_csv_escapes_control_bytes_on_a_terminal_only(tmp_path):
    path = tmp_path / "ctl.db"
    make_db(path, [("bell\x07 esc\x1b[2J cr\r", 0, 0, START, START + 10, {})])
    out, stderr, status = terminal.run_in_terminal([str(LANTERN), "stats", str(path), "--format", "csv"], 200)
    assert status == 0, stderr
    assert b"\x07" not in out and b"\x1b" not in out and b"\r" not in out
    assert b":bell\\x07 esc\\e[2J cr\\r" in out
    piped = subprocess.run([str(LANTERN), "stats", str(path), "--format", "csv"], capture_output=True,
                           env=LANTERN_ENV).stdout  # a pipe: the exact bytes
    assert b":bell\x07 esc\x1b[2J cr\r" in piped
    out, stderr, status = terminal.run_in_terminal([str(LANTERN), "analyze", str(path), "--format", "csv"], 200)
    assert status == 0 and b"\x1b" not in out


# ---- JSON is always whole (issue #28) -------------------------------------------------------------------

def test_every_report_in_json_is_whole_with_the_reason_when_empty(known_db):
    """energy_sum and gpu_metrics_sum on a session without GPU data stopped at "rows": ."""
    listed = run("stats", "--help").stdout.split("Reports:\n")[1].splitlines()
    reports = [line.split()[0] for line in listed if line[2:3] != " "]  # not a wrapped line
    assert "energy_sum" in reports and "gpu_metrics_sum" in reports
    for report in reports:
        r = run("stats", known_db, "--report", report, "--format", "json")
        assert r.returncode == 0, (report, r.stderr)
        doc = json.loads(r.stdout)
        assert doc["report"] == report and "session" in doc
        if report != "nvtx_sum":  # nothing but NVTX ranges here: each says why it is empty
            assert doc["rows"] == [] and doc["note"], report
            assert r.stderr.strip() == f"lantern: {doc['note']}"
    assert json.loads(run("stats", known_db, "--format", "json").stdout)["note"] is None
    doc = json.loads(run("analyze", known_db, "--format", "json").stdout)
    assert doc["analysis"]["ranked"] == [] and doc["analysis"]["rules"]


# ---- chrome export --------------------------------------------------------------------------------------

def test_chrome_export_events(tmp_path):
    path = tmp_path / "t.db"
    make_db(path, [
        ("step", 0, 0, START + 1_500, START + 4_001, {"color": 0xFF112233, "payload": 7}),
        ("load", 1, 1, START + 2_000, START + 9_999, {"category": 3, "end_thread": 2, "payload": 2.5}),
        ("bad \xff\x01 \"name\"", 0, 0, START + 3_000, None, {}),
    ], marks=[("tick", START + 123_456)])
    # invalid UTF-8 must survive into the database as bytes
    db = sqlite3.connect(path)
    db.execute("UPDATE strings SET value = CAST(X'62616420FF01202268692220' AS TEXT) WHERE value LIKE 'bad%'")
    db.execute("UPDATE threads SET name_id = (SELECT id FROM strings WHERE value = 'tick') WHERE id = 2")
    db.commit()
    db.close()
    r = run("export", path, "--format", "chrome")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "t.json"
    assert r.stderr.strip() == f"lantern: trace written to {out}"
    events = json.loads(out.read_text(encoding="utf-8"))["traceEvents"]
    by_ph = {}
    for e in events:
        by_ph.setdefault(e["ph"], []).append(e)
    assert {(e["name"], e["tid"], e["args"]["name"]) for e in by_ph["M"] if e["name"].endswith("_name")} == {
        ("process_name", 0, "/bin/app"), ("thread_name", 4243, "thread 4243"), ("thread_name", 4244, "tick")}
    assert {(e["name"], e["tid"], e["args"]["sort_index"]) for e in by_ph["M"] if e["name"].endswith("_index")} == {
        ("process_sort_index", 0, 1), ("thread_sort_index", 4243, 1), ("thread_sort_index", 4244, 2)}
    step, bad = by_ph["X"]
    assert step == {"name": "step", "cat": "nvtx", "ph": "X", "pid": 4242, "tid": 4243, "ts": 1.5, "dur": 2.501,
                    "args": {"color": "#112233", "payload": 7}}
    assert bad["name"] == "bad \ufffd\u0001 \"hi\" " and bad["args"] == {"unended": True}
    assert bad["dur"] == pytest.approx(5000 - 3.0)  # unended: lasts to the process's end
    begin, end = by_ph["b"] + by_ph["e"]
    assert begin == {"name": "load", "cat": "io", "ph": "b", "pid": 4242, "id": 2, "tid": 4243, "ts": 2.0,
                     "args": {"payload": 2.5, "category": "disk"}}
    assert end == {"name": "load", "cat": "io", "ph": "e", "pid": 4242, "id": 2, "tid": 4244, "ts": 9.999}
    assert by_ph["i"] == [{"name": "tick", "cat": "nvtx", "ph": "i", "pid": 4242, "s": "t", "tid": 4244,
                           "ts": 123.456, "args": {}}]
    # timestamps keep nanosecond precision as three decimals in the text
    assert '"ts": 1.500' in out.read_text()


# ---- the launcher -------------------------------------------------------------------------------------------

def query(path, sql):
    db = sqlite3.connect(path)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


@needs_agent
def test_profile_nvtx_demo_with_stats(tmp_path):
    r = run("profile", "-o", "demo.db", "--stats", "--", NVTX_DEMO, "2", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "lantern: report written to demo.db" in r.stderr
    assert "nvtx_demo: 2 steps done" in r.stdout and ":forward" in r.stdout and "io:read" in r.stdout
    db = tmp_path / "demo.db"
    assert not (tmp_path / "demo.db.raw").exists()
    assert query(db, "SELECT s.value, r.style, count(*), count(r.end_ns) FROM ranges r JOIN strings s "
                     "ON s.id = r.name_id GROUP BY 1, 2 ORDER BY 1") == [
        ("backward", 0, 2, 2), ("forward", 0, 2, 2), ("load", 1, 1, 1), ("read", 0, 6, 6), ("step", 0, 2, 2)]
    assert query(db, "SELECT count(*) FROM ranges r JOIN ranges p ON p.id = r.parent_id JOIN strings s "
                     "ON s.id = p.name_id WHERE s.value = 'step'") == [(4,)]
    assert query(db, "SELECT s.value FROM marks JOIN strings s ON s.id = name_id ORDER BY ts_ns") == [
        ("start",), ("done",)]
    assert query(db, "SELECT s.value FROM threads t JOIN strings s ON s.id = t.name_id ORDER BY 1") == [
        ("main",), ("worker 0",), ("worker 1",)]
    assert query(db, "SELECT value FROM meta WHERE key IN ('exit_status', 'trace') ORDER BY key") == [(0,), ("nvtx,cpu",)]


def test_exit_status_is_the_childs(tmp_path):
    r = run("profile", "-o", "seven.db", "--", "sh", "-c", "exit 7", cwd=tmp_path)
    assert r.returncode == 7
    assert query(tmp_path / "seven.db", "SELECT value FROM meta WHERE key = 'exit_status'") == [(7,)]
    r = run("profile", "-o", "killed.db", "--", "sh", "-c", "kill -KILL $$", cwd=tmp_path)
    assert r.returncode == 128 + signal.SIGKILL
    assert query(tmp_path / "killed.db", "SELECT value FROM meta WHERE key = 'command'") == [
        ("sh -c kill -KILL $$",)]


def test_session_without_ranges_reports_empty_tables(tmp_path):
    assert run("profile", "-o", "none.db", "--", "true", cwd=tmp_path).returncode == 0
    r = run("stats", "none.db", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "Command:         true" in r.stdout and "Processes:       0" in r.stdout
    r = run("stats", "none.db", "--format", "json", cwd=tmp_path)
    assert r.returncode == 0 and json.loads(r.stdout)["rows"] == []
    r = run("export", "none.db", "--format", "chrome", "-o", "-", cwd=tmp_path)
    assert r.returncode == 0 and json.loads(r.stdout)["traceEvents"] == []


@needs_agent
def test_an_empty_run_says_why_nothing_was_recorded_and_what_to_try(tmp_path):
    """Issue #28: `profile --stats -- /bin/true` printed `Processes: 0` and an empty table."""
    r = run("profile", "-o", "none.db", "--stats", "--", "true", cwd=tmp_path)
    assert r.returncode == 0 and "Processes:       0" in r.stdout
    [why] = [line for line in r.stderr.splitlines() if "nothing was recorded" in line]
    assert why.startswith("lantern: nothing was recorded: no process of the command made an NVTX call")
    assert "NVTX_INJECTION64_PATH" in why and "; try NVTX ranges in the program" in why
    assert json.loads(run("stats", "none.db", "--format", "json", cwd=tmp_path).stdout)["note"] == why[9:]
    # a wrapper that sets the variable for itself: the program's NVTX calls never reach us
    r = run("profile", "-o", "lost.db", "--", "sh", "-c",
            f"NVTX_INJECTION64_PATH=/nonexistent {NVTX_DEMO} 1", cwd=tmp_path)
    assert r.returncode == 0 and "nothing was recorded" in r.stderr and "environment lost" in r.stderr
    # a Python program without NVTX, not sampled (CPU sampling, on by default, starts the agent in
    # every Python process: then it is recorded, tests/cpu)
    r = run("profile", "-o", "py.db", "--sample=none", "--", sys.executable, "-c", "pass", cwd=tmp_path)
    assert "try --python-functions 'mymodule.*'" in r.stderr
    r = run("profile", "-o", "demo.db", "--", NVTX_DEMO, "1", cwd=tmp_path)  # a real one: no word
    assert r.returncode == 0 and "nothing was recorded" not in r.stderr


def test_command_that_cannot_run_exits_127(tmp_path):
    r = run("profile", "-o", "x.db", "--", "./no-such-program", cwd=tmp_path)
    assert one_error_line(r, 127) == "lantern: cannot run './no-such-program': No such file or directory"
    assert not list(tmp_path.iterdir())


@needs_agent
def test_sigterm_to_launcher_reaches_child_once_and_its_events_are_kept(tmp_path):
    launcher = subprocess.Popen([str(LANTERN), "profile", "-o", "sig.db", "--", str(NVTX_WAIT)], cwd=tmp_path,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=LANTERN_ENV)
    assert launcher.stdout.readline() == "ready\n"
    launcher.send_signal(signal.SIGTERM)
    out, err = launcher.communicate(timeout=30)
    assert launcher.returncode == 41, err  # nvtx_wait: 40 + signals received
    db = tmp_path / "sig.db"
    assert query(db, "SELECT s.value, r.end_ns > r.start_ns FROM ranges r JOIN strings s ON s.id = r.name_id") == [
        ("waiting", 1)]
    assert query(db, "SELECT s.value FROM marks JOIN strings s ON s.id = name_id") == [("got a signal",)]


@needs_agent
def test_ctrl_c_at_the_terminal_stops_the_child_and_lantern_still_imports(tmp_path):
    """A terminal's Ctrl-C signals the whole foreground group: the child gets it from the
    kernel, and lantern must neither die of it (no report) nor send a second SIGINT. The test
    is the terminal: lantern runs on a pseudo-terminal. (A duplicate SIGINT can coalesce with
    the first, so the exit status 41 catches one only when the child saw both.)"""
    import pty
    pid, master = pty.fork()
    if pid == 0:
        os.chdir(tmp_path)
        os.execve(str(LANTERN), [str(LANTERN), "profile", "-o", "int.db", "--", str(NVTX_WAIT)], LANTERN_ENV)
    seen = b""
    deadline = time.monotonic() + 30
    while b"ready" not in seen and time.monotonic() < deadline:
        seen += os.read(master, 1024)
    os.write(master, b"\x03")  # the terminal's VINTR character: SIGINT from the kernel
    while True:
        try:
            if not os.read(master, 1024):
                break
        except OSError:  # EIO: the other side closed
            break
    _, status = os.waitpid(pid, 0)
    os.close(master)
    assert os.waitstatus_to_exitcode(status) == 41
    assert query(tmp_path / "int.db", "SELECT value FROM meta WHERE key = 'exit_status'") == [(41,)]
    assert query(tmp_path / "int.db", "SELECT count(end_ns) FROM ranges") == [(1,)]


def test_default_output_names_never_overwrite(tmp_path):
    for expected in ("lantern-1.db", "lantern-2.db"):
        r = run("profile", "--", "true", cwd=tmp_path)
        assert r.returncode == 0 and f"report written to {expected}" in r.stderr
    (tmp_path / "lantern-3.db.raw").mkdir()  # a kept session folder also takes its name
    r = run("profile", "--", "true", cwd=tmp_path)
    assert "report written to lantern-4.db" in r.stderr
    before = (tmp_path / "lantern-1.db").read_bytes()
    r = run("profile", "-o", "lantern-1.db", "--", "sh", "-c", "exit 5", cwd=tmp_path)
    assert one_error_line(r, 1) == ("lantern: 'lantern-1.db' exists (use --force to replace it, "
                                    "or -o another name)")
    assert (tmp_path / "lantern-1.db").read_bytes() == before
    r = run("profile", "--force", "-o", "lantern-1.db", "--", "sh", "-c", "exit 5", cwd=tmp_path)
    assert r.returncode == 5
    assert query(tmp_path / "lantern-1.db", "SELECT value FROM meta WHERE key = 'exit_status'") == [(5,)]


RANK_VARIABLES = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID")


def test_output_patterns_name_the_database_its_raw_folder_and_the_refusal(tmp_path):
    env = {k: v for k, v in LANTERN_ENV.items() if k not in RANK_VARIABLES}
    ranked = {**env, "RANK": "3", "LANTERN_TEST_JOB": "job7"}
    name = f"run-3-{socket.gethostname()}.db"
    r = run("profile", "--keep-raw", "-o", "run-%r-%h.db", "--", "true", cwd=tmp_path, env=ranked)
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines()[-1] == f"lantern: report written to {name}"
    assert sorted(p.name for p in tmp_path.iterdir()) == [name, name + ".raw"]
    r = run("profile", "--output", "run-%r-%h.db", "--", "sh", "-c", "exit 5", cwd=tmp_path, env=ranked)
    assert one_error_line(r, 1) == f"lantern: '{name}' exists (use --force to replace it, or -o another name)"
    r = run("profile", "-f", "-o", "run-%r-%h.db", "--", "sh", "-c", "exit 5", cwd=tmp_path, env=ranked)
    assert r.returncode == 5 and f"report written to {name}" in r.stderr
    assert query(tmp_path / name, "SELECT value FROM meta WHERE key = 'exit_status'") == [(5,)]
    for n in (1, 2):
        r = run("profile", "-o", "%q{LANTERN_TEST_JOB}-%n-100%%.db", "--", "true", cwd=tmp_path, env=ranked)
        assert r.returncode == 0 and f"report written to job7-{n}-100%.db" in r.stderr, r.stderr
        assert (tmp_path / f"job7-{n}-100%.db").is_file()


@pytest.mark.parametrize("pattern, error", [
    ("run-%r.db", "lantern: -o 'run-%r.db': %r is the rank, but none of RANK, OMPI_COMM_WORLD_RANK, "
                  "PMI_RANK, PMIX_RANK, SLURM_PROCID holds one (not run by a job launcher?)"),
    ("run-%x.db", "lantern: -o 'run-%x.db': unknown pattern '%x' (known: %r rank, %h host, %p pid, "
                  "%q{VAR} environment variable, %n first free number, %%)"),
    ("%q{LANTERN_TEST_UNSET}.db", "lantern: -o '%q{LANTERN_TEST_UNSET}.db': %q{LANTERN_TEST_UNSET}: "
                                  "the environment variable LANTERN_TEST_UNSET is not set"),
])
def test_output_pattern_errors_are_usage_errors(pattern, error, tmp_path):
    env = {k: v for k, v in LANTERN_ENV.items() if k not in RANK_VARIABLES + ("LANTERN_TEST_UNSET",)}
    r = run("profile", "-o", pattern, "--", "true", cwd=tmp_path, env=env)
    assert r.returncode == 2
    assert r.stderr.splitlines() == [error, "Try 'lantern profile --help'."]
    assert not list(tmp_path.iterdir())  # nothing was created


@needs_agent
def test_truncated_raw_file_imports_up_to_the_damage_with_a_warning(tmp_path):
    r = run("profile", "--keep-raw", "-o", "a.db", NVTX_DEMO, "3", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    raw_file = next(p for p in (tmp_path / "a.db.raw").glob("*.lrt") if p.name != "launcher.lrt")
    data = raw_file.read_bytes()
    raw_file.write_bytes(data[:-7])  # as if the process was killed in the middle of a write
    r = run("import", tmp_path / "a.db.raw", "-o", "b.db", cwd=tmp_path)
    assert r.returncode == 0
    warning, written = r.stderr.strip().splitlines()
    assert warning.startswith(f"lantern: warning: {raw_file.name}: chunk ")
    assert "truncated chunk" in warning and warning.endswith(" bytes lost")
    assert written == "lantern: report written to b.db"
    stored = query(tmp_path / "b.db", "SELECT import_warning FROM processes")
    assert stored == [(warning[len("lantern: warning: "):],)]
    assert query(tmp_path / "b.db", "SELECT value FROM meta WHERE key = 'import_warnings'") == [(1,)]
    assert "Import warnings: 1" in run("stats", tmp_path / "b.db").stdout


@needs_agent
def test_keep_raw_then_import_gives_the_same_rows(tmp_path):
    r = run("profile", "--keep-raw", "-o", "a.db", NVTX_DEMO, "1", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    raw = tmp_path / "a.db.raw"
    assert (raw / "launcher.lrt").exists() and len(list(raw.glob("*.lrt"))) == 2
    r = run("import", raw, "-o", "b.db", cwd=tmp_path)
    assert r.returncode == 0 and "report written to b.db" in r.stderr
    sql = "SELECT name_id, style, depth, parent_id, start_ns, end_ns FROM ranges ORDER BY id"
    assert query(tmp_path / "a.db", sql) == query(tmp_path / "b.db", sql)
    assert one_error_line(run("import", raw, "-o", "b.db", cwd=tmp_path), 1) == (
        "lantern: 'b.db' exists (use --force to replace it)")
    assert one_error_line(run("import", "nowhere", "-o", "c.db", cwd=tmp_path), 1) == (
        "lantern: cannot import 'nowhere': no such session folder")
