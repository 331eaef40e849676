#!/usr/bin/env python3
"""Export size and speed (docs/benchmarks.md, "Export"): builds a database shaped like a PyTorch
training run under `lantern profile -t cuda,nvtx` (per step: step/copy_in/forward/backward/
optimizer ranges, kernels each launched by a cudaLaunchKernel call, forward on the main
thread and backward on the autograd thread, two host-to-device copies, NVML samples at
100 Hz), then times `lantern export --format chrome` and `--format perfetto` on it (median
of --rounds, wall and CPU time of the lantern process) and prints sizes and events per second.
Usage: bench/bench_export.py [--build build] [--steps 6000] [--kernels 40] [--rounds 3]
make_training_db() is also the session of tests/export/test_perfetto.py's size test."""
import argparse
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNEL_NAMES = [
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)",
    "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_kernel",
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
    "at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t"
    "<float, at::native::sum_functor<float, float, float>::operator()>, unsigned int, float, 4> >",
    "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::"
    "threshold_kernel_impl<float> > >(int, at::native::gpu_kernel_impl_nocast)",
]
PHASES = ("copy_in", "forward", "backward", "optimizer")


def make_training_db(path, steps, kernels=40):
    """A session of `steps` training steps; returns the number of Perfetto events it makes."""
    db = sqlite3.connect(path)
    with open(os.path.join(SOURCE, "src", "db", "schema.sql")) as f:
        db.executescript(f.read())
    step_ns, start = 2_000_000, 1_000_000_000
    end = start + steps * step_ns + step_ns
    db.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", [
        ("schema_version", 9), ("lantern_version", "bench"), ("command", "python3 train.py"),
        ("start_ns", start), ("end_ns", end), ("trace", "cuda,nvtx,nvml"), ("dropped_events", 0),
        ("import_warnings", 0)])
    db.execute("INSERT INTO processes(id, pid, ppid, exe, cmdline, name, start_ns, end_ns, clean_exit)"
               " VALUES (1, 4242, 1, '/usr/bin/python3.12', 'python3 train.py', 'train.py', ?, ?, 1)",
               (start, end))
    names = ["step", *PHASES, "cudaLaunchKernel", "cudaMemcpyAsync", "python3", "pt_autograd_0",
             *KERNEL_NAMES]
    db.executemany("INSERT INTO strings(id, value) VALUES (?, ?)", list(enumerate(names, 1)))
    sid = {n: i for i, n in enumerate(names, 1)}
    db.execute("INSERT INTO threads(id, process_id, tid, os_name_id, start_ns) VALUES"
               " (1, 1, 4242, ?, ?), (2, 1, 4250, ?, ?)", (sid["python3"], start, sid["pt_autograd_0"], start))
    db.execute("INSERT INTO gpus(id, uuid, name, nvml_index) VALUES (1, 'GPU-1', 'NVIDIA H100 80GB HBM3', 0)")
    db.execute("INSERT INTO process_gpus(process_id, device, gpu_id) VALUES (1, 0, 1)")
    ranges, api, kernels_rows, copies = [], [], [], []
    range_id = api_id = kernel_id = copy_id = 0
    correlation = 0
    for s in range(steps):
        t0 = start + s * step_ns
        range_id += 1
        step_range = range_id
        ranges.append((range_id, sid["step"], 0, None, 1, t0, t0 + step_ns - 1000))
        phase_ns = (step_ns - 2000) // len(PHASES)
        for p, phase in enumerate(PHASES):
            p0 = t0 + 500 + p * phase_ns
            range_id += 1
            ranges.append((range_id, sid[phase], 1, step_range, 1, p0, p0 + phase_ns - 200))
            if phase == "copy_in":
                for c in range(2):
                    correlation += 1
                    api_id += 1
                    a0 = p0 + 1000 + c * 20_000
                    api.append((api_id, 1, sid["cudaMemcpyAsync"], a0, a0 + 8000, correlation))
                    copy_id += 1
                    copies.append((copy_id, a0 + 9000, a0 + 15000, correlation, api_id))
                continue
            count = kernels // 3 if phase != "optimizer" else kernels - 2 * (kernels // 3)
            thread = 2 if phase == "backward" else 1
            for k in range(count):
                correlation += 1
                api_id += 1
                a0 = p0 + 2000 + k * (phase_ns - 4000) // max(count, 1)
                api.append((api_id, thread, sid["cudaLaunchKernel"], a0, a0 + 4500, correlation))
                kernel_id += 1
                kernels_rows.append((kernel_id, a0 + 6000, a0 + 6000 + 3000 + 97 * k, correlation,
                                     sid[KERNEL_NAMES[k % len(KERNEL_NAMES)]], api_id, 264 + k, 256))
    db.executemany("INSERT INTO ranges(id, process_id, name_id, style, depth, parent_id, start_thread_id,"
                   " end_thread_id, start_ns, end_ns) VALUES (?, 1, ?, 0, ?, ?, ?, 1, ?, ?)",
                   [(r[0], r[1], r[2], r[3], r[4], r[5], r[6]) for r in ranges])
    db.executemany("INSERT INTO cuda_api(id, process_id, thread_id, api, cbid, name_id, start_ns, end_ns,"
                   " return_code, correlation_id) VALUES (?, 1, ?, 0, 211, ?, ?, ?, 0, ?)", api)
    db.executemany("INSERT INTO kernels(id, process_id, gpu_id, device, context, stream, start_ns, end_ns,"
                   " correlation_id, demangled_id, api_id, grid_x, grid_y, grid_z, block_x, block_y,"
                   " block_z, regs_per_thread, static_smem, dynamic_smem)"
                   " VALUES (?, 1, 1, 0, 1, 7, ?, ?, ?, ?, ?, ?, 1, 1, ?, 1, 1, 32, 0, 4096)", kernels_rows)
    db.executemany("INSERT INTO memcpys(id, process_id, gpu_id, device, context, stream, start_ns, end_ns,"
                   " correlation_id, copy_kind, bytes, src_kind, dst_kind, is_async, api_id)"
                   " VALUES (?, 1, 1, 0, 1, 7, ?, ?, ?, 'HtoD', 1048576, 'pinned', 'device', 1, ?)", copies)
    samples = [(1, t, 300000 + (t // 10_000_000) % 50 * 1000, 5_000_000 + (t - start) // 2_500_000,
                1980, 2619, 95, 40, 30_000_000_000, 55)
               for t in range(start, end, 10_000_000)]
    db.executemany("INSERT INTO gpu_samples(gpu_id, ts_ns, power_mw, energy_mj, sm_clock_mhz,"
                   " memory_clock_mhz, gpu_util, memory_util, memory_used_bytes, temperature_c)"
                   " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", samples)
    db.commit()
    db.close()
    return 2 * (len(ranges) + len(api) + len(kernels_rows) + len(copies)) + 8 * len(samples)


def run_export(lantern, db, fmt, out):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run([lantern, "export", db, "--format", fmt, "-o", out, "--force"],
                       capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit(f"bench_export: lantern export failed: {r.stderr}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(SOURCE, "build"))
    parser.add_argument("--steps", type=int, default=6000)
    parser.add_argument("--kernels", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    lantern = os.path.join(args.build, "bin", "lantern")
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "train.db")
        events = make_training_db(db, args.steps, args.kernels)
        print(f"session: {args.steps} steps, {args.kernels} kernels per step, {events} Perfetto events")
        sizes = {}
        for fmt, ext in (("chrome", "json"), ("perfetto", "perfetto-trace")):
            out = os.path.join(tmp, f"train.{ext}")
            runs = [run_export(lantern, db, fmt, out) for _ in range(args.rounds)]
            wall = statistics.median(w for w, _ in runs)
            cpu = statistics.median(c for _, c in runs)
            sizes[fmt] = os.path.getsize(out)
            print(f"{fmt:9s} {sizes[fmt] / 1e6:9.2f} MB  {sizes[fmt] / events:6.1f} B/event  "
                  f"wall {wall:6.3f} s  cpu {cpu:6.3f} s  {events / cpu / 1e6:5.2f} M events/s (cpu)")
        print(f"chrome / perfetto size: x{sizes['chrome'] / sizes['perfetto']:.1f}")


if __name__ == "__main__":
    main()
