"""`lantern analyze` and `lantern report` through the real CLI, on the CUDA session of
tests/cuda_reports/cuda_session.sql (numbers worked out by hand there) plus NVML samples:
the three output formats, the rule filter, bad input, the HTML page's output rules (no
overwrite without --force, temporary file renamed, symlinks not followed) and the page itself
in a real headless browser (Chromium), which must run its script without an error."""
import csv
import html
import io
import json
import os
import re
import shutil
import sqlite3
import subprocess

import pytest

BUILD = os.environ.get("LANTERN_BUILD", "build")
SOURCE = os.environ.get("LANTERN_SOURCE", os.path.join(os.path.dirname(__file__), "..", ".."))
LANTERN = os.path.join(BUILD, "bin", "lantern")
RULES = ["pageable_memcpy", "sync_memops", "sync_api", "gpu_idle", "gpu_utilization",
         "launch_bound", "cpu_bound_ranges", "alloc_in_loop", "stream_use", "tensor_cores",
         "small_grid", "energy", "stragglers", "comm_overlap", "rank_idle"]


# a pipe and no $COLUMNS (pytest may set it): no width limit, unless a test sets one
PIPE_ENV = {k: v for k, v in os.environ.items() if k != "COLUMNS"}


def lantern(*args, check=True):
    run = subprocess.run([LANTERN, *args], capture_output=True, text=True, timeout=120,
                         env=PIPE_ENV)
    if check and run.returncode != 0:
        raise AssertionError(f"lantern {args} exited {run.returncode}: {run.stderr}")
    return run


