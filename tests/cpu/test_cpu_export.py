"""CPU samples in both exports and in the HTML page: cpu_hot.c profiled with -t nvtx,cpu,
exported, and read back; its page's flame graphs against the database.
Chrome JSON: one instant event per sample on its thread, its "sf" stack in "stackFrames" equal
to the database's. Perfetto: one PerfSample per sample, its interned callstack (frames,
function names, mappings) equal to the database's stack, at the sample's time; and, where a
trace_processor_shell binary is here (LANTERN_TRACE_PROCESSOR, or the perfetto package's
cache; never downloaded), Perfetto's own parser reads the same samples and stacks. A session without samples exports
nothing of them. Needs $LANTERN_BUILD and $CPU_HOT, and the perfetto and protobuf packages."""
import collections
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys

import pytest

from cpu_tests import perf_events_allowed  # tests/cpu/ is on the path

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "export"))
perfetto_check = pytest.importorskip("perfetto_check", reason="Python packages perfetto and "
                                     "protobuf (scripts/deps.sh installs them)")
pb = perfetto_check.pb

BUILD = os.environ.get("LANTERN_BUILD", "")
LANTERN = os.path.join(BUILD, "bin", "lantern")
CPU_HOT = os.environ.get("CPU_HOT", os.path.join(BUILD, "bin", "cpu_hot"))


