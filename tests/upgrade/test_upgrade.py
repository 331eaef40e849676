"""Every database an older Lantern wrote opens (issue #28; docs/schema.md, "Compatibility").
schema-vN.db.gz is what the Lantern of schema version N wrote for `lantern profile -- nvtx_demo
2` (make_old_databases.sh): each is read by every command through an upgraded copy, left as
it was, and `lantern upgrade` rewrites it at this schema with every row it had. The expected
numbers come from the old file itself, by SQL."""
import gzip
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

BUILD = Path(os.environ.get("LANTERN_BUILD", Path(__file__).resolve().parents[2] / "build"))
LANTERN = BUILD / "bin" / "lantern"
HERE = Path(__file__).resolve().parent
SOURCE = HERE.parents[1]
VERSIONS = [1, 2, 3, 4, 5, 6, 7, 8]
CURRENT = 9
ENV = {k: v for k, v in os.environ.items() if k != "COLUMNS"}  # whole lines


def lantern(*args, cwd=None):
    return subprocess.run([str(LANTERN), *map(str, args)], capture_output=True, text=True,
                          timeout=120, env=ENV, cwd=cwd)


@pytest.fixture(params=VERSIONS)
def old(request, tmp_path):
    path = tmp_path / f"schema-v{request.param}.db"
    path.write_bytes(gzip.decompress((HERE / f"schema-v{request.param}.db.gz").read_bytes()))
    return request.param, path


def query(path, sql):
    with sqlite3.connect(path) as db:
        return db.execute(sql).fetchall()


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_kept_databases_are_of_every_older_schema():
    for v in VERSIONS:
        data = gzip.decompress((HERE / f"schema-v{v}.db.gz").read_bytes())
        path = HERE / f".check-v{v}.db"
        try:
            path.write_bytes(data)
            assert query(path, "SELECT value FROM meta WHERE key = 'schema_version'") == [(str(v),)] \
                or query(path, "SELECT value FROM meta WHERE key = 'schema_version'") == [(v,)]
        finally:
            path.unlink()
    assert max(VERSIONS) == CURRENT - 1  # a new schema version keeps a database of the last one


def test_every_command_reads_an_old_database_through_an_upgraded_copy(old, tmp_path):
    version, path = old
    before = digest(path)
    r = lantern("stats", path, "--format", "json")
    assert r.returncode == 0, r.stderr
    assert r.stderr.startswith(f"lantern: '{path}' is of schema version {version} (an older "
                               f"Lantern): reading an upgraded copy ('lantern upgrade {path}'")
    rows = {row["range"]: row for row in json.loads(r.stdout)["rows"]}
    expected = query(path, "SELECT coalesce(ds.value, '') || ':' || s.value, count(*),"
                           " sum(end_ns - start_ns) FROM ranges r JOIN strings s ON s.id = r.name_id"
                           " LEFT JOIN domains d ON d.id = r.domain_id"
                           " LEFT JOIN strings ds ON ds.id = d.name_id"
                           " WHERE end_ns IS NOT NULL GROUP BY 1")
    assert {k: (v["instances"], v["total_ns"]) for k, v in rows.items()} == \
        {label: (n, total) for label, n, total in expected}
    for args in (["stats", path], ["analyze", path, "--details"], ["kernels", path],
                 ["export", path, "--format", "chrome", "-o", tmp_path / "x.json"],
                 ["export", path, "--format", "perfetto", "-o", tmp_path / "x.pftrace"],
                 ["report", path, "-o", tmp_path / "x.html"]):
        r = lantern(*args)
        assert r.returncode == 0, (args, r.stderr)
    assert digest(path) == before  # read, never written
    assert not list(tmp_path.glob("lantern-upgraded-*"))


