"""A GPU metric sampler that crashes or hangs costs only the metrics (docs/gpu-metrics.md,
"Containment"): each GPU's sampler is a child process of the launcher, and the test-only
LANTERN_TEST_SAMPLER_FAULT=segv|segv-libc|abort|hang:N makes that child crash or hang after its Nth
sample (0: as it starts), as a vendor library (CUPTI's libnvperf_host, NVML) would. Against the fake NVML's GPM
(src/nvml/fake), no GPU: the profiled program's exit status and NVTX ranges are intact, the
database is written, the samples before the fault are kept and exact, and the status, the
`lantern:` line and the report header say what happened. Needs $LANTERN_BUILD."""
import os
import re
import sqlite3
import subprocess
import time
from pathlib import Path

from test_gpu_metrics_capture import SCRIPT, check_sample

BUILD = Path(os.environ.get("LANTERN_BUILD", Path(__file__).resolve().parents[2] / "build"))
LANTERN = BUILD / "bin" / "lantern"
FAKE = BUILD / "lib" / "liblantern_fake_nvml.so"
WORKLOAD = BUILD / "bin" / "nvtx_workload"  # "durations": 20 ranges named "timed"
AFTER = 5  # samples before the fault
# the program: NVTX ranges, then long enough for the fault and more samples, then its own status
PROGRAM = ["sh", "-c", f"{WORKLOAD} durations >/dev/null && sleep 0.8 && exit 3"]


def profile(tmp_path, fault=None, timeout=60):
    epoch = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    lines = [f"epoch_ns {epoch}", "gpu GPU-gm000000-1111-2222 Fake-H100"]
    lines += [f"gpm 0 {m} {t} {v}" for m, steps in SCRIPT.items() for t, v in steps]
    script = tmp_path / "nvml.script"
    script.write_text("\n".join(lines) + "\n")
    env = dict(os.environ, LANTERN_NVML_LIBRARY=str(FAKE), LANTERN_FAKE_NVML_SCRIPT=str(script))
    env.pop("CUDA_VISIBLE_DEVICES", None)
    env.pop("LANTERN_TEST_SAMPLER_FAULT", None)
    if fault:
        env["LANTERN_TEST_SAMPLER_FAULT"] = fault
    db = tmp_path / "m.db"
    began = time.monotonic()
    r = subprocess.run([str(LANTERN), "profile", "-f", "-t", "nvtx", "-o", str(db), "--gpu-metrics",
                        "--", *PROGRAM], env=env,
                       capture_output=True, text=True, timeout=timeout)
    return r, db, epoch, time.monotonic() - began


def check_the_run_is_intact(r, db):
    assert r.returncode == 3, r.stderr  # the program's own exit status
    assert db.exists(), r.stderr
    con = sqlite3.connect(db)
    assert con.execute("SELECT value FROM meta WHERE key = 'exit_status'").fetchone() == (3,)
    assert con.execute("SELECT count(*) FROM ranges r JOIN strings s ON s.id = r.name_id"
                       " WHERE s.value = 'timed' AND r.end_ns > r.start_ns").fetchone() == (20,)
    return con


def check_samples_exact(con, epoch, count):
    rows = con.execute("SELECT start_ns, end_ns, sm_active, warp_occupancy, tensor_active, pcie_rx"
                       " FROM gpu_metric_samples ORDER BY start_ns").fetchall()
    assert len(rows) == count
    for start, end, *values in rows:
        check_sample(start, end, epoch, values)


def statuses(con):
    """Those besides PM sampling's "unavailable" (no CUDA driver here), before GPM started, and
    GPM's "unaligned" (no kernels traced here to line its samples up with)."""
    return con.execute("SELECT source, code, reason FROM gpu_metric_status WHERE"
                       " (source IS NOT 'CUPTI PM sampling' OR code != 'unavailable')"
                       " AND code != 'unaligned'").fetchall()


def said(r):
    return [line for line in r.stderr.splitlines() if "metric sampler" in line]


