"""`lantern profile --python-functions` end to end: program/app.py (unchanged, no nvtx package
needed) is recorded by the real launcher under each CPython available (the one running this
test, and pyenv's 3.8-3.13: sys.setprofile before 3.12, sys.monitoring from 3.12), and the
ranges are checked in the database: qualified names, exact counts per process and thread,
nesting, exceptions, generators, a name exported by a package (mypkg.Frame.groupby, defined in
mypkg.core), functions no pattern names left out, a user's sitecustomize still run."""

import glob
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
BUILD = Path(os.environ.get("LANTERN_BUILD", HERE.parents[1] / "build"))
LANTERN = BUILD / "bin" / "lantern"
PYENV = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))


def interpreters():
    found = {f"{sys.version_info[0]}.{sys.version_info[1]}": sys.executable}
    for minor in range(8, 14):
        for python in sorted(glob.glob(str(PYENV / "versions" / f"3.{minor}.*" / "bin" /
                                           f"python3.{minor}"))):
            found.setdefault(f"3.{minor}", python)
    return sorted(found.items())


PYTHONS = interpreters()


def profile(tmp_path, python, patterns, *extra, env_extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANTERN_")}
    env.update(env_extra or {})
    env["PYTHONPATH"] = f"{HERE / 'program'}:{HERE / 'program' / 'usersite'}"
    db = tmp_path / "run.db"
    r = subprocess.run([str(LANTERN), "profile", "-f", "-t", "nvtx", "-o", str(db), *extra,
                        "--python-functions", patterns, "--", python,
                        str(HERE / "program" / "app.py")],
                       capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "lantern: --python-functions" not in r.stderr, r.stderr
    return sqlite3.connect(db), r.stdout.splitlines()


def ranges(db):
    """{name: [(pid, thread tid is the process's main thread, depth, ended)]} of the domain
    python (no other domain may hold ranges here)."""
    rows = db.execute("""
        SELECT d.value, n.value, p.pid, t.tid = p.pid, r.depth, r.end_ns IS NOT NULL
        FROM ranges r JOIN processes p ON p.id = r.process_id
        JOIN threads t ON t.id = r.start_thread_id
        JOIN domains ON domains.id = r.domain_id JOIN strings d ON d.id = domains.name_id
        JOIN strings n ON n.id = r.name_id ORDER BY r.start_ns""").fetchall()
    assert {row[0] for row in rows} == {"python"}
    out = {}
    for _, name, pid, main_thread, depth, ended in rows:
        out.setdefault(name, []).append((pid, main_thread, depth, ended))
    return out


def hot_path(version, fallback):
    """Which path records the calls: the agent's C callbacks (3.9+: PyFrame_GetCode) unless
    the Python fallback is forced (LANTERN_PYFUNC_HOT_PATH=python)."""
    monitoring = int(version.split(".")[1]) >= 12
    if fallback or version == "3.8":
        return "python sys.monitoring" if monitoring else "python setprofile"
    return "C sys.monitoring" if monitoring else "C profile"


@pytest.mark.parametrize("fallback", [False, True], ids=["c", "python"])
@pytest.mark.parametrize("version,python", PYTHONS, ids=[v for v, _ in PYTHONS])
def test_package_functions_are_ranges_with_exact_counts(tmp_path, version, python, fallback):
    env = {"LANTERN_PYFUNC_HOT_PATH": "python"} if fallback else {}
    db, stdout = profile(tmp_path, python, "mypkg.*", env_extra=env)
    assert f"hook {hot_path(version, fallback)}" in stdout
    got = ranges(db)
    assert sorted(got) == ["mypkg.Model.forward", "mypkg.core.Frame.groupby", "mypkg.fails",
                           "mypkg.gen", "mypkg.helper", "mypkg.work"]
    assert all(ended for calls in got.values() for *_, ended in calls)  # unwinds end too
    main_pid = got["mypkg.Model.forward"][0][0]
    work = [(pid == main_pid, main_thread) for pid, main_thread, _, _ in got["mypkg.work"]]
    assert sorted(work) == sorted([(True, True)] * 5 + [(True, False)] + [(False, True)] * 2)
    assert len(got["mypkg.Model.forward"]) == 3 and len(got["mypkg.helper"]) == 3
    assert {depth for *_, depth, _ in got["mypkg.helper"]} == {1}  # inside forward
    assert len(got["mypkg.fails"]) == 2
    assert len(got["mypkg.gen"]) == 4  # three yields and the final return: four runs
    assert len(got["mypkg.core.Frame.groupby"]) == 1
    assert db.execute("SELECT count(DISTINCT process_id) FROM ranges").fetchone()[0] == 2
    assert "user sitecustomize 1" in stdout and "bootstrap on sys.path False" in stdout


@pytest.mark.parametrize("version,python", PYTHONS, ids=[v for v, _ in PYTHONS])
def test_exported_path_and_main_module_names(tmp_path, version, python):
    db, _ = profile(tmp_path, python, " mypkg.Frame.groupby, __main__.step ")
    got = ranges(db)
    assert {name: len(calls) for name, calls in got.items()} == {
        "mypkg.core.Frame.groupby": 1, "__main__.step": 7}


# the C profile function (3.11), the C sys.monitoring callbacks (3.12) and the Python path
CAP_RUNS = [(v, p, fallback) for v, p in PYTHONS for fallback in (False, True)
            if (v, fallback) in (("3.11", False), ("3.12", False), ("3.12", True))] or \
    [(PYTHONS[-1][0], PYTHONS[-1][1], False)]


@pytest.mark.parametrize("version,python,fallback", CAP_RUNS,
                         ids=[f"{v}-{'python' if f else 'c'}" for v, _, f in CAP_RUNS])
def test_code_objects_made_forever_stop_at_the_cap(tmp_path, version, python, fallback):
    """200 000 code objects made by exec, each called once: past the cap (2^16 recorded codes)
    the program's anonymous memory stays flat, the first 2^16 are recorded and exactly the
    rest are counted in the Lost events line (the module code each exec makes matches no
    pattern: it is no loss)."""
    n = 200_000
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANTERN_")}
    if fallback:
        env["LANTERN_PYFUNC_HOT_PATH"] = "python"
    db = tmp_path / "run.db"
    r = subprocess.run([str(LANTERN), "profile", "-f", "-t", "nvtx", "-o", str(db),
                        "--python-functions", "__main__.handler", "--", python,
                        str(HERE / "program" / "codes.py"), str(n)],
                       capture_output=True, text=True, env=env, timeout=280, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rss = [int(line.split()[1]) for line in r.stdout.splitlines() if line.startswith("rss ")]
    print(f"{version} {'python' if fallback else 'C'}: RssAnon after 40 % of the codes: "
          f"{rss[0]} KiB, at the end: {rss[1]} KiB")
    assert rss[1] - rss[0] < 8 * 1024, rss  # 120 000 more codes kept: ~200 MiB (1.7 KiB each)
    with sqlite3.connect(db) as conn:
        recorded = conn.execute("SELECT count(*), count(DISTINCT name_id) FROM ranges")\
            .fetchone()
        cut = conn.execute("SELECT sum(count) FROM import_losses WHERE reason LIKE"
                           " 'Python code objects past%'").fetchone()[0]
    assert recorded == (1 << 16, 1), recorded  # each code recorded once
    assert cut == n - (1 << 16), cut
    header = subprocess.run([str(LANTERN), "stats", str(db)], capture_output=True, text=True,
                            env=env, cwd=tmp_path).stdout
    assert f"{cut} Python code objects past --python-functions' cap" in header, header[:2000]


def test_bad_lists_are_usage_errors(tmp_path):
    r = subprocess.run([str(LANTERN), "profile", "--python-functions", " , ", "--", "true"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.splitlines()[0] == "lantern: --python-functions needs function names"
