"""`lantern diff` through the real CLI. Real databases come from tests/diff/diff_workload.c run
by `lantern profile` (ranges that sleep a known time with +-10 % jitter); CUDA sessions are
crafted with SQL on the real schema (a GEMM replaced by a slower one, with its Tensor Core
activity). What must hold (issue #29): the known slowdown is found as `slower`, +15...+25 %,
with an interval that excludes 0, and the unchanged range is `same`; 20 A/A comparisons flag
at most one row and `--fail-on-regression` exits 0 in at least 19; bad input exits 1, usage
errors 2, a regression with --fail-on-regression 3; JSON is one valid document; the HTML page
is written and never overwritten without --force."""
import csv
import io
import gzip
import json
import os
import random
import re
import sqlite3
import subprocess

import pytest

BUILD = os.environ.get("LANTERN_BUILD", "build")
SOURCE = os.environ.get("LANTERN_SOURCE", os.path.join(os.path.dirname(__file__), "..", ".."))
LANTERN = os.path.join(BUILD, "bin", "lantern")
WORKLOAD = os.environ.get("DIFF_WORKLOAD", os.path.join(BUILD, "bin", "diff_workload"))
CHANGES = {"slower", "faster", "higher", "lower", "new", "gone"}


def lantern(*args, env=None):
    """The command with stdout a pipe and no $COLUMNS unless env gives one (pytest's process
    may have set one that os.environ does not show), so text is what a pipe gets."""
    env = dict(os.environ) if env is None else env
    return subprocess.run([LANTERN, *args], capture_output=True, text=True, timeout=300,
                          env=env)


MEASURED = {}  # database -> the step lengths the program measured itself (ns)


def profile(path, step_ms, steady_ms, instances):
    run = lantern("profile", "-f", "-o", str(path), "--", WORKLOAD, str(step_ms), str(steady_ms),
                  str(instances))
    assert run.returncode == 0, run.stderr
    MEASURED[str(path)] = [int(line) for line in run.stdout.split()]
    assert len(MEASURED[str(path)]) == instances
    return str(path)


