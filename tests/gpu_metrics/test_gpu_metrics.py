"""GPU hardware metrics after the raw trace, end to end: the session folder of
gpu_metrics_session.c (its comment lists the samples, kernels and ranges) imported by the real
`lantern import`, then read by `lantern stats --report gpu_metrics_sum`, the report headers,
both exports, `lantern kernels`, `lantern analyze` and `lantern report`. Every expected value
is worked out by hand below from the samples: a mean is the sum of value x overlap over the
samples an interval overlaps, divided by the overlap (docs/gpu-metrics.md, "Attribution")."""
import csv
import io
import json
import os
import sqlite3
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("LANTERN_BUILD", os.path.join(SOURCE, "build"))
LANTERN = os.path.join(BUILD, "bin", "lantern")
WRITER = os.path.join(BUILD, "bin", "gpu_metrics_session")
U = 100_000  # one sample, ns
LONG = 250_000  # GPU-2's samples


def lantern(*args, cwd=None):
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return subprocess.run([LANTERN, *map(str, args)], capture_output=True, text=True,
                          timeout=120, cwd=cwd, env=env)


def ok(r):
    assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    d = tmp_path_factory.mktemp("metrics")
    raw = d / "run.raw"
    raw.mkdir()
    subprocess.run([WRITER, str(raw)], check=True)
    ok(lantern("import", raw, "-o", d / "run.db"))
    return d / "run.db"


def copy_without(db, plain, *tables):
    """A copy of db at plain, with the rows of tables deleted."""
    con = sqlite3.connect(db)
    con.execute(f"VACUUM INTO '{plain}'")
    con.close()
    con = sqlite3.connect(plain)
    for table in tables:
        con.execute(f"DELETE FROM {table}")
    con.commit()
    con.close()
    return plain


def report_rows(db, fmt="csv"):
    r = ok(lantern("stats", db, "--report", "gpu_metrics_sum", "--format", fmt))
    if fmt == "json":
        return json.loads(r.stdout)
    return list(csv.DictReader(io.StringIO(r.stdout)))


def pick(rows, scope, name, metric, gpu="0"):
    found = [r for r in rows if (r["Scope"], r["Name"], r["Metric"], r["GPU"]) ==
             (scope, name, metric, gpu)]
    assert len(found) == 1, (scope, name, metric, gpu)
    return found[0]


def values(row):
    return [float(row[k]) if row[k] != "" else None for k in ("Min", "Mean", "Max")]


