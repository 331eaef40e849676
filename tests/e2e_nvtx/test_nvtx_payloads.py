"""NVTX extended payloads end to end: tests/agent/nccl_nvtx_workload.c reports itself as NCCL
does (payload schemas and an enumeration registered through the real NVTX payload-extension
headers, collective ranges carrying extended payloads) under `lantern profile`; the database's
schemas, payloads and decoded values (docs/schema.md) are checked with SQL, value for value.
Needs $LANTERN_BUILD and $NCCL_NVTX_WORKLOAD."""
import os
import sqlite3
import subprocess

BUILD = os.environ.get("LANTERN_BUILD", "")
LANTERN = os.path.join(BUILD, "bin", "lantern")
WORKLOAD = os.environ.get("NCCL_NVTX_WORKLOAD", os.path.join(BUILD, "bin", "nccl_nvtx_workload"))
COMM = 0x1234ABCD5678EF01
STATIC = 1 << 24


def profile(tmp_path, *args):
    """Runs the workload under lantern profile; returns (database, lantern's stderr)."""
    db = tmp_path / "x.db"
    env = dict(os.environ)
    if os.environ.get("LANTERN_TEST_PRELOAD"):  # sanitizer build: see CMakeLists.txt
        env.update(LD_PRELOAD=os.environ["LANTERN_TEST_PRELOAD"], ASAN_OPTIONS="detect_leaks=0")
    run = subprocess.run([LANTERN, "profile", "-t", "nvtx", "-o", str(db), "--", WORKLOAD, *args],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return sqlite3.connect(db), run.stderr


def fields(db, range_name):
    """(field, value, enum name) of every payload value of the ranges named range_name."""
    return db.execute("""
        SELECT f.field, f.value, f.enum_name FROM nvtx_payload_fields f
        JOIN ranges r ON r.id = f.range_id LEFT JOIN strings s ON s.id = r.name_id
        WHERE s.value IS ? ORDER BY r.start_ns, f.payload_id, f.entry_idx, f.array_idx""",
                      (range_name,)).fetchall()


def test_bytes_per_collective_as_docs_schema_md_shows(tmp_path):
    db, _ = profile(tmp_path)
    rows = db.execute("""
        SELECT s.value AS call, count(*), sum(f.value) AS bytes
        FROM ranges r JOIN strings s ON s.id = r.name_id
        JOIN nvtx_payload_fields f ON f.range_id = r.id AND f.field = 'Message size [bytes]'
        GROUP BY s.value ORDER BY s.value""").fetchall()
    assert rows == [("ncclAllGather", 1, 4096), ("ncclAllReduce", 5, 1024 + 1024 + 1048576 + 256 + 512)]


def test_schemas_and_the_enumeration_are_recorded_as_registered(tmp_path):
    db, _ = profile(tmp_path)
    schemas = db.execute("""
        SELECT p.schema_id, s.value, p.is_enum, p.schema_type, p.static_size, p.entry_count, d.value
        FROM nvtx_payload_schemas p LEFT JOIN strings s ON s.id = p.name_id
        JOIN domains dm ON dm.id = p.domain_id JOIN strings d ON d.id = dm.name_id
        ORDER BY p.id""").fetchall()
    assert schemas == [
        (STATIC + 14, None, 1, None, 4, 5, "NCCL"),
        (STATIC + 0, "CommInitRank", 0, 1, 24, 4, "NCCL"),
        (STATIC + 5, "AllReduce", 0, 1, 24, 3, "NCCL"),
        (STATIC + 4, "AllGather", 0, 1, 16, 2, "NCCL"),
        (STATIC + 20, "Legacy", 0, 1, 0, 4, "NCCL"),
    ]
    entries = db.execute("""
        SELECT e.idx, n.value, d.value, e.type, e.array_length, e.byte_offset
        FROM nvtx_payload_entries e JOIN nvtx_payload_schemas p ON p.id = e.schema_row
        LEFT JOIN strings n ON n.id = e.name_id LEFT JOIN strings d ON d.id = e.description_id
        WHERE p.schema_id = ? ORDER BY e.idx""", (STATIC + 5,)).fetchall()
    assert entries == [(0, "NCCL communicator ID", None, 18, 0, 0),
                       (1, "Message size [bytes]", None, 22, 0, 8),
                       (2, "Reduction operation", None, STATIC + 14, 0, 16)]
    values = db.execute("""SELECT v.idx, s.value, v.value, v.is_flag FROM nvtx_payload_enum_values v
                           JOIN strings s ON s.id = v.name_id ORDER BY v.idx""").fetchall()
    assert values == [(0, "Sum", 0, 0), (1, "Product", 1, 0), (2, "Max", 2, 0), (3, "Min", 3, 0),
                      (4, "Avg", 4, 0)]


def test_values_are_decoded_through_their_schema(tmp_path):
    db, _ = profile(tmp_path)
    # the communicator's payload came with nvtxRangePopPayload
    assert fields(db, "ncclCommInitRank") == [("NCCL communicator ID", COMM, None),
                                              ("No. of ranks", 4, None), ("Rank", 1, None),
                                              ("CUDA device", 0, None)]
    ops = [row for row in fields(db, "ncclAllReduce") if row[0] == "Reduction operation"]
    assert ops == [("Reduction operation", 0, "Sum")] * 2 + [("Reduction operation", 2, "Max")] + \
        [("Reduction operation", 4, "Avg")] * 2
    # no offsets given: natural alignment (uint8 at 0, uint32 at 4, double at 8, char[8] at 16)
    assert fields(db, "legacy") == [("flag", 7, None), ("count", 123456, None),
                                    ("ratio", 0.25, None), ("tag", "ring", None)]
    # a payload whose schema id is a predefined type: one unnamed value
    assert fields(db, "predefined") == [(None, 77, None)]
    # nvtxRangePushPayload: a range without a message, its payload decoded
    assert fields(db, None) == [("NCCL communicator ID", COMM, None),
                                ("Message size [bytes]", 64, None),
                                ("Reduction operation", 3, "Min")]
    marks = db.execute("""SELECT s.value, f.field, f.value FROM nvtx_payload_fields f
                          JOIN marks m ON m.id = f.mark_id JOIN strings s ON s.id = m.name_id
                          ORDER BY f.entry_idx""").fetchall()
    assert marks == [("marked", "NCCL communicator ID", COMM), ("marked", "Message size [bytes]", 4096)]


def test_unknown_schema_keeps_the_bytes_and_warns_once(tmp_path):
    db, stderr = profile(tmp_path)
    row = db.execute("""SELECT p.schema_id, p.schema_row, p.size, p.data, p.truncated
                        FROM nvtx_payloads p JOIN ranges r ON r.id = p.range_id
                        JOIN strings s ON s.id = r.name_id WHERE s.value = 'unknown'""").fetchall()
    assert row == [(STATIC + 99, None, 8, (42).to_bytes(8, "little"), 0)]
    assert fields(db, "unknown") == []
    assert stderr.count(f"schema {STATIC + 99} with no registered schema") == 1
    warning, = db.execute("SELECT import_warning FROM processes").fetchone()
    assert f"NVTX payloads of schema {STATIC + 99}" in warning


def test_a_payload_longer_than_256_bytes_is_cut_and_flagged(tmp_path):
    db, stderr = profile(tmp_path)
    row = db.execute("""SELECT p.schema_id, p.size, p.data, p.truncated, p.count
                        FROM nvtx_payloads p JOIN ranges r ON r.id = p.range_id
                        JOIN strings s ON s.id = r.name_id WHERE s.value = 'big'""").fetchall()
    assert row == [(1023, 300, bytes(range(256)), 1, 1)]
    assert "schema 1023" not in stderr  # raw bytes by the program's own choice: no warning


def test_nccl_ranges_stay_ordinary_ranges_for_nvtx_sum(tmp_path):
    db, _ = profile(tmp_path)
    assert db.execute("SELECT count(*) FROM ranges WHERE end_ns IS NULL").fetchone() == (0,)
    assert db.execute("SELECT count(*), count(payload) FROM ranges").fetchone() == (14, 0)
    csv = subprocess.run([LANTERN, "stats", str(tmp_path / "x.db"), "--format", "csv"],
                         capture_output=True, text=True, check=True).stdout
    counts = {line.split(",")[-1]: int(line.split(",")[2]) for line in csv.splitlines()[1:]}
    assert counts["NCCL:ncclAllReduce"] == 5 and counts["NCCL:ncclCommInitRank"] == 1
    assert counts["NCCL:(unnamed)"] == 1


def test_a_fork_child_has_the_schemas_in_its_own_file(tmp_path):
    db, _ = profile(tmp_path, "fork")
    rows = db.execute("""SELECT p.pid, f.field, f.value, f.enum_name FROM nvtx_payload_fields f
                         JOIN ranges r ON r.id = f.range_id JOIN processes p ON p.id = r.process_id
                         ORDER BY f.entry_idx""").fetchall()
    assert [row[1:] for row in rows] == [("NCCL communicator ID", COMM, None),
                                         ("Message size [bytes]", 2048, None),
                                         ("Reduction operation", 1, "Product")]
    parent, child = db.execute("SELECT id FROM processes ORDER BY start_ns").fetchall()
    assert db.execute("SELECT count(*) FROM nvtx_payload_schemas WHERE process_id = ?",
                      child).fetchone() == (5,)
