"""`lantern export --format perfetto`, decoded with the `perfetto` package's protobuf
definitions (perfetto_check.py) and compared with the database it came from: NVTX ranges of
a real program under `lantern profile` (push/pop in two domains, start/end across threads,
marks, payloads, categories), and the CUDA/NVML session of tests/cuda_reports (kernels,
copies, sets, API calls, flows from launch to GPU work, power counters); the size against
the Chrome JSON; the output rules (no overwrite without --force, nothing left on failure)."""
import collections
import os
import sqlite3
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("LANTERN_BUILD", os.path.join(SOURCE, "build"))
LANTERN = os.path.join(BUILD, "bin", "lantern")
WORKLOAD = os.environ.get("NVTX_WORKLOAD", os.path.join(BUILD, "bin", "nvtx_workload"))
sys.path.insert(0, HERE)

perfetto_check = pytest.importorskip("perfetto_check", reason="Python packages perfetto and protobuf "
                                     "(scripts/deps.sh installs them)")


def lantern(*args, cwd=None):
    env = dict(os.environ)
    if os.environ.get("LANTERN_TEST_PRELOAD"):  # sanitizer build: the agent in Python needs ASan
        env.update(LD_PRELOAD=os.environ["LANTERN_TEST_PRELOAD"], ASAN_OPTIONS="detect_leaks=0")
    return subprocess.run([LANTERN, *args], capture_output=True, text=True, timeout=120, cwd=cwd, env=env)


