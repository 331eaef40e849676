"""End-to-end tests of `lantern merge`: two rank databases recorded here by `lantern profile`
(NVTX ranges from nvtx_workload, GPU rows from the fake NVML) are merged and the result checked
against the inputs read with Python's sqlite3: row counts, every id resolving, each rank's rows
on its own process, times shifted by the hosts' clock offsets; then the errors."""
import os
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

BUILD = Path(os.environ.get("LANTERN_BUILD", Path(__file__).resolve().parents[2] / "build"))
LANTERN = BUILD / "bin" / "lantern"
WORKLOAD = BUILD / "bin" / "nvtx_workload"
AGENT = BUILD / "lib" / "liblantern-agent.so"
FAKE = BUILD / "lib" / "liblantern_fake_nvml.so"
ENV = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS")}

pytestmark = pytest.mark.skipif(not AGENT.exists() or not FAKE.exists(),
                                reason="agent or fake NVML not built")

# Every column that holds another row's id: (table, column, table it points at). Written
# from docs/schema.md, independently of merge.c's rules.
REFERENCES = [
    ("processes", "parent_id", "processes"), ("threads", "process_id", "processes"),
    ("threads", "name_id", "strings"), ("threads", "os_name_id", "strings"),
    ("threads", "python_name_id", "strings"), ("domains", "name_id", "strings"),
    ("categories", "domain_id", "domains"), ("categories", "name_id", "strings"),
    ("ranges", "process_id", "processes"), ("ranges", "domain_id", "domains"),
    ("ranges", "name_id", "strings"), ("ranges", "parent_id", "ranges"),
    ("ranges", "start_thread_id", "threads"), ("ranges", "end_thread_id", "threads"),
    ("marks", "process_id", "processes"), ("marks", "thread_id", "threads"),
    ("marks", "domain_id", "domains"), ("marks", "name_id", "strings"),
    ("process_gpus", "process_id", "processes"), ("process_gpus", "gpu_id", "gpus"),
    ("gpu_samples", "gpu_id", "gpus"), ("nvml_sampler", "gpu_id", "gpus"),
    ("kernels", "process_id", "processes"), ("kernels", "gpu_id", "gpus"),
    ("kernels", "name_id", "strings"), ("kernels", "api_id", "cuda_api"),
    ("kernels", "nvtx_range_id", "ranges"), ("cuda_api", "thread_id", "threads"),
    ("energy_windows", "process_id", "processes"), ("energy_windows", "gpu_id", "gpus"),
    ("gpu_metric_sets", "gpu_id", "gpus"), ("gpu_metric_samples", "set_id", "gpu_metric_sets"),
    ("gpu_metric_status", "gpu_id", "gpus"),
]
COPIED = ["processes", "threads", "ranges", "marks", "gpu_samples", "nvml_sampler",
          "cuda_api", "kernels", "energy_windows", "gpu_metric_sets", "gpu_metric_samples",
          "gpu_metric_status"]


def lantern(*args, env=None, cwd=None):
    return subprocess.run([str(LANTERN), *map(str, args)], capture_output=True, text=True,
                          timeout=120, env=env or ENV, cwd=cwd)


def count(db, table):
    return db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def meta(db, key):
    return db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()[0]


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    """r0.db and r1.db: nvtx_workload as RANK=0 and RANK=1 on this host, with fake GPUs
    (GPU-aaaa on both ranks: one GPU of the host; GPU-bbbb on rank 1 only)."""
    d = tmp_path_factory.mktemp("ranks")
    gpus = {0: "gpu GPU-aaaa Fake-H100\n", 1: "gpu GPU-aaaa Fake-H100\ngpu GPU-bbbb Fake-H100\n"}
    for rank, lines in gpus.items():
        script = d / f"nvml{rank}.script"
        script.write_text(f"epoch_ns {time.clock_gettime_ns(time.CLOCK_MONOTONIC)}\n{lines}"
                          "power 0 0 100000\n")
        env = dict(ENV, RANK=str(rank), LANTERN_NVML_LIBRARY=str(FAKE),
                   LANTERN_FAKE_NVML_SCRIPT=str(script))
        env.pop("CUDA_VISIBLE_DEVICES", None)
        r = lantern("profile", "-t", "nvtx,nvml", "-o", f"r{rank}.db", "--", WORKLOAD,
                    "attributes", env=env, cwd=d)
        assert r.returncode == 0, r.stderr
        add_cuda_rows(d / f"r{rank}.db", rank)
        add_metric_rows(d / f"r{rank}.db", rank)
    return d


