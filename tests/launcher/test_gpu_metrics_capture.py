"""`lantern profile --gpu-metrics` without a GPU: the launcher's GPU metric sampler against the
fake NVML (src/nvml/fake). CUPTI PM sampling cannot run here (no CUDA driver), so --gpu-metrics
falls back to NVML GPM, whose scripted metrics the fake averages exactly between the refreshes
(every 100 ms, as the real driver's) that two snapshots saw: every sample in the database must
stand for one refresh interval, its edges within EDGE_MS of the refreshes, and hold the
script's mean over that interval, computed here. Also: the one-line reasons when neither source can run
(the program unaffected), --gpu-metrics-source, a metric list, and a GPM failure mid-run.
Needs $LANTERN_BUILD."""
import os
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

BUILD = Path(os.environ.get("LANTERN_BUILD", Path(__file__).resolve().parents[2] / "build"))
LANTERN = BUILD / "bin" / "lantern"
FAKE = BUILD / "lib" / "liblantern_fake_nvml.so"
MIB = 1048576

# GPM metric ids (nvmlGpmMetricId_t) and their steps: (from ms, value)
SCRIPT = {2: [(0, 40.0), (250, 80.0)],  # SM_UTIL -> sm_active
          3: [(0, 25.0)],               # SM_OCCUPANCY -> warp_occupancy
          5: [(0, 60.0), (300, 0.0)],   # ANY_TENSOR_UTIL -> tensor_active
          21: [(0, 1000.0)]}            # PCIE_RX_PER_SEC (MiB/s) -> pcie_rx (B/s)
COLUMNS = {2: "sm_active", 3: "warp_occupancy", 5: "tensor_active", 21: "pcie_rx"}
REFRESH_MS = 100  # the fake's GPM refresh grid, from the epoch, as the real driver's
EDGE_MS = 4.0     # how far a sample's edges may lie from the refreshes it stands for


def mean(steps, a_ms, b_ms):
    """The step function's mean over [a_ms, b_ms], computed here."""
    acc, value, at = 0.0, 0.0, a_ms
    for t, v in steps:
        if at < t < b_ms:
            acc += value * (t - at)
            at = t
        if t <= b_ms:
            value = v
    acc += value * (b_ms - at)
    return acc / (b_ms - a_ms)


def refreshes(a_ms, b_ms):
    """The refresh interval a sample placed at [a_ms, b_ms] stands for; its edges must be
    within EDGE_MS of it."""
    ga, gb = round(a_ms / REFRESH_MS) * REFRESH_MS, round(b_ms / REFRESH_MS) * REFRESH_MS
    assert gb > ga and abs(a_ms - ga) <= EDGE_MS and abs(b_ms - gb) <= EDGE_MS, (a_ms, b_ms)
    return ga, gb


def check_sample(start_ns, end_ns, epoch, values):
    """A sample's values (COLUMNS' order) are the script's means over its refresh interval."""
    a, b = refreshes((start_ns - epoch) / 1e6, (end_ns - epoch) / 1e6)
    for (metric, column), got in zip(COLUMNS.items(), values):
        scale = MIB if metric == 21 else 1
        want = mean(SCRIPT[metric], a, b) * scale
        assert abs(got - want) <= 0.01 * scale + 1e-3 * want, (column, a, b, got, want)


def profile(tmp_path, *options, extra_script="", seconds=0.5):
    epoch = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    lines = [f"epoch_ns {epoch}", "gpu GPU-gm000000-1111-2222 Fake-H100"]
    lines += [f"gpm 0 {m} {t} {v}" for m, steps in SCRIPT.items() for t, v in steps]
    script = tmp_path / "nvml.script"
    script.write_text("\n".join(lines) + "\n" + extra_script)
    env = dict(os.environ, LANTERN_NVML_LIBRARY=str(FAKE), LANTERN_FAKE_NVML_SCRIPT=str(script))
    env.pop("CUDA_VISIBLE_DEVICES", None)
    db = tmp_path / "m.db"
    r = subprocess.run([str(LANTERN), "profile", "-f", "-t", "nvtx", "-o", str(db), *options,
                        "--", "sleep", str(seconds)], env=env, capture_output=True, text=True,
                       timeout=120)
    return r, sqlite3.connect(db), epoch


def statuses(db):
    return db.execute("SELECT source, code, reason FROM gpu_metric_status").fetchall()