def test_upgrade_rewrites_the_file_at_this_schema_with_every_row(old, tmp_path):
    version, path = old
    original = tmp_path / "original.db"
    shutil.copy(path, original)
    r = lantern("upgrade", path)
    assert r.returncode == 0, r.stderr
    assert r.stderr == f"lantern: '{path}' upgraded from schema version {version} to {CURRENT}\n"
    meta = dict(query(path, "SELECT key, value FROM meta"))
    assert int(meta["schema_version"]) == CURRENT and int(meta["upgraded_from"]) == version
    tables = [t for t, in query(original, "SELECT name FROM sqlite_master WHERE type = 'table'")]
    for table in tables:  # every row of every table the old file had (meta: + upgraded_from)
        [(now,)], [(then,)] = (query(p, f"SELECT count(*) FROM {table}") for p in (path, original))
        assert now == then + (table == "meta"), table
    assert query(path, "SELECT * FROM ranges ORDER BY id") == \
        query(original, "SELECT * FROM ranges ORDER BY id")
    # every table, view and index of this schema, those added since empty (7: CPU sampling)
    fresh = sqlite3.connect(":memory:")
    fresh.executescript((SOURCE / "src/db/schema.sql").read_text())
    fresh.executescript((SOURCE / "src/db/indexes.sql").read_text())
    objects = "SELECT type, name FROM sqlite_master ORDER BY 1, 2"
    assert query(path, objects) == fresh.execute(objects).fetchall()
    assert query(path, "SELECT count(*) FROM cpu_samples") == [(0,)]
    # what the rows tell: a version 1 database had no process names
    assert query(path, "SELECT name FROM processes") == [("nvtx_demo",)]
    assert query(path, "SELECT count(*) FROM process_labels") == [(1,)]
    r = lantern("stats", path)
    assert r.returncode == 0 and r.stderr == "" and "Processes:       1" in r.stdout
    # CPU sampling (on by default from schema 8's Lantern): its line where the old file has it
    sampled = "cpu_sampling" in tables and query(original, "SELECT count(*) FROM cpu_sampling")[0][0]
    assert ("CPU sampling:" in r.stdout) == bool(sampled)
    # schema 9's columns are not known in an older file: NULL, and no thread state
    if sampled:
        assert query(path, "SELECT DISTINCT switches, thread_states FROM cpu_sampling") == [(None, None)]
    assert query(path, "SELECT count(*) FROM cpu_thread_states") == [(0,)]
    r = lantern("stats", path, "-r", "thread_state_sum")
    assert r.returncode == 0 and "thread states unknown" in r.stderr, r.stderr
    again = lantern("upgrade", path)
    assert again.returncode == 0 and "already of schema version" in again.stderr
    assert not [f for f in tmp_path.iterdir() if f.name not in (path.name, original.name)]


def test_upgrade_into_another_file_never_overwrites_without_force(tmp_path):
    path = tmp_path / "v3.db"
    path.write_bytes(gzip.decompress((HERE / "schema-v3.db.gz").read_bytes()))
    out = tmp_path / "new.db"
    out.write_text("mine")
    r = lantern("upgrade", path, "-o", out)
    assert r.returncode == 1 and r.stderr == f"lantern: '{out}' exists (use --force to replace it)\n"
    assert out.read_text() == "mine"
    r = lantern("upgrade", path, "-o", out, "-f")
    assert r.returncode == 0, r.stderr
    assert query(out, "SELECT value FROM meta WHERE key = 'schema_version'") == [(str(CURRENT),)] \
        or query(out, "SELECT value FROM meta WHERE key = 'schema_version'") == [(CURRENT,)]
    assert query(path, "SELECT value FROM meta WHERE key = 'schema_version'") in ([("3",)], [(3,)])


def test_merge_asks_for_an_upgrade_first(tmp_path):
    path = tmp_path / "v4.db"
    path.write_bytes(gzip.decompress((HERE / "schema-v4.db.gz").read_bytes()))
    r = lantern("merge", path, path, "-o", tmp_path / "all.db")
    assert r.returncode == 1 and r.stderr == (
        f"lantern: cannot merge '{path}': schema version 4 (an older Lantern): upgrade it "
        f"first with 'lantern upgrade {path}'\n")
