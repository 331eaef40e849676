# `lantern kernels` end to end: the real binary on a database built here from
# src/db/schema.sql (a bf16 linear layer forward and backward under emit_nvtx markers, an
# unaligned fp16 GEMM that missed the Tensor Cores, a plain C kernel, a copy), checked
# through each output format and flag, and its errors.
import csv
import io
import json
import os
import sqlite3
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import terminal  # noqa: E402  (tests/terminal.py)

BUILD = os.environ.get("LANTERN_BUILD", os.path.join(os.path.dirname(__file__), "../../build"))
LANTERN = os.path.join(BUILD, "bin", "lantern")
SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../src/db/schema.sql")

KERNEL_BF16 = ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_"
               "execute_segment_k_off_kernel__5x_cublas")
KERNEL_FP16_SIMT = "void gemmSN_TN_kernel<__half, 128, 16, 2, 4, 4, 4, true>(int)"


def run(*args, env=None):
    """The lantern command with stdout a pipe and no $COLUMNS (so no default width), unless
    env says otherwise."""
    base = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return subprocess.run([LANTERN, *args], capture_output=True, text=True, timeout=60,
                          env={**base, **(env or {})})


def run_in_terminal(columns, *args, env=None):
    """The lantern command with stdout a pseudo-terminal `columns` wide: (lines, stderr)."""
    out, stderr, status = terminal.run_in_terminal([LANTERN, *args], columns, env)
    assert status == 0, stderr
    return out.decode().splitlines(), stderr


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("kernels") / "step.db")
    con = sqlite3.connect(path)
    con.executescript(open(SCHEMA).read())
    con.executescript(f"""
        INSERT INTO meta(key, value) VALUES ('schema_version', 9);
        INSERT INTO processes(id, pid) VALUES (1, 77);
        INSERT INTO threads(id, process_id, tid) VALUES (1, 1, 500), (2, 1, 501);
        INSERT INTO gpus(id, uuid, sm_count, cc_major, max_threads_per_sm, max_regs_per_sm,
            max_smem_per_sm, max_blocks_per_sm, peak_fp32_flops, peak_fp16_flops,
            peak_bf16_flops, peak_dram_bytes_per_s)
            VALUES (1, 'GPU-1', 132, 9, 2048, 65536, 233472, 32, 60e12, 990e12, 990e12, 3.35e12);
        INSERT INTO strings(id, value) VALUES
            (1, 'encoder'),
            (2, 'aten::addmm, seq = 7, op_id = 9, sizes = [[1024], [512, 2048], [2048, 1024], [], []]'),
            (3, 'autograd::engine::evaluate_function: AddmmBackward0'),
            (4, 'AddmmBackward0, seq = 7, op_id = 30'),
            (5, 'aten::mm, seq = 90, sizes = [[512, 1024], [1024, 2048]]'),
            (6, 'aten::mm, seq = 8, sizes = [[100, 30], [30, 50]]'),
            (7, 'step 3'),
            (100, '{KERNEL_BF16}'),
            (101, '{KERNEL_FP16_SIMT}'),
            (102, '_Z6saxpyifPfS_');
        INSERT INTO ranges(id, process_id, name_id, style, parent_id, start_thread_id, start_ns)
            VALUES (1, 1, 1, 0, NULL, 1, 0), (2, 1, 2, 0, 1, 1, 10), (3, 1, 3, 0, NULL, 2, 20),
                   (4, 1, 4, 0, 3, 2, 30), (5, 1, 5, 0, 4, 2, 40), (6, 1, 6, 0, 1, 1, 50),
                   (7, 1, 7, 0, NULL, 1, 60);
        INSERT INTO cuda_api(id, process_id, thread_id, api, start_ns, end_ns)
            VALUES (1, 1, 1, 0, 0, 1), (2, 1, 2, 0, 0, 1);
        INSERT INTO memcpys(process_id, gpu_id, device, stream, start_ns, end_ns, copy_kind,
            bytes, api_id) VALUES (1, 1, 0, 7, 100, 1100, 'DtoD', 1000000, 1);
        INSERT INTO kernels(process_id, gpu_id, device, stream, start_ns, end_ns, demangled_id,
            grid_x, grid_y, grid_z, block_x, block_y, block_z, regs_per_thread, static_smem,
            dynamic_smem, api_id, nvtx_range_id) VALUES
            (1, 1, 0, 7, 2000, 12000, 100, 256, 1, 1, 128, 1, 1, 90, 0, 65536, 1, 2),
            (1, 1, 0, 7, 13000, 33000, 100, 512, 1, 1, 128, 1, 1, 90, 0, 65536, 2, 5),
            (1, 1, 0, 7, 34000, 35000, 101, 200, 1, 1, 128, 1, 1, 64, 0, 0, 1, 6),
            (1, 1, 0, 7, 36000, 36500, 102, 4, 1, 1, 256, 1, 1, 16, 0, 0, 1, 7);
    """)
    con.commit()
    con.close()
    return path


