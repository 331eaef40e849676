"""The launcher stays flat over long runs (docs/long-runs.md, "Flat memory over long runs"):
with --ring its own samples (NVML here, from the fake NVML at a high rate so that growth shows
in seconds) rotate into segment files launcher.<n>.lrs beside the agents', launcher.lrt keeps
only the definitions, and a dump still holds the ring's samples and the GPU they refer to; the
processes it reaps are written as they end, so its memory does not grow with their number
(orphan_workload.c prints the launcher's anonymous memory), and every exit status is in the database.
Needs $LANTERN_BUILD, $RING_WORKLOAD, $ORPHAN_WORKLOAD."""
import os
import sqlite3
import subprocess
import threading
import time

BUILD = os.environ.get("LANTERN_BUILD", "")
LANTERN = os.path.join(BUILD, "bin", "lantern")
FAKE_NVML = os.path.join(BUILD, "lib", "liblantern_fake_nvml.so")
RING_WORKLOAD = os.environ.get("RING_WORKLOAD", os.path.join(BUILD, "bin", "ring_workload"))
ORPHANS = os.environ.get("ORPHAN_WORKLOAD", os.path.join(BUILD, "bin", "orphan_workload"))
ENV = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "CUDA_VISIBLE_DEVICES")}
RING_S = 1.0
NVML_HZ = 2000  # the fake NVML answers at once: ~20 KB/s of samples


def fake_nvml_env(tmp_path):
    script = tmp_path / "nvml.script"
    script.write_text(f"epoch_ns {time.clock_gettime_ns(time.CLOCK_MONOTONIC)}\n"
                      "gpu GPU-f1a70000-1111 Fake-H100\npower 0 0 150000\n")
    return dict(ENV, LANTERN_NVML_LIBRARY=FAKE_NVML, LANTERN_FAKE_NVML_SCRIPT=str(script))


def anon_kib(pid):
    """PID's anonymous memory (RssAnon): its heap and stacks, not its libraries' file pages,
    which the page cache drops and brings back at will."""
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("RssAnon:"))


def launcher_files(raw):
    """(launcher.lrt's size, the launcher's segments' total size, their count)."""
    try:
        lrt = (raw / "launcher.lrt").stat().st_size
        segments = [p.stat().st_size for p in raw.glob("launcher.*.lrs") if p.exists()]
    except FileNotFoundError:  # a segment deleted between the listing and its stat
        return None
    return lrt, sum(segments), len(segments)