def header(db):
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}  # whole lines, not fitted
    out = subprocess.run([str(LANTERN), "stats", str(db)], capture_output=True, text=True,
                         timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    return [line for line in out.stdout.splitlines() if line.startswith("GPU metrics:")]


def test_a_sampler_crash_keeps_the_run_and_the_samples_before_it(tmp_path):
    r, db, epoch, _ = profile(tmp_path, f"segv:{AFTER}")
    con = check_the_run_is_intact(r, db)
    check_samples_exact(con, epoch, AFTER)
    [(source, code, reason)] = statuses(con)
    assert (source, code) == ("NVML GPM", "crashed")
    # the fault is in lantern's own code here; a vendor's names its library (libnvperf_host.so)
    assert reason.startswith("the metric sampler crashed (SIGSEGV in lantern) after ")
    assert reason.endswith(" s; metrics until then kept")
    assert said(r) == ["lantern: GPU 0 (Fake-H100): " + reason]
    [line] = header(db)
    assert line.startswith("GPU metrics:     GPU 0 Fake-H100: NVML GPM, 10 Hz, 4 metrics; ")
    assert "; " + reason in line
    # its cost, as the launcher saw it end; no footprint from the child, which died first
    [(samples, cpu, mean_delay, max_delay)] = con.execute(
        "SELECT samples, sampler_process_cpu_ns, delivery_mean_ns, delivery_max_ns"
        " FROM gpu_metric_sets").fetchall()
    assert samples is None and cpu > 0 and 0 <= mean_delay <= max_delay < 1_000_000_000


def test_a_crash_inside_a_library_names_the_library(tmp_path):
    r, db, epoch, _ = profile(tmp_path, f"segv-libc:{AFTER}")  # in libc's strlen
    con = check_the_run_is_intact(r, db)
    check_samples_exact(con, epoch, AFTER)
    [(source, code, reason)] = statuses(con)
    assert (source, code) == ("NVML GPM", "crashed")
    assert re.match(r"the metric sampler crashed \(SIGSEGV in lib[\w.+-]*\.so[\d.]*\) after ", reason), reason
    assert said(r) == ["lantern: GPU 0 (Fake-H100): " + reason]


def test_a_sampler_abort_is_said_with_its_signal(tmp_path):
    r, db, epoch, _ = profile(tmp_path, f"abort:{AFTER}")
    con = check_the_run_is_intact(r, db)
    check_samples_exact(con, epoch, AFTER)
    [(source, code, reason)] = statuses(con)
    assert (source, code) == ("NVML GPM", "crashed")
    assert reason.startswith("the metric sampler crashed (SIGABRT) after "), reason
    assert len(said(r)) == 1


def test_a_hung_sampler_is_killed_at_the_stop_deadline(tmp_path):
    r, db, epoch, took = profile(tmp_path, f"hang:{AFTER}")
    con = check_the_run_is_intact(r, db)
    check_samples_exact(con, epoch, AFTER)
    assert statuses(con) == [("NVML GPM", "hung", "the metric sampler did not stop within 5 s:"
                              " killed; metrics until then kept")]
    assert said(r) == ["lantern: GPU 0 (Fake-H100): the metric sampler did not stop within 5 s:"
                       " killed; metrics until then kept"]
    assert took < 30  # the run took its own time and the deadline, no more


def test_a_crash_while_starting_is_the_one_line_of_gpus_not_sampled(tmp_path):
    r, db, _, _ = profile(tmp_path, "segv:0")  # as it starts
    con = check_the_run_is_intact(r, db)
    lines = [line for line in r.stderr.splitlines() if "GPU metrics" in line]
    assert len(lines) == 1 and lines[0].startswith(
        "lantern: GPU metrics not sampled: GPU 0 (Fake-H100): the metric sampler crashed (SIGSEGV")
    assert [s[:2] for s in statuses(con)] == [(None, "crashed")]


def test_a_sampler_that_stops_as_asked_says_nothing_and_reports_its_cost(tmp_path):
    r, db, epoch, _ = profile(tmp_path)
    con = check_the_run_is_intact(r, db)
    assert said(r) == [] and statuses(con) == []
    [(samples, n, cpu, rss, mean_delay, max_delay)] = con.execute(
        "SELECT samples, (SELECT count(*) FROM gpu_metric_samples), sampler_process_cpu_ns,"
        " sampler_max_rss_kib, delivery_mean_ns, delivery_max_ns FROM gpu_metric_sets").fetchall()
    assert samples == n >= 8  # ~0.9 s of the program and the start, a sample per 100 ms refresh
    check_samples_exact(con, epoch, n)
    assert cpu > 0 and rss > 0
    # a sample goes down the pipe when the next is put, or at once (SINK_FLUSH_NS < the period)
    assert 0 <= mean_delay <= max_delay < 100_000_000