def add_cuda_rows(path, rank):
    """CUDA rows by hand (CI has no GPU): per rank, a launch in its last range and its kernel
    on GPU-aaaa, each naming the rank, so the merged links can be checked by name."""
    db = sqlite3.connect(path)
    (gpu,) = db.execute("SELECT id FROM gpus WHERE uuid = 'GPU-aaaa'").fetchone()
    rng, thread, start = db.execute(
        "SELECT id, start_thread_id, start_ns FROM ranges ORDER BY id DESC LIMIT 1").fetchone()
    db.execute("INSERT INTO strings(value) VALUES (?)", (f"kernel_of_rank_{rank}",))
    name = db.execute("SELECT last_insert_rowid()").fetchone()[0]
    db.execute("INSERT INTO cuda_api(process_id, thread_id, api, name_id, start_ns, end_ns,"
               " correlation_id, nvtx_range_id) VALUES (1, ?, 0, ?, ?, ?, 77, ?)",
               (thread, name, start, start + 10, rng))
    api = db.execute("SELECT last_insert_rowid()").fetchone()[0]
    db.execute("INSERT INTO kernels(process_id, gpu_id, device, correlation_id, start_ns,"
               " end_ns, name_id, api_id, nvtx_range_id) VALUES (1, ?, 0, 77, ?, ?, ?, ?, ?)",
               (gpu, start + 20, start + 30, name, api, rng))
    db.commit()


def add_metric_rows(path, rank):
    """GPU metric rows by hand (the sampler needs a GPU): per rank, two sets (so that the
    second input's set ids need renumbering), each with two samples whose sm_active names the
    rank and the set (rank 1, set 2: 12), and a status line on GPU-aaaa."""
    db = sqlite3.connect(path)
    (gpu,) = db.execute("SELECT id FROM gpus WHERE uuid = 'GPU-aaaa'").fetchone()
    (start,) = db.execute("SELECT start_ns FROM processes").fetchone()
    for set_id in (1, 2):
        db.execute("INSERT INTO gpu_metric_sets(id, gpu_id, source, period_ns, metrics)"
                   " VALUES (?, ?, 'CUPTI PM sampling', 100000, 'sm_active')", (set_id, gpu))
        for k in range(2):
            db.execute("INSERT INTO gpu_metric_samples(set_id, start_ns, end_ns, sm_active)"
                       " VALUES (?, ?, ?, ?)", (set_id, start + 100 * k, start + 100 * k + 100,
                                                10 * rank + set_id))
    db.execute("INSERT INTO gpu_metric_status(gpu_id, source, code, count, reason)"
               " VALUES (?, 'CUPTI PM sampling', 'lost', ?, 'buffer full')", (gpu, rank + 1))
    db.commit()


def merged(d, *inputs, out="all.db"):
    r = lantern("merge", *inputs, "-o", out, cwd=d)
    assert r.returncode == 0, r.stderr
    return sqlite3.connect(d / out)