def test_report_weights_each_sample_by_its_overlap(session):
    rows = report_rows(session)
    # the run: first to last sample (6 U), sampled 5 U (the zero-length sample and the gap
    # carry no time): sm (10 + 50 + 90 + 2 x 20) / 5 = 38
    run = pick(rows, "run", "(first to last sample)", "sm_active")
    assert (int(run["Time (ns)"]), int(run["Sampled (ns)"])) == (6 * U, 5 * U)
    assert values(run) == pytest.approx([10, 38, 90])
    assert values(pick(rows, "run", "(first to last sample)", "tensor_active")) == \
        pytest.approx([0, 24, 80])
    # rates in GB/s: (1 + 2 + 4 + 2 x 5) / 5
    rx = pick(rows, "run", "(first to last sample)", "pcie_rx")
    assert rx["Unit"] == "GB/s" and values(rx) == pytest.approx([1, 3.4, 5])
    # "step" projects onto [T + U/2, T + 3U): half of s1, s2, s4
    step = pick(rows, "nvtx", ":step", "sm_active")
    assert (step["Instances"], int(step["Time (ns)"]), int(step["Sampled (ns)"])) == \
        ("1", 5 * U // 2, 5 * U // 2)
    assert values(step) == pytest.approx([10, (5 + 50 + 90) / 2.5, 90])
    assert values(pick(rows, "nvtx", ":step", "tensor_active")) == pytest.approx([0, 48, 80])
    # "tail" projects onto axpy [T + 5U/2, T + 9U/2): half of s4, the gap, half of s5
    tail = pick(rows, "nvtx", ":tail", "sm_active")
    assert (int(tail["Time (ns)"]), int(tail["Sampled (ns)"])) == (2 * U, U)
    assert values(tail) == pytest.approx([20, 55, 90])
    # gemm_fp16: [T + U/2, T + 3U/2) and [T + 2U, T + 3U); axpy overlaps the second for U/2
    gemm = pick(rows, "kernel", "gemm_fp16", "sm_active")
    assert (gemm["Instances"], int(gemm["Time (ns)"])) == ("2", 2 * U)
    assert values(gemm) == pytest.approx([10, (5 + 25 + 90) / 2, 90])
    assert float(gemm["Overlapped (%)"]) == pytest.approx(25)
    assert values(pick(rows, "kernel", "gemm_fp16", "warp_occupancy")) == \
        pytest.approx([5, (2.5 + 10 + 30) / 2, 30])
    axpy = pick(rows, "kernel", "axpy", "tensor_active")
    assert values(axpy) == pytest.approx([0, 40, 80]) and float(axpy["Overlapped (%)"]) == 25
    # "early" ran before sampling began: no value, never a made-up one
    early = pick(rows, "kernel", "early", "sm_active")
    assert (int(early["Sampled (ns)"]), values(early)) == (0, [None, None, None])
    # GPU-2 (no CUDA device, no NVML index: no number) has only its two metrics
    long_run = [r for r in rows if r["GPU"] == "" and r["Scope"] == "run"]
    assert [r["Metric"] for r in long_run] == ["sm_active", "tensor_active"]
    assert values(long_run[0]) == pytest.approx([0, 45, 90])
    assert int(long_run[0]["Sampled (ns)"]) == LONG * U
    # order: scope, then GPU, then time (longest first), metrics in gpu_metrics.def's order
    order = [(r["Scope"], r["GPU"], r["Name"]) for r in rows if r["Metric"] == "sm_active"]
    assert order == [("run", gpu, "(first to last sample)") for gpu in ("0", "1", "")] + [
        ("nvtx", "0", ":step"), ("nvtx", "0", ":tail"), ("kernel", "0", "gemm_fp16"),
        ("kernel", "0", "axpy"), ("kernel", "0", "early"),
        ("kernel", "1", "ampere_fp16_s16816gemm_fp16_64x64_nn"),
        ("kernel", "1", "gemmSN_TN_kernel_half"), ("kernel", "1", "sgemm_128x64_nn")]


def test_report_json_and_table(session):
    doc = report_rows(session, "json")
    assert doc["report"] == "gpu_metrics_sum" and "session" in doc
    row = next(r for r in doc["rows"] if r["scope"] == "kernel" and r["name"] == "gemm_fp16"
               and r["metric"] == "sm_active")
    assert row == {"scope": "kernel", "name": "gemm_fp16", "gpu": 0, "metric": "sm_active",
                   "unit": "%", "instances": 2, "time_ns": 2 * U, "sampled_ns": 2 * U,
                   "min": 10, "mean": 60, "max": 90, "overlapped_percent": 25}
    early = next(r for r in doc["rows"] if r["name"] == "early" and r["metric"] == "sm_active")
    assert (early["min"], early["mean"], early["max"]) == (None, None, None)
    text = ok(lantern("stats", session, "--report", "gpu_metrics_sum")).stdout
    assert "GPU metrics are GPU-wide averages" in text  # the table says how to read it
    line = next(l for l in text.splitlines() if l.startswith("kernel") and "gemm_fp16" in l
                and " sm_active " in l)
    assert line.split()[-4:] == ["10.00", "60.00", "90.00", "25.0"]


def test_report_without_metrics_says_why(session, tmp_path):
    plain = copy_without(session, tmp_path / "plain.db", "gpu_metric_samples", "gpu_metric_sets")
    r = lantern("stats", plain, "--report", "gpu_metrics_sum")
    assert r.returncode == 0  # an empty table and why, as for the CUDA reports
    assert r.stderr.strip().splitlines()[-1] == \
        "lantern: gpu_metrics_sum: no GPU hardware metrics in this database: " \
        "not permitted: needs admin"
    bare = copy_without(plain, tmp_path / "bare.db", "gpu_metric_status")
    r = lantern("stats", bare, "--report", "gpu_metrics_sum", "--format", "json")
    assert r.returncode == 0 and "(profile with --gpu-metrics)" in json.loads(r.stdout)["note"]


T = 1_000_000_000
START = T - 10 * U  # meta start_ns: the launcher's start


def test_perfetto_has_a_counter_track_per_gpu_and_metric(session, tmp_path):
    sys.path.insert(0, os.path.join(SOURCE, "tests", "export"))
    perfetto_check = pytest.importorskip("perfetto_check", reason="Python packages perfetto and "
                                         "protobuf (scripts/deps.sh installs them)")
    out = tmp_path / "run.perfetto-trace"
    r = ok(lantern("export", session, "--format", "perfetto", "-o", out))
    # GPU-2's 250 000 samples do not fit 200 000 points: means of 2 samples, said once
    assert "lantern: GPU metrics drawn as means over 200.000 µs" in r.stderr
    d = perfetto_check.decode(out)
    assert d.problems == []
    under = {}
    for uuid, values in d.counters.items():
        parent = d.track_name(d.tracks[uuid].parent_uuid)
        under[(parent, d.track_name(uuid))] = values
    gpu0 = {name: v for (parent, name), v in under.items() if parent == "GPU 0: NVIDIA H200"}
    assert len(gpu0) == 15
    # a point per sample (the zero-length one carries no time), 0 where nothing was measured
    # (the gap, after the last sample)
    assert gpu0["sm_active (%)"] == [(T, 10), (T + U, 50), (T + 2 * U, 90), (T + 3 * U, 0),
                                     (T + 4 * U, 20), (T + 6 * U, 0)]
    assert gpu0["pcie_rx (GB/s)"] == [(T, 1), (T + U, 2), (T + 2 * U, 4), (T + 3 * U, 0),
                                      (T + 4 * U, 5), (T + 6 * U, 0)]
    assert gpu0["gr_active (%)"] == [(T, 100), (T + 3 * U, 0), (T + 4 * U, 100),
                                     (T + 6 * U, 0)]  # unchanged values are not repeated
    gpu2 = {name: v for (parent, name), v in under.items() if parent == "GPU ?: NVIDIA H100"}
    sm = gpu2["sm_active (%, mean per 200.000 µs)"]
    assert len(sm) == LONG // 2 + 1 and sm[:3] == [(T, 5), (T + 2 * U, 25), (T + 4 * U, 45)]
    assert sm[-1] == (T + LONG * U, 0)
    assert gpu2["tensor_active (%, mean per 200.000 µs)"] == [(T, 0)]


def test_chrome_has_a_counter_per_gpu_and_metric(session, tmp_path):
    out = tmp_path / "run.json"
    r = ok(lantern("export", session, "--format", "chrome", "-o", out))
    assert "lantern: GPU metrics drawn as means over 1.300 ms" in r.stderr
    events = json.loads(out.read_text())["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert names[1_000_000_001] == "GPU 0: NVIDIA H200"
    assert names[1_000_000_002] == "GPU 1: NVIDIA A100"
    assert names[1_000_000_003] == "GPU ?: NVIDIA H100"

    def counter(pid, name):
        return [(round(e["ts"] * 1000) + START, e["args"]["mean"]) for e in events
                if e.get("ph") == "C" and e["pid"] == pid and e["name"] == name]

    assert counter(1_000_000_001, "sm_active (%)") == [
        (T, 10), (T + U, 50), (T + 2 * U, 90), (T + 3 * U, 0), (T + 4 * U, 20), (T + 6 * U, 0)]
    # 250 000 samples, at most 20 000 points: 13 samples a point
    sm = counter(1_000_000_003, "sm_active (%, mean per 1.300 ms)")
    assert len(sm) == -(-LONG // 13) + 1
    assert sm[0] == (T, pytest.approx(sum(i % 10 * 10 for i in range(13)) / 13))
    assert sm[1][0] == T + 13 * U


HEADER = ["GPU 0 NVIDIA H200: CUPTI PM sampling, 10 kHz, 15 metrics; 3 samples lost (buffer full)",
          "GPU 1 NVIDIA A100: CUPTI PM sampling, 10 kHz, 3 metrics",
          "GPU GPU-2 NVIDIA H100: NVML GPM, 10 kHz, 2 metrics; NVML GPM: unaligned: no kernels on"
          " this GPU to line the samples up with (they may lag by up to 100 ms)",
          "every GPU: NVML GPM: not permitted: needs admin"]


def test_headers_name_the_source_of_each_gpu(session, tmp_path):
    text = ok(lantern("stats", session)).stdout.splitlines()
    at = text.index("GPU metrics:     " + HEADER[0])
    assert text[at + 1:at + 4] == [" " * 17 + line for line in HEADER[1:]]
    doc = json.loads(ok(lantern("stats", session, "--format", "json")).stdout)
    assert doc["session"]["gpu_metrics"] == HEADER
    page = tmp_path / "run.html"
    ok(lantern("report", session, "-o", page))
    html = page.read_text()
    assert "<tr><th>GPU metrics</th><td>" + "<br>".join(HEADER) + "</td></tr>" in html
    section = html[html.index('<section id="gpu-metrics">'):]
    section = section[:section.index("</section>")]
    assert section.count("<svg") == 3  # a plot per GPU
    row = section[section.index(">sm_active</td>"):]
    assert row.split("</tr>")[0].count('data-v="38"') == 1  # the run's mean, as the report's


def test_headers_without_metrics_say_nothing(tmp_path):
    """A session that did not ask for GPU metrics has no such line (and an empty JSON list)."""
    db = tmp_path / "plain.db"
    con = sqlite3.connect(db)
    with open(os.path.join(SOURCE, "src", "db", "schema.sql")) as f:
        con.executescript(f.read())
    con.execute("INSERT INTO meta VALUES ('schema_version', 9), ('start_ns', 0), ('end_ns', 10),"
                " ('trace', 'nvtx')")
    con.commit()
    assert "GPU metrics" not in ok(lantern("stats", db)).stdout
    assert json.loads(ok(lantern("stats", db, "--format", "json")).stdout)["session"][
        "gpu_metrics"] == []
    con.execute("UPDATE meta SET value = 'nvtx,gpu_metrics' WHERE key = 'trace'")
    con.commit()
    assert "GPU metrics:     none recorded" in ok(lantern("stats", db)).stdout


def test_kernels_measured_columns(session, tmp_path):
    r = ok(lantern("kernels", session, "--csv", "-c",
                   "kernel,device,sil,tc,tcby,smact,achieved,tensor,occupancy"))
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    got = [(k["kernel"], k["tc"], k["tcby"], k["smact"], k["achieved"], k["tensor"]) for k in rows]
    assert got == [
        ("early", "na", "name", "na", "na", "na"),  # before any sample: the name's guess
        # none measured: no, though the name says Tensor Cores
        ("ampere_fp16_s16816gemm_fp16_64x64_nn", "no", "metrics", "60.00", "40.00", "0.00"),
        # alone, half of each of two samples (it filled 1/2 of them): its own activity
        ("gemm_fp16", "yes", "metrics", "30.00", "12.50", "20.00"),
        # axpy overlapped half of it: the 80 % may be axpy's, so the name decides (it cannot)
        ("gemm_fp16", "na", "name", "90.00", "30.00", "80.00"),
        ("gemmSN_TN_kernel_half", "yes", "metrics", "70.00", "50.00", "90.00"),
        # filled a third of the samples it overlapped (the rest is the gap and others)
        ("axpy", "na", "name", "55.00", "20.00", "40.00"),
        ("sgemm_128x64_nn", "yes", "metrics", "80.00", "60.00", "70.00")]
    # the default columns gain the measured ones where metrics were recorded, not elsewhere
    header = ok(lantern("kernels", session, "--csv")).stdout.splitlines()[0]
    assert header == ("idx,dir,layer,op,kernel,params,sil,tc,tcby,grid,block,occupancy,achieved,"
                      "tensor,flops,tflops,gbps,peak%")
    plain = copy_without(session, tmp_path / "plain.db", "gpu_metric_sets")
    r = ok(lantern("kernels", plain, "--csv", "-c", "kernel,tc,tcby,tensor"))
    assert r.stdout.splitlines()[0:3] == ["kernel,tc,tcby,tensor", "early,na,name,na",
                                          "ampere_fp16_s16816gemm_fp16_64x64_nn,yes,name,na"]
    assert ok(lantern("kernels", plain, "--csv")).stdout.splitlines()[0] == \
        "idx,dir,layer,op,kernel,params,sil,tc,grid,block,occupancy,flops,tflops,gbps,peak%"


def test_tensor_cores_rule_believes_the_measurement(session, tmp_path):
    doc = json.loads(ok(lantern("analyze", session, "--rule", "tensor_cores", "--format",
                                "json")).stdout)
    rule = doc["analysis"]["rules"][0]
    # one finding: the fp16 GEMM that measured none though its name says Tensor Cores; the
    # SIMT-looking fp16 GEMM measured 90 % and the fp32-looking one 70 %: no finding
    assert [f["summary"] for f in rule["findings"]] == [
        "fp16 GEMM/convolution kernel ampere_fp16_s16816gemm_fp16_64x64_nn ran 1 times "
        "(200.000 µs) with no Tensor Core activity measured (tensor_active 0.00 % over its "
        "executions, though its name says Tensor Cores)"]
    assert rule["findings"][0]["evidence"][0]["gpu"] == 1
    # measured for 5 names of 6: "early" ran before any sample
    assert rule["note"].startswith("Tensor Core activity measured (GPU metrics, tensor_active) "
                                   "for 5 of 6 kernel names")
    # without the metrics, the names alone: the SIMT-looking fp16 GEMM is the finding
    plain = copy_without(session, tmp_path / "plain.db", "gpu_metric_sets")
    rule = json.loads(ok(lantern("analyze", plain, "--rule", "tensor_cores", "--format",
                                 "json")).stdout)["analysis"]["rules"][0]
    assert [f["summary"].split(" ran ")[0] for f in rule["findings"]] == [
        "fp16 GEMM/convolution kernel gemmSN_TN_kernel_half"]
    assert "needs GPU hardware metrics" in rule["note"]


def test_metrics_without_gpu_work(tmp_path):
    """Only the launcher's file: samples, no kernel and no range (the report's run rows, empty
    sweeps; found by the fuzzer as a qsort of nothing)."""
    raw = tmp_path / "all.raw"
    raw.mkdir()
    subprocess.run([WRITER, str(raw), "100"], check=True)
    only = tmp_path / "only.raw"
    only.mkdir()
    (only / "launcher.lrt").write_bytes((raw / "launcher.lrt").read_bytes())
    ok(lantern("import", only, "-o", tmp_path / "only.db"))
    rows = report_rows(tmp_path / "only.db")
    assert {r["Scope"] for r in rows} == {"run"}
    # no CUDA device: no GPU has a number; each has its own rows (GPU-3: (60 + 70 + 80) / 3)
    means = sorted(values(r)[1] for r in rows if r["Metric"] == "sm_active")
    assert [r["GPU"] for r in rows if r["Metric"] == "sm_active"] == ["", "", ""]
    assert means == pytest.approx([38, 45, 70])


@pytest.mark.parametrize("lag_ms", [0, 42, 90])
def test_gpm_samples_are_moved_to_line_up_with_the_kernels(tmp_path, lag_ms):
    """GPM's counters lag the refresh they are stamped with by a run's own offset (42-90 ms
    measured): the importer finds it from the kernels, to the millisecond, and says so."""
    raw = tmp_path / "lag.db.raw"
    raw.mkdir()
    subprocess.run([WRITER, str(raw), "--gpm-lag", str(lag_ms)], check=True)
    db_path = tmp_path / "lag.db"
    ok(lantern("import", str(raw), "-o", str(db_path)))
    db = sqlite3.connect(db_path)
    first = db.execute("SELECT min(start_ns) FROM gpu_metric_samples").fetchone()[0]
    assert first == 10_000_000_000 - lag_ms * 1_000_000
    status = db.execute("SELECT code, reason FROM gpu_metric_status").fetchall()
    if lag_ms:
        [(code, reason)] = status
        assert code == "aligned" and reason.startswith(f"samples moved {lag_ms} ms earlier"), reason
    else:
        assert status == []  # already in line
