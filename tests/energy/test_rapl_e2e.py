"""CPU package energy (the source `rapl`) end to end, on a fake powercap tree
($LANTERN_POWERCAP_ROOT) whose counters a thread here advances, wrapping one of them:
`lantern profile` samples it in the launcher, the database holds the unwrapped energy (exactly
what was added), energy_sum prints each package's joules over the run and per NVTX range as
the samples interpolate them, the exports carry a counter track per package; and where RAPL
cannot be read, nothing is said unless -t rapl was named, then one line, the reason in the
database and in energy_sum. Needs $LANTERN_BUILD."""

import json
import os
import re
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest

BUILD = Path(os.environ.get("LANTERN_BUILD", Path(__file__).resolve().parents[2] / "build"))
LANTERN = BUILD / "bin" / "lantern"
WORKLOAD = BUILD / "bin" / "nvtx_workload"
AGENT = BUILD / "lib" / "liblantern-agent.so"

# Package 0 wraps at MAX0 and starts just below it; package 1 has no DRAM zone.
MAX0, START0, STEP0 = 1_000_000_000, 999_000_000, 2_000_000  # 2 J a step
MAX1, START1, STEP1 = 1 << 40, 5, 500_000
DRAM_MAX, DRAM_STEP = 500_000_000, 100_000
STEPS, STEP_S = 30, 0.01


def write_atomic(path, value):
    tmp = path.with_suffix(".tmp")
    tmp.write_text(f"{value}\n")
    tmp.replace(path)


def make_zone(d, name, max_uj, value):
    d.mkdir(parents=True)
    (d / "name").write_text(f"{name}\n")
    (d / "max_energy_range_uj").write_text(f"{max_uj}\n")
    write_atomic(d / "energy_uj", value)


def make_tree(root):
    make_zone(root / "intel-rapl:0", "package-0", MAX0, START0)
    make_zone(root / "intel-rapl:0" / "intel-rapl:0:0", "dram", DRAM_MAX, 7)
    make_zone(root / "intel-rapl:1", "package-1", MAX1, START1)


def advance(root, go):
    """Once the file go exists (the profiled command made it: the sampler has read the
    counters once), STEPS steps of every counter, STEP_S apart, package 0's wrapping past
    MAX0."""
    p0, dram, p1 = root / "intel-rapl:0", root / "intel-rapl:0" / "intel-rapl:0:0", root / "intel-rapl:1"
    deadline = time.monotonic() + 60
    while not go.exists() and time.monotonic() < deadline:
        time.sleep(0.005)
    for i in range(1, STEPS + 1):
        time.sleep(STEP_S)
        write_atomic(p0 / "energy_uj", (START0 + i * STEP0) % MAX0)
        write_atomic(dram / "energy_uj", 7 + i * DRAM_STEP)
        write_atomic(p1 / "energy_uj", START1 + i * STEP1)