def test_merge_keeps_every_row_and_id(ranks):
    r0, r1 = (sqlite3.connect(ranks / f"r{i}.db") for i in (0, 1))
    m = merged(ranks, "r0.db", "r1.db")
    for table in COPIED:
        assert count(m, table) == count(r0, table) + count(r1, table), table
    assert count(m, "processes") == 2 and count(m, "ranges") == 12
    # strings and domains by value, GPUs by uuid
    values = {v for db in (r0, r1) for (v,) in db.execute("SELECT value FROM strings")}
    assert sorted(v for (v,) in m.execute("SELECT value FROM strings")) == sorted(values)
    names = lambda db: sorted(str(n) for (n,) in db.execute(
        "SELECT s.value FROM domains d LEFT JOIN strings s ON s.id = d.name_id"))
    assert names(m) == names(r0) == names(r1)
    assert m.execute("SELECT uuid FROM gpus ORDER BY uuid").fetchall() == [("GPU-aaaa",),
                                                                           ("GPU-bbbb",)]
    for table, column, target in REFERENCES:
        dangling = m.execute(f"SELECT count(*) FROM {table} x WHERE x.{column} IS NOT NULL AND "
                             f"NOT EXISTS (SELECT 1 FROM {target} t WHERE t.id = x.{column})"
                             ).fetchone()[0]
        assert dangling == 0, (table, column)
    # each kernel on its rank's process, its launch and its range, on the one GPU-aaaa
    links = m.execute(
        "SELECT s.value, p.rank, a.process_id = k.process_id, g.uuid, r.process_id = k.process_id,"
        " r.id = a.nvtx_range_id, a.correlation_id FROM kernels k JOIN strings s ON s.id = k.name_id"
        " JOIN processes p ON p.id = k.process_id JOIN cuda_api a ON a.id = k.api_id"
        " JOIN gpus g ON g.id = k.gpu_id JOIN ranges r ON r.id = k.nvtx_range_id ORDER BY p.rank")
    assert links.fetchall() == [("kernel_of_rank_0", 0, 1, "GPU-aaaa", 1, 1, 77),
                                ("kernel_of_rank_1", 1, 1, "GPU-aaaa", 1, 1, 77)]
    # each sample on its own set, each set on GPU-aaaa, with the times it recorded
    sets = ("SELECT s.sm_active, s.start_ns, s.end_ns, g.uuid FROM gpu_metric_samples s"
            " JOIN gpu_metric_sets m ON m.id = s.set_id JOIN gpus g ON g.id = m.gpu_id"
            " ORDER BY s.sm_active, s.start_ns")
    assert m.execute(sets).fetchall() == sorted(r0.execute(sets).fetchall() +
                                                r1.execute(sets).fetchall())
    assert [v for (v,) in m.execute("SELECT DISTINCT sm_active FROM gpu_metric_samples"
                                    " ORDER BY 1")] == [1, 2, 11, 12]
    assert m.execute("SELECT g.uuid, sum(st.count) FROM gpu_metric_status st JOIN gpus g"
                     " ON g.id = st.gpu_id GROUP BY g.uuid").fetchall() == [("GPU-aaaa", 3)]
    # each rank's rows on its own process, with the names and times it recorded
    for rank, src in ((0, r0), (1, r1)):
        (pid,) = m.execute("SELECT id FROM processes WHERE rank = ?", (rank,)).fetchone()
        q = ("SELECT s.value, r.start_ns, r.end_ns, r.depth, t.tid FROM ranges r"
             " JOIN strings s ON s.id = r.name_id JOIN threads t ON t.id = r.start_thread_id"
             " WHERE r.process_id = {} AND t.process_id = r.process_id ORDER BY r.start_ns")
        assert m.execute(q.format(pid)).fetchall() == src.execute(
            q.format("(SELECT id FROM processes)")).fetchall()
        samples = ("SELECT g.uuid, count(*) FROM gpu_samples s JOIN gpus g ON g.id = s.gpu_id"
                   " GROUP BY g.uuid ORDER BY g.uuid")
    assert dict(m.execute(samples).fetchall()) == {
        u: dict(r0.execute(samples).fetchall()).get(u, 0) + dict(r1.execute(samples).fetchall())[u]
        for u in ("GPU-aaaa", "GPU-bbbb")}
    assert meta(m, "start_ns") == min(meta(r0, "start_ns"), meta(r1, "start_ns"))
    assert meta(m, "end_ns") == max(meta(r0, "end_ns"), meta(r1, "end_ns"))
    host = meta(r0, "host")
    assert meta(m, "host") == host and meta(m, "schema_version") == meta(r0, "schema_version")
    assert meta(m, "merged_inputs") == f"r0.db host={host} shift_ns=0\nr1.db host={host} shift_ns=0"
    assert meta(m, "trace") == meta(r0, "trace")
    # the merged database is an ordinary one
    r = lantern("stats", "all.db", cwd=ranks)
    assert r.returncode == 0 and "(rank 0)" in r.stdout and "(rank 1)" in r.stdout, r
    r = lantern("export", "--format", "chrome", "all.db", "-o", "all.json", cwd=ranks)
    assert r.returncode == 0, r.stderr


