"""A job read through the real CLI, as docs/multi-rank.md tells users to: per-rank databases
(bench_ranks: 4 ranks of 20 training steps on 2 hosts, rank 2 late by 1 ms before each step, so
the others wait 1 ms longer in each all-reduce) merged with `lantern merge`, then `lantern
analyze` and `lantern stats`. The expected lags, exposed communication and idle time follow
from how bench_ranks builds the files, or are computed here from the merged tables, apart from
Lantern's code. A rank file alone (one process) leaves the cross-rank rules silent."""
import json
import os
import sqlite3
import statistics
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("LANTERN_BUILD", ROOT / "build"))
LANTERN = BUILD / "bin" / "lantern"
BENCH_RANKS = BUILD / "bin" / "bench_ranks"
RANKS, STEPS, LATE, LATE_NS = 4, 20, 2, 1_000_000

pytestmark = pytest.mark.skipif(not BENCH_RANKS.exists(), reason=f"not built: {BENCH_RANKS}")


def lantern(*args):
    run = subprocess.run([str(LANTERN), *map(str, args)], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    return run.stdout


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    d = tmp_path_factory.mktemp("ranks")
    subprocess.run([str(BENCH_RANKS), d, str(RANKS), str(STEPS * 100), "2", str(LATE),
                    str(LATE_NS)], check=True, timeout=60)
    lantern("merge", *(d / f"rank{r}.db" for r in range(RANKS)), "-o", d / "all.db")
    return d


def analysis(path, rules):
    doc = json.loads(lantern("analyze", path, "--rule", rules, "--format", "json"))
    return {r["name"]: r for r in doc["analysis"]["rules"]}


def busy_and_span(db_path):
    """Per rank, from the merged kernels (one GPU each): the union of its kernels' intervals
    and its span, computed here."""
    db = sqlite3.connect(db_path)
    out = {}
    for rank, in db.execute("SELECT rank FROM processes ORDER BY rank"):
        rows = db.execute("SELECT k.start_ns, k.end_ns FROM kernels k JOIN processes p"
                          " ON p.id = k.process_id WHERE p.rank = ? ORDER BY k.start_ns",
                          (rank,)).fetchall()
        busy, cur_s, cur_e = 0, None, None
        for s, e in rows:
            if cur_e is None or s > cur_e:
                busy += 0 if cur_e is None else cur_e - cur_s
                cur_s, cur_e = s, e
            else:
                cur_e = max(cur_e, e)
        busy += cur_e - cur_s
        out[rank] = (busy, max(e for _, e in rows) - rows[0][0])
    return out


def test_stragglers_names_the_late_rank_of_a_merged_job(job):
    rule = analysis(job / "all.db", "stragglers")["stragglers"]
    assert rule["note"].startswith(f"{STEPS} collectives matched over {RANKS} ranks (AllReduce "
                                   f"{STEPS}), {STEPS} with one rank last; arrival spread (last - "
                                   "first) 1.007 ms on average")  # 1 ms late + the 7 µs between the hosts' clocks
    assert "the ranks ran on 2 hosts" in rule["note"]
    [finding] = rule["findings"]
    assert finding["cost_ns"] == STEPS * LATE_NS and finding["count"] == STEPS
    assert finding["summary"].startswith(
        f"rank {LATE} (pid 10000, node001, GPU 0) arrived last at {STEPS} of the {STEPS} "
        "collectives it took part in; the others waited 1.000 ms for it each time")
    assert f"the last in {STEPS} of {STEPS} steps of 'step' (1.000 ms per step)" in finding["summary"]
    rows = finding["evidence"]
    assert len(rows) == 10 and all(r["duration_ns"] == LATE_NS and r["pid"] == 10000 for r in rows)
    assert rows[0]["range"] == ":optimizer" and rows[0]["name"].startswith("ncclDevKernel_AllReduce")
    assert "after rank 3 (pid 10001, node001, GPU 1) (the second-last)" in rows[0]["detail"]


def test_comm_overlap_shows_the_wait_as_exposed_time_on_the_punctual_ranks(job):
    rule = analysis(job / "all.db", "comm_overlap")["comm_overlap"]
    [finding] = rule["findings"]
    # the late rank's all-reduce is the communication itself (900 µs a step, nothing to
    # overlap it in bench_ranks): 18 ms, what every rank pays; the others also wait 1 ms a step
    assert finding["cost_ns"] == STEPS * 900_000
    exposed = {int(r["name"].split()[1]): r["duration_ns"] for r in finding["evidence"]}
    assert exposed == {0: STEPS * 1_900_000, 1: STEPS * 1_900_000, 2: STEPS * 900_000,
                       3: STEPS * 1_900_000}


def test_rank_idle_names_the_late_rank_with_the_idle_computed_here(job):
    rule = analysis(job / "all.db", "rank_idle")["rank_idle"]
    [finding] = rule["findings"]
    measured = busy_and_span(job / "all.db")
    share = {r: 100 * (span - busy) / span for r, (busy, span) in measured.items()}
    others = statistics.median(s for r, s in share.items() if r != LATE)
    busy, span = measured[LATE]
    assert finding["cost_ns"] == pytest.approx((share[LATE] - others) / 100 * span, abs=1)
    assert finding["evidence"][0]["name"] == f"rank {LATE}"
    assert finding["evidence"][0]["duration_ns"] == span - busy
    assert f"rank {LATE} (pid 10000, node001, GPU 0): its GPU was idle" in finding["summary"]


def test_energy_per_rank_of_a_merged_job_is_each_ranks_own_gpu(job):
    rows = json.loads(lantern("stats", job / "all.db", "--report", "energy_sum", "--format",
                              "json"))["rows"]
    ranks = [r for r in rows if r["scope"] == "process"]
    # one row per rank, on its own GPU (bench_ranks: GPU <local rank> of its host), alone on it
    assert sorted((r["name"], r["host"], r["gpu"], r["processes"]) for r in ranks) == sorted(
        (f"{10000 + r % 2} train.py (rank {r})", f"node{r // 2:03d}", r % 2, 1)
        for r in range(RANKS))
    gpus = {(r["host"], r["gpu"]): r for r in rows if r["scope"] == "run"}
    assert len(gpus) == RANKS
    # `step` in nvtx_sum is the sum over the ranks of each one's own GPU, as energy_sum has it
    steps = [r["energy_j"] for r in rows if r["scope"] == "nvtx" and r["name"] == "step"]
    assert len(steps) == RANKS
    nvtx = {r["range"]: r for r in json.loads(lantern("stats", job / "all.db", "--format",
                                                      "json"))["rows"]}
    assert nvtx[":step"]["energy_j"] == pytest.approx(sum(steps), abs=0.001 * RANKS)  # JSON: mJ
    # each GPU's steps are within its rank's life on it: no rank carries another's GPU
    life = {(r["host"], r["gpu"]): r["energy_j"] for r in ranks}
    for r in rows:
        if r["scope"] == "nvtx" and r["name"] == "step":
            assert 0.5 * life[(r["host"], r["gpu"])] <= r["energy_j"] <= life[(r["host"], r["gpu"])]


def test_cross_rank_rules_are_silent_on_one_rank_file(job):
    rules = analysis(job / "rank2.db", "stragglers,comm_overlap,rank_idle")
    for name in ("stragglers", "comm_overlap", "rank_idle"):
        assert rules[name]["findings"] == [] and "GPU work of 1 process" in rules[name]["note"]