def lantern(*args, env, cwd):
    return subprocess.run([str(LANTERN), *map(str, args)], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def env_for(root):
    env = dict(os.environ, LANTERN_POWERCAP_ROOT=str(root))
    env.pop("CUDA_VISIBLE_DEVICES", None)
    return env


def interpolate(samples, t):
    """A package's cumulative µJ at t, linear between its samples, clamped to them."""
    if t <= samples[0][0]:
        return samples[0][1]
    for (t0, e0), (t1, e1) in zip(samples, samples[1:]):
        if t0 <= t < t1:
            return e0 + (e1 - e0) * (t - t0) / (t1 - t0)
    return samples[-1][1]


def cpu_table(text):
    """energy_sum's CPU rows: {(package, scope, name): (instances, joules, watts)}."""
    rows = {}
    part = text.split("CPU package energy (RAPL):\n", 1)[1]
    for line in part.splitlines()[2:]:
        m = re.match(r"\s*(\d+)\s+(run|nvtx)\s+(.*?)\s+(\d+)\s+[\d.]+ \S+\s+([\d.]+)\s+([\d.]+)$", line)
        if m:
            rows[(int(m[1]), m[2], m[3])] = (int(m[4]), float(m[5]), float(m[6]))
    return rows


@pytest.mark.skipif(not AGENT.exists(), reason=f"agent not built: {AGENT}")
def test_profile_records_unwrapped_package_energy(tmp_path):
    root = tmp_path / "powercap"
    make_tree(root)
    env = env_for(root)
    writer = threading.Thread(target=advance, args=(root, tmp_path / "go"))
    writer.start()
    # the counters move from the command's start (the sampler read them first), the ranges run
    # meanwhile; the sleep outlasts the writer, so the sampler's last read (at the stop) sees
    # every step
    r = lantern("profile", "-o", "run.db", "--", "sh", "-c",
                f"touch go; {WORKLOAD} durations; sleep 1", env=env, cwd=tmp_path)
    writer.join()
    assert r.returncode == 0, r.stderr
    assert "CPU package" not in r.stderr
    db = sqlite3.connect(tmp_path / "run.db")
    assert db.execute("SELECT * FROM cpu_packages ORDER BY package").fetchall() == [
        (0, MAX0, DRAM_MAX), (1, MAX1, None)]
    samples = {p: db.execute("SELECT ts_ns, energy_uj, dram_energy_uj FROM cpu_energy_samples"
                             " WHERE package = ? ORDER BY ts_ns", (p,)).fetchall() for p in (0, 1)}
    for p, step in ((0, STEP0), (1, STEP1)):
        s = samples[p]
        assert len(s) >= 5, s  # ~10 Hz over >= 1 s, and one at each end
        assert s[0][1] == 0
        assert all(b[1] >= a[1] for a, b in zip(s, s[1:]))  # across package 0's wrap
        assert all(e % step == 0 for _, e, _ in s)
        assert s[-1][1] == STEPS * step  # exactly what was added, the wrap unwrapped
    assert samples[0][-1][2] == STEPS * DRAM_STEP and samples[1][-1][2] is None
    assert db.execute("SELECT count(*) FROM meta WHERE key = 'rapl_disabled_reason'").fetchone() == (0,)

    r = lantern("stats", "run.db", "--report", "energy_sum", env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = cpu_table(r.stdout)
    start, end = (int(db.execute("SELECT value FROM meta WHERE key = ?", (k,)).fetchone()[0])
                  for k in ("start_ns", "end_ns"))
    ranges = db.execute("SELECT r.start_ns, r.end_ns FROM ranges r JOIN strings s ON s.id = r.name_id"
                        " WHERE s.value = 'timed'").fetchall()
    assert len(ranges) == 20
    for p in (0, 1):
        s = [(t, e) for t, e, _ in samples[p]]
        run_j = (interpolate(s, min(end, s[-1][0])) - interpolate(s, max(start, s[0][0]))) / 1e6
        timed_j = sum(interpolate(s, b) - interpolate(s, a) for a, b in ranges) / 1e6
        run = [v for k, v in rows.items() if k[:2] == (p, "run")]
        timed = rows[(p, "nvtx", "timed")]
        assert len(run) == 1 and run[0][1] == pytest.approx(run_j, abs=0.006), (r.stdout, run_j)
        assert timed[0] == 20
        assert timed[1] == pytest.approx(timed_j, abs=0.006), (r.stdout, timed_j)

    r = lantern("export", "run.db", "--format", "chrome", "-o", "run.json", env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    events = json.loads((tmp_path / "run.json").read_text())["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert names[1100000000] == "CPU package 0" and names[1100000001] == "CPU package 1"
    counters = [e for e in events if e.get("name") == "CPU energy (J)"]
    last = {e["pid"]: e["args"] for e in counters}
    assert last[1100000000] == {"package": STEPS * STEP0 / 1e6, "dram": STEPS * DRAM_STEP / 1e6}
    assert last[1100000001] == {"package": STEPS * STEP1 / 1e6}
    assert len(counters) == len(samples[0]) + len(samples[1])

    r = lantern("export", "run.db", "--format", "perfetto", "-o", "run.pftrace", env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    trace = (tmp_path / "run.pftrace").read_bytes()
    for track in (b"CPU package 0 energy (J)", b"CPU package 0 DRAM energy (J)",
                  b"CPU package 1 energy (J)"):
        assert track in trace
    assert b"CPU package 1 DRAM" not in trace


def profile(tmp_path, root, *trace):
    r = lantern("profile", *trace, "-o", "run.db", "--", "true", env=env_for(root), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return r.stderr


def disabled_reason(tmp_path):
    db = sqlite3.connect(tmp_path / "run.db")
    row = db.execute("SELECT value FROM meta WHERE key = 'rapl_disabled_reason'").fetchone()
    assert db.execute("SELECT count(*) FROM cpu_energy_samples").fetchone() == (0,)
    return row[0] if row else None


def energy_sum(tmp_path, root):
    r = lantern("stats", "run.db", "--report", "energy_sum", env=env_for(root), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_no_rapl_is_silent_unless_named(tmp_path):
    root = tmp_path / "no-powercap"
    err = profile(tmp_path, root)
    assert "CPU package" not in err
    assert disabled_reason(tmp_path) is None
    assert "CPU" not in energy_sum(tmp_path, root)

    err = profile(tmp_path, root, "-f", "-t", "nvtx,rapl")
    why = f"no RAPL package in {root} (no intel-rapl:N zone)"
    assert [l for l in err.splitlines() if "CPU package" in l] == [
        f"lantern: CPU package energy not sampled: {why}"]
    assert disabled_reason(tmp_path) == why
    assert f"CPU energy: not sampled: {why}\n" in energy_sum(tmp_path, root)


def test_unreadable_counter_is_said_when_named(tmp_path):
    root = tmp_path / "powercap"
    make_tree(root)
    for n in (0, 1):  # a counter that is not there to read
        counter = root / f"intel-rapl:{n}" / "energy_uj"
        counter.unlink()
        counter.symlink_to(tmp_path / "gone")
    err = profile(tmp_path, root, "-t", "nvtx,rapl")
    why = f"cannot read {root}/intel-rapl:1/energy_uj: No such file or directory"
    assert f"lantern: CPU package energy not sampled: {why}\n" in err
    assert disabled_reason(tmp_path) == why
    assert f"CPU energy: not sampled: {why}" in energy_sum(tmp_path, root)
    if os.geteuid() != 0:  # root reads a file whatever its mode
        counter = root / "intel-rapl:1" / "energy_uj"
        counter.unlink()
        write_atomic(counter, 5)
        counter.chmod(0)
        (root / "intel-rapl:0").rename(tmp_path / "away")
        err = profile(tmp_path, root, "-f", "-t", "nvtx,rapl")
        assert ": Permission denied (only root may, since Linux's fix of CVE-2020-8694)" in err