PAYLOAD_REFERENCES = [
    ("nvtx_payload_schemas", "process_id", "processes"), ("nvtx_payload_schemas", "domain_id", "domains"),
    ("nvtx_payload_schemas", "name_id", "strings"), ("nvtx_payloads", "range_id", "ranges"),
    ("nvtx_payloads", "mark_id", "marks"), ("nvtx_payloads", "schema_row", "nvtx_payload_schemas"),
    ("nvtx_payload_values", "payload_id", "nvtx_payloads"), ("nvtx_payload_values", "range_id", "ranges"),
    ("nvtx_payload_values", "mark_id", "marks"), ("nvtx_payload_values", "name_id", "strings"),
    ("nvtx_payload_values", "enum_name_id", "strings"),
]


def test_merge_keeps_nvtx_payloads_with_their_ranges_and_marks(tmp_path):
    """Two ranks of nccl_nvtx_workload (schemas, payloads on ranges and a mark): every payload
    row keeps its range or mark, its schema row and its values, on its own rank."""
    for rank in (0, 1):
        r = lantern("profile", "-t", "nvtx", "-o", f"p{rank}.db", "--",
                    BUILD / "bin" / "nccl_nvtx_workload", env=dict(ENV, RANK=str(rank)), cwd=tmp_path)
        assert r.returncode == 0, r.stderr
    m = merged(tmp_path, "p0.db", "p1.db")
    p0 = sqlite3.connect(tmp_path / "p0.db")
    for table in ("nvtx_payload_schemas", "nvtx_payload_entries", "nvtx_payload_enum_values",
                  "nvtx_payloads", "nvtx_payload_values", "marks"):
        assert count(m, table) == 2 * count(p0, table), table
    for table, column, target in PAYLOAD_REFERENCES:
        dangling = m.execute(f"SELECT count(*) FROM {table} x WHERE x.{column} IS NOT NULL AND "
                             f"NOT EXISTS (SELECT 1 FROM {target} t WHERE t.id = x.{column})"
                             ).fetchone()[0]
        assert dangling == 0, (table, column)
    q = """SELECT coalesce(rp.rank, mp.rank), coalesce(rs.value, ms.value), f.schema, f.field,
                  f.value, f.enum_name, s.process_id = coalesce(r.process_id, k.process_id)
           FROM nvtx_payload_fields f JOIN nvtx_payloads p ON p.id = f.payload_id
           JOIN nvtx_payload_schemas s ON s.id = p.schema_row
           LEFT JOIN ranges r ON r.id = f.range_id LEFT JOIN strings rs ON rs.id = r.name_id
           LEFT JOIN processes rp ON rp.id = r.process_id
           LEFT JOIN marks k ON k.id = f.mark_id LEFT JOIN strings ms ON ms.id = k.name_id
           LEFT JOIN processes mp ON mp.id = k.process_id
           ORDER BY 1, f.payload_id, f.entry_idx"""
    rows = m.execute(q).fetchall()
    one = [row[1:] for row in p0.execute(q.replace("coalesce(rp.rank, mp.rank)", "0")).fetchall()]
    assert len(one) == 30 and all(row[-1] == 1 for row in one)
    assert rows == [(rank, *row) for rank in (0, 1) for row in one]


