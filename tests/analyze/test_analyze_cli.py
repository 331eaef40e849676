"""`lantern analyze` and `lantern report` through the real CLI, on the CUDA session of
tests/cuda_reports/cuda_session.sql (numbers worked out by hand there) plus NVML samples:
the three output formats, the rule filter, bad input, the HTML page's output rules (no
overwrite without --force, temporary file renamed, symlinks not followed) and the page itself
in a real headless browser (Chromium), which must run its script without an error."""
import csv
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


def lantern(*args, check=True):
    run = subprocess.run([LANTERN, *args], capture_output=True, text=True, timeout=120)
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
    out = lantern("analyze", str(session)).stdout
    assert out.startswith("Command:         app\n")
    assert re.findall(r"^== (\w+):", out, re.M) == RULES
    assert "#1  1 HtoD copies with pageable host memory in pid 1000" in out
    assert "advice: allocate the host buffers pinned" in out


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
