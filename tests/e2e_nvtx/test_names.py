"""Names end to end (docs/schema.md, "processes" and "threads"): a Python program with named
threads, a thread that renames itself at the OS level after its first event, an
nvtxNameOsThread name, and children started through a shell with launcher rank variables,
run under `lantern profile`; the database, the report header and the Chrome export are
checked against what the program itself printed (its pids and thread ids)."""
import json
import os
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from test_e2e_nvtx import LANTERN, WORKLOAD, needs_nvtx, profile

PROGRAM = textwrap.dedent("""
    import ctypes, json, os, subprocess, sys, threading
    import nvtx
    libc = ctypes.CDLL(None)
    seen = {"pid": os.getpid(), "ppid": os.getppid(), "threads": {}}

    renamed = threading.Event()

    def work(rename=None, wait=False):
        if wait:
            renamed.wait()
        nvtx.push_range("work")          # the thread's first event: its OS name is read now
        if rename:                       # ... and again when it ends
            libc.prctl(15, rename.encode(), 0, 0, 0)   # PR_SET_NAME
        nvtx.pop_range()
        tid = threading.get_native_id()
        with open(f"/proc/self/task/{tid}/comm") as f:
            seen["threads"][threading.current_thread().name] = (tid, f.read().strip())

    if sys.argv[1] == "parent":
        for t in [threading.Thread(target=work, name="data-loader-with-a-long-name"),
                  threading.Thread(target=work, args=("os-renamed",), name="renamer")]:
            t.start(); t.join()
        later = threading.Thread(target=work, kwargs={"wait": True}, name="before")
        later.start(); later.name = "after-rename"; renamed.set(); later.join()
        nvtx.mark("parent")
        # a shell in between: the child's parent is not traced, its grandparent is
        for rank in (0, 1):
            subprocess.run(["/bin/sh", "-c", f'RANK={rank} LOCAL_RANK={rank} "{sys.executable}" '
                            f'"{sys.argv[0]}" child {sys.argv[2]}'], check=True)
        subprocess.run([sys.executable, "-m", "json.tool", "/dev/null"], capture_output=True)
        out = sys.argv[2] + "/parent.json"
    else:
        threading.Thread(target=work, name="child-worker").start()
        out = f"{sys.argv[2]}/child-{os.environ['RANK']}.json"
    for t in threading.enumerate():
        if t is not threading.current_thread():
            t.join()
    nvtx.mark("end")
    with open("/proc/self/comm") as f:
        seen["comm"] = f.read().strip()
    with open(out, "w") as f:
        json.dump(seen, f)
""")


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    if not os.path.exists(LANTERN):
        pytest.skip("no lantern build")
    tmp = tmp_path_factory.mktemp("names")
    (tmp / "names.py").write_text(PROGRAM)
    db = profile(tmp, sys.executable, "names.py", "parent", str(tmp))
    seen = {name: json.loads((tmp / f"{name}.json").read_text()) for name in ("parent", "child-0", "child-1")}
    return tmp, db, seen


def thread_names(db, pid):
    """{tid: (nvtx name, Python name, OS name)} of a process."""
    return {tid: names for tid, *names in db.execute(
        """SELECT t.tid, n.value, py.value, os.value FROM threads t JOIN processes p ON p.id = t.process_id
           LEFT JOIN strings n ON n.id = t.name_id LEFT JOIN strings py ON py.id = t.python_name_id
           LEFT JOIN strings os ON os.id = t.os_name_id WHERE p.pid = ?""", (pid,))}


@needs_nvtx
def test_python_threads_carry_their_threading_names(session):
    _, db, seen = session
    parent = seen["parent"]
    names = thread_names(db, parent["pid"])
    tids = {name: tid for name, (tid, _) in parent["threads"].items()}
    assert names[tids["data-loader-with-a-long-name"]][1] == "data-loader-with-a-long-name"  # not cut at 15
    assert names[tids["after-rename"]][1] == "after-rename"  # renamed while running: the latest name
    assert names[tids["renamer"]][1] == "renamer"


@needs_nvtx
def test_os_name_is_read_at_the_first_event_and_at_the_end(session):
    _, db, seen = session
    parent = seen["parent"]
    names = thread_names(db, parent["pid"])
    tid, comm = parent["threads"]["renamer"]
    assert comm == "os-renamed" and names[tid][2] == "os-renamed"  # set after its first event
    tid, comm = parent["threads"]["data-loader-with-a-long-name"]
    assert names[tid][2] == comm == parent["comm"]  # Python <= 3.13 leaves the creator's name
    assert names[parent["pid"]][2] == parent["comm"]  # the main thread