def test_merge_shifts_another_hosts_clock(ranks):
    """r1 as if recorded on a host whose wall clock is 5 s ahead at the same monotonic time:
    its times move by its wall-monotonic offset minus the first input's."""
    shutil.copy(ranks / "r1.db", ranks / "far.db")
    far = sqlite3.connect(ranks / "far.db")
    far.execute("UPDATE meta SET value = 'far-host' WHERE key = 'host'")
    far.execute("UPDATE meta SET value = value + 5000000000 WHERE key = 'start_wall_ns'")
    far.execute("UPDATE gpus SET uuid = 'GPU-cccc' WHERE uuid = 'GPU-aaaa'")  # its own GPU
    far.commit()
    r0 = sqlite3.connect(ranks / "r0.db")
    shift = ((meta(far, "start_wall_ns") - meta(far, "start_ns"))
             - (meta(r0, "start_wall_ns") - meta(r0, "start_ns")))
    assert abs(shift - 5_000_000_000) < 1_000_000_000  # the two runs were moments apart
    m = merged(ranks, "r0.db", "far.db", out="far-all.db")
    q = "SELECT start_ns, end_ns FROM ranges WHERE process_id = {} ORDER BY id"
    (pid,) = m.execute("SELECT id FROM processes WHERE rank = 1").fetchone()
    assert m.execute(q.format(pid)).fetchall() == [
        (s + shift, e + shift) for s, e in far.execute(q.format(1)).fetchall()]
    assert m.execute("SELECT start_ns FROM processes WHERE id = ?", (pid,)).fetchone()[0] == \
        far.execute("SELECT start_ns FROM processes").fetchone()[0] + shift
    assert meta(m, "end_ns") == meta(far, "end_ns") + shift
    q = "SELECT k.start_ns, a.end_ns FROM kernels k JOIN cuda_api a ON a.id = k.api_id WHERE k.process_id = {}"
    assert m.execute(q.format(pid)).fetchall() == [
        (k + shift, a + shift) for k, a in far.execute(q.format(1)).fetchall()]
    samples = "SELECT min(ts_ns) FROM gpu_samples s JOIN gpus g ON g.id = s.gpu_id WHERE uuid = 'GPU-bbbb'"
    assert m.execute(samples).fetchone()[0] == far.execute(samples).fetchone()[0] + shift
    metrics = ("SELECT s.start_ns, s.end_ns, s.sm_active FROM gpu_metric_samples s"
               " JOIN gpu_metric_sets m ON m.id = s.set_id JOIN gpus g ON g.id = m.gpu_id"
               " WHERE g.uuid = '{}' ORDER BY 3, 1")
    assert m.execute(metrics.format("GPU-cccc")).fetchall() == [
        (s + shift, e + shift, v) for s, e, v in far.execute(metrics.format("GPU-cccc"))]
    assert meta(m, "host") == f"{meta(r0, 'host')},far-host"
    assert meta(m, "merged_inputs").splitlines()[1] == f"far.db host=far-host shift_ns={shift}"

    # a second input of far-host takes far-host's shift, even if its own offset differs a
    # little (both of its inputs stay on one monotonic clock)
    shutil.copy(ranks / "far.db", ranks / "far2.db")
    far2 = sqlite3.connect(ranks / "far2.db")
    far2.execute("UPDATE meta SET value = value + 1000 WHERE key = 'start_wall_ns'")
    far2.commit()
    m = merged(ranks, "r0.db", "far.db", "far2.db", out="far-all2.db")
    assert [line.split()[2] for line in meta(m, "merged_inputs").splitlines()] == [
        "shift_ns=0", f"shift_ns={shift}", f"shift_ns={shift}"]
    assert m.execute("SELECT count(DISTINCT start_ns) FROM processes WHERE rank = 1").fetchone() == (1,)


def one_error(r, code=1):
    assert r.returncode == code, r
    lines = r.stderr.strip().splitlines()
    assert lines and lines[0].startswith("lantern: "), r.stderr
    return lines[0]