def test_ring_rotates_the_launchers_samples_and_a_dump_holds_them(tmp_path):
    """Over 10 x SEC: launcher.lrt stops growing once its definitions are written, the
    launcher's segments stay within the ring and two segments more, its memory stays flat, and
    a dump holds the ring's GPU samples, all inside its window, and the GPU they belong to."""
    stop = tmp_path / "stop"
    raw = tmp_path / "ring-1.db.raw"
    proc = subprocess.Popen(
        [LANTERN, "profile", "-t", "nvtx,nvml", "--nvml-rate", str(NVML_HZ), "--ring",
         str(RING_S), "-o", "ring-%n.db", "--", RING_WORKLOAD, str(tmp_path / "steps.log"),
         str(stop), "10000", "steps"], cwd=tmp_path, env=fake_nvml_env(tmp_path),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    samples = []  # (seconds since start, launcher.lrt bytes, segment bytes, segments, RssAnon KiB)
    start = time.monotonic()
    while time.monotonic() - start < 10 * RING_S:
        assert proc.poll() is None, proc.communicate()
        files = launcher_files(raw) if raw.exists() else None
        if files:
            samples.append((time.monotonic() - start, *files, anon_kib(proc.pid)))
        time.sleep(0.05)
    sent = time.monotonic_ns()
    dump = subprocess.run([LANTERN, "dump", str(proc.pid)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env=ENV)
    assert dump.returncode == 0, dump.stderr
    stop.touch()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err

    late = [s for s in samples if s[0] >= 2 * RING_S]
    assert len(late) > 20, samples
    print("launcher.lrt bytes", samples[0][1], "->", samples[-1][1],
          "; segments: max", max(s[2] for s in late), "bytes,", max(s[3] for s in late),
          "files; RssAnon KiB", min(s[4] for s in late), "->", max(s[4] for s in late))
    # launcher.lrt: the definitions only (the process, the GPU), written at the start
    assert max(s[1] for s in late) == min(s[1] for s in late), late
    assert late[-1][1] < 8192, late[-1]
    # the segments: a quarter of the ring each, kept ceil(SEC / quarter) + 1, plus the current
    assert max(s[3] for s in late) <= 6, late
    middle = [s[2] for s in late if s[0] < 6 * RING_S]
    tail = [s[2] for s in late if s[0] >= 8 * RING_S]
    assert max(tail) <= max(middle) * 1.5 + 16384, (max(middle), max(tail))
    assert max(tail) > 4096  # the samples are there: NVML_HZ x SEC of them
    # the launcher's memory: no growth over the run
    assert max(s[4] for s in late if s[0] >= 8 * RING_S) <= \
        max(s[4] for s in late if s[0] < 6 * RING_S) + 512, late

    with sqlite3.connect(tmp_path / "ring-1.db") as db:
        first, last, count = db.execute(
            "SELECT min(ts_ns), max(ts_ns), count(power_mw) FROM gpu_samples").fetchone()
        meta = dict(db.execute("SELECT key, value FROM meta WHERE key IN ('start_ns', 'end_ns')"))
        gpus = db.execute("SELECT uuid FROM gpus").fetchall()
    window_start, window_end = int(meta["start_ns"]), int(meta["end_ns"])
    assert abs((window_end - window_start) - RING_S * 1e9) < 1e6
    assert window_end >= sent - 1e9
    assert gpus == [("GPU-f1a70000-1111",)]  # its record lies in launcher.lrt, never rotated
    assert window_start <= first and last <= window_end, (first, last, window_start, window_end)
    # the whole window: from its start (older segments kept), to its end but for the last
    # flush period of the sampler (200 ms) and a loaded machine
    assert first - window_start < 0.1e9, first - window_start
    assert window_end - last < 0.6e9, window_end - last
    assert count >= 0.3 * NVML_HZ * RING_S, count


def orphans_anon_kib(tmp_path, n):
    """lantern profile of orphan_workload N (untraced orphans): the launcher's anonymous memory
    once they are reaped (RssAnon: its heap and stacks; its peak, VmHWM, also counts the file
    pages of its libraries, which moved by up to 220 KiB between two runs of the same N)."""
    run = subprocess.run([LANTERN, "profile", "-t", "nvtx", "-f", "-o", f"o{n}.db", "--", ORPHANS,
                          str(n), "quiet"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=600, env=ENV)
    assert run.returncode == 0, run.stderr
    return int(run.stdout.split("launcher_anon_kib")[1].split()[0])


def test_launcher_memory_does_not_grow_with_the_processes_it_reaps(tmp_path):
    """20000 orphans reaped cost the launcher no more memory than 2000 (before this work it
    kept each one's end until the end of the run: 16 bytes each, ~300 KiB more here)."""
    few = orphans_anon_kib(tmp_path, 2000)
    many = orphans_anon_kib(tmp_path, 20000)
    print(f"launcher RssAnon: {few} KiB after 2000 orphans, {many} KiB after 20000")
    assert many - few < 64, (few, many)


def test_every_exit_status_is_in_the_database(tmp_path):
    """Each traced orphan's row holds the status it exited with (getpid() % 200 + 1)."""
    n = 150
    run = subprocess.run([LANTERN, "profile", "-t", "nvtx", "-o", "o.db", "--", ORPHANS, str(n),
                          "traced"], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                         env=ENV)
    assert run.returncode == 0, run.stderr
    with sqlite3.connect(tmp_path / "o.db") as db:
        rows = db.execute("SELECT pid, exit_status, exit_signal FROM processes").fetchall()
    assert len(rows) == n, len(rows)
    assert [r for r in rows if r[1] != r[0] % 200 + 1 or r[2] is not None] == []


def test_ring_removes_the_files_of_ended_processes(tmp_path):
    """A ring session of a server forking a traced worker per request: once a worker is gone
    and its last write is older than the ring and a segment, its buffer file is salvaged and
    its segments deleted (before: two files per worker stayed until the session's end); its
    .lrt (definitions) stays."""
    n, stop = 100, tmp_path / "stop"
    proc = subprocess.Popen([LANTERN, "profile", "-t", "nvtx", "--ring", str(RING_S), "-o",
                             "r.db", "--", ORPHANS, str(n), "traced", str(stop)], cwd=tmp_path,
                            env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    raw = tmp_path / "r.db.raw"
    # looked at while the workers come too: on a loaded machine the first ones' segments may
    # go before the last worker has started (each lives the ring and a segment, 1.25 s, or more)
    line = []
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()))
    reader.start()
    seen, had_segments, deadline = [], set(), None
    while deadline is None or time.monotonic() < deadline:
        if deadline is None and not reader.is_alive():
            assert line[0].startswith("launcher_hwm_kib"), proc.stderr.read()
            deadline = time.monotonic() + 20
        names = [p.name for p in raw.iterdir() if not p.name.startswith("launcher.")] \
            if raw.is_dir() else []
        segments = [m for m in names if m.endswith(".lrs")]
        had_segments.update(m.split("-")[0] for m in segments)
        seen.append((len(segments), len([m for m in names if m.endswith(".lrb")]),
                     len([m for m in names if m.endswith(".lrt")])))
        if deadline is not None and seen[-1][:2] == (0, 0):
            break
        time.sleep(0.05)
    stop.touch()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    print("segments, buffer files, trace files:", max(seen), "->", seen[-1],
          "; processes seen with segments:", len(had_segments))
    assert len(had_segments) >= n // 2, len(had_segments)  # the workers' segments were there
    assert seen[-1] == (0, 0, n), seen[-1]


def test_a_window_has_the_exit_statuses_reaped_before_it(tmp_path):
    """The exits reaped while the program runs are written before a window's database (before
    this work they were written only at the run's end: a window had none)."""
    n, stop = 50, tmp_path / "stop"
    proc = subprocess.Popen([LANTERN, "profile", "-t", "nvtx", "-o", "w-%n.db", "--", ORPHANS,
                             str(n), "traced", str(stop)], cwd=tmp_path, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().startswith("launcher_hwm_kib"), proc.stderr.read()
    run = subprocess.run([LANTERN, "stop", str(proc.pid)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120, env=ENV)
    assert run.returncode == 0, run.stderr
    with sqlite3.connect(tmp_path / "w-1.db") as db:
        rows = db.execute("SELECT pid, exit_status, exit_signal FROM processes").fetchall()
    stop.touch()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert len(rows) == n, len(rows)
    assert [r for r in rows if r[1] != r[0] % 200 + 1 or r[2] is not None] == []