def median(values):
    v = sorted(values)
    return (v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2


def true_change(base, new):
    """The change of the step's median in %, from what the programs measured themselves."""
    return (median(MEASURED[new]) / median(MEASURED[base]) - 1) * 100


def diff_json(*args):
    run = lantern("diff", *args, "--format", "json")
    assert run.returncode in (0, 3), run.stderr
    return json.loads(run.stdout), run.returncode


def row(doc, kind, name, scope=None):
    rows = [r for r in doc["rows"] if r["kind"] == kind and r["name"] == name
            and (scope is None or r["scope"] == scope)]
    assert len(rows) == 1, f"{kind} {name}: {rows}"
    return rows[0]


@pytest.fixture(scope="module")
def slowdown(tmp_path_factory):
    """The issue's synthetic program: 'step' sleeps 10 ms, then 12 ms (+-10 %), 40 instances;
    'steady' sleeps 5 ms in both."""
    tmp = tmp_path_factory.mktemp("slowdown")
    return (profile(tmp / "base.db", 10, 5, 40), profile(tmp / "new.db", 12, 5, 40), tmp)


def test_known_slowdown_is_slower_by_15_to_25_percent(slowdown):
    """+20 % asked for; a loaded machine stretches the sleeps of one run more than the other's
    (27.5 % measured once under a parallel build), so the diff is held to what the programs
    measured themselves, and the issue's 15...25 % to the machine's quiet runs."""
    base, new, _ = slowdown
    doc, rc = diff_json(base, new)
    step = row(doc, "range", ":step")
    print(json.dumps(step, indent=1))
    truth = true_change(base, new)
    print(f"the programs measured {truth:+.2f} %")
    assert step["verdict"] == "slower"
    # within 2 points: the range also holds the agent's push and pop (slow under ASan)
    assert abs(step["percent"] - truth) <= 2.0
    assert step["percent_low"] - 2.0 <= truth <= step["percent_high"] + 2.0
    if 15 <= truth <= 25:  # the sleeps as asked: the range
        assert 15 <= step["percent"] <= 25
    assert step["percent_low"] > 0 and step["change_low"] > 0  # the interval excludes 0
    assert step["test"] == "mann-whitney" and step["q"] < 0.05
    assert step["base"]["count"] == 40 and step["new"]["count"] == 40
    assert step["base"]["p10"] < step["base"]["median"] < step["base"]["p90"]
    assert row(doc, "range", ":steady")["verdict"] == "same"
    assert doc["mode"] == "instances"
    assert any("correlated" in w for w in doc["warnings"])
    # the range is explained: no CUDA inside, so its own time grew by about the change
    assert step["explanation"].startswith("+")
    assert doc["regressions"] == 1 and rc == 0


def test_known_slowdown_fails_the_gate_and_the_reverse_passes(slowdown):
    base, new, _ = slowdown
    assert lantern("diff", base, new, "--fail-on-regression").returncode == 3
    doc, rc = diff_json(new, base, "--fail-on-regression")
    assert row(doc, "range", ":step")["verdict"] == "faster" and rc == 0
    # a threshold above the change makes it "same"
    doc, rc = diff_json(base, new, "--threshold", "40", "--fail-on-regression")
    assert row(doc, "range", ":step")["verdict"] == "same" and rc == 0


def test_a_a_comparisons_raise_no_alarm(tmp_path):
    """20 A/A comparisons (the known slowdown's program twice, 'step' at 10 ms), default
    settings: at most one row flagged across all of them, and --fail-on-regression exits 0 in
    at least 19. (About 25 s: shorter sleeps would measure the shared machine's scheduling
    delays, a few hundred microseconds under load, more than the program.)"""
    flagged, passed = [], 0
    for i in range(20):
        a = profile(tmp_path / f"a{i}.db", 10, 5, 40)
        b = profile(tmp_path / f"b{i}.db", 10, 5, 40)
        doc, rc = diff_json(a, b, "--fail-on-regression")
        flagged += [(i, r["kind"], r["name"], r["percent"], r["q"]) for r in doc["rows"]
                    if r["verdict"] in CHANGES]
        passed += rc == 0
        print(i, [(r["name"], round(r["percent"], 2), r["q"]) for r in doc["rows"]])
    assert len(flagged) <= 1, flagged
    assert passed >= 19


def test_runs_mode_bootstraps_over_runs(tmp_path):
    """3 runs against 3: the runs' medians decide; the same program on both sides is same.
    (+50 %: with three runs a side, a loaded machine's run-to-run spread left a +25 % change
    short of significance once.)"""
    # a warm-up run, then base and A/A runs alternated: the first runs of a CI job are
    # slower (cold caches: a run's duration was 12 % longer in the base runs, all made first,
    # than in the A/A ones made last, and flagged 'faster')
    profile(tmp_path / "warm.db", 4, 2, 20)
    base, again = [], []
    for i in range(3):
        base.append(profile(tmp_path / f"base{i}.db", 4, 2, 20))
        again.append(profile(tmp_path / f"again{i}.db", 4, 2, 20))
    new = [profile(tmp_path / f"new{i}.db", 6, 2, 20) for i in range(3)]
    doc, _ = diff_json("--base", *base, "--new", *new)
    assert doc["mode"] == "runs"
    step = row(doc, "range", ":step")
    print(json.dumps(step, indent=1))
    assert step["test"] == "bootstrap over runs" and step["verdict"] == "slower"
    assert 35 <= step["percent"] <= 65 and step["percent_low"] > 0
    assert step["base"]["runs"] == 3 and step["base"]["count"] == 60
    assert row(doc, "run", "duration")["test"] == "bootstrap over runs"
    doc, rc = diff_json("--base", *base, "--new", *again, "--fail-on-regression")
    assert [r for r in doc["rows"] if r["verdict"] in CHANGES] == [] and rc == 0


# ---- crafted CUDA sessions -------------------------------------------------------------------

GEMM_BF16 = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1"
GEMM_FP32 = "cutlass_80_simt_sgemm_128x64_8x5_nn_align1"
ADD = "void at::native::elementwise_kernel<128, 4>(int, float*)"


def cuda_session(path, gemm, gemm_ms, tensor, gpu="NVIDIA H100 80GB HBM3", steps=30, seed=1):
    """A session of `steps` NVTX ranges ':step' on thread 1, each launching an elementwise
    kernel (1 ms) and a 0.2 ms host-to-device copy, while thread 2 (as PyTorch's autograd
    thread, outside any range) launches `gemm` (gemm_ms long, Tensor Cores `tensor` %), then
    waiting in cudaDeviceSynchronize for them; NVML samples at 300 W."""
    rnd = random.Random(seed)
    db = sqlite3.connect(path)
    with open(os.path.join(SOURCE, "src/db/schema.sql")) as f:
        db.executescript(f.read())
    ms = 1_000_000
    db.executescript(f"""
        INSERT INTO processes(id, pid, exe, cmdline, start_ns, end_ns, clean_exit, name)
          VALUES (1, 4242, '/usr/bin/python3', 'python3 train.py', 0, {steps * 20 * ms}, 1, 'train.py');
        INSERT INTO threads(id, process_id, tid) VALUES (1, 1, 4242), (2, 1, 4243);
        INSERT INTO strings VALUES (1, 'step'), (2, 'cudaLaunchKernel'), (3, 'cudaMemcpyAsync'),
          (4, 'cudaDeviceSynchronize'), (5, '{gemm}'), (6, '{ADD}');
        INSERT INTO domains VALUES (0, NULL);
        INSERT INTO gpus(id, uuid, name, nvml_index, cc_major, cc_minor, sm_count, sm_clock_khz,
          power_limit_mw) VALUES (1, 'GPU-1', '{gpu}', 0, 9, 0, 132, 1980000, 700000);
        INSERT INTO process_gpus VALUES (1, 0, 1);
        INSERT INTO cuda_contexts(id, process_id, context, gpu_id, device) VALUES (1, 1, 1, 1, 0);
        INSERT INTO gpu_metric_sets(id, gpu_id, source, period_ns, metrics)
          VALUES (1, 1, 'CUPTI PM sampling', 100000, 'sm_active,tensor_active');
    """)
    api = kernel_id = 0
    t = ms
    for i in range(steps):
        r = i + 1
        length = (gemm_ms + 2) * ms * rnd.uniform(0.98, 1.02)
        end = t + int(length)
        calls = [(2, 2, t + 100_000, t + 110_000), (1, 2, t + 120_000, t + 130_000),
                 (1, 3, t + 130_000, t + 140_000), (1, 4, t + 150_000, end - 300_000)]
        ids = []
        for thread, name, s, e in calls:
            api += 1
            ids.append(api)
            db.execute("INSERT INTO cuda_api(id, process_id, thread_id, api, name_id, start_ns,"
                       " end_ns, correlation_id, nvtx_range_id) VALUES (?, 1, ?, 0, ?, ?, ?, ?, ?)",
                       (api, thread, name, s, e, api, r if thread == 1 else None))
        g0 = t + 200_000
        g1 = g0 + int(gemm_ms * ms * rnd.uniform(0.98, 1.02))
        a1 = g1 + 100_000 + ms
        for name, s, e, call in [(5, g0, g1, ids[0]), (6, g1 + 100_000, a1, ids[1])]:
            kernel_id += 1
            db.execute("INSERT INTO kernels(id, process_id, gpu_id, device, context, stream,"
                       " correlation_id, start_ns, end_ns, name_id, api_id, nvtx_range_id)"
                       " VALUES (?, 1, 1, 0, 1, 7, ?, ?, ?, ?, ?, ?)",
                       (kernel_id, call, s, e, name, call, r if name == 6 else None))
            db.execute("INSERT INTO gpu_metric_samples(set_id, start_ns, end_ns, sm_active,"
                       " tensor_active) VALUES (1, ?, ?, 90, ?)", (s, e, tensor if name == 5 else 0))
        db.execute("INSERT INTO memcpys(process_id, gpu_id, device, context, stream, correlation_id,"
                   " start_ns, end_ns, copy_kind, bytes, api_id, nvtx_range_id) VALUES"
                   " (1, 1, 0, 1, 7, ?, ?, ?, 'HtoD', 1000000, ?, ?)",
                   (ids[2], a1 + 100_000, a1 + 300_000, ids[2], r))
        db.execute("INSERT INTO cuda_syncs(process_id, thread_id, sync_kind, start_ns, end_ns)"
                   " VALUES (1, 1, 'context', ?, ?)", (t + 150_000, end - 300_000))
        db.execute("INSERT INTO ranges(id, process_id, name_id, style, depth, start_thread_id,"
                   " end_thread_id, start_ns, end_ns) VALUES (?, 1, 1, 0, 0, 1, 1, ?, ?)",
                   (r, t, end))
        t = end + ms
    db.executemany("INSERT INTO gpu_samples(gpu_id, ts_ns, power_mw, energy_mj, sm_clock_mhz,"
                   " gpu_util, throttle_reasons, energy_uncertainty_ns) VALUES (1, ?, 300000, ?,"
                   " 1980, 90, 0, 0)", [(ts, ts * 300 // ms) for ts in range(0, t + ms, ms)])
    db.executescript(f"""
        INSERT INTO meta VALUES ('schema_version', 9), ('start_ns', 0), ('end_ns', {t}),
          ('command', 'python3 train.py'), ('lantern_version', '0.1.0'), ('host', 'gpu-host'),
          ('trace', 'nvtx,cuda,nvml'), ('dropped_events', 0), ('import_warnings', 0);
    """)
    db.commit()
    db.close()
    return str(path)


@pytest.fixture(scope="module")
def gemm_swap(tmp_path_factory):
    """bf16 GEMMs on the Tensor Cores (6 ms) replaced by an fp32 SIMT GEMM (8 ms)."""
    tmp = tmp_path_factory.mktemp("cuda")
    return (cuda_session(tmp / "bf16.db", GEMM_BF16, 6, 80, seed=1),
            cuda_session(tmp / "fp32.db", GEMM_FP32, 8, 0, seed=2), tmp)


def test_gemm_swap_names_the_kernels_and_explains_the_range(gemm_swap):
    base, new, _ = gemm_swap
    doc, _ = diff_json(base, new)
    assert row(doc, "kernel", GEMM_BF16)["verdict"] == "gone"
    assert row(doc, "kernel", GEMM_FP32)["verdict"] == "new"
    assert row(doc, "kernel", "at::native::elementwise_kernel<128,4>")["verdict"] == "same"
    # the GEMMs, launched from another thread outside any range, are in no range's rows
    assert not [r for r in doc["rows"] if r["kind"] == "kernel in range" and "gemm" in r["name"]]
    assert row(doc, "kernel in range", "at::native::elementwise_kernel<128,4>",
               ":step")["verdict"] == "same"
    assert row(doc, "gpu metric", GEMM_BF16, "tensor_active")["base"]["median"] == 80
    assert row(doc, "cuda api", "cudaDeviceSynchronize")["verdict"] == "slower"
    assert row(doc, "copy", "[CUDA memcpy Host-to-Device]")["verdict"] == "same"
    assert row(doc, "energy", ":step")["verdict"] == "higher"
    assert row(doc, "run", "GPU busy")["verdict"] == "untested"
    step = row(doc, "range", ":step")
    assert step["verdict"] == "slower" and 20 <= step["percent"] <= 30
    line = step["explanation"]  # the GEMMs are the process's work while the range was open
    print(line)
    assert f"{GEMM_FP32} new, 8." in line and "(Tensor Cores 0 %)" in line
    assert re.search(GEMM_BF16 + r" gone \(was [56]\.\d+ ms\)", line)
    assert re.search(r"sync waits \+2\.\d+ ms", line)
    parts = {(p["kind"], p["name"]): p for p in step["parts"]}
    assert parts[("kernel", GEMM_FP32)]["tensor_active"] == 0
    assert parts[("kernel", GEMM_BF16)]["new_ns"] == 0
    checks = {c["what"]: c for c in doc["checks"]}
    assert checks["GPU"]["text"] == "NVIDIA H100 80GB HBM3" and not checks["GPU"]["differs"]
    assert checks["Kernels"]["text"].startswith("1 names in both, 1 only in base, 1 only in new")
    assert checks["Power limit"]["text"] == "700 W"
    # the largest change of time per run first: the range, then what made it
    assert doc["rows"][0]["verdict"] in CHANGES


def test_different_gpus_are_said_loudly(gemm_swap, tmp_path):
    base, _, _ = gemm_swap
    other = cuda_session(tmp_path / "a100.db", GEMM_BF16, 6, 80, gpu="NVIDIA A100-SXM4-80GB")
    run = lantern("diff", base, other)
    assert run.returncode == 0, run.stderr
    assert re.search(r"GPU +DIFFERS: base: NVIDIA H100 80GB HBM3; new: NVIDIA A100", run.stdout)
    assert "warning: THE RUNS USED DIFFERENT GPUS" in run.stdout


def test_table_fits_the_terminal_and_pipes_get_full_names(gemm_swap):
    base, new, _ = gemm_swap
    env = dict(os.environ, COLUMNS="80")
    run = lantern("diff", base, new, env=env)
    assert run.returncode == 0, run.stderr
    table = run.stdout.split("\n\n")[1].splitlines()
    assert table[0].startswith("Verdict") and len(table) > 3
    assert all(len(line) <= 80 for line in table), "\n".join(table)
    assert any(line.endswith("~") for line in table)  # long names cut
    env.pop("COLUMNS")
    full = lantern("diff", base, new, env=env).stdout
    assert GEMM_BF16 in full and GEMM_FP32 in full
    assert "cudaLaunchKernel" not in full  # same rows wait for --all
    every = lantern("diff", base, new, "--all", env=env).stdout
    assert "cudaLaunchKernel" in every and "at::native::elementwise_kernel<128,4> in :step" in every


def test_json_is_one_valid_document_with_every_field(gemm_swap):
    base, new, _ = gemm_swap
    run = lantern("diff", base, new, "--format", "json")
    doc = json.loads(run.stdout)  # the whole output, nothing before or after
    assert set(doc) >= {"base", "new", "mode", "threshold_percent", "alpha", "checks",
                        "warnings", "summary", "regressions", "rows"}
    for r in doc["rows"]:
        assert set(r) >= {"kind", "scope", "name", "unit", "verdict", "test", "p", "q",
                          "change", "change_low", "change_high", "percent", "percent_low",
                          "percent_high", "base", "new", "explanation"}
        assert set(r["base"]) == {"count", "runs", "median", "p10", "p90", "total"}
    assert sum(doc["summary"].values()) == len(doc["rows"])


def test_csv_has_every_field_and_keeps_the_checks_on_stderr(gemm_swap):
    base, new, _ = gemm_swap
    run = lantern("diff", base, new, "--format", "csv")
    assert run.returncode == 0 and "Checks:" in run.stderr and "Checks:" not in run.stdout
    rows = list(csv.DictReader(io.StringIO(run.stdout)))
    step = [r for r in rows if r["kind"] == "range" and r["name"] == ":step"][0]
    assert step["verdict"] == "slower" and float(step["percent_low"]) > 0
    assert GEMM_FP32 in step["explanation"]


def test_html_is_written_and_never_overwritten_without_force(gemm_swap, tmp_path):
    base, new, _ = gemm_swap
    page = tmp_path / "diff.html"
    assert lantern("diff", base, new, "--html", str(page)).returncode == 0
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    assert "<svg" in text and GEMM_FP32 in text and "http" not in text  # self-contained
    page.write_text("mine")
    run = lantern("diff", base, new, "--html", str(page))
    assert run.returncode == 1 and "exists (use --force to replace it)" in run.stderr
    assert page.read_text() == "mine"
    assert lantern("diff", base, new, "--html", str(page), "-f").returncode == 0
    assert page.read_text().startswith("<!DOCTYPE html>")
    assert sorted(os.listdir(tmp_path)) == ["diff.html"]  # no temporary file left behind


def test_output_file_follows_the_output_rules(gemm_swap, tmp_path):
    base, new, _ = gemm_swap
    out = tmp_path / "diff.json"
    assert lantern("diff", base, new, "--format", "json", "-o", str(out)).returncode == 0
    json.loads(out.read_text())
    assert lantern("diff", base, new, "-o", str(out)).returncode == 1
    assert lantern("diff", base, new, "-o", str(out), "--force").returncode == 0
    assert out.read_text().startswith("Base:")


def test_bad_input_exits_1(gemm_swap, tmp_path):
    base, _, _ = gemm_swap
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n")
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t(x)").connection.close()
    newer = tmp_path / "newer.db"
    db = sqlite3.connect(newer)
    db.execute("CREATE TABLE meta(key TEXT PRIMARY KEY, value)")
    db.execute("INSERT INTO meta VALUES ('schema_version', 99)")
    db.commit()
    db.close()
    for bad, reason in [(text, "not a Lantern database"), (other, "not a Lantern database"),
                        (newer, "schema version 99"), (tmp_path / "missing.db", "No such file"),
                        (tmp_path, "not a regular file")]:
        run = lantern("diff", base, str(bad))
        assert run.returncode == 1, (bad, run.stderr)
        assert run.stderr.startswith("lantern: ") and reason in run.stderr, run.stderr
        assert run.stdout == ""


def test_older_schema_is_read_through_an_upgraded_copy(gemm_swap, tmp_path):
    """A database of schema 5, as its Lantern wrote it (tests/upgrade/)."""
    base, _, _ = gemm_swap
    old = tmp_path / "old.db"
    with gzip.open(os.path.join(SOURCE, "tests", "upgrade", "schema-v5.db.gz")) as f:
        old.write_bytes(f.read())
    run = lantern("diff", base, str(old))
    assert run.returncode == 0, run.stderr
    assert run.stderr.startswith(f"lantern: '{old}' is of schema version 5 (an older Lantern)")
    assert run.stdout.startswith("Base:")


@pytest.mark.parametrize("args, message", [
    ([], "expected two databases"),
    (["a.db"], "expected two databases"),
    (["a.db", "b.db", "c.db"], "expected two databases"),
    (["a.db", "b.db", "--threshold", "-1"], "--threshold must be a percentage >= 0"),
    (["a.db", "b.db", "--threshold", "x"], "--threshold must be a percentage >= 0"),
    (["a.db", "b.db", "--alpha", "1"], "--alpha must be between 0 and 1"),
    (["a.db", "b.db", "--format", "xml"], "unknown format 'xml'"),
    (["a.db", "b.db", "--bogus"], "unknown option '--bogus'"),
    (["a.db", "b.db", "-w", "wide"], "width must be a number"),
    (["a.db", "b.db", "--html"], "option '--html' needs a value"),
    (["--base", "a.db"], "--base and --new each need at least one database"),
    (["--base", "a.db", "--new", "b.db", "c.db", "--all", "d.db"], "not both"),
])
def test_usage_errors_exit_2(args, message):
    run = lantern("diff", *args)
    assert run.returncode == 2, run.stderr
    assert message in run.stderr and "Try 'lantern diff --help'." in run.stderr


def test_help_describes_the_command():
    run = lantern("diff", "--help")
    assert run.returncode == 0
    for text in ("--base", "--threshold", "--fail-on-regression", "--html", "Exit status"):
        assert text in run.stdout
    assert "diff" in lantern("--help").stdout