def export(db_path, out, fmt="perfetto"):
    r = lantern("export", str(db_path), "--format", fmt, "-o", str(out))
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="module")
def nvtx_session(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nvtx")
    db = tmp / "x.db"
    for scenario in ("attributes",):
        r = lantern("profile", "-t", "nvtx", "-o", str(db), "--", WORKLOAD, scenario, cwd=tmp)
        assert r.returncode == 0, r.stderr
    return db, perfetto_check.decode(export(db, tmp / "x.perfetto-trace"))


def test_nvtx_slices_and_instants_equal_the_database(nvtx_session):
    path, d = nvtx_session
    assert d.problems == []
    db = sqlite3.connect(path)
    expect = collections.Counter(db.execute(
        "SELECT coalesce(s.value, '(unnamed)'), r.start_ns, coalesce(r.end_ns, p.end_ns) FROM ranges r"
        " JOIN processes p ON p.id = r.process_id LEFT JOIN strings s ON s.id = r.name_id").fetchall())
    got = collections.Counter((s["name"], s["ts"], s["end"]) for s in d.slices)
    assert got == expect and len(expect) >= 4
    marks = collections.Counter(db.execute(
        "SELECT s.value, m.ts_ns FROM marks m LEFT JOIN strings s ON s.id = m.name_id").fetchall())
    assert collections.Counter((i["name"], i["ts"]) for i in d.instants) == marks
    # categories: the domain's name (NVTX's default domain: "nvtx"); payloads as arguments
    domains = {c for s in d.slices for c in s["category"]}
    assert "nvtx" in domains and len(domains) >= 2
    payloads = sorted(v for (v,) in db.execute("SELECT payload FROM ranges WHERE payload IS NOT NULL"))
    assert sorted(s["args"]["payload"] for s in d.slices if "payload" in s["args"]) == payloads


def test_threads_and_processes_are_described(nvtx_session):
    path, d = nvtx_session
    db = sqlite3.connect(path)
    (pid, name), = db.execute("SELECT pid, name FROM processes").fetchall()
    processes = [t.process for t in d.tracks.values() if t.HasField("process")]
    assert [(p.pid, p.process_name) for p in processes] == [(pid, name)]
    threads = {(t.thread.pid, t.thread.tid) for t in d.tracks.values() if t.HasField("thread")}
    assert threads == {(pid, tid) for (tid,) in db.execute("SELECT tid FROM threads")}


@pytest.fixture(scope="module")
def cuda_session(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cuda")
    path = tmp / "session.db"
    db = sqlite3.connect(path)
    with open(os.path.join(SOURCE, "src", "db", "schema.sql")) as f:
        db.executescript(f.read())
    with open(os.path.join(SOURCE, "tests", "cuda_reports", "cuda_session.sql")) as f:
        db.executescript(f.read())
    gpu, = db.execute("SELECT min(id) FROM gpus").fetchone()
    db.executemany("INSERT INTO gpu_samples(gpu_id, ts_ns, power_mw, energy_mj, sm_clock_mhz)"
                   " VALUES (?, ?, ?, ?, ?)",
                   [(gpu, 100 + 10000 * i, 70000 + 1000 * i, 5000 + 7 * i, 1980) for i in range(5)])
    db.commit()
    return path, perfetto_check.decode(export(path, tmp / "s.perfetto-trace"))


def test_gpu_work_and_api_calls_equal_the_database(cuda_session):
    path, d = cuda_session
    assert d.problems == []
    db = sqlite3.connect(path)
    on_gpu = [s for s in d.slices if s["category"] in (["kernel"], ["memcpy"], ["memset"])]
    kernels = collections.Counter(db.execute(
        "SELECT s.value, k.start_ns, k.end_ns FROM kernels k JOIN strings s"
        " ON s.id = coalesce(k.demangled_id, k.name_id)").fetchall())
    assert collections.Counter((s["name"], s["ts"], s["end"]) for s in on_gpu
                               if s["category"] == ["kernel"]) == kernels
    copies = collections.Counter(db.execute(
        "SELECT 'Memcpy ' || copy_kind, start_ns, end_ns, bytes, src_kind, dst_kind FROM memcpys").fetchall())
    assert collections.Counter((s["name"], s["ts"], s["end"], s["args"]["bytes"], s["args"]["source memory"],
                                s["args"]["destination memory"]) for s in on_gpu
                               if s["category"] == ["memcpy"]) == copies
    assert sum(s["category"] == ["memset"] for s in on_gpu) == db.execute("SELECT count(*) FROM memsets").fetchone()[0]
    api = collections.Counter(db.execute(
        "SELECT s.value, a.start_ns, a.end_ns FROM cuda_api a JOIN strings s ON s.id = a.name_id").fetchall())
    assert collections.Counter((s["name"], s["ts"], s["end"]) for s in d.slices
                               if s["category"] == ["cuda_api"]) == api
    # GPU work sits on a stream track under its GPU's track
    for s in on_gpu:
        parent = d.tracks[d.tracks[s["track"]].parent_uuid]
        assert parent.name.startswith("GPU ")


def test_flows_go_from_each_launch_to_its_gpu_work(cuda_session):
    path, d = cuda_session
    db = sqlite3.connect(path)
    expect = set(db.execute(
        "SELECT a.correlation_id, o.correlation_id FROM (SELECT api_id, correlation_id FROM kernels"
        " UNION ALL SELECT api_id, correlation_id FROM memcpys UNION ALL SELECT api_id, correlation_id"
        " FROM memsets) o JOIN cuda_api a ON a.id = o.api_id").fetchall())
    got = {(start["args"]["correlation"], end["args"]["correlation"])
           for start, end in perfetto_check.flows(d).values()}
    assert got == expect and len(expect) >= 3
    for start, end in perfetto_check.flows(d).values():
        assert start["category"] == ["cuda_api"] and start["ts"] <= end["ts"]


def test_counters_hold_the_nvml_samples_and_device_memory(cuda_session):
    _, d = cuda_session
    by_name = {d.track_name(uuid): values for uuid, values in d.counters.items()}
    assert by_name["Power (W)"] == [(100 + 10000 * i, 70.0 + i) for i in range(5)]
    assert by_name["Energy (J)"] == [(100 + 10000 * i, 0.007 * i) for i in range(5)]
    assert by_name["SM clock (MHz)"] == [(100 + 10000 * i, 1980.0) for i in range(5)]
    # device memory in use: +4 MB at 800, +1 MB at 900, -4 MB at 30000 (cuda_session.sql); the
    # pinned host allocation is not counted
    assert by_name["Device memory in use (B)"] == [(800, 4e6), (900, 5e6), (30000, 1e6)]
    for uuid in d.counters:
        assert d.tracks[uuid].HasField("counter")
        assert d.track_name(d.tracks[uuid].parent_uuid).startswith("GPU ")


def test_a_training_run_is_at_least_five_times_smaller_than_chrome_json(tmp_path):
    """bench/bench_export.py's PyTorch-like session (ranges, launches, kernels, copies, NVML)."""
    sys.path.insert(0, os.path.join(SOURCE, "bench"))
    from bench_export import make_training_db
    events = make_training_db(str(tmp_path / "t.db"), steps=200)
    chrome = os.path.getsize(export(tmp_path / "t.db", tmp_path / "t.json", "chrome"))
    proto = os.path.getsize(export(tmp_path / "t.db", tmp_path / "t.perfetto-trace"))
    d = perfetto_check.decode(tmp_path / "t.perfetto-trace")
    assert d.problems == []
    assert 2 * len(d.slices) + sum(map(len, d.counters.values())) == events
    assert chrome >= 5 * proto, (chrome, proto)


def test_nvtx_ranges_and_marks_are_at_least_four_times_smaller(tmp_path):
    """NVTX alone, where Chrome's complete events are at their most compact (one JSON object
    per range against a begin and an end here): 20000 ranges and 10000 marks."""
    pytest.importorskip("nvtx")
    program = tmp_path / "many.py"
    program.write_text("import nvtx\nfor i in range(10000):\n"
                       "    with nvtx.annotate('step', color='blue'):\n"
                       "        with nvtx.annotate('forward'):\n            nvtx.mark(f'm{i % 10}')\n")
    r = lantern("profile", "-t", "nvtx", "-o", "m.db", "--", sys.executable, str(program), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    chrome = os.path.getsize(export(tmp_path / "m.db", tmp_path / "m.json", "chrome"))
    proto = os.path.getsize(export(tmp_path / "m.db", tmp_path / "m.perfetto-trace"))
    d = perfetto_check.decode(tmp_path / "m.perfetto-trace")
    db = sqlite3.connect(tmp_path / "m.db")  # (a starved writer may have dropped some: counted there)
    ranges, marks = db.execute("SELECT (SELECT count(*) FROM ranges), (SELECT count(*) FROM marks)").fetchone()
    assert (len(d.slices), len(d.instants)) == (ranges, marks) and ranges > 10000 and d.problems == []
    assert chrome >= 4 * proto, (chrome, proto)


def test_existing_output_is_refused_without_force(nvtx_session, tmp_path):
    path, _ = nvtx_session
    out = tmp_path / "t.perfetto-trace"
    out.write_bytes(b"keep me")
    r = lantern("export", str(path), "--format", "perfetto", "-o", str(out))
    assert r.returncode == 1
    assert r.stderr.startswith(f"lantern: '{out}' exists (use --force to replace it")
    assert out.read_bytes() == b"keep me"
    r = lantern("export", str(path), "--format", "perfetto", "-o", str(out), "--force")
    assert r.returncode == 0 and out.read_bytes() != b"keep me"
    assert sorted(os.listdir(tmp_path)) == ["t.perfetto-trace"]  # no temporary file left


def test_a_failed_export_leaves_nothing(nvtx_session, tmp_path):
    path, _ = nvtx_session
    r = lantern("export", str(path), "--format", "perfetto", "-o", str(tmp_path / "missing" / "t.pf"))
    assert r.returncode == 1 and r.stderr.startswith("lantern: cannot write")
    r = lantern("export", str(path), "--format", "protobuf")
    assert r.returncode == 2 and "unknown format 'protobuf' (chrome, perfetto)" in r.stderr


def test_names_that_are_not_utf8_are_replaced_as_in_the_json(nvtx_session, tmp_path):
    """Issue #28: invalid UTF-8 went raw into protobuf string fields; now each bad byte is
    U+FFFD, as the Chrome JSON export writes it."""
    db, _ = nvtx_session
    bad = tmp_path / "bad.db"
    con = sqlite3.connect(db)
    con.backup(sqlite3.connect(bad))
    con.close()
    con = sqlite3.connect(bad)
    name = con.execute("SELECT s.id, s.value FROM ranges r JOIN strings s ON s.id = r.name_id"
                       " ORDER BY r.id LIMIT 1").fetchone()
    con.execute("UPDATE strings SET value = CAST(X'6261642DFF2DC3' AS TEXT) WHERE id = ?", (name[0],))
    con.execute("INSERT INTO strings(id, value) VALUES(99999, CAST(X'74FE6872656164' AS TEXT))")
    con.execute("UPDATE threads SET name_id = 99999")
    con.commit()
    con.close()
    out = export(bad, tmp_path / "bad.perfetto-trace")
    data = out.read_bytes()
    assert b"bad-\xff-" not in data and b"t\xfehread" not in data
    decoded = perfetto_check.decode(out)
    assert "bad-\ufffd-\ufffd" in {s["name"] for s in decoded.slices} | {i["name"] for i in decoded.instants}
    assert "t\ufffdhread" in {decoded.track_name(u) for u in decoded.tracks}
    chrome = export(bad, tmp_path / "bad.json", "chrome").read_text(encoding="utf-8")
    assert "bad-\ufffd-\ufffd" in chrome and "t\ufffdhread" in chrome
