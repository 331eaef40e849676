#!/usr/bin/env python3
"""GPU test of -t osrt beside CUDA tracing: tests/gpu/cuda_workload.cu under
`lantern profile -t cuda,nvtx,osrt` (the agent preloaded as well as injected) must give the
CUDA records test_cuda_gpu.py checks without osrt (kernels, copies, streams, durations, NVTX
attribution), and the OS runtime calls of the CUDA driver (its ioctls on /dev/nvidia*), with
nothing lost. Exits 77, saying why, where there is no GPU."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
import test_cuda_gpu as cuda  # noqa: E402


def main():
    reason = cuda.gpu_missing_reason()
    if reason:
        print(f"SKIP: {reason}")
        return cuda.SKIP
    build = os.environ.get("LANTERN_BUILD", "build")
    workload = os.environ.get("LANTERN_CUDA_WORKLOAD", os.path.join(build, "bin", "cuda_workload"))
    c = cuda.Checks()
    with tempfile.TemporaryDirectory() as tmp:
        db, expected = cuda.run_workload(build, workload, tmp, ("-t", "cuda,nvtx,osrt"), "osrt")
        k = cuda.check_kernels(c, db)
        cuda.check_copies(c, db)
        cuda.check_streams(c, db)
        cuda.check_durations(c, k, expected)
        cuda.check_attribution(c, db, k)
        ioctls = db.execute("SELECT count(*) FROM osrt_calls o JOIN strings s ON s.id = o.name_id"
                            " WHERE s.value = 'ioctl'").fetchone()[0]
        c.expect(ioctls > 0, f"the CUDA driver's ioctls are recorded ({ioctls})")
        seen, kept, lost = db.execute("SELECT sum(seen), sum(kept), sum(lost) FROM osrt").fetchone()
        c.expect(lost == 0 and kept and seen >= kept, f"osrt counts: {seen} seen, {kept} kept, "
                 f"{lost} lost")
        dropped = db.execute("SELECT sum(dropped_events) FROM processes").fetchone()[0]
        c.expect(not dropped, f"no event dropped ({dropped})")
        for row in db.execute("SELECT s.value, count(*), sum(o.end_ns - o.start_ns) FROM osrt_calls"
                              " o JOIN strings s ON s.id = o.name_id GROUP BY s.value"
                              " ORDER BY 3 DESC"):
            print("osrt", *row)
    print(f"{c.passed} checks passed, {len(c.failures)} failed")
    return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main())
