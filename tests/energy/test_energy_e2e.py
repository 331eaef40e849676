"""End-to-end energy tests with the fake NVML: `lantern profile` samples scripted GPU power in
the launcher while a real program runs three NVTX ranges inside a lantern.h energy window; the
database, energy_sum, the nvtx_sum energy column and the Chrome counters are checked against
joules integrated here from the script. Also `lantern energy`, and the one-line reasons when
NVML cannot be used. Needs $LANTERN_BUILD."""

import json
import os
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

BUILD = Path(os.environ.get("LANTERN_BUILD", Path(__file__).resolve().parents[2] / "build"))
LANTERN = BUILD / "bin" / "lantern"
PHASES = BUILD / "bin" / "lantern_test_energy_phases"
FAKE = BUILD / "lib" / "liblantern_fake_nvml.so"
AGENT = BUILD / "lib" / "liblantern-agent.so"

# The script's power: 150 W, then 450 W from STEP_MS on (ms after the epoch).
LOW_W, HIGH_W, STEP_MS = 150.0, 450.0, 400


def expected_joules(epoch_ns, start_ns, end_ns):
    """The integral of the scripted step function over [start_ns, end_ns], computed here."""
    step_ns = epoch_ns + STEP_MS * 1_000_000
    low = max(0, min(end_ns, step_ns) - start_ns)
    high = max(0, end_ns - max(start_ns, step_ns))
    return (LOW_W * low + HIGH_W * high) / 1e9


@pytest.fixture
def fake_env(tmp_path):
    def make(body):
        epoch = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        script = tmp_path / "nvml.script"
        script.write_text(f"epoch_ns {epoch}\n{body}")
        env = dict(os.environ, LANTERN_NVML_LIBRARY=str(FAKE), LANTERN_FAKE_NVML_SCRIPT=str(script),
                   LANTERN_LIBRARY=str(BUILD / "lib" / "liblantern.so"))
        env.pop("CUDA_VISIBLE_DEVICES", None)
        return epoch, env
    return make