def table(db, *args):
    out = run("kernels", db, "--csv", *args)
    assert out.returncode == 0, out.stderr
    return list(csv.DictReader(io.StringIO(out.stdout)))


def test_gemm_rows_carry_layer_op_flops_and_tensor_cores(db):
    rows = table(db, "--no-memops", "-c", "idx,dir,layer,op,node,seq,params,flops,tc,tflops")
    assert [r["op"] for r in rows] == ["addmm", "mm", "mm", "na"]
    fwd, bwd, unaligned, plain = rows
    # 2*M*N*K: forward 512x1024 with K=2048; backward grad_input 512x2048 with K=1024
    assert fwd["flops"] == str(2 * 512 * 1024 * 2048)
    assert bwd["flops"] == str(2 * 512 * 2048 * 1024)
    assert (fwd["dir"], fwd["layer"], fwd["tc"], fwd["params"]) == (
        "fwd", "encoder", "yes", "M=512,N=1024,K=2048,bf16")
    # the backward matmul runs on the autograd thread: its layer is the forward's (seq 7)
    assert (bwd["dir"], bwd["layer"], bwd["node"], bwd["seq"]) == (
        "bwd", "encoder", "AddmmBackward0", "7")
    assert fwd["tflops"] == "%.3f" % (2 * 512 * 1024 * 2048 / 10000 / 1e3)
    # a C kernel under a user range: layer from NVTX, no op, no figures
    assert (plain["layer"], plain["dir"], plain["flops"], plain["tc"]) == ("step 3", "na", "na", "na")


def test_hints_flag_lists_the_unaligned_fp16_gemm_and_small_grid(db):
    rows = table(db, "--hints", "-c", "op,params,tc")
    assert [(r["op"], r["params"], r["tc"], r["hints"]) for r in rows] == [
        ("mm", "M=100,N=50,K=30,fp16", "no", "no-tc-align8"),
        ("na", "na", "na", "small-grid"),
    ]


def test_memcpy_rows_and_no_memops(db):
    rows = table(db, "-c", "kernel,bytes,gbps,peak%")
    assert rows[0] == {"kernel": "memcpy_DtoD", "bytes": "1000000", "gbps": "1000.0",
                       "peak%": "%.1f" % (100 * 2e6 / 1000e-9 / 3.35e12)}  # a DtoD copy reads and writes
    assert len(rows) == 5
    assert len(table(db, "--no-memops", "-c", "kernel")) == 4


def test_default_text_output_is_awk_friendly_and_fits_width(db):
    out = run("kernels", db)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    header = lines[0].split()
    assert header == ("idx dir layer op kernel params sil tc grid block occupancy flops tflops "
                      "gbps peak%").split()
    assert all(len(line.split()) == len(header) for line in lines)
    assert "step_3" in out.stdout  # spaces in names would split fields
    narrow = run("kernels", db, "-w", "120").stdout.splitlines()
    assert all(len(line) <= 120 for line in narrow)
    assert any("~" in line for line in narrow)
    assert [len(line.split()) for line in narrow] == [len(header)] * len(lines)