def test_merge_errors_write_nothing(ranks):
    d = ranks
    before = sorted(p.name for p in d.iterdir())
    (d / "text.db").write_text("not a database\n")
    shutil.copy(d / "r1.db", d / "old.db")
    old = sqlite3.connect(d / "old.db")
    old.execute("UPDATE meta SET value = 2 WHERE key = 'schema_version'")
    old.commit()
    shutil.copy(d / "r1.db", d / "twohosts.db")
    th = sqlite3.connect(d / "twohosts.db")
    th.execute("UPDATE meta SET value = 'far-host' WHERE key = 'host'")
    th.commit()
    damaged = d / "damaged.db"
    data = bytearray((d / "r1.db").read_bytes())
    data[len(data) // 2:] = b"\xff" * (len(data) - len(data) // 2)
    damaged.write_bytes(data)
    made = {"text.db", "old.db", "twohosts.db", "damaged.db"}

    assert "not a Lantern database" in one_error(lantern("merge", "r0.db", "text.db", "-o", "x.db", cwd=d))
    assert "schema version 2" in one_error(lantern("merge", "r0.db", "old.db", "-o", "x.db", cwd=d))
    assert "GPU-aaaa is on host" in one_error(
        lantern("merge", "r0.db", "twohosts.db", "-o", "x.db", cwd=d))
    assert "damaged.db" in one_error(lantern("merge", "r0.db", "damaged.db", "-o", "x.db", cwd=d))
    assert "given twice" in one_error(lantern("merge", "r0.db", "r0.db", "-o", "x.db", cwd=d))
    assert "missing -o" in one_error(lantern("merge", "r0.db", cwd=d), code=2)
    assert sorted(p.name for p in d.iterdir()) == sorted(set(before) | made)  # nothing written

    (d / "x.db").write_text("keep me\n")
    assert "exists" in one_error(lantern("merge", "r0.db", "r1.db", "-o", "x.db", cwd=d))
    assert (d / "x.db").read_text() == "keep me\n"
    assert "input and the output" in one_error(
        lantern("merge", "r0.db", "r1.db", "-o", "r1.db", "--force", cwd=d))
    r = lantern("merge", "r0.db", "r1.db", "-o", "x.db", "--force", cwd=d)
    assert r.returncode == 0, r.stderr
    assert count(sqlite3.connect(d / "x.db"), "processes") == 2
    umask = os.umask(0)
    os.umask(umask)
    assert (d / "x.db").stat().st_mode & 0o777 == 0o666 & ~umask  # as a plain open makes it
    assert sorted(p.name for p in d.iterdir()) == sorted(set(before) | made | {"x.db"})


def test_merge_interrupted_writes_nothing(ranks, tmp_path):
    """SIGINT pending from the start (blocked, raised before exec; execve keeps it pending):
    the merge polls it, stops, and leaves neither the output nor its temporary file."""
    def pending_sigint():
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        os.kill(os.getpid(), signal.SIGINT)
    for name in ("r0.db", "r1.db"):
        shutil.copy(ranks / name, tmp_path / name)
    r = subprocess.run([str(LANTERN), "merge", "r0.db", "r1.db", "-o", "int.db"], cwd=tmp_path,
                       env=ENV, capture_output=True, text=True, timeout=120,
                       preexec_fn=pending_sigint)
    assert "interrupted; nothing written" in one_error(r)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r0.db", "r1.db"]


def test_a_database_and_its_copy_are_refused_without_force(ranks):
    """Issue #28: merging a database with a copy of itself doubled every count silently."""
    d = ranks
    shutil.copy(d / "r0.db", d / "copy.db")
    line = one_error(lantern("merge", "r0.db", "copy.db", "-o", "twice.db", cwd=d))
    assert line == ("lantern: 'copy.db' is the same session as 'r0.db' (a copy of it?): merging "
                    "them would count every event twice (use --force to merge them anyway)")
    assert not (d / "twice.db").exists()
    r = lantern("merge", "r0.db", "copy.db", "-o", "twice.db", "--force", cwd=d)
    assert r.returncode == 0, r.stderr
    assert count(sqlite3.connect(d / "twice.db"), "ranges") == 2 * count(sqlite3.connect(d / "r0.db"), "ranges")