@pytest.mark.parametrize("stamps", ["stamped", "gpm_no_stamp"])
def test_gpm_samples_are_the_scripted_means_over_each_interval(tmp_path, stamps):
    """With the refresh's stamp in each snapshot (driver 580), and without (another driver:
    the refreshes are then located from outside, by which snapshots saw the metrics change)."""
    started = time.monotonic()
    r, db, epoch = profile(tmp_path, "--gpu-metrics", "--gpu-metrics-frequency", "50",
                           extra_script=stamps + "\n" if stamps != "stamped" else "")
    assert r.returncode == 0, r.stderr
    # the sampler process is the launcher's own: not a descendant of the program to wait for
    assert "still running" not in r.stderr and not (tmp_path / "m.db.raw").exists(), r.stderr
    assert time.monotonic() - started < 8, r.stderr
    [(source, period, metrics, hardware, n)] = db.execute(
        "SELECT source, period_ns, metrics, hardware, samples FROM gpu_metric_sets").fetchall()
    # the driver's refresh sets the rate, not --gpu-metrics-frequency
    assert (source, period) == ("NVML GPM", 100_000_000)
    assert metrics == "sm_active,warp_occupancy,tensor_active,pcie_rx"  # what GPM answered
    assert hardware == "2; 3; 5; 21"
    rows = db.execute("SELECT start_ns, end_ns, sm_active, warp_occupancy, tensor_active,"
                      " pcie_rx, gr_active FROM gpu_metric_samples ORDER BY start_ns").fetchall()
    assert n == len(rows) and len(rows) >= 5  # 0.5 s of the program, sampled from before it
    for start, end, *values, gr in rows:
        assert gr is None
        check_sample(start, end, epoch, values)
    # one sample per refresh, none missed in between
    assert all(b[0] == a[1] for a, b in zip(rows, rows[1:])), rows
    # PM sampling was tried first and said why not; GPM lost nothing, but no kernels were
    # traced to line its samples up with
    assert [s[:2] for s in statuses(db)] == [("CUPTI PM sampling", "unavailable"),
                                             ("NVML GPM", "unaligned")]


def test_neither_source_is_one_line_and_the_program_goes_on(tmp_path):
    r, db, _ = profile(tmp_path, "--gpu-metrics", extra_script="gpm_unsupported 0\n")
    assert r.returncode == 0, r.stderr
    said = [l for l in r.stderr.splitlines() if "GPU metrics" in l]
    assert len(said) == 1 and said[0].startswith("lantern: GPU metrics not sampled: GPU 0 (Fake-H100): "
                                                 "CUPTI PM sampling: ")
    assert "NVML GPM: NVML GPM is not supported on this GPU" in said[0]
    assert db.execute("SELECT count(*) FROM gpu_metric_sets").fetchone() == (0,)
    assert [s[:2] for s in statuses(db)] == [("CUPTI PM sampling", "unavailable"),
                                             ("NVML GPM", "unavailable")]
    assert "lantern: report written to" in r.stderr


def test_source_option_limits_the_sources_tried(tmp_path):
    r, db, _ = profile(tmp_path, "--gpu-metrics", "--gpu-metrics-source", "pm")
    assert r.returncode == 0, r.stderr
    assert [s[0] for s in statuses(db)] == ["CUPTI PM sampling"]
    r, db, _ = profile(tmp_path, "--gpu-metrics", "--gpu-metrics-source", "gpm")
    assert [s[:2] for s in statuses(db)] == [("NVML GPM", "unaligned")]
    assert db.execute("SELECT source FROM gpu_metric_sets").fetchall() == [("NVML GPM",)]


def test_a_metric_list_samples_only_those(tmp_path):
    r, db, _ = profile(tmp_path, "--gpu-metrics=sm_active,pcie_rx", "--gpu-metrics-frequency", "50")
    assert r.returncode == 0, r.stderr
    assert db.execute("SELECT metrics FROM gpu_metric_sets").fetchone() == ("sm_active,pcie_rx",)
    assert db.execute("SELECT count(*) FROM gpu_metric_samples WHERE tensor_active IS NOT NULL"
                      " OR sm_active IS NULL").fetchone() == (0,)


def test_a_gpm_failure_mid_run_keeps_what_was_sampled(tmp_path):
    # the start takes two or three snapshots, then about one a refresh: the 15th comes mid-run
    r, db, epoch = profile(tmp_path, "--gpu-metrics", extra_script="fail nvmlGpmSampleGet 15 15\n",
                           seconds=3)
    assert r.returncode == 0, r.stderr
    rows = db.execute("SELECT start_ns, end_ns, sm_active, warp_occupancy, tensor_active,"
                      " pcie_rx FROM gpu_metric_samples ORDER BY start_ns").fetchall()
    assert 3 <= len(rows) < 25, len(rows)  # 3 s hold ~30 refreshes
    for start, end, *values in rows:
        check_sample(start, end, epoch, values)
    assert ("NVML GPM", "failed", "NVML GPM stopped: GPU is lost") in statuses(db)


def test_usage_errors_say_what_is_wrong(tmp_path):
    for args, said in [(["--gpu-metrics=sm_active,bogus"], "unknown metric 'bogus'"),
                       (["--gpu-metrics-frequency", "100"], "--gpu-metrics-frequency needs --gpu-metrics"),
                       (["--gpu-metrics", "--gpu-metrics-frequency", "5"], "10 to 200000"),
                       (["--gpu-metrics", "--gpu-metrics-source", "dcgm"], "auto, pm or gpm")]:
        r = subprocess.run([str(LANTERN), "profile", "-o", str(tmp_path / "x.db"), *args, "--",
                            "true"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and said in r.stderr, (args, r.stderr)
        assert not (tmp_path / "x.db").exists()