def lantern(*args, env, cwd):
    return subprocess.run([str(LANTERN), *map(str, args)], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def stats_json(db, report, env, cwd):
    r = lantern("stats", db, "--report", report, "--format", "json", env=env, cwd=cwd)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["rows"]


@pytest.mark.skipif(not AGENT.exists(), reason=f"agent not built: {AGENT}")
def test_profile_samples_power_and_attributes_energy(fake_env, tmp_path):
    epoch, env = fake_env(f"gpu GPU-e2e00000-1111 Fake-H100\npower 0 0 {LOW_W * 1000:.0f}\n"
                          f"power 0 {STEP_MS} {HIGH_W * 1000:.0f}\n")
    r = lantern("profile", "-o", "run.db", "--", PHASES, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    live = [float(x) for x in r.stdout.split()[1:]]  # the program's own window: s, J, bound
    db = sqlite3.connect(tmp_path / "run.db")

    assert db.execute("SELECT uuid, name, nvml_index, power_limit_mw, memory_bytes FROM gpus"
                      ).fetchall() == [("GPU-e2e00000-1111", "Fake-H100", 0, 700000, 80 << 30)]
    duration_s = db.execute("SELECT (max(ts_ns) - min(ts_ns)) / 1e9 FROM gpu_samples").fetchone()[0]
    power, energy, state = db.execute(
        "SELECT count(power_mw), count(energy_mj), count(sm_clock_mhz) FROM gpu_samples").fetchone()
    # 100 Hz power, a counter update every 100 ms, clocks & co. at 10 Hz; a busy host delays
    # the sampling threads (two updates then show as one change), hence the halves
    assert power >= 0.5 * 100 * duration_s
    assert energy >= 0.5 * duration_s / 0.1
    assert state >= 0.5 * 10 * duration_s
    assert db.execute("SELECT DISTINCT sm_clock_mhz, memory_clock_mhz, temperature_c,"
                      " memory_used_bytes FROM gpu_samples WHERE sm_clock_mhz IS NOT NULL"
                      ).fetchall() == [(1980, 2619, 45, 1 << 30)]

    ranges = {name: (start, end) for name, start, end in db.execute(
        "SELECT s.value, r.start_ns, r.end_ns FROM ranges r JOIN strings s ON s.id = r.name_id")}
    rows = {(row["scope"], row["name"]): row for row in stats_json("run.db", "energy_sum", env, tmp_path)}
    phase_sum = 0
    for name in ("phase1", "phase2", "phase3"):
        row = rows[("nvtx", name)]
        want = expected_joules(epoch, *ranges[name])
        assert abs(row["energy_j"] - want) <= row["error_j"] + 0.01, (name, row, want)
        phase_sum += row["energy_j"]
    # the ranges are adjacent: their energies add up to the enclosing range's (the window's
    # NVTX range, microseconds longer at each end)
    whole = rows[("nvtx", "lantern.energy:phases")]["energy_j"]
    assert abs(phase_sum - whole) <= 0.01 * whole

    window = db.execute("SELECT w.energy_j, w.error_j, w.counter_updates, w.start_ns, w.end_ns"
                        " FROM energy_windows w JOIN strings s ON s.id = w.name_id"
                        " WHERE s.value = 'phases'").fetchone()
    want = expected_joules(epoch, window[3], window[4])
    assert abs(window[0] - want) <= window[1] + 0.01 and window[2] >= 3  # 7 when idle
    assert rows[("window", "phases")]["energy_j"] == pytest.approx(window[0], abs=0.001)  # JSON: mJ
    assert abs(live[1] - live[0] * (window[0] / ((window[4] - window[3]) / 1e9))) <= live[2] + window[1]

    nvtx = {row["range"]: row for row in stats_json("run.db", "nvtx_sum", env, tmp_path)}
    assert nvtx[":phase2"]["energy_j"] == pytest.approx(rows[("nvtx", "phase2")]["energy_j"], abs=0.002)

    r = lantern("export", "run.db", "--format", "chrome", "-o", "run.json", env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    events = json.loads((tmp_path / "run.json").read_text())["traceEvents"]
    watts = {e["args"]["instant"] for e in events if e["name"] == "Power (W)"}
    assert watts == {LOW_W, HIGH_W}  # idle and loaded power both on the timeline
    assert any(e["ph"] == "M" and e["args"].get("name") == "GPU 0: Fake-H100" for e in events)


def test_unusable_nvml_is_one_line_and_the_rest_works(fake_env, tmp_path):
    _, env = fake_env("init_error 4\n")
    r = lantern("profile", "-t", "nvtx,nvml", "-o", "p.db", "--", "true", env=env, cwd=tmp_path)
    assert r.returncode == 0
    assert r.stderr.splitlines()[0] == \
        "lantern: GPU power not sampled: no permission to use NVML (init: Insufficient Permissions)"
    r = lantern("stats", "p.db", "--report", "energy_sum", env=env, cwd=tmp_path)
    assert r.returncode == 0  # an empty table and why, as for the CUDA reports
    assert r.stderr.strip().splitlines()[-1].endswith(
        "no GPU power samples in this database: no permission to use NVML (init: Insufficient "
        "Permissions)")
    # by default (no -t) the sampler stays quiet when NVML does not work
    r = lantern("profile", "-o", "q.db", "--", "true", env=env, cwd=tmp_path)
    assert r.returncode == 0 and "GPU power" not in r.stderr
    env["CUDA_VISIBLE_DEVICES"] = "MIG-6f1f2a1c-0000-0000-0000-000000000000"
    _, env2 = fake_env("gpu GPU-aaaa Fake\npower 0 0 1000\n")
    env2["CUDA_VISIBLE_DEVICES"] = env["CUDA_VISIBLE_DEVICES"]
    r = lantern("profile", "-t", "nvml", "-o", "m.db", "--", "true", env=env2, cwd=tmp_path)
    assert r.stderr.splitlines()[0] == ("lantern: GPU power not sampled: MIG instances in "
                                        "CUDA_VISIBLE_DEVICES: per-instance energy is not supported by NVML")


def test_energy_command_prints_joules_per_gpu(fake_env, tmp_path):
    _, env = fake_env("gpu GPU-aaaa1111 Fake-A\ngpu GPU-bbbb2222 Fake-B\npower 0 0 200000\n"
                      "power 1 0 60000\n")
    r = lantern("energy", "--cpus", "none", "--gpus", "1", "--", "sleep", "0.3", env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = dict(line.split(":", 1) for line in r.stderr.splitlines())
    seconds = float(lines["Time"].split()[0])
    gpu = lines["GPU 1"].split()  # "18.000 J (± 0.120 J), 60.0 W average, ..."
    joules, bound = float(gpu[0]), float(gpu[3])
    assert 0.3 <= seconds < 1.0
    assert abs(joules - 60 * seconds) <= bound + 0.002
    assert float(lines["Total"].split()[0]) == pytest.approx(joules)
    r = lantern("energy", "--gpus", "7", "--", "true", env=env, cwd=tmp_path)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines() == ["lantern: cannot measure: GPU 7 does not exist "
                                             "(2 GPUs visible)"]
    r = lantern("energy", "--", "sh", "-c", "exit 3", env=env, cwd=tmp_path)
    assert r.returncode == 3


def test_energy_command_says_not_measured_rather_than_zero_joules(tmp_path):
    """Issue #28: without NVML and RAPL it printed `Total: 0.000 J`."""
    env = dict(os.environ, LANTERN_NVML_LIBRARY="/nonexistent/libnvidia-ml.so.1")
    r = lantern("energy", "--cpus", "none", "--", "sleep", "0.2", env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert lines[0].startswith("lantern: GPU energy not measured: NVML not found (")
    assert lines[1].startswith("Time:")
    assert lines[2:] == ["Energy:         not measured (no GPU energy, no readable RAPL package)"]


# ---- energy_sum on a database with known samples ---------------------------------------------

SOURCE = Path(__file__).resolve().parents[2]
T0 = 10_000_000_000  # meta.start_ns
MS = 1_000_000


def make_energy_db(path):
    """200 W for the first second, 500 W for the next; power sampled every 10 ms, the counter
    updated exactly every 100 ms with the exact energy (as a GPU's would be). Joules of any
    interval whose ends fall where power is constant are then known exactly."""
    db = sqlite3.connect(path)
    db.executescript((SOURCE / "src/db/schema.sql").read_text())
    meta = {"schema_version": 9, "lantern_version": "0.1.0", "command": "./train", "host": "h",
            "start_wall_ns": 0, "start_ns": T0, "end_ns": T0 + 2000 * MS, "clock": "CLOCK_MONOTONIC",
            "trace": "nvtx,cuda,nvml", "exit_status": 0, "dropped_events": 0, "import_warnings": 0}
    db.executemany("INSERT INTO meta VALUES(?, ?)", meta.items())
    db.execute("INSERT INTO gpus(id, uuid, name, nvml_index) VALUES(1, 'GPU-1', 'Known GPU', 0)")
    counter = 5_000_000
    for ms in range(0, 2001, 10):
        watts = 200 if ms < 1000 else 500
        db.execute("INSERT INTO gpu_samples(gpu_id, ts_ns, power_mw) VALUES(1, ?, ?)",
                   (T0 + ms * MS, watts * 1000))
        if ms % 100 == 0:
            db.execute("INSERT INTO gpu_samples(gpu_id, ts_ns, energy_mj, energy_uncertainty_ns)"
                       " VALUES(1, ?, ?, 0)", (T0 + ms * MS, counter))
            counter += (200 if ms < 1000 else 500) * 100  # mJ over the next 100 ms
    db.execute("INSERT INTO processes(id, pid, exe, start_ns, end_ns, clean_exit)"
               " VALUES(1, 77, '/bin/train', ?, ?, 1)", (T0 + 50 * MS, T0 + 1950 * MS))
    db.execute("INSERT INTO threads(id, process_id, tid) VALUES(1, 1, 77)")
    db.execute("INSERT INTO domains(id, name_id) VALUES(0, NULL)")
    db.executemany("INSERT INTO strings(id, value) VALUES(?, ?)",
                   [(1, "forward"), (2, "backward"), (3, "gemm"), (4, "relu")])
    for i, (name_id, start, end) in enumerate([(1, 50, 1050), (2, 1050, 1950)], 1):
        db.execute("INSERT INTO ranges(id, process_id, name_id, style, depth, start_thread_id,"
                   " start_ns, end_ns) VALUES(?, 1, ?, 0, 0, 1, ?, ?)", (i, name_id, T0 + start * MS,
                                                                       T0 + end * MS))
    for name_id, start, end in [(3, 250, 450), (3, 1200, 1500), (4, 1600, 1610)]:
        db.execute("INSERT INTO kernels(process_id, gpu_id, start_ns, end_ns, name_id)"
                   " VALUES(1, 1, ?, ?, ?)", (T0 + start * MS, T0 + end * MS, name_id))
    db.commit()
    db.close()


def test_energy_sum_gives_exact_joules_per_scope(tmp_path):
    make_energy_db(tmp_path / "known.db")
    rows = {(r["scope"], r["name"]): r for r in stats_json("known.db", "energy_sum", os.environ, tmp_path)}
    expected = {  # joules integrated by hand from the script above
        ("run", "./train"): 200 * 1.0 + 500 * 1.0,
        ("process", "77 /bin/train"): 200 * 0.95 + 500 * 0.95,
        ("nvtx", "forward"): 200 * 0.95 + 500 * 0.05,
        ("nvtx", "backward"): 500 * 0.9,
        ("kernel", "gemm"): 200 * 0.2 + 500 * 0.3,
        ("kernel", "relu"): 500 * 0.01,
    }
    assert set(rows) == set(expected)
    for key, joules in expected.items():
        assert rows[key]["energy_j"] == pytest.approx(joules, abs=0.001), key
        assert rows[key]["gpu"] == 0
    assert rows[("kernel", "gemm")]["instances"] == 2
    assert rows[("nvtx", "backward")]["avg_w"] == pytest.approx(500, abs=0.01)
    # the ranges tile the process: their energies add up to it
    assert rows[("nvtx", "forward")]["energy_j"] + rows[("nvtx", "backward")]["energy_j"] == \
        pytest.approx(rows[("process", "77 /bin/train")]["energy_j"], abs=0.002)
    nvtx = {r["range"]: r for r in stats_json("known.db", "nvtx_sum", os.environ, tmp_path)}
    assert nvtx[":forward"]["energy_j"] == pytest.approx(215, abs=0.001)


@pytest.mark.skipif(not AGENT.exists(), reason=f"agent not built: {AGENT}")
def test_nvml_rate_sets_the_power_sampling_rate(fake_env, tmp_path):
    _, env = fake_env("gpu GPU-aaaa1111 Fake-H100\npower 0 0 100000\n")
    r = lantern("profile", "--nvml-rate", "20", "-o", "r.db", "--", "sleep", "1", env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    db = sqlite3.connect(tmp_path / "r.db")
    count, span = db.execute("SELECT count(*), (max(ts_ns) - min(ts_ns)) / 1e9 FROM gpu_samples"
                             " WHERE power_mw IS NOT NULL").fetchone()
    assert 0.9 < span < 1.5 and abs(count / span - 20) <= 4  # 20 Hz, give or take a busy host
    r = lantern("profile", "--nvml-rate", "0", "--", "true", env=env, cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.splitlines()[0] == "lantern: --nvml-rate needs a rate in Hz (0 < HZ <= 10000)"


def test_sampler_reads_a_failed_counter_again_100_ms_later(fake_env, tmp_path):
    """The sampler's first read of the energy counter fails (read 1 is NVML's probe at open):
    it reads again 100 ms later, not at once (src/energy/gpu_sampling.c), so the first update's
    window opens 100 ms into the run; power is sampled meanwhile, and the counter then locks on
    its grid."""
    _, env = fake_env("gpu GPU-aaaa1111 Fake-H100\npower 0 0 100000\n"
                      "fail nvmlDeviceGetTotalEnergyConsumption 2\n")
    r = lantern("profile", "-t", "nvtx,nvml", "-o", "f.db", "--", "sleep", "1", env=env,
                cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    db = sqlite3.connect(tmp_path / "f.db")
    first_power, = db.execute("SELECT min(ts_ns) FROM gpu_samples WHERE power_mw IS NOT NULL"
                              ).fetchone()
    opens, = db.execute("SELECT ts_ns - energy_uncertainty_ns FROM gpu_samples"
                        " WHERE energy_mj IS NOT NULL ORDER BY ts_ns LIMIT 1").fetchone()
    assert opens - first_power >= 60 * MS  # ~100 ms; ~0 were the read tried again at once
    reads, mode = db.execute("SELECT energy_reads, counter_mode FROM nvml_sampler").fetchone()
    assert reads >= 6 and mode == "locked"

# ---- energy per rank and per GPU on a database of several ranks -------------------------------

def make_ranks_energy_db(path):
    """A job of two hosts as `lantern merge` leaves it: host a has GPU 1 (NVML 0, 100 W) and
    GPU 2 (NVML 1, 200 W), host b GPU 3 (NVML 0, 300 W), each at constant power for 2 s with an
    exact counter. Rank 0 has a CUDA context on GPU 1 (CUDA listed both of host a's GPUs for it,
    as CUPTI may), rank 1 on GPU 2, rank 2 on GPU 3, rank 3 on GPU 2 too for 0.5 s (shared);
    a data loader (pid 14) ran no CUDA. Ranks 0-2 run `step` twice ([200, 700] and
    [1300, 1800] ms), rank 3 once ([1000, 1400] ms), the loader `load` once."""
    db = sqlite3.connect(path)
    db.executescript((SOURCE / "src/db/schema.sql").read_text())
    meta = {"schema_version": 9, "lantern_version": "0.1.0", "command": "train.py", "host": "a,b",
            "start_wall_ns": 0, "start_ns": T0, "end_ns": T0 + 2000 * MS, "clock": "CLOCK_MONOTONIC",
            "trace": "nvtx,cuda,nvml", "exit_status": 0, "dropped_events": 0, "import_warnings": 0}
    db.executemany("INSERT INTO meta VALUES(?, ?)", meta.items())
    watts = {1: 100, 2: 200, 3: 300}
    db.executemany("INSERT INTO gpus(id, uuid, name, nvml_index) VALUES(?, ?, 'Known GPU', ?)",
                   [(1, "GPU-a0", 0), (2, "GPU-a1", 1), (3, "GPU-b0", 0)])
    for gpu, w in watts.items():
        for ms in range(0, 2001, 10):
            db.execute("INSERT INTO gpu_samples(gpu_id, ts_ns, power_mw) VALUES(?, ?, ?)",
                       (gpu, T0 + ms * MS, w * 1000))
            if ms % 100 == 0:
                db.execute("INSERT INTO gpu_samples(gpu_id, ts_ns, energy_mj, energy_uncertainty_ns)"
                           " VALUES(?, ?, ?, 0)", (gpu, T0 + ms * MS, 7_000_000 + w * ms))
    processes = [  # id, pid, rank, host, start ms, end ms, context GPU
        (1, 11, 0, "a", 100, 1900, 1), (2, 12, 1, "a", 100, 1900, 2), (3, 21, 2, "b", 100, 1900, 3),
        (4, 13, 3, "a", 1000, 1500, 2), (5, 14, None, "a", 100, 1900, None)]
    for pid, ospid, rank, host, start, end, gpu in processes:
        db.execute("INSERT INTO processes(id, pid, exe, host, start_ns, end_ns, clean_exit, name,"
                   " rank) VALUES(?, ?, '/usr/bin/python3', ?, ?, ?, 1, 'train.py', ?)",
                   (pid, ospid, host, T0 + start * MS, T0 + end * MS, rank))
        db.execute("INSERT INTO threads(id, process_id, tid) VALUES(?, ?, ?)", (pid, pid, ospid))
        if gpu:
            db.execute("INSERT INTO cuda_contexts(process_id, context, gpu_id, device)"
                       " VALUES(?, 1, ?, 0)", (pid, gpu))
    db.executemany("INSERT INTO process_gpus VALUES(?, ?, ?)", [(1, 0, 1), (1, 1, 2)])
    db.execute("INSERT INTO domains(id, name_id) VALUES(0, NULL)")
    db.executemany("INSERT INTO strings(id, value) VALUES(?, ?)", [(1, "step"), (2, "load")])
    steps = [(p, s, e) for p in (1, 2, 3) for s, e in ((200, 700), (1300, 1800))]
    steps += [(4, 1000, 1400)]
    for i, (pid, start, end) in enumerate(steps, 1):
        db.execute("INSERT INTO ranges(id, process_id, name_id, style, depth, start_thread_id,"
                   " start_ns, end_ns) VALUES(?, ?, 1, 0, 0, ?, ?, ?)",
                   (i, pid, pid, T0 + start * MS, T0 + end * MS))
    db.execute("INSERT INTO ranges(id, process_id, name_id, style, depth, start_thread_id,"
               " start_ns, end_ns) VALUES(100, 5, 2, 0, 0, 5, ?, ?)", (T0 + 200 * MS, T0 + 300 * MS))
    db.commit()
    db.close()


def test_energy_sum_gives_each_rank_its_own_gpus(tmp_path):
    make_ranks_energy_db(tmp_path / "ranks.db")
    rows = stats_json("ranks.db", "energy_sum", os.environ, tmp_path)
    got = {(r["scope"], r["name"], r["host"], r["gpu"]): r for r in rows}
    expected = {  # (joules, processes that used the GPU): integrated by hand from the script
        ("run", "train.py", "a", 0): (100 * 2.0, 1),
        ("run", "train.py", "a", 1): (200 * 2.0, 2),
        ("run", "train.py", "b", 0): (300 * 2.0, 1),
        # each rank over its life on the GPU it had a context on: not GPU 1 for rank 0's
        # process_gpus row, none for the loader; GPU 1 of host a shared by ranks 1 and 3
        ("process", "11 train.py (rank 0)", "a", 0): (100 * 1.8, 1),
        ("process", "12 train.py (rank 1)", "a", 1): (200 * 1.8, 2),
        ("process", "21 train.py (rank 2)", "b", 0): (300 * 1.8, 1),
        ("process", "13 train.py (rank 3)", "a", 1): (200 * 0.5, 2),
        ("nvtx", "step", "a", 0): (100 * 1.0, None),
        ("nvtx", "step", "a", 1): (200 * 1.0 + 200 * 0.4, None),
        ("nvtx", "step", "b", 0): (300 * 1.0, None),
    }
    assert set(got) == set(expected)
    for key, (joules, processes) in expected.items():
        assert got[key]["energy_j"] == pytest.approx(joules, abs=0.001), key
        assert got[key]["processes"] == processes, key
    assert got[("process", "12 train.py (rank 1)", "a", 1)]["avg_w"] == pytest.approx(200, abs=0.01)
    assert got[("nvtx", "step", "a", 1)]["instances"] == 3
    # the loader's range used no GPU: nvtx_sum leaves its energy empty; `step` is the sum of
    # each rank's own GPU (100 + 200 + 300 J over 1 s, and rank 3's 80 J), not every GPU's
    nvtx = {r["range"]: r for r in stats_json("ranks.db", "nvtx_sum", os.environ, tmp_path)}
    assert nvtx[":step"]["energy_j"] == pytest.approx(680, abs=0.001)
    assert nvtx[":load"]["energy_j"] is None


def test_energy_without_cuda_charges_every_gpu_of_one_host_and_none_across_hosts(tmp_path):
    make_ranks_energy_db(tmp_path / "ranks.db")
    db = sqlite3.connect(tmp_path / "ranks.db")
    db.execute("DELETE FROM cuda_contexts")
    db.execute("DELETE FROM process_gpus")  # CUDA not traced: no process is known to use a GPU
    db.commit()
    nvtx = {r["range"]: r for r in stats_json("ranks.db", "nvtx_sum", os.environ, tmp_path)}
    assert nvtx[":step"]["energy_j"] is None  # two hosts: whose GPU it was is unknown
    db.execute("UPDATE processes SET host = 'a'")
    db.commit()
    nvtx = {r["range"]: r for r in stats_json("ranks.db", "nvtx_sum", os.environ, tmp_path)}
    # one host: each range is charged the host's three GPUs (600 W): 7 s of `step`
    assert nvtx[":step"]["energy_j"] == pytest.approx(600 * (6 * 0.5 + 0.4), abs=0.001)
    assert nvtx[":load"]["energy_j"] == pytest.approx(600 * 0.1, abs=0.001)