@pytest.fixture
def session(tmp_path):
    """The CUDA test session, with power samples at 100 W every 5 µs (energy counter too)."""
    path = tmp_path / "run.db"
    db = sqlite3.connect(path)
    for f in ("src/db/schema.sql", "tests/cuda_reports/cuda_session.sql"):
        with open(os.path.join(SOURCE, f)) as sql:
            db.executescript(sql.read())
    db.executemany(
        "INSERT INTO gpu_samples(gpu_id, ts_ns, power_mw, energy_mj, sm_clock_mhz,"
        " throttle_reasons, energy_uncertainty_ns) VALUES(1, ?, 100000, ?, 1980, 0, 0)",
        [(ts, 1000 + ts // 10000) for ts in range(0, 55000, 5000)])
    db.commit()
    db.close()
    return path


def test_analyze_prints_every_rule_with_its_threshold(session):
    out = lantern("analyze", str(session), "--details").stdout
    assert out.startswith("Command:         app\n")
    assert re.findall(r"^== (\w+):", out, re.M) == RULES
    assert "#3  pageable_memcpy: 1 HtoD copies with pageable host memory in pid 1000" in out
    assert "advice: allocate the host buffers pinned" in out


def test_analyze_starts_with_the_findings_most_costly_first_one_line_each(session):
    """Issue #28: the 0.2 % pageable copy no longer comes before the finding that cost 43 %."""
    out = lantern("analyze", str(session)).stdout
    summary = out[out.index("Findings, most costly first"):]
    rows = re.findall(r"^(\d+) +([\d.]+ [nµm]?s) +([\d.]+) +(\w+) +(.*)$", summary, re.M)
    assert [(rank, rule) for rank, _, _, rule, _ in rows] == [
        ("1", "gpu_utilization"), ("2", "stream_use"), ("3", "pageable_memcpy")]
    assert rows[0][1:3] == ("21.700 µs", "43.4")
    assert "advice:" not in out and "evidence" not in out.split("\n\n")[-1].split("(")[0]
    assert "3 of 15 rules found something (--details:" in out
    doc = json.loads(lantern("analyze", str(session), "--format", "json").stdout)
    assert [(r["rule"], r["finding"]) for r in doc["analysis"]["ranked"]] == [
        ("gpu_utilization", 1), ("stream_use", 1), ("pageable_memcpy", 1)]


def test_analyze_fits_the_terminal_and_keeps_names_whole_in_a_pipe(session):
    wide = {**PIPE_ENV, "COLUMNS": "72"}
    for args in ([], ["--details"]):
        out = subprocess.run([LANTERN, "analyze", str(session), *args], capture_output=True,
                             text=True, env=wide, check=True).stdout
        assert max(len(line) for line in out.splitlines()) <= 72, out
    piped = lantern("analyze", str(session), "--details").stdout  # no terminal, no COLUMNS
    assert "GPU 0 was busy < 50 % in 45 of the 52 windows of 500 ns in its active span" in piped
    assert "-w 0" not in piped


def test_analyze_json_gives_exact_costs_and_evidence(session):
    doc = json.loads(lantern("analyze", str(session), "--format", "json").stdout)
    assert doc["session"]["command"] == "app"
    rules = {r["name"]: r for r in doc["analysis"]["rules"]}
    assert list(rules) == RULES
    # one pageable copy of 4 MB in 400 ns, pinned HtoD in the run at 2 MB / 150 ns:
    # 4e6 / (2e6 / 150) = 300 ns needed, 100 ns could be saved
    finding = rules["pageable_memcpy"]["findings"][0]
    assert finding["cost_ns"] == 100 and finding["count"] == 1
    assert finding["share_percent"] == pytest.approx(100 * 100 / 50000)
    evidence = finding["evidence"][0]
    assert (evidence["start_ns"], evidence["duration_ns"], evidence["pid"], evidence["tid"],
            evidence["stream"], evidence["range"]) == (4400, 400, 1000, 1000, 7, ":backward")
    assert rules["energy"]["note"] is None
    assert "needs GPU hardware metrics (lantern profile --gpu-metrics)" in rules["small_grid"]["note"]


def test_analyze_csv_has_one_line_per_evidence_row(session):
    run = lantern("analyze", str(session), "--format", "csv", "--rule", "pageable_memcpy,energy")
    assert run.stderr.startswith("Command:")  # the session header stays out of the CSV
    rows = list(csv.DictReader(io.StringIO(run.stdout)))
    assert {r["Rule"] for r in rows} <= {"pageable_memcpy", "energy"}
    page = [r for r in rows if r["Rule"] == "pageable_memcpy"]
    assert len(page) == 1 and page[0]["Cost (ns)"] == "100" and page[0]["Start (ns)"] == "4400"


def test_analyze_refuses_unknown_rules_and_bad_files(tmp_path, session):
    run = lantern("analyze", str(session), "--rule", "gpu_idle,nope", check=False)
    assert run.returncode == 2 and run.stderr.startswith("lantern: unknown rule 'nope'\n")
    bad = tmp_path / "bad.db"
    bad.write_text("not a database")
    run = lantern("analyze", str(bad), check=False)
    assert run.returncode == 1 and run.stderr == f"lantern: cannot open '{bad}': not a Lantern database\n"
    run = lantern("analyze", str(session), "--format", "xml", check=False)
    assert run.returncode == 2


def test_report_writes_a_self_contained_page(session, tmp_path):
    out = tmp_path / "page.html"
    run = lantern("report", str(session), "-o", str(out))
    assert run.stderr == f"lantern: report written to {out}\n"
    page = out.read_text()
    for marker in ('id="summary"', 'id="timeline"', 'id="time"', 'id="findings"', 'id="energy"',
                   'id="top-ranges"', 'id="top-kernels"', 'id="copies"', 'id="finding-1"',
                   'id="energy-ranges"', 'id="energy-kernels"', 'class="gpu-timeline"'):
        assert marker in page, marker
    # nothing fetched from elsewhere: no external script, style sheet, font or image
    assert not re.search(r"<script[^>]+src=|<link|@import|url\(|<img|https?://", page)
    mask = os.umask(0)
    os.umask(mask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~mask  # a new file's mode, not mkstemp's 0600
    assert not [f for f in os.listdir(tmp_path) if ".tmp." in f]


def test_report_keeps_existing_files_without_force(session, tmp_path):
    out = tmp_path / "page.html"
    out.write_text("mine")
    run = lantern("report", str(session), "-o", str(out), check=False)
    assert run.returncode == 1
    assert run.stderr == f"lantern: '{out}' exists (use --force to replace it)\n"
    assert out.read_text() == "mine"
    lantern("report", str(session), "-o", str(out), "--force")
    assert out.read_text().startswith("<!DOCTYPE html>")
    # a symlink at the output is replaced, never written through
    target = tmp_path / "target.txt"
    target.write_text("keep")
    link = tmp_path / "link.html"
    link.symlink_to(target)
    assert lantern("report", str(session), "-o", str(link), check=False).returncode == 1
    lantern("report", str(session), "-o", str(link), "--force")
    assert target.read_text() == "keep" and not link.is_symlink()
    assert not [f for f in os.listdir(tmp_path) if ".tmp." in f]


def test_report_defaults_to_the_database_name(session):
    lantern("report", str(session))
    assert session.with_suffix(".html").read_text().startswith("<!DOCTYPE html>")


def chromium():
    for name in (os.environ.get("LANTERN_CHROMIUM"), "chromium", "chromium-browser"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def test_report_loads_in_headless_chromium_without_errors(session, tmp_path):
    browser = chromium()
    if not browser:
        pytest.skip("SKIP: no chromium (scripts/deps.sh installs Debian's chromium)")
    out = tmp_path / "page.html"
    lantern("report", str(session), "-o", str(out))
    common = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
              f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0"]
    # the browser without the sanitizer runtimes the ASan build preloads into this test
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS")}
    run = subprocess.run([*common, "--dump-dom", out.as_uri()], capture_output=True, text=True,
                         timeout=120, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    # the page's script ran to its end: no exception stopped it
    assert 'data-ready="1"' in run.stdout
    assert not re.search(r"Uncaught|CONSOLE\(\d+\).*[Ee]rror", run.stderr), run.stderr[-2000:]
    for marker in ('id="finding-index"', 'id="nvtx-lanes"', 'class="gpu-timeline"',
                   'id="evidence-1"', "Could save"):
        assert marker in run.stdout, marker
    shot = tmp_path / "page.png"
    run = subprocess.run([*common, "--hide-scrollbars", "--window-size=1280,2000",
                          f"--screenshot={shot}", out.as_uri()], capture_output=True, text=True,
                         timeout=120, env=env)
    assert run.returncode == 0 and shot.stat().st_size > 20000, run.stderr[-2000:]


NUMBA_KERNEL = ("kernels::divide_by[abi:v3][abi:cw51cXTLSUwv1sDUaKthqaNgoKmjgOR3W3Cw6igA9duC0hkwnNGi"
                "HEkYkrqQBFBTDEwCyQeA](Array<float, 1, C, mutable, aligned>, Array<float, 1, C, "
                "mutable, aligned>, float)")


@pytest.fixture
def named_session(session):
    """The session with what a real program gives: process and thread names, an NVTX color,
    and a Numba kernel name (issue #28)."""
    db = sqlite3.connect(session)
    db.execute("UPDATE processes SET name = 'train.py'")
    db.execute("INSERT INTO strings VALUES(100, 'python3'), (101, 'loader-0'), (102, ?)",
               (NUMBA_KERNEL,))
    db.execute("UPDATE threads SET os_name_id = 100 WHERE id = 1")
    db.execute("UPDATE threads SET python_name_id = 101 WHERE id = 2")
    db.execute("UPDATE ranges SET color = 0xFF00AA44 WHERE name_id = 8")  # "step"
    db.execute("UPDATE kernels SET demangled_id = 102 WHERE demangled_id = 7")  # "reduce"
    db.commit()
    db.close()
    return session


# Runs in a page that holds the report in a frame, once it has loaded, and writes what the
# report shows into <pre id="result"> for --dump-dom: the lanes' names, the colors, the
# kernels' names and tooltips, whether a rule name wraps, and whether anything is wider than
# the window.
PROBE = """<!DOCTYPE html><html><body style="margin:0">
<iframe id="f" src="page.html" style="width:1400px;height:3000px;border:0"></iframe>
<pre id="result"></pre><script>
window.onload = function () {
  var d = document.getElementById('f').contentDocument, all = function (q) {
    return Array.prototype.slice.call(d.querySelectorAll(q)); };
  var result = {
    lanes: all('#nvtx-lanes text.lane').map(function (t) { return t.childNodes[1].textContent; }),
    lane_titles: all('#nvtx-lanes text.lane title').map(function (t) { return t.textContent; }),
    lane_fills: all('#nvtx-lanes rect').map(function (r) { return r.getAttribute('fill'); }),
    range_bars: Array.prototype.slice.call(all('#time svg.bars')[0].querySelectorAll('g')).map(
      function (g) { return [g.querySelector('title').textContent.split(':')[1],
                             g.querySelector('rect').getAttribute('fill')]; }),
    kernels: all('#top-kernels tbody td:first-child').map(function (td) {
      var s = td.querySelector('span'); return [td.textContent, s ? s.title : null]; }),
    processes: d.getElementById('processes').textContent,
    rule_lines: all('#rules td.rule code').map(function (c) { return c.getClientRects().length; }),
    page_width: d.documentElement.scrollWidth,
    tids: all('#nvtx-lanes text').filter(function (t) { return /^tid /.test(t.textContent); }).length
  };
  document.getElementById('result').textContent = JSON.stringify(result);
};
</script></body></html>
"""


def test_report_page_names_threads_processes_and_kernels_in_their_colors(named_session, tmp_path):
    browser = chromium()
    if not browser:
        pytest.skip("SKIP: no chromium (scripts/deps.sh installs Debian's chromium)")
    lantern("report", str(named_session), "-o", str(tmp_path / "page.html"))
    (tmp_path / "probe.html").write_text(PROBE)
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS")}
    common = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
              f"--user-data-dir={tmp_path / 'profile'}", "--allow-file-access-from-files",
              "--hide-scrollbars", "--window-size=1400,3000"]
    run = subprocess.run([*common, "--virtual-time-budget=5000", "--dump-dom",
                          (tmp_path / "probe.html").as_uri()],
                         capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    found = re.search(r'<pre id="result">(.*?)</pre>', run.stdout, re.S)
    assert found and found.group(1), run.stdout[-2000:]
    page = json.loads(html.unescape(found.group(1)))
    # timeline rows: thread and process names, never "tid N"; pids and tids in the tooltip
    assert page["lanes"] == ["python3 \u00b7 train.py", "loader-0 \u00b7 train.py"]
    assert page["lane_titles"][1] == "thread loader-0 (tid 1001) of process train.py (pid 1000)"
    assert page["tids"] == 0
    assert "pid 1000 train.py" in page["processes"]
    # the NVTX color the program chose, on the timeline and in the chart of ranges
    assert "#00aa44" in page["lane_fills"] and ["step", "#00aa44"] in page["range_bars"]
    # a Numba kernel as nsys shows it, whole in the tooltip
    assert ["divide_by", NUMBA_KERNEL] in page["kernels"]
    # every rule name on one line, nothing wider than a 1400 px window
    assert page["rule_lines"] == [1] * len(RULES)
    assert page["page_width"] <= 1400
    shot = tmp_path / "page-1400.png"
    subprocess.run([*common, f"--screenshot={shot}", (tmp_path / "page.html").as_uri()],
                   capture_output=True, timeout=120, env=env)
    if os.environ.get("LANTERN_KEEP_SCREENSHOT"):  # to look at it: the page at 1400 px
        shutil.copy(shot, os.environ["LANTERN_KEEP_SCREENSHOT"])
