"""The HTML page's flame graphs (src/html/html_flame.c, html_flame_script.c) against the
database: cpu_hot (native, NVTX ranges) and py_hot.py (Python) profiled with -t cpu and their
pages read back. Each graph (the whole run, each top range) holds exactly the frames the
database's samples give, laid out from their sample offsets, coloured by kind, with the pruned
samples counted; the zoom/search script is inline and self-contained. Its pure functions
(lanternFlame.zoom / label / search) run in node (skipped visibly without node: CI has none)
and the wired page, without the page's other script, is clicked and searched in headless
Chromium (skipped without it).
Needs $LANTERN_BUILD and $CPU_HOT."""
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

BUILD = os.environ.get("LANTERN_BUILD", "")
LANTERN = os.path.join(BUILD, "bin", "lantern")
CPU_HOT = os.environ.get("CPU_HOT", os.path.join(BUILD, "bin", "cpu_hot"))
PY_HOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "py_hot.py")
WIDTH, ROW, MIN_SHARE, MAX_FRAMES, MAX_ROWS = 1140, 16, 0.0005, 2000, 64  # html_flame.c's FLAME_*


def lantern(cwd, *args):
    done = subprocess.run([LANTERN, *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


def profile(tmp, *command):
    if not perf_events_allowed():
        pytest.skip("kernel.perf_event_paranoid > 2: no unprivileged sampling")
    lantern(tmp, "profile", "-t", "nvtx,cpu", "-o", "x.db", *command)
    lantern(tmp, "report", "x.db", "-o", "x.html")
    return tmp, (tmp / "x.html").read_text()


@pytest.fixture(scope="module")
def native(tmp_path_factory):
    return profile(tmp_path_factory.mktemp("flame_native"), CPU_HOT, "1")


@pytest.fixture(scope="module")
def python(tmp_path_factory):
    return profile(tmp_path_factory.mktemp("flame_python"), sys.executable, PY_HOT, "1")


def unescape(text):
    return (text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"')
            .replace("&#39;", "'").replace("&amp;", "&"))


FRAME = re.compile(r'<g class="fr" data-s="(\d+)" data-n="(\d+)" data-k="(\w+)"'
                   r'(?: data-name="([^"]*)")?><title>([^<]*?): (\d+) samples, ([\d.]+) %'
                   r'</title><rect x="([\d.]+)" y="(\d+)" width="([\d.]+)" height="15" '
                   r'fill="(#[0-9a-f]{6})"/>(?:<text x="([\d.]+)" y="(\d+)">([^<]*)</text>)?</g>')


def graphs(page):
    """{title: (samples, pruned, [frame dict in page order])} of the Host CPU section."""
    section = page[page.index('<section id="cpu">'):]
    section = section[:section.index("</section>")]
    out = {}
    for title, samples, body, pruned in re.findall(
            r'<h4>([^<]*)</h4>\n<figure><svg class="flame" viewBox="0 0 1140 \d+" width="1140" '
            r'height="\d+" role="img" data-samples="(\d+)">\n(.*?)</svg>\n'
            r'<figcaption data-pruned="(\d+)">', section, re.S):
        lines = body.strip().split("\n")
        frames = []
        for line in lines:
            m = FRAME.fullmatch(line)
            assert m, line
            (s, n, kind, name, title_name, n2, share, x, y, w, fill, tx, ty, text) = m.groups()
            text = unescape(text) if text is not None else None
            frames.append(dict(s=int(s), n=int(n), kind=kind, title=unescape(title_name),
                               name=unescape(name) if name is not None else text,
                               n2=int(n2), share=float(share), x=float(x), y=int(y),
                               w=float(w), fill=fill, text=text, tx=tx, ty=ty))
        out[unescape(title)] = (int(samples), int(pruned), frames)
    return out


def expected_frames(db, leaves):
    """The frames a flame graph of these samples (leaf callsite ids, None: no frame) must hold,
    in drawing order, as [(title, first sample, samples, y)], and the samples pruned: laid out
    here from the database's callsites, independently of html_flame.c."""
    callsites = {i: (p or 0, f) for i, p, f in db.execute(
        "SELECT id, parent_id, frame_id FROM cpu_callsites")}
    frames = {i: (n, m) for i, n, m in db.execute("SELECT id, name, module FROM cpu_frames")}
    total = collections.Counter()
    for leaf in leaves:
        while leaf:
            total[leaf] += 1
            leaf = callsites[leaf][0]
    n = len(leaves)
    kids = collections.defaultdict(list)
    for c in total:
        kids[callsites[c][0]].append(c)
    out, pruned = [("all", 0, n, 0)], 0
    none = sum(1 for leaf in leaves if not leaf)

    def widths(c, row):  # the frames wide and shallow enough, before the cap
        for k in kids[c]:
            if total[k] >= MIN_SHARE * n and row + 1 < MAX_ROWS:
                yield total[k]
                yield from widths(k, row + 1)
    candidates = sorted([*widths(0, 0), *([none] if none and none >= MIN_SHARE * n else [])],
                        reverse=True)
    narrowest = candidates[MAX_FRAMES] if len(candidates) > MAX_FRAMES else 0

    def walk(c, first, row):
        nonlocal pruned
        for k in sorted(kids[c], key=lambda k: (-total[k], k)):
            if total[k] < MIN_SHARE * n or total[k] <= narrowest or row + 1 >= MAX_ROWS:
                pruned += total[k]
                continue
            name, module = frames[callsites[k][1]]
            out.append((f"{name} ({module})" if module else name, first, total[k],
                        (row + 1) * ROW))
            walk(k, first, row + 1)
            first += total[k]
    walk(0, 0, 0)
    if none >= MIN_SHARE * n and none > narrowest:
        first = sum(total[k] for k in kids[0] if total[k] >= MIN_SHARE * n and total[k] > narrowest)
        out.append(("[no user-space frame]", first, none, ROW))
    elif none:
        pruned += none
    return out, pruned


def leaves_of(db, where="1", args=()):
    return [leaf for (leaf,) in db.execute(
        "SELECT k.callsite_id FROM cpu_samples s LEFT JOIN cpu_stacks k ON k.id = s.stack_id"
        " WHERE " + where, args)]


# html_flame.c prints shares and coordinates with one decimal: a value ending in 5 at the
# second decimal (1.25 printed 1.2) is 0.05 away, plus the floating point's last bit
HALF_TENTH = 0.05 + 1e-9


def check_graph(graph, want, pruned):
    samples, got_pruned, frames = graph
    assert samples == want[0][2] and got_pruned == pruned
    assert [(f["title"], f["s"], f["n"], f["y"]) for f in frames] == want
    for f in frames:  # drawn from the offsets, its label cut to fit, whole in data-name
        assert f["n2"] == f["n"] and abs(f["share"] - 100 * f["n"] / samples) <= HALF_TENTH
        assert f["x"] == float(f"{f['s'] * WIDTH / samples:.1f}")
        assert f["w"] == float(f"{f['n'] * WIDTH / samples:.1f}")
        assert f["title"].startswith(f["name"])
        if f["text"] is not None:
            assert len(f["text"]) <= max(3, int((f["n"] * WIDTH / samples - 4) / 6.5))
            assert f["text"] == f["name"] or (f["text"].endswith("..")
                                              and f["name"].startswith(f["text"][:-2]))


def test_each_graph_holds_the_databases_frames_at_their_sample_offsets(native):
    tmp, page = native
    got = graphs(page)
    assert list(got)[:1] == ["The whole run"] and "NVTX range :work" in got
    with sqlite3.connect(tmp / "x.db") as db:
        assert db.execute("SELECT count(DISTINCT process_id) FROM threads").fetchone()[0] == 1
        whole = leaves_of(db)
        check_graph(got["The whole run"], *expected_frames(db, whole))
        work = leaves_of(db, "EXISTS (SELECT 1 FROM ranges r JOIN strings n ON n.id = r.name_id"
                         " WHERE n.value = 'work' AND r.start_thread_id = s.thread_id"
                         " AND s.ts_ns >= r.start_ns AND s.ts_ns < r.end_ns)")
        check_graph(got["NVTX range :work"], *expected_frames(db, work))
    assert len(work) > 100 and len(whole) > len(work)
    kinds = {f["title"]: f["kind"] for f in got["The whole run"][2]}
    assert kinds["all"] == "all" and kinds["hot_loop (cpu_hot)"] == "native"
    assert kinds["main (cpu_hot)"] == "native"
    assert all(k == "lib" for t, k in kinds.items() if ".so" in t)


def test_a_graph_draws_its_widest_frames_only(native, tmp_path):
    """A run of many narrow frames: the native profile plus 1200 call chains three deep, 10 to
    16 samples each (over the 0.05 % floor): 3600 frames wide enough, of which the graph draws
    the 2000 widest (ties at the cut left out together), the rest counted as pruned and said
    in the caption."""
    tmp, _ = native
    shutil.copy(tmp / "x.db", tmp_path / "x.db")
    with sqlite3.connect(tmp_path / "x.db") as db:
        thread, process, ts = db.execute(
            "SELECT t.id, t.process_id, p.start_ns FROM threads t JOIN processes p"
            " ON p.id = t.process_id ORDER BY t.id LIMIT 1").fetchone()
        frame = db.execute("SELECT max(id) FROM cpu_frames").fetchone()[0]
        callsite = db.execute("SELECT max(id) FROM cpu_callsites").fetchone()[0]
        stack = db.execute("SELECT max(id) FROM cpu_stacks").fetchone()[0]
        for chain in range(1200):
            parent = None
            for depth, name in enumerate(("outer", "middle", "inner")):
                frame, callsite = frame + 1, callsite + 1
                db.execute("INSERT INTO cpu_frames(id, name, module) VALUES (?, ?, 'chains')",
                           (frame, f"{name}_{chain}"))
                db.execute("INSERT INTO cpu_callsites VALUES (?, ?, ?, ?)",
                           (callsite, parent, frame, depth))
                parent = callsite
            stack += 1
            db.execute("INSERT INTO cpu_stacks VALUES (?, ?, ?)", (stack, process, callsite))
            db.executemany("INSERT INTO cpu_samples VALUES (?, ?, ?)",
                           [(thread, ts + i, stack) for i in range(10 + chain % 7)])
        leaves = leaves_of(db)
    lantern(tmp_path, "report", "x.db", "-o", "x.html")
    page = (tmp_path / "x.html").read_text()
    whole = graphs(page)["The whole run"]
    want, pruned = expected_frames(sqlite3.connect(tmp_path / "x.db"), leaves)
    check_graph(whole, want, pruned)
    drawn = [f for f in whole[2] if f["title"].endswith("(chains)")]
    assert 1000 < len(drawn) and len(whole[2]) <= MAX_FRAMES + 1, (len(drawn), len(whole[2]))
    assert pruned > 0
    assert f"(the {MAX_FRAMES} widest drawn)" in page


def test_python_frames_are_coloured_as_python(python):
    tmp, page = python
    got = graphs(page)
    with sqlite3.connect(tmp / "x.db") as db:
        check_graph(got["The whole run"], *expected_frames(db, leaves_of(db)))
    frames = got["The whole run"][2]
    hot = [f for f in frames if f["title"] == "hot (py_hot.py)"]
    assert hot and all(f["kind"] == "py" for f in hot)
    legend = re.search(r'<p class="legend">(.*?)</p>', page).group(1)
    fills = {f["kind"]: f["fill"] for f in frames}
    # each kind has its own hue: the legend's swatch is one of its shades, the others differ
    assert re.search(r'background:#[0-9a-f]{6}"></i>Python function', legend)
    assert len({fills["py"], fills["all"]}) == 2


def test_the_zoom_script_is_inline_self_contained_and_once(native):
    _, page = native
    assert page.count('<script id="flame-script">') == 1
    assert not re.search(r"<script[^>]+src=|<link|@import|url\(|<img|https?://", page)
    script = re.search(r'<script id="flame-script">\n(.*?)</script>', page, re.S).group(1)
    # on its own: it names nothing of the page's other script
    assert "querySelectorAll('svg.flame')" in script and "table.sortable" not in script


def script_of(page):
    return re.search(r'<script id="flame-script">\n(.*?)</script>', page, re.S).group(1)


NODE_HARNESS = r"""
const vm = require('vm');
const input = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const box = {};
vm.runInNewContext(input.script, box);   // no document here: only the pure functions
const f = box.lanternFlame;
process.stdout.write(JSON.stringify(input.calls.map(c => f[c[0]].apply(null, c.slice(1)))));
"""


def node(page, calls):
    exe = shutil.which("node") or shutil.which("nodejs")
    if not exe:
        pytest.skip("no node here: the script's pure functions are not run")
    done = subprocess.run([exe, "-e", NODE_HARNESS], capture_output=True, text=True, timeout=60,
                          input=json.dumps({"script": script_of(page), "calls": calls}))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_zoom_label_and_search_in_node(native):
    tmp, page = native
    frames = graphs(page)["The whole run"][2]
    fr = [{"s": f["s"], "n": f["n"], "y": f["y"]} for f in frames]
    names = [f["name"] for f in frames]
    root = 0
    hot = next(i for i, f in enumerate(frames) if f["title"] == "hot_loop (cpu_hot)")
    main = next(i for i, f in enumerate(frames) if f["title"] == "main (cpu_hot)")
    calls = [["zoom", fr, root, WIDTH], ["zoom", fr, hot, WIDTH], ["zoom", fr, main, WIDTH],
             ["search", fr, names, "LOOP"], ["search", fr, names, ""]]
    calls += [["label", f["name"], f["w"]] for f in frames]
    # nested matches count once: a(0..6) holds ab(0..4); c(6..9) apart; 10 samples in all
    syn = [{"s": 0, "n": 10, "y": 0}, {"s": 0, "n": 6, "y": 16}, {"s": 0, "n": 4, "y": 32},
           {"s": 6, "n": 3, "y": 16}, {"s": 6, "n": 1, "y": 32}]
    calls += [["search", syn, ["all", "xa", "xab", "xc", "d"], "x"],
              ["zoom", syn, 1, 100], ["zoom", syn, 3, 100]]
    out = node(page, calls)
    unzoomed, on_hot, on_main, loop, empty = out[:5]
    labels, (nested, syn_a, syn_c) = out[5:5 + len(frames)], out[5 + len(frames):]
    # zooming on the root gives the graph html_flame.c drew, and the same labels
    for z, f in zip(unzoomed, frames):
        assert z["st"] == 0 and abs(z["x"] - f["x"]) <= HALF_TENTH, (z, f)
        assert abs(z["w"] - f["w"]) <= HALF_TENTH, (z, f)
    assert [t or None for t in labels] == [f["text"] for f in frames]
    # on hot_loop: it spans the width, its callers are whole-width and greyed, the rest hidden
    assert on_hot[hot] == {"x": 0, "w": WIDTH, "st": 0}
    for z, f in zip(on_hot, frames):
        inside = f["s"] >= frames[hot]["s"] and f["s"] + f["n"] <= frames[hot]["s"] + frames[hot]["n"]
        if f["y"] < frames[hot]["y"]:
            holds = f["s"] <= frames[hot]["s"] and f["s"] + f["n"] >= frames[hot]["s"] + frames[hot]["n"]
            assert z == ({"x": 0, "w": WIDTH, "st": 1} if holds else {"x": 0, "w": 0, "st": 2})
        else:
            assert z["st"] == (0 if inside else 2)
    callers = [f["title"] for z, f in zip(on_hot, frames) if z["st"] == 1]
    assert callers[0] == "all" and "main (cpu_hot)" in callers
    # on main: its callees scaled by main's samples
    for z, f in zip(on_main, frames):
        if z["st"] == 0:
            assert abs(z["w"] - f["n"] * WIDTH / frames[main]["n"]) < 1e-6
    # search: the samples under a frame named *loop* (any case), against the database
    with sqlite3.connect(tmp / "x.db") as db:
        callsites = {i: (p, f) for i, p, f in db.execute(
            "SELECT id, parent_id, frame_id FROM cpu_callsites")}
        fnames = dict(db.execute("SELECT id, name FROM cpu_frames"))
        under = 0
        for leaf in leaves_of(db):
            path = []
            while leaf:
                path.append(fnames[callsites[leaf][1]])
                leaf = callsites[leaf][0]
            under += any("loop" in n.lower() for n in path)
    # (a loop's callsite too narrow to draw cannot match: at most the pruned samples less)
    pruned = graphs(page)["The whole run"][1]
    assert sum(1 for n in names if "loop" in n.lower()) >= 2
    assert under - pruned <= loop["samples"] <= under and loop["samples"] > 0.9 * fr[0]["n"]
    assert loop["hit"] == ["loop" in n.lower() for n in names]
    assert empty == {"hit": [False] * len(frames), "samples": 0}
    assert nested == {"hit": [False, True, True, True, False], "samples": 9}
    assert syn_a == [{"x": 0, "w": 100, "st": 1}, {"x": 0, "w": 100, "st": 0},
                     {"x": 0, "w": 100 * 4 / 6, "st": 0}, {"x": 0, "w": 0, "st": 2},
                     {"x": 0, "w": 0, "st": 2}]
    assert [z["st"] for z in syn_c] == [1, 2, 2, 0, 0] and syn_c[4]["w"] == 100 / 3


PROBE = r"""<script>
(function(){
 var svg=document.querySelector('svg.flame'),gs=[].slice.call(svg.querySelectorAll('g.fr'));
 var hot=gs.filter(function(g){return g.querySelector('title').textContent.indexOf('hot_loop ')===0;})[0];
 var out={};
 hot.dispatchEvent(new MouseEvent('click',{bubbles:true}));
 out.focus=svg.getAttribute('data-focus');
 out.hotWidth=hot.querySelector('rect').getAttribute('width');
 out.hidden=gs.filter(function(g){return g.getAttribute('display')==='none';}).length;
 out.greyed=gs.filter(function(g){return g.classList.contains('anc');}).length;
 var bar=svg.previousElementSibling,reset=bar.querySelector('button'),box=bar.querySelector('input');
 out.resetEnabled=!reset.disabled;
 box.value='hot_';box.dispatchEvent(new Event('input'));
 out.matched=bar.querySelector('span').textContent;
 out.hits=gs.filter(function(g){return g.classList.contains('hit');}).length;
 document.dispatchEvent(new KeyboardEvent('keydown',{key:'Escape'}));
 out.focusAfter=svg.getAttribute('data-focus');
 out.hiddenAfter=gs.filter(function(g){return g.getAttribute('display')==='none';}).length;
 out.resetAfter=reset.disabled;
 var main=gs.filter(function(g){return g.querySelector('title').textContent.indexOf('main ')===0;})[0];
 main.focus();main.dispatchEvent(new KeyboardEvent('keydown',{key:'Enter',bubbles:true}));
 out.tabbable=main.getAttribute('tabindex');out.focusEnter=svg.getAttribute('data-focus');
 document.body.setAttribute('data-probe',JSON.stringify(out));
})();
</script></body>"""


def test_clicking_searching_and_escape_in_headless_chromium(native):
    tmp, page = native
    browser = next((shutil.which(n) for n in (os.environ.get("LANTERN_CHROMIUM"), "chromium",
                                              "chromium-browser") if n and shutil.which(n)), None)
    if not browser:
        pytest.skip("no chromium (scripts/deps.sh installs Debian's chromium)")
    # without the page's other script (the table sorting): the flame script stands alone
    alone = re.sub(r"<script>.*?</script>", "", page, flags=re.S)
    assert alone.count("<script") == 1
    (tmp / "probe.html").write_text(alone.replace("</body>", PROBE))
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS")}
    run = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          f"--user-data-dir={tmp / 'profile'}", "--dump-dom",
                          (tmp / "probe.html").as_uri()],
                         capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    probe = re.search(r'data-probe="([^"]*)"', run.stdout)
    assert probe, run.stdout[-2000:]
    got = json.loads(unescape(probe.group(1)))
    frames = graphs(page)["The whole run"][2]
    hot = next(f for f in frames if f["title"] == "hot_loop (cpu_hot)")
    outside = sum(1 for f in frames if f["y"] >= hot["y"] and not (
        f["s"] >= hot["s"] and f["s"] + f["n"] <= hot["s"] + hot["n"]))
    outside += sum(1 for f in frames if f["y"] < hot["y"] and not (
        f["s"] <= hot["s"] and f["s"] + f["n"] >= hot["s"] + hot["n"]))
    assert got["focus"] == str(frames.index(hot)) and got["hotWidth"] == "1140.0"
    assert got["hidden"] == outside > 0 and got["greyed"] == hot["y"] // ROW
    assert got["resetEnabled"] is True
    total = frames[0]["n"]
    assert got["matched"] == f"Matched: {hot['n']} of {total} samples ({100 * hot['n'] / total:.1f} %)"
    assert got["hits"] == 1
    assert got["focusAfter"] == "0" and got["hiddenAfter"] == 0 and got["resetAfter"] is True
    main = next(i for i, f in enumerate(frames) if f["title"] == "main (cpu_hot)")
    assert got["tabbable"] == "0" and got["focusEnter"] == str(main)
