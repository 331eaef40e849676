"""The CUDA rows of `lantern export --format chrome` and the CUDA reports through `lantern
stats`, on a database built from the real schema and cuda_session.sql (numbers worked out
by hand there): GPU process and stream rows, kernels/copies/memsets with their args, API
calls on CPU threads, flow arrows bound to the right slices, the memory counter."""
import json
import os
import sqlite3
import subprocess

import pytest

BUILD = os.environ.get("LANTERN_BUILD", "build")
LANTERN = os.path.join(BUILD, "bin", "lantern")
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
GPU_PID = 1000000001  # 1e9 + gpus.id
CPU_PID = 1000


@pytest.fixture(scope="module")
def session_db(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("cuda") / "session.db")
    db = sqlite3.connect(path)
    with open(os.path.join(SOURCE, "src", "db", "schema.sql")) as f:
        db.executescript(f.read())
    with open(os.path.join(HERE, "cuda_session.sql")) as f:
        db.executescript(f.read())
    db.commit()
    db.close()
    return path


@pytest.fixture(scope="module")
def events(session_db, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("chrome") / "trace.json")
    run = subprocess.run([LANTERN, "export", session_db, "--format", "chrome", "-o", out],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    with open(out) as f:
        return json.load(f)["traceEvents"]


def us(ns):
    """A session time in ns (meta.start_ns = 100) as the export's µs."""
    return (ns - 100) / 1000


def test_gpu_process_and_stream_rows_are_named(events):
    names = {(e["name"], e["pid"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M" and "name" in e["args"]}
    assert names[("process_name", GPU_PID, 0)] == "GPU 0: NVIDIA H100 80GB HBM3"
    # stream 7 carries its NVTX name; stream 8 has none
    assert names[("thread_name", GPU_PID, 1)] == "chunks 0"
    assert names[("thread_name", GPU_PID, 2)] == "Stream 8"


def gpu_ops(events):
    return [e for e in events if e.get("cat", "").startswith("cuda_") and e["ph"] == "X"
            and e["pid"] == GPU_PID]


def test_every_gpu_operation_is_a_complete_event_on_its_stream(events):
    ops = gpu_ops(events)
    assert sorted((e["cat"], e["args"]["correlation_id"]) for e in ops) == [
        ("cuda_kernel", 1), ("cuda_kernel", 2), ("cuda_kernel", 4), ("cuda_kernel", 6),
        ("cuda_kernel", 8), ("cuda_memcpy", 3), ("cuda_memcpy", 7), ("cuda_memcpy", 10),
        ("cuda_memset", 5)]
    for e in ops:
        assert e["tid"] == (2 if e["args"]["stream"] == 8 else 1)
    first = next(e for e in ops if e["args"]["correlation_id"] == 1)
    assert first["name"] == "axpy(float*, float*, float)"
    assert first["ts"] == pytest.approx(us(2000)) and first["dur"] == pytest.approx(0.5)
    assert first["args"]["grid"] == [256, 1, 1] and first["args"]["block"] == [128, 1, 1]
    assert first["args"]["registers_per_thread"] == 32
    assert first["args"]["static_smem_bytes"] == 0 and first["args"]["dynamic_smem_bytes"] == 1024


def test_copies_carry_memory_kinds_and_pageable_differs_from_pinned(events):
    copies = {e["args"]["correlation_id"]: e for e in gpu_ops(events) if e["cat"] == "cuda_memcpy"}
    pageable, pinned_out, pinned_in = copies[3], copies[7], copies[10]
    assert pageable["name"] == "[CUDA memcpy Host-to-Device]"
    assert (pageable["args"]["src_kind"], pageable["args"]["dst_kind"]) == ("pageable", "device")
    assert pageable["args"]["bytes"] == 4000000
    assert pageable["args"]["throughput_gb_per_s"] == pytest.approx(4000000 / 400)
    assert (pinned_in["args"]["src_kind"], pinned_in["args"]["dst_kind"]) == ("pinned", "device")
    assert pageable["cname"] != pinned_in["cname"]
    assert pinned_in["cname"] == pinned_out["cname"]
    memset = next(e for e in gpu_ops(events) if e["cat"] == "cuda_memset")
    assert memset["args"]["bytes"] == 2000000 and memset["args"]["dst_kind"] == "device"


def api_calls(events):
    return [e for e in events if e.get("cat") == "cuda_api"]


def test_api_calls_are_drawn_on_their_cpu_threads(events):
    calls = api_calls(events)
    assert len(calls) == 10
    by_corr = {e["args"]["correlation_id"]: e for e in calls}
    assert (by_corr[8]["pid"], by_corr[8]["tid"]) == (CPU_PID, 1001)
    assert by_corr[9]["name"] == "cudaStreamSynchronize"
    assert by_corr[9]["ts"] == pytest.approx(us(9600)) and by_corr[9]["dur"] == pytest.approx(0.3)


def enclosing(slices, pid, tid, ts):
    """The innermost complete event on (pid, tid) holding ts, as a viewer binds a flow end."""
    holding = [e for e in slices if e["pid"] == pid and e["tid"] == tid
               and e["ts"] <= ts <= e["ts"] + e["dur"]]
    return min(holding, key=lambda e: e["dur"]) if holding else None


def test_flows_pair_each_launching_call_with_its_gpu_operation(events):
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    finishes = {e["id"]: e for e in events if e["ph"] == "f"}
    assert len(starts) == 9 and starts.keys() == finishes.keys()
    slices = [e for e in events if e["ph"] == "X"]
    for flow_id, s in starts.items():
        f = finishes[flow_id]
        assert s.get("bp") == "e" and f.get("bp") == "e"
        call = enclosing(slices, s["pid"], s["tid"], s["ts"])
        op = enclosing(slices, f["pid"], f["tid"], f["ts"])
        assert call is not None and call["cat"] == "cuda_api", s
        assert op is not None and op["cat"] in ("cuda_kernel", "cuda_memcpy", "cuda_memset"), f
        assert call["args"]["correlation_id"] == op["args"]["correlation_id"]


def test_device_memory_counter_follows_allocations_and_frees(events):
    counter = [(e["ts"], e["args"]["bytes"]) for e in events
               if e["ph"] == "C" and e["pid"] == GPU_PID]
    # +4 MB at 800, +1 MB at 900, -4 MB at 30000; the pinned host allocation is not counted
    assert counter == [(pytest.approx(us(800)), 4000000), (pytest.approx(us(900)), 5000000),
                       (pytest.approx(us(30000)), 1000000)]


def stats(session_db, *args):
    return subprocess.run([LANTERN, "stats", session_db, *args], capture_output=True, text=True,
                          timeout=60)


def test_stats_lists_the_cuda_reports():
    out = subprocess.run([LANTERN, "stats", "--help"], capture_output=True, text=True).stdout
    for name in ("cuda_api_sum", "cuda_gpu_kern_sum", "cuda_gpu_mem_time_sum",
                 "cuda_gpu_mem_size_sum", "cuda_gpu_trace", "nvtx_kern_sum", "nvtx_gpu_proj_sum"):
        assert name in out


def test_stats_gpu_trace_sorted_by_duration_from_the_command_line(session_db):
    run = stats(session_db, "--report", "cuda_gpu_trace", "--sort", "duration", "--format", "csv")
    assert run.returncode == 0, run.stderr
    rows = run.stdout.splitlines()[1:]
    assert [int(r.split(",")[2]) for r in rows] == [2, 6, 1, 3, 4, 8, 10, 5, 7]
    assert "Dropped events:" in run.stderr  # the session header, kept out of the CSV


def test_stats_rejects_an_unknown_sort(session_db):
    run = stats(session_db, "--report", "cuda_gpu_trace", "--sort", "bogus")
    assert run.returncode == 1
    assert "cannot sort by 'bogus'" in run.stderr


def test_stats_json_report_parses_with_session_header(session_db):
    run = stats(session_db, "--report", "cuda_gpu_mem_size_sum", "--format", "json")
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc["session"]["dropped_events"] == 0
    assert doc["rows"][0] == {"total_bytes": 6000000, "count": 2, "avg_bytes": 3000000,
                              "med_bytes": 3000000, "min_bytes": 2000000, "max_bytes": 4000000,
                              "stddev_bytes": 1414213.562,
                              "operation": "[CUDA memcpy Host-to-Device]"}
