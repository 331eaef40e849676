"""The fault matrix (docs/testing.md): every fault and bad input a user or an attacker can
bring, run through the real `lantern` launcher and CLI, checking the exit code, the one-line
message, what is left on disk and what the database holds. A full disk is a real tmpfs of a
few hundred KiB, mounted in a private mount namespace (`unshare -rm`); where the machine
cannot make one, those cases skip saying so.

In the ASan+UBSan build every program here is sanitized: a case that reaches undefined
behaviour (memcpy from NULL, qsort(NULL), a signed overflow) aborts and fails.
"""
import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

BUILD = Path(os.environ.get("LANTERN_BUILD", Path(__file__).resolve().parents[2] / "build"))
SOURCE = Path(os.environ.get("LANTERN_SOURCE", Path(__file__).resolve().parents[2]))
LANTERN = BUILD / "bin" / "lantern"
WORKLOAD = Path(os.environ.get("FAULT_WORKLOAD", BUILD / "bin" / "fault_workload"))

# lantern and the workload are C programs: in the sanitized build they run with the full
# checks (the python-hosted tests' LD_PRELOAD and relaxed ASAN_OPTIONS are for Python only).
ENV = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS")}


def lantern(*args, cwd=None, timeout=120, env=None):
    return subprocess.run([str(LANTERN), *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          errors="replace", timeout=timeout, env=env or ENV)


def error_line(result, code):
    """The exit code, and the 'lantern:' line the CLI ends with for an error (after warnings)."""
    assert result.returncode == code, result
    lines = [l for l in result.stderr.splitlines() if l.startswith("lantern: ")]
    assert lines, result.stderr
    return lines[-1]


def query(db, sql):
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def make_db(path, trace="nvtx", ranges=(), start_ns=1_000_000_000, end_ns=1_005_000_000):
    """A Lantern database built from schema.sql: ranges are (name, start_ns, end_ns)."""
    con = sqlite3.connect(path)
    con.executescript((SOURCE / "src/db/schema.sql").read_text())
    meta = {"schema_version": 9, "lantern_version": "0.1.0", "command": "./app", "host": "h",
            "start_wall_ns": 0, "start_ns": start_ns, "end_ns": end_ns, "clock": "CLOCK_MONOTONIC",
            "trace": trace, "exit_status": 0, "dropped_events": 0, "import_warnings": 0}
    con.executemany("INSERT INTO meta VALUES(?, ?)", meta.items())
    con.execute("INSERT INTO processes(id, pid, exe, start_ns, end_ns, clean_exit) VALUES(1, 42, '/app', ?, ?, 1)",
                (start_ns, end_ns))
    con.execute("INSERT INTO threads(id, process_id, tid) VALUES(1, 1, 43)")
    con.execute("INSERT INTO domains(id, name_id) VALUES(0, NULL)")
    for i, (name, start, end) in enumerate(ranges, 1):
        con.execute("INSERT INTO strings(id, value) VALUES(?, ?)", (i, name))
        con.execute("INSERT INTO ranges(id, process_id, domain_id, name_id, category, style, depth, "
                    "start_thread_id, end_thread_id, start_ns, end_ns) VALUES(?, 1, 0, ?, 0, 0, 0, 1, 1, ?, ?)",
                    (i, i, start, end))
    con.commit()
    con.close()


@pytest.fixture(scope="module")
def nvtx_db(tmp_path_factory):
    """A real session without GPU work: 3 push/pop pairs of fault_workload."""
    out = tmp_path_factory.mktemp("nvtx") / "nvtx.db"
    r = lantern("profile", "-t", "nvtx", "-o", out, "--", WORKLOAD, "pushes", 3, 0)
    assert r.returncode == 0, r.stderr
    return out


# ---- security and data destruction --------------------------------------------------------------

def test_symlinked_session_folder_is_refused_and_its_target_untouched(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep")
    (tmp_path / "out.db.raw").symlink_to(victim)
    r = lantern("profile", "-f", "-o", "out.db", "--", "touch", "ran", cwd=tmp_path)
    assert "symbolic link" in error_line(r, 1)
    assert (victim / "precious.txt").read_text() == "keep"
    assert not (tmp_path / "ran").exists()  # refused before the program ran


def test_force_never_removes_files_that_are_not_lantern_raw_traces(tmp_path):
    raw = tmp_path / "out.db.raw"
    raw.mkdir()
    (raw / "notes.txt").write_text("mine")
    r = lantern("profile", "-f", "-o", "out.db", "--", "touch", "ran", cwd=tmp_path)
    assert "not Lantern raw traces" in error_line(r, 1)
    assert (raw / "notes.txt").read_text() == "mine"
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize("command", [["export", "--format", "chrome"], ["stats"], ["report"]])
def test_outputs_refuse_an_existing_file_or_link_without_force(tmp_path, nvtx_db, command):
    out = tmp_path / "out.txt"
    out.write_text("old")
    target = tmp_path / "target.txt"
    target.write_text("target")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    for path in (out, link):
        r = lantern(command[0], nvtx_db, *command[1:], "-o", path)
        assert "exists (use --force to replace it)" in error_line(r, 1)
    assert out.read_text() == "old" and target.read_text() == "target"
    r = lantern(command[0], nvtx_db, *command[1:], "-o", out, "--force")
    assert r.returncode == 0, r.stderr
    assert out.read_text() != "old"
    r = lantern(command[0], nvtx_db, *command[1:], "-o", link, "--force")
    assert r.returncode == 0, r.stderr
    assert not link.is_symlink() and target.read_text() == "target"  # the link replaced, not followed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.txt", "out.txt", "target.txt"]


def test_control_characters_of_names_never_reach_the_terminal(tmp_path):
    db = tmp_path / "esc.db"
    make_db(db, ranges=[("\x1b]0;pwned\x07\x1b[2J", 1_000_000_100, 1_000_000_200)])
    r = lantern("stats", db)
    assert r.returncode == 0, r.stderr
    assert "\x1b" not in r.stdout and "\x07" not in r.stdout
    assert "\\e]0;pwned\\x07\\e[2J" in r.stdout
    r = lantern("stats", db, "--format", "json")
    assert json.loads(r.stdout)["rows"][0]["range"] == ":\x1b]0;pwned\x07\x1b[2J"  # exact in JSON


# ---- crashes and hangs --------------------------------------------------------------------------

def test_event_without_a_message_is_recorded(tmp_path):
    r = lantern("profile", "-o", tmp_path / "m.db", "--", WORKLOAD, "no_message")
    assert r.returncode == 0, r.stderr
    assert query(tmp_path / "m.db", "SELECT style, name_id, printf('%X', color) FROM ranges ORDER BY id") == \
        [(0, None, "FF00FF00"), (1, None, "FF00FF00")]
    assert query(tmp_path / "m.db", "SELECT name_id FROM marks") == [(None,)]


@pytest.mark.parametrize("content", [None, "notes.txt", "x.lrt"])
def test_empty_or_foreign_folder_is_a_clear_error(tmp_path, content):
    folder = tmp_path / "session"
    folder.mkdir()
    if content:
        (folder / content).write_text("not a Lantern raw trace")
    r = lantern("import", folder, "-o", tmp_path / "x.db")
    assert error_line(r, 1) == f"lantern: cannot import '{folder}': no Lantern raw trace (*.lrt) in it"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["session"]


def test_extreme_timestamps_export_without_overflow(tmp_path):
    db = tmp_path / "extreme.db"
    low, high = -(2 ** 63), 2 ** 63 - 1
    make_db(db, ranges=[("a", low, high), ("b", high, low)], start_ns=high, end_ns=low)
    r = lantern("export", db, "--format", "chrome", "-o", tmp_path / "x.json")
    assert r.returncode == 0, r.stderr
    events = [e for e in json.loads((tmp_path / "x.json").read_text())["traceEvents"] if e["ph"] == "X"]
    # ts: start - meta.start_ns in µs; dur: end - start, never negative, capped at 2^63-1 ns
    assert [(e["name"], e["ts"], e["dur"]) for e in events] == [
        ("a", -18446744073709551.615, 9223372036854775.807), ("b", 0.0, 0.0)]


def test_huge_double_payload_exports_without_overflow(tmp_path):
    """Found by the fuzzer: a double payload past 2^63 was cast to int64 (UB) on export."""
    db = tmp_path / "payload.db"
    make_db(db, ranges=[("a", 1_000_000_100, 1_000_000_200)])
    con = sqlite3.connect(db)
    con.execute("UPDATE ranges SET payload = 9.41756e298")
    con.commit()
    con.close()
    r = lantern("export", db, "--format", "chrome", "-o", tmp_path / "p.json")
    assert r.returncode == 0, r.stderr
    (event,) = [e for e in json.loads((tmp_path / "p.json").read_text())["traceEvents"] if e["ph"] == "X"]
    assert event["args"]["payload"] == 9.41756e298


def test_fifo_among_raw_files_never_blocks_the_import(tmp_path):
    raw = tmp_path / "s.db.raw"
    r = lantern("profile", "--keep-raw", "-o", tmp_path / "s.db", "--", WORKLOAD, "pushes", 2, 0)
    assert r.returncode == 0, r.stderr
    os.mkfifo(raw / "9-9.lrt")
    r = lantern("import", raw, "-o", tmp_path / "again.db", timeout=30)
    assert r.returncode == 0, r.stderr
    assert "lantern: warning: 9-9.lrt: not a regular file; skipped" in r.stderr
    assert query(tmp_path / "again.db", "SELECT count(*) FROM ranges") == [(2,)]


# ---- data loss and misleading results -----------------------------------------------------------

def test_name_of_two_mebibytes_is_cut_marked_and_counted(tmp_path):
    db = tmp_path / "big.db"
    r = lantern("profile", "-o", db, "--", WORKLOAD, "big_name", 2_097_150)
    assert r.returncode == 0, r.stderr
    name, after = query(db, "SELECT s.value FROM ranges r JOIN strings s ON s.id = r.name_id ORDER BY r.id")
    mark = "...[cut by lantern]"
    cut = name[0].encode()
    assert len(cut) <= 1 << 20 and len(cut) > (1 << 20) - len(mark) - 2
    assert name[0].endswith(mark) and set(name[0][:-len(mark)]) == {"é"}  # no character split
    assert after == ("after",)
    assert query(db, "SELECT value FROM meta WHERE key = 'truncated_strings'") == [(1,)]
    assert "1 names longer than 1048576 bytes were cut" in r.stderr


def test_flipped_bit_in_a_chunk_header_is_detected(tmp_path):
    raw = tmp_path / "c.db.raw"
    r = lantern("profile", "--keep-raw", "-o", tmp_path / "c.db", "--", WORKLOAD, "pushes", 5, 0)
    assert r.returncode == 0, r.stderr
    (trace,) = [p for p in raw.iterdir() if p.suffix == ".lrt" and p.name != "launcher.lrt"]
    data = bytearray(trace.read_bytes())
    second_chunk = 16 + 32 + int.from_bytes(data[20:24], "little")  # after the PROCESS chunk
    data[second_chunk + 16 + 7] ^= 0x40  # base_ts, bit 62
    trace.write_bytes(bytes(data))
    r = lantern("import", raw, "-o", tmp_path / "flipped.db")
    assert r.returncode == 0, r.stderr
    assert "checksum mismatch (corrupt chunk)" in r.stderr
    assert query(tmp_path / "flipped.db", "SELECT value FROM meta WHERE key = 'import_warnings'") == [(1,)]
    assert query(tmp_path / "flipped.db", "SELECT count(*) FROM ranges") == [(0,)]


def chunks_of(data):
    """A raw file's chunks (format 5: 32-byte headers), as bytes, in file order."""
    pos, chunks = 16, []
    while pos < len(data):
        end = pos + 32 + int.from_bytes(data[pos + 4:pos + 8], "little")
        chunks.append(data[pos:end])
        pos = end
    return chunks


def header_of(db):
    r = lantern("stats", "--report", "nvtx_sum", db)
    assert r.returncode == 0, r.stderr
    parts = (line.partition(":") for line in r.stdout.splitlines() if ":" in line)
    return {k.strip(): v.strip() for k, _, v in parts}


@pytest.mark.parametrize("order", ["duplicated", "misordered"])
def test_duplicated_or_misordered_chunk_is_imported_once_and_said(tmp_path, order):
    """The events chunk written twice, or after the end chunk: 3000 ranges, none negative,
    one warning, and the Lost events line says what the importer put right."""
    raw = tmp_path / "d.db.raw"
    r = lantern("profile", "--sample=none", "--keep-raw", "-o", tmp_path / "d.db", "--", WORKLOAD,
                "pushes", 3000, 0)
    assert r.returncode == 0, r.stderr
    assert header_of(tmp_path / "d.db")["Lost events"] == "none"
    (trace,) = [p for p in raw.iterdir() if p.suffix == ".lrt" and p.name != "launcher.lrt"]
    data = trace.read_bytes()
    process, events, end = chunks_of(data)
    body = [process, events, events, end] if order == "duplicated" else [process, end, events]
    trace.write_bytes(data[:16] + b"".join(body))
    r = lantern("import", raw, "-o", tmp_path / "again.db")
    assert r.returncode == 0, r.stderr
    what = {"duplicated": "1 duplicated chunks skipped (each chunk is imported once)",
            "misordered": "1 chunks out of order (imported in their sequence order)"}[order]
    assert what in r.stderr
    assert query(tmp_path / "again.db", "SELECT count(*), min(end_ns - start_ns) >= 0 FROM ranges") == [(3000, 1)]
    header = header_of(tmp_path / "again.db")
    assert header["Import warnings"] == "1"
    assert header["Lost events"].startswith(what + " (pid "), header


def test_output_folder_is_refused_before_the_program_runs(tmp_path):
    (tmp_path / "out.db").mkdir()
    r = lantern("profile", "-f", "-o", "out.db", "--", "touch", "ran", cwd=tmp_path)
    assert error_line(r, 1) == "lantern: 'out.db' is a folder; -o names the database file to write"
    assert not (tmp_path / "ran").exists() and not (tmp_path / "out.db.raw").exists()


def test_script_without_execute_bit_says_what_to_type(tmp_path):
    (tmp_path / "script.py").write_text("print('hi')\n")
    r = lantern("profile", "-o", "s.db", "script.py", cwd=tmp_path)
    assert error_line(r, 127) == \
        "lantern: 'script.py' is not executable; try: lantern profile python3 script.py"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["script.py"]


@pytest.mark.parametrize("report", ["cuda_api_sum", "cuda_gpu_kern_sum", "cuda_gpu_trace", "nvtx_kern_sum"])
def test_cuda_reports_without_gpu_work_say_why(nvtx_db, report):
    r = lantern("stats", nvtx_db, "--report", report, "--format", "csv")
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.splitlines()) == 1  # the header: CSV stays clean
    assert "lantern: no CUDA activity: -t cuda was off (the session traced 'nvtx')" in r.stderr


def test_kernels_without_gpu_work_says_why(tmp_path):
    db = tmp_path / "k.db"
    make_db(db, trace="cuda,nvtx")
    con = sqlite3.connect(db)
    con.execute("INSERT INTO meta VALUES('nvidia_gpu_present', 0)")
    con.commit()
    con.close()
    r = lantern("kernels", db)
    assert r.returncode == 0, r.stderr
    assert r.stderr == "lantern: no CUDA activity was recorded: the host had no NVIDIA GPU\n"


# ---- signals ------------------------------------------------------------------------------------

def start_waiting(tmp_path, *profile_args):
    p = subprocess.Popen([str(LANTERN), "profile", *profile_args, "-o", str(tmp_path / "w.db"), "--",
                          str(WORKLOAD), "wait"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=ENV)
    assert p.stdout.readline() == "ready\n"
    return p


def test_sighup_is_forwarded_like_sigterm(tmp_path):
    p = start_waiting(tmp_path)
    p.send_signal(signal.SIGHUP)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 41, err  # the program got exactly one SIGHUP; lantern lived on
    assert query(tmp_path / "w.db", "SELECT value FROM meta WHERE key = 'exit_status'") == [(41,)]


def big_session(tmp_path):
    """A raw session large enough for its import to take a while (and be interrupted)."""
    r = lantern("profile", "--keep-raw", "-o", tmp_path / "big.db", "--", WORKLOAD, "pushes", 400_000, 0,
                env=dict(ENV, LANTERN_BUFFER_KB="65536"))  # a ring that holds them all
    assert r.returncode == 0, r.stderr
    assert query(tmp_path / "big.db", "SELECT count(*) FROM ranges") == [(400_000,)]
    return tmp_path / "big.db.raw"


def interrupt_when_importing(p, part, sig):
    for _ in range(6000):
        if part.exists() or p.poll() is not None:
            break
        time.sleep(0.005)
    assert part.exists(), "the import never started"
    p.send_signal(sig)
    return p.communicate(timeout=120)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_signal_during_import_leaves_nothing_half_written(tmp_path, sig):
    raw = big_session(tmp_path)
    db = tmp_path / "i.db"
    p = subprocess.Popen([str(LANTERN), "import", str(raw), "-o", str(db)], stderr=subprocess.PIPE,
                         text=True, env=ENV)
    _, err = interrupt_when_importing(p, tmp_path / "i.db.part", sig)
    assert p.returncode == -sig, err
    # one line, and no warning about what failed once the import had stopped (issue #28)
    assert err.splitlines() == [f"lantern: import of '{raw}' interrupted; nothing written"]
    assert not db.exists() and not (tmp_path / "i.db.part").exists()


def test_sigterm_during_profile_import_keeps_the_raw_folder_and_says_how(tmp_path):
    raw = big_session(tmp_path)
    os.rename(raw, tmp_path / "p.db.raw")  # stands for the session the launcher is importing
    # the launcher's import of a session: replay it with `import`, as profile does after its run
    p = subprocess.Popen([str(LANTERN), "profile", "-o", "q.db", "--", "sh", "-c",
                          f"cp {tmp_path}/p.db.raw/[0-9]*.lrt q.db.raw/"],
                         cwd=tmp_path, stderr=subprocess.PIPE, text=True, env=ENV)
    _, err = interrupt_when_importing(p, tmp_path / "q.db.part", signal.SIGTERM)
    assert p.returncode == -signal.SIGTERM, err
    assert "lantern: import of 'q.db.raw' interrupted; nothing written" in err
    assert "warning" not in err
    assert "lantern: the raw files are kept in 'q.db.raw': import them with " \
           "'lantern import q.db.raw -o q.db'" in err
    assert not (tmp_path / "q.db").exists() and not (tmp_path / "q.db.part").exists()
    r = lantern("import", "q.db.raw", "-o", "q.db", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert query(tmp_path / "q.db", "SELECT count(*) FROM ranges") == [(400_000,)]


# ---- a full disk: a real small tmpfs in a private mount namespace -------------------------------

def can_mount_tmpfs():
    try:
        return subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=64k none /mnt"],
                              capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


needs_tmpfs = pytest.mark.skipif(not can_mount_tmpfs(),
                                 reason="cannot mount a tmpfs here (unshare -rm: no user namespaces)")


def on_small_disk(tmp_path, size, script):
    """Runs script (sh) in a private mount namespace with a tmpfs of size at $DISK; $OUT is a
    real folder that survives it. Returns the script's result."""
    disk, out = tmp_path / "disk", tmp_path / "out"
    disk.mkdir()
    out.mkdir(exist_ok=True)
    env = dict(ENV, DISK=str(disk), OUT=str(out), LANTERN=str(LANTERN), WORKLOAD=str(WORKLOAD))
    return subprocess.run(["unshare", "-rm", "sh", "-c",
                           f'mount -t tmpfs -o size={size} none "$DISK" && cd "$DISK" && {script}'],
                          capture_output=True, text=True, errors="replace", timeout=300, env=env)


@needs_tmpfs
def test_disk_full_during_the_run_counts_every_lost_event(tmp_path):
    pairs = 300_000
    r = on_small_disk(tmp_path, "2m", f'''
        LANTERN_BUFFER_KB=65536 "$LANTERN" profile --sample=none -o out.db -- "$WORKLOAD" pushes {pairs} 7 2>"$OUT/stderr"
        echo $? >"$OUT/status"; cp out.db "$OUT" || cp -r out.db.raw "$OUT/raw"''')
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out"
    stderr = (out / "stderr").read_text()
    assert (out / "status").read_text() == "7\n"  # the program's status, whatever befell lantern
    assert any(l.startswith("lantern: cannot write '") and ".lrt': No space left on device; tracing stops"
               in l for l in stderr.splitlines()), stderr
    db = out / "out.db"
    if not db.exists():  # the import found no room either (the next test's case): import it here
        db = tmp_path / "later.db"
        r = lantern("import", out / "raw", "-o", db)
        assert r.returncode == 0, r.stderr
    ((ranges, ended),) = query(db, "SELECT count(*), count(end_ns) FROM ranges")
    ((dropped, clean, warning),) = query(db, "SELECT dropped_events, clean_exit, import_warning FROM processes")
    assert ranges + ended + dropped == 2 * pairs  # every push and pop: recorded or counted
    assert dropped > 0 and clean == 1
    assert "could not write its trace after" in warning and "No space left on device" in warning
    assert query(db, "SELECT value FROM meta WHERE key IN ('dropped_events', 'exit_status') ORDER BY key") \
        == [(dropped,), (7,)]


@needs_tmpfs
def test_import_on_a_full_disk_keeps_the_exit_status_and_the_raw_folder(tmp_path):
    r = on_small_disk(tmp_path, "320k", '''
        "$LANTERN" profile --sample=none -o out.db -- "$WORKLOAD" fill filler 7 2>"$OUT/stderr"
        echo $? >"$OUT/status"; ls >"$OUT/left"; rm filler
        "$LANTERN" import out.db.raw -o out.db 2>/dev/null && cp out.db "$OUT"''')
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out"
    lines = (out / "stderr").read_text().splitlines()
    assert (out / "status").read_text() == "7\n"
    assert (out / "left").read_text() == "filler\nout.db.raw\n"  # no database, no .part
    assert lines[-2:] == ["lantern: cannot import 'out.db.raw' into 'out.db': No space left on device",
                          "lantern: the raw files are kept in 'out.db.raw': import them with "
                          "'lantern import out.db.raw -o out.db'"]
    # with room again, the kept folder imports whole: the agent ended its file in its reserve
    assert query(out / "out.db", "SELECT count(*), count(end_ns) FROM ranges") == [(1, 1)]
    assert query(out / "out.db", "SELECT clean_exit, dropped_events FROM processes") == [(1, 0)]
    assert query(out / "out.db", "SELECT value FROM meta WHERE key = 'exit_status'") == [(7,)]


@needs_tmpfs
@pytest.mark.parametrize("command", [["stats", "--format", "csv"], ["export", "--format", "chrome"],
                                     ["report"], ["merge"]])
def test_full_disk_names_the_output_and_leaves_no_file(tmp_path, nvtx_db, command):
    r = on_small_disk(tmp_path, "64k", f'''
        dd if=/dev/zero of=filler bs=4k 2>/dev/null
        "$LANTERN" {command[0]} {nvtx_db} {" ".join(command[1:])} -o out.txt 2>"$OUT/stderr"
        echo $? >"$OUT/status"; ls >"$OUT/left"''')
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out"
    assert (out / "status").read_text() == "1\n"
    assert (out / "stderr").read_text().splitlines()[-1] == \
        "lantern: cannot write 'out.txt': No space left on device"
    assert (out / "left").read_text() == "filler\n"