def lantern(cwd, *args):
    done = subprocess.run([LANTERN, *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


def database_samples(db_path):
    """[(tid, ts_ns, [(function, module) outermost first])] in thread and time order."""
    with sqlite3.connect(db_path) as db:
        frames = {i: (n, m) for i, n, m in db.execute("SELECT id, name, module FROM cpu_frames")}
        callsites = {i: (p, f) for i, p, f in db.execute(
            "SELECT id, parent_id, frame_id FROM cpu_callsites")}

        def stack(leaf):
            out = []
            while leaf:
                parent, frame = callsites[leaf]
                out.append(frames[frame])
                leaf = parent
            return out[::-1]

        return [(tid, ts, stack(leaf)) for tid, ts, leaf in db.execute(
            "SELECT t.tid, s.ts_ns, k.callsite_id FROM cpu_samples s JOIN threads t"
            " ON t.id = s.thread_id LEFT JOIN cpu_stacks k ON k.id = s.stack_id"
            " ORDER BY s.thread_id, s.ts_ns")]


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    if not perf_events_allowed():
        pytest.skip("kernel.perf_event_paranoid > 2: no unprivileged sampling")
    tmp = tmp_path_factory.mktemp("cpu_export")
    lantern(tmp, "profile", "-t", "nvtx,cpu", "-o", "x.db", CPU_HOT, "1")
    lantern(tmp, "export", "x.db", "--format", "chrome", "-o", "x.json")
    lantern(tmp, "export", "x.db", "--format", "perfetto", "-o", "x.perfetto-trace")
    samples = database_samples(tmp / "x.db")
    assert len(samples) > 100  # a second of CPU at 1 kHz
    return tmp, samples


def test_chrome_has_one_instant_event_per_sample_with_its_stack(session):
    tmp, samples = session
    with open(tmp / "x.json") as f:
        trace = json.load(f)
    frames = trace["stackFrames"]
    events = [e for e in trace["traceEvents"] if e.get("cat") == "cpu_sample"]
    assert len(events) == len(samples)
    with sqlite3.connect(tmp / "x.db") as db:
        start_ns = db.execute("SELECT value FROM meta WHERE key = 'start_ns'").fetchone()[0]
    for event, (tid, ts, stack) in zip(events, samples):
        assert event["ph"] == "i" and event["s"] == "t" and event["tid"] == tid
        assert abs(event["ts"] - (ts - start_ns) / 1000) < 0.001
        got, sf = [], event.get("sf")
        while sf is not None:
            node = frames[str(sf)]
            got.append((node["name"], node["category"]))
            sf = node.get("parent")
        assert got[::-1] == stack
        assert event["name"] == (stack[-1][0] if stack else "[no user-space frame]")
    assert any(s[-1][0] == "hot_loop" for _, _, s in samples if s)


def perfetto_samples(path):
    """[(tid, ts, [(function, module) outermost first])] as a reader resolves the PerfSample
    packets with their sequence's interned data and clocks; checks that every interned id
    is defined on its sequence before use."""
    trace = pb.Trace()
    with open(path, "rb") as f:
        trace.ParseFromString(f.read())
    sequences = collections.defaultdict(perfetto_check._Sequence)
    interned = collections.defaultdict(lambda: collections.defaultdict(dict))
    out, problems = [], []
    for order, packet in enumerate(trace.packet):
        sid = packet.trusted_packet_sequence_id
        seq = sequences[sid]
        if packet.sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED:
            sequences[sid] = seq = perfetto_check._Sequence()
            interned[sid] = collections.defaultdict(dict)
        if packet.HasField("clock_snapshot"):
            clocks = {c.clock_id: c for c in packet.clock_snapshot.clocks}
            for c in clocks.values():
                if c.is_incremental:
                    seq.incremental[c.clock_id] = [
                        c.timestamp, clocks[perfetto_check.MONOTONIC].timestamp - c.timestamp]
        if packet.HasField("trace_packet_defaults"):
            seq.clock_id = packet.trace_packet_defaults.timestamp_clock_id
        data = interned[sid]
        if packet.HasField("interned_data"):
            i = packet.interned_data
            for s in i.function_names:
                data["functions"][s.iid] = s.str.decode()
            for s in i.mapping_paths:
                data["paths"][s.iid] = s.str.decode()
            for m in i.mappings:
                data["mappings"][m.iid] = "/".join(data["paths"][p] for p in m.path_string_ids)
            for fr in i.frames:
                data["frames"][fr.iid] = (data["functions"][fr.function_name_id],
                                          data["mappings"][fr.mapping_id])
            for cs in i.callstacks:
                for fid in cs.frame_ids:
                    if fid not in data["frames"]:
                        problems.append(f"packet {order}: frame {fid} not interned")
                data["callstacks"][cs.iid] = [data["frames"].get(fid) for fid in cs.frame_ids]
        if not packet.HasField("perf_sample"):
            continue
        ts = perfetto_check._timestamp(seq, packet, order, problems)
        s = packet.perf_sample
        if s.HasField("callstack_iid") and s.callstack_iid not in data["callstacks"]:
            problems.append(f"packet {order}: callstack {s.callstack_iid} not interned")
        stack = data["callstacks"].get(s.callstack_iid, []) if s.HasField("callstack_iid") else []
        out.append((s.tid, ts, stack))
    assert problems == []
    return out


def test_perfetto_has_one_perf_sample_per_sample_with_its_callstack(session):
    tmp, samples = session
    assert perfetto_samples(tmp / "x.perfetto-trace") == samples


def test_perfettos_trace_processor_reads_the_samples_and_stacks(session):
    tmp, samples = session
    tp_module = pytest.importorskip("perfetto.trace_processor")
    # the package downloads trace_processor_shell at first use: only a binary already here is
    # run (LANTERN_TRACE_PROCESSOR, or one the package fetched before), never a download
    binary = os.environ.get("LANTERN_TRACE_PROCESSOR")
    cached = os.path.expanduser("~/.local/share/perfetto/prebuilts")
    if not binary and os.path.isdir(cached):
        binary = next((os.path.join(cached, f) for f in sorted(os.listdir(cached))
                       if f.startswith("trace_processor_shell") and not f.endswith(".tmp")), None)
    if not binary:
        pytest.skip("no trace_processor_shell here (set LANTERN_TRACE_PROCESSOR to one)")
    sanitizer = {k: os.environ.pop(k) for k in ("LD_PRELOAD", "ASAN_OPTIONS")
                 if k in os.environ}  # the binary without the sanitized build's runtimes
    try:
        tp = tp_module.TraceProcessor(trace=str(tmp / "x.perfetto-trace"),
                                      config=tp_module.TraceProcessorConfig(bin_path=binary))
    finally:
        os.environ.update(sanitizer)
    try:
        rows = list(tp.query(
            "SELECT s.ts, t.tid, s.callsite_id FROM perf_sample s JOIN thread t USING (utid)"
            " ORDER BY t.tid, s.ts"))
        leaves = {r.callsite_id: r for r in tp.query(
            "SELECT c.id, f.name FROM stack_profile_callsite c"
            " JOIN stack_profile_frame f ON f.id = c.frame_id")}
        assert len(rows) == len(samples)
        by_thread = collections.Counter(tid for tid, _, _ in samples)
        assert collections.Counter(r.tid for r in rows) == by_thread
        hot = sum(1 for r in rows if r.callsite_id is not None
                  and leaves[r.callsite_id].name == "hot_loop")
        assert hot == sum(1 for _, _, s in samples if s and s[-1][0] == "hot_loop")
    finally:
        tp.close()


def test_a_session_without_samples_exports_none(tmp_path):
    lantern(tmp_path, "profile", "-t", "nvtx", "-o", "x.db", CPU_HOT, "1")
    lantern(tmp_path, "export", "x.db", "--format", "chrome", "-o", "x.json")
    with open(tmp_path / "x.json") as f:
        trace = json.load(f)
    assert "stackFrames" not in trace
    assert not [e for e in trace["traceEvents"] if e.get("cat") == "cpu_sample"]
    lantern(tmp_path, "export", "x.db", "--format", "perfetto", "-o", "x.perfetto-trace")
    assert perfetto_samples(tmp_path / "x.perfetto-trace") == []


def test_report_draws_flame_graphs_of_the_whole_run_and_the_top_ranges(session):
    tmp, samples = session
    lantern(tmp, "report", "x.db", "-o", "x.html")
    page = (tmp / "x.html").read_text()
    assert '<a href="#cpu">Host CPU</a>' in page
    section = page[page.index('<section id="cpu">'):]
    section = section[:section.index("</section>")]
    graphs = re.findall(r'<h4>([^<]*)</h4>\n<figure><svg class="flame"[^>]*data-samples="(\d+)">'
                        r'(.*?)</svg>\n<figcaption data-pruned="(\d+)">', section, re.S)
    titles = [g[0] for g in graphs]
    assert titles[0] == "The whole run" and "NVTX range :work" in titles
    with sqlite3.connect(tmp / "x.db") as db:
        work = db.execute(
            "SELECT count(*) FROM cpu_samples s JOIN ranges r ON r.start_thread_id = s.thread_id"
            " JOIN strings n ON n.id = r.name_id WHERE n.value = 'work'"
            " AND s.ts_ns >= r.start_ns AND s.ts_ns < r.end_ns").fetchone()[0]
    whole = graphs[0]
    assert int(whole[1]) == len(samples)
    assert int(graphs[titles.index("NVTX range :work")][1]) == work
    # hot_loop's frame: as many samples as have it on their stack; every frame drawn is at
    # least 0.05 % of its graph (the rest pruned and counted; html_flame.c's FLAME_MIN_SHARE)
    frames = re.findall(r"<title>([^<]*?): (\d+) samples, ([\d.]+) %</title>", whole[2])
    hot = [int(n) for name, n, _ in frames if name.startswith("hot_loop ")]
    assert hot == [sum(1 for _, _, s in samples if ("hot_loop", "cpu_hot") in s)]
    assert all(int(n) >= 0.0005 * len(samples) for _, n, _ in frames)
    assert int(whole[3]) >= 0
    assert len(page) < 200000


def test_report_with_flame_graphs_loads_in_headless_chromium(session):
    tmp, _ = session
    browser = next((shutil.which(n) for n in (os.environ.get("LANTERN_CHROMIUM"), "chromium",
                                              "chromium-browser") if n and shutil.which(n)), None)
    if not browser:
        pytest.skip("no chromium (scripts/deps.sh installs Debian's chromium)")
    if not (tmp / "x.html").exists():
        lantern(tmp, "report", "x.db", "-o", "x.html")
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS")}
    run = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          f"--user-data-dir={tmp / 'profile'}", "--enable-logging=stderr",
                          "--v=0", "--dump-dom", (tmp / "x.html").as_uri()],
                         capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    assert 'data-ready="1"' in run.stdout and 'class="flame"' in run.stdout
    assert not re.search(r"Uncaught|CONSOLE\(\d+\).*[Ee]rror", run.stderr), run.stderr[-2000:]


def test_report_without_sampling_has_no_cpu_section(tmp_path):
    lantern(tmp_path, "profile", "-t", "nvtx", "-o", "x.db", CPU_HOT, "1")
    lantern(tmp_path, "report", "x.db", "-o", "x.html")
    page = (tmp_path / "x.html").read_text()
    assert 'id="cpu"' not in page and "Host CPU" not in page