@needs_nvtx
def test_processes_have_script_names_ranks_and_parents(session):
    _, db, seen = session
    rows = {pid: (name, rank, local, var, parent) for pid, name, rank, local, var, parent in db.execute(
        """SELECT p.pid, p.name, p.rank, p.local_rank, p.rank_variable, parent.pid
           FROM processes p LEFT JOIN processes parent ON parent.id = p.parent_id""")}
    parent = seen["parent"]["pid"]
    assert rows[parent] == ("names.py", None, None, None, None)
    for rank in (0, 1):
        child = seen[f"child-{rank}"]
        assert child["ppid"] != parent  # a shell in between
        assert rows[child["pid"]] == ("names.py", rank, rank, "RANK", parent)
    # `python -m json.tool` never records an event: it has no raw file, so no row
    assert len(rows) == 3


@needs_nvtx
def test_header_and_chrome_export_show_the_names(session):
    tmp, _, seen = session
    stats = subprocess.run([LANTERN, "stats", str(tmp / "x.db")], capture_output=True, text=True)
    parent = seen["parent"]["pid"]
    for rank in (0, 1):
        pid = seen[f"child-{rank}"]["pid"]
        assert f"  pid {pid:<8} names.py (rank {rank}), started by pid {parent}\n" in stats.stdout
    r = subprocess.run([LANTERN, "export", str(tmp / "x.db"), "--format", "chrome", "-o", str(tmp / "x.json")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    events = json.loads((tmp / "x.json").read_text())["traceEvents"]
    meta = {(e["name"], e["pid"], e["tid"]): e["args"] for e in events if e["ph"] == "M"}
    assert meta[("process_name", parent, 0)]["name"] == "names.py"
    child1 = seen["child-1"]
    assert meta[("process_name", child1["pid"], 0)]["name"] == "names.py (rank 1)"
    # unranked processes (the launcher-like parent) sort first, then ranks in order
    order = sorted((a["sort_index"], pid) for (n, pid, _), a in meta.items() if n == "process_sort_index")
    assert [pid for _, pid in order] == [parent, seen["child-0"]["pid"], child1["pid"]]
    worker = child1["threads"]["child-worker"][0]
    assert meta[("thread_name", child1["pid"], worker)]["name"] == "child-worker"
    assert meta[("thread_sort_index", child1["pid"], child1["pid"])]["sort_index"] == 1  # main thread first


def test_nvtx_thread_names_win_over_os_names(tmp_path):
    """examples/nvtx_demo names its threads with nvtxNameOsThread; their OS names stay."""
    demo = os.path.join(os.path.dirname(LANTERN), "nvtx_demo")
    if not os.path.exists(demo):
        pytest.skip("no nvtx_demo build")
    db = profile(tmp_path, demo, "1")
    rows = db.execute("SELECT n.value, o.value FROM threads t LEFT JOIN strings n ON n.id = t.name_id "
                      "LEFT JOIN strings o ON o.id = t.os_name_id ORDER BY t.start_ns").fetchall()
    assert sorted(rows) == [("main", "nvtx_demo"), ("worker 0", "nvtx_demo"), ("worker 1", "nvtx_demo")]
    db.close()
    r = subprocess.run([LANTERN, "export", str(tmp_path / "x.db"), "--format", "chrome"], capture_output=True,
                       text=True)
    events = json.loads((tmp_path / "x.json").read_text())["traceEvents"]
    assert sorted(e["args"]["name"] for e in events if e["name"] == "thread_name") == ["main", "worker 0", "worker 1"]


MP_PROGRAM = textwrap.dedent("""
    import multiprocessing as mp, os, sys
    import nvtx

    def work(out):
        nvtx.mark("child")
        with open(os.path.join(out, f"{os.getpid()}.name"), "w") as f:
            f.write(mp.current_process().name)

    if __name__ == "__main__":
        for method in ("spawn", "fork", "forkserver"):
            p = mp.get_context(method).Process(target=work, args=(sys.argv[1],), name=f"{method}-loader")
            p.start(); p.join()
        with mp.get_context("spawn").Pool(1) as pool:  # named by multiprocessing: SpawnPoolWorker-N
            pool.apply(work, (sys.argv[1],))
""")


@needs_nvtx
def test_multiprocessing_children_are_named_after_the_script_and_their_process_name(tmp_path):
    """Issue #28: a spawn child was `python3 -c`; every start method's children are now named
    `script:Process.name`, also run as `python -m`."""
    (tmp_path / "mp_names.py").write_text(MP_PROGRAM)
    for command, program in (([sys.executable, "mp_names.py"], "mp_names.py"),
                             ([sys.executable, "-m", "mp_names"], "mp_names")):
        out = tmp_path / ("out-" + program)
        out.mkdir()
        db = profile(tmp_path, *command, str(out))
        names = dict(db.execute("SELECT pid, name FROM processes"))
        children = {int(f.stem): f.read_text() for f in out.glob("*.name")}
        assert len(children) == 4
        for pid, process_name in children.items():
            assert names[pid] == f"{program}:{process_name}", names
        assert {children[pid] for pid in children} >= {"spawn-loader", "fork-loader",
                                                         "forkserver-loader"}
        db.close()
        (tmp_path / "x.db").unlink()