def test_width_defaults_to_the_terminal_then_columns_then_no_limit(db):
    full = run("kernels", db).stdout.splitlines()  # a pipe, no $COLUMNS: nothing cut
    assert not any("~" in line for line in full) and KERNEL_BF16 in "\n".join(full)
    assert max(len(line) for line in full) > 150
    fields = [len(line.split()) for line in full]
    # a terminal 130 wide (the tty wins over $COLUMNS): the kernel names are cut to fit
    lines, stderr = run_in_terminal(130, "kernels", db, env={"COLUMNS": "200"})
    assert max(len(line) for line in lines) <= 130 and stderr == ""
    assert [len(line.split()) for line in lines] == fields
    kernels = [line.split()[4] for line in lines[1:]]
    assert kernels[1].endswith("~") and len(kernels[1]) >= 4
    assert KERNEL_BF16.startswith(kernels[1][:-1])
    assert run_in_terminal(130, "kernels", db, "-w", "0")[0] == full  # 0: no limit
    # too narrow even cut: the last columns are left out, and stderr says so
    lines, stderr = run_in_terminal(90, "kernels", db)
    assert max(len(line) for line in lines) <= 90
    kept = len(lines[0].split())
    assert kept < fields[0] and all(
        cut == name or (cut.endswith("~") and name.startswith(cut[:-1]))
        for cut, name in zip(lines[0].split(), full[0].split()[:kept]))
    assert stderr == (f"lantern: {fields[0] - kept} columns left out to fit 90 characters "
                      "(-w 0: all; -c to choose)\n")
    # a pipe with $COLUMNS: cut to fit, but every column kept (awk counts them)
    piped = run("kernels", db, env={"COLUMNS": "130"}).stdout.splitlines()
    assert max(len(line) for line in piped) <= 130 and [len(x.split()) for x in piped] == fields
    assert run("kernels", db, "-w", "0", env={"COLUMNS": "130"}).stdout.splitlines() == full
    assert run("kernels", db, env={"COLUMNS": "junk"}).stdout.splitlines() == full
    for fmt in ("csv", "json"):  # never cut
        out = run("kernels", db, "--format", fmt, env={"COLUMNS": "60"}).stdout
        assert KERNEL_BF16 in out and "~" not in out


def test_json_has_numbers_and_nulls(db):
    out = run("kernels", db, "--format", "json", "-c", "idx,op,flops,occupancy")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert rows[1]["op"] == "addmm" and rows[1]["flops"] == 2 * 512 * 1024 * 2048
    # 128 threads, 90 regs (3072 per warp: 5 warps per sub-partition -> 20 warps), 64 KiB + 1 KiB
    # smem (3 blocks): 3 blocks of 4 warps of 64
    assert rows[1]["occupancy"] == 18.8
    assert rows[0]["op"] is None and rows[0]["occupancy"] is None


def test_help_lists_every_column():
    out = run("kernels", "-h")
    assert out.returncode == 0
    for column in ("idx", "seq", "altseq", "tid", "layer", "dir", "sub", "mod", "op", "kernel",
                   "params", "sil", "tc", "device", "stream", "grid", "block", "regs", "smem",
                   "occupancy", "flops", "bytes", "tflops", "gbps", "peak%", "hints"):
        assert f"\n  {column} " in out.stdout


def test_errors_are_one_line(db, tmp_path):
    out = run("kernels", db, "-c", "idx,nope")
    assert out.returncode == 2
    assert out.stderr.splitlines()[0] == "lantern: unknown column 'nope' (see lantern kernels -h)"
    not_db = tmp_path / "x.db"
    not_db.write_text("hello")
    out = run("kernels", str(not_db))
    assert out.returncode == 1
    assert out.stderr.strip().endswith("not a Lantern database")
    assert run("kernels").returncode == 2
    assert run("kernels", str(tmp_path / "missing.db")).returncode == 1


def test_stats_report_kernels_prints_the_same_rows(db):
    """`lantern stats --report kernels` is the same report with lantern kernels' defaults: the
    CSV rows match (stats puts its session header on stderr), JSON sits under "rows"."""
    kernels = run("kernels", db, "--format", "csv")
    stats = run("stats", db, "--report", "kernels", "--format", "csv")
    assert kernels.returncode == 0 and stats.returncode == 0, stats.stderr
    assert stats.stdout == kernels.stdout and "Command:" in stats.stderr
    stats = run("stats", db, "--report", "kernels", "--format", "json")
    assert stats.returncode == 0, stats.stderr
    doc = json.loads(stats.stdout)
    assert doc["report"] == "kernels"
    assert doc["rows"] == json.loads(run("kernels", db, "--format", "json").stdout)
    assert "kernels" in run("stats", "--help").stdout
