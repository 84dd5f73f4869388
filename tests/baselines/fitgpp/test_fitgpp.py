"""FitGpp, LRTP and RAND on hand-built states (FitGpp paper, sec. 3.2 and 4.1).

Cluster of the tests: 2 nodes x (8 V100, 32 cores, 256 GB) unless said otherwise.
A job row is (class, arrival, GPUs, duration s, grace s, cores/GPU, GB/GPU);
the job index equals the row number (rows are given in arrival order).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import baselines
import hetgym
from baselines.fitgpp.schedulers import (
    FitGpp,
    FitGppVictim,
    LongestRemainingVictim,
    PreemptiveFIFO,
    PreemptUntilFit,
    RandomVictim,
    demand_size,
)
from hetgym import ClusterSpec, NodeSpec, Scenario, SimOptions, Workload
from hetgym.decisions import Placement, Preempt, Start
from hetgym.sim.engine import Simulator

Row = tuple  # (cls, arrival, gpus, duration, grace, cores_per_gpu, gb_per_gpu)


def scenario(rows: list[Row], nodes: int = 2, max_preemptions: int | None = None,
             gpus: int = 8) -> Scenario:
    """A tiny FitGpp-style scenario (single GPU type, no restart delay)."""
    df = pd.DataFrame({
        "job_id": np.arange(len(rows)),
        "arrival": [float(r[1]) for r in rows],
        "user": 0,
        "job_class": [r[0] for r in rows],
        "workers": [int(r[2]) for r in rows],
        "work": [float(r[2]) * float(r[3]) for r in rows],  # tput 1 per worker: runs r[3] s
        "tput_v100": 1.0,
        "cpus": [float(r[5]) if len(r) > 5 else 1.0 for r in rows],
        "mem_gb": [float(r[6]) if len(r) > 6 else 8.0 for r in rows],
        "grace_period": [float(r[4]) for r in rows],
    })
    cluster = ClusterSpec([NodeSpec("n", count=nodes, gpu_type="V100", gpus=gpus, cpus=32,
                                    mem_gb=256)])
    return Scenario(cluster=cluster, workload=Workload.from_frame(df),
                    options=SimOptions(restart_delay=0.0, max_preemptions=max_preemptions))


def by_hand(sc: Scenario, placements: dict[int, tuple[int, int]], seed: int = 0) -> Simulator:
    """Simulator at t=0 with job -> (node, first GPU) started there; then advanced
    to the next arrival (the TE job)."""
    sim = Simulator(sc, seed=seed)
    assert sim.advance()
    for j, (node, g0) in placements.items():
        w = int(sim.jobs.workers[j])
        sim.start(j, placement=Placement.of([node] * w, list(range(g0, g0 + w))))
    assert sim.advance()
    return sim


# The state of Fig. 1 in small: node 0 holds a (6 GPUs) and b (2 GPUs), node 1 holds
# c (8 GPUs); the TE job needs 4 GPUs. b alone cannot make room (2 + 0 free < 4).
FIG1 = [("BE", 0, 6, 1000, 100), ("BE", 0, 2, 1000, 0), ("BE", 0, 8, 1000, 10),
        ("TE", 10, 4, 100, 0)]
FIG1_AT = {0: (0, 0), 1: (0, 6), 2: (1, 0)}


def test_eligibility_inequality_gpus():
    sim = by_hand(scenario(FIG1), FIG1_AT)
    v = sim.view
    cands = np.array([0, 1, 2])
    ok = FitGppVictim().eligible(v, 3, cands, v.capacity(), [0])
    assert ok.tolist() == [True, False, True]


def test_eligibility_inequality_cpu_and_ram_and_free_part():
    # node 0: a (2 GPUs, 24 cores, 32 GB), f (1 GPU, 6 cores, 8 GB): free 5 GPUs, 2 cores, 216 GB
    # node 1: c (4 GPUs, 4 cores, 200 GB), g (1 GPU, 20 cores, 8 GB): free 3 GPUs, 8 cores, 48 GB
    base = [("BE", 0, 2, 1000, 0, 12, 16), ("BE", 0, 1, 1000, 0, 6, 8),
            ("BE", 0, 4, 1000, 0, 1, 50), ("BE", 0, 1, 1000, 0, 20, 8)]
    at = {0: (0, 0), 1: (0, 2), 2: (1, 0), 3: (1, 4)}

    def eligible(te_cores: float, te_gb: float) -> list[bool]:
        sim = by_hand(scenario(base + [("TE", 10, 1, 100, 0, te_cores, te_gb)]), at)
        v = sim.view
        return FitGppVictim().eligible(v, 4, np.array([0, 1, 2, 3]), v.capacity(), [0]).tolist()

    # TE 20 cores, 100 GB: a 24+2 >= 20 and 32+216 >= 100; f 6+2 < 20; c 4+8 < 20;
    # g 20+8 >= 20 but 8+48 < 100 GB.
    assert eligible(20, 100) == [True, False, False, False]
    # TE 10 cores, 50 GB: f 8 < 10 only.
    assert eligible(10, 50) == [True, False, True, True]
    # TE 27 cores: only g (20 + 8 free).
    assert eligible(27, 8) == [False, False, False, True]


def test_size_and_score_match_eqs_1_and_3():
    sim = by_hand(scenario(FIG1), FIG1_AT)
    v = sim.view

    def size(g: float) -> float:  # g GPUs, 1 core and 8 GB per GPU, node (32, 256, 8)
        return math.sqrt((g / 32) ** 2 + (8 * g / 256) ** 2 + (g / 8) ** 2)

    np.testing.assert_allclose(demand_size(v, np.array([0, 1, 2])), [size(6), size(2), size(8)])
    for s in (0.0, 1.0, 4.0):
        want = [size(g) / size(8) + s * gp / 100 for g, gp in ((6, 100), (2, 0), (8, 10))]
        np.testing.assert_allclose(FitGppVictim(s).scores(v, np.array([0, 1, 2])), want)


@pytest.mark.parametrize("s, victim", [(4.0, 2), (0.0, 0)])
def test_score_picks_minimum_among_eligible(s, victim):
    # b (job 1) has the lowest score for every s but is not eligible.
    # s=4: a = 0.75 + 4 > c = 1 + 0.4 -> c; s=0: a (smaller) -> a.
    sc = scenario(FIG1)
    res = hetgym.simulate(sc, FitGpp(s=s), seed=0)
    pre = res.jobs["preemptions"].to_numpy()
    assert pre.tolist() == [int(victim == 0), 0, int(victim == 2), 0]


def test_grace_period_timing_te_starts_exactly_gp_after_preemption():
    sched = FitGpp(s=4.0)
    res = hetgym.simulate(scenario(FIG1), sched, check_every_event=True)
    (rec,) = sched.log
    assert (rec.time, rec.job, rec.for_job, rec.reason) == (10.0, 2, 3, "score")
    jobs = res.jobs
    assert jobs.loc[3, "start"] == pytest.approx(10.0 + 10.0, abs=0)  # GP of c = 10 s
    # c ran [0, 20], suspended, restarts when the TE job leaves at 120 (head of the queue)
    segs = [s for s in res.segments if s[0] == 2]
    assert [(a, b) for _, a, b, _, _ in segs] == [(0.0, 20.0), (120.0, 1100.0)]


def test_zero_grace_victim_frees_at_once_and_te_starts_same_instant():
    rows = [("BE", 0, 8, 1000, 0), ("BE", 0, 8, 1000, 0), ("TE", 5, 8, 50, 0)]
    res = hetgym.simulate(scenario(rows), FitGpp(), check_every_event=True)
    assert res.jobs.loc[2, "start"] == 5.0
    assert res.jobs.loc[2, "wait"] == 0.0


def test_te_not_started_before_resources_are_free_and_be_blocked_behind_it():
    # TE arrives at 10, victim c (GP 10) frees node 1 at 20. A BE job d arriving at 12
    # needs 2 GPUs: none is free before 20; the TE job takes node 1 at 20 (4 of 8),
    # then c (head of the queue, 8 GPUs) does not fit and blocks d (strict FIFO); c
    # restarts on node 1 when the TE job leaves, and d waits for node 0 (a and b end).
    rows = FIG1 + [("BE", 12, 2, 30, 0)]
    sched = FitGpp()
    res = hetgym.simulate(scenario(rows), sched, check_every_event=True)
    j = res.jobs
    assert j.loc[3, "start"] == 20.0
    assert j.loc[2, "preemptions"] == 1
    restart_c = [a for job, a, _, _, _ in res.segments if job == 2][1]
    assert restart_c == 120.0  # when the TE job leaves
    assert j.loc[4, "start"] == 1000.0


def test_be_waits_while_te_waits_even_if_it_fits_elsewhere():
    # Node 0 is full (a, b); node 1: c holds 6 GPUs, 2 free. TE needs 4 -> preempt.
    # A BE job d needing 1 GPU arrives at 11: it would fit in node 1's free GPUs, but
    # the queue head (the TE job) waits until 20; then c (suspended, 6 GPUs) is the
    # head and does not fit beside the TE job, so d starts with c when the TE job ends.
    rows = [("BE", 0, 6, 1000, 100), ("BE", 0, 2, 1000, 0), ("BE", 0, 6, 1000, 10),
            ("TE", 10, 4, 100, 0), ("BE", 11, 1, 30, 0)]
    sc = scenario(rows)
    res = hetgym.simulate(sc, FitGpp(), check_every_event=True)
    assert res.jobs.loc[3, "start"] == 20.0
    assert res.jobs.loc[4, "start"] == 120.0
    restart_c = [a for job, a, _, _, _ in res.segments if job == 2][1]
    assert restart_c == 120.0
    res = hetgym.simulate(sc, FitGpp(te_blocks_be=False), check_every_event=True)
    assert res.jobs.loc[3, "start"] == 20.0
    # without blocking it may use node 1's free GPUs, but not the TE job's claim:
    # 2 free + 6 released - 4 claimed leaves room, so it starts at once.
    assert res.jobs.loc[4, "start"] == 11.0


def test_jobs_in_grace_not_preempted_again_nor_counted_twice():
    # TE1 at 10 preempts c (GP 10). TE2 at 12 needs 4 GPUs too: c's 8 GPUs cover
    # TE1 only once TE1's 4 are claimed, so 4 remain for TE2 as well: no new preemption.
    rows = FIG1 + [("TE", 12, 4, 100, 0)]
    sched = FitGpp()
    res = hetgym.simulate(scenario(rows), sched, check_every_event=True)
    assert [r.job for r in sched.log] == [2]
    assert res.jobs["preemptions"].tolist() == [0, 0, 1, 0, 0]
    assert res.jobs.loc[3, "start"] == 20.0 and res.jobs.loc[4, "start"] == 20.0
    # TE2 needing 6 GPUs: only 4 of c's remain after TE1's claim -> a second victim
    # (a, the only other eligible one) and TE2 starts when a's GP (100 s) ends.
    rows[4] = ("TE", 12, 6, 100, 0)
    sched = FitGpp()
    res = hetgym.simulate(scenario(rows), sched, check_every_event=True)
    assert [(r.time, r.job, r.for_job) for r in sched.log] == [(10.0, 2, 3), (12.0, 0, 4)]
    assert res.jobs.loc[3, "start"] == 20.0
    assert res.jobs.loc[4, "start"] == 112.0


def test_limit_p_excludes_jobs_at_the_limit():
    sim = by_hand(scenario(FIG1), FIG1_AT)
    sim.js.n_preempt[2] = 1  # c was preempted once before (hand-built state)
    v = sim.view
    part = PreemptUntilFit(FitGppVictim(4.0), max_preemptions=1)
    assert part.candidates(v, set()).tolist() == [0, 1]
    from baselines.fitgpp.schedulers import PackPlacement

    got = part.select(v, 3, v.capacity(), PackPlacement(), [0], set())
    assert got == [(0, "score")]  # a, not c
    assert PreemptUntilFit(FitGppVictim(4.0), max_preemptions=2).select(
        v, 3, v.capacity(), PackPlacement(), [0], set()) == [(2, "score")]
    # the scenario's limit binds too
    sim = by_hand(scenario(FIG1, max_preemptions=1), FIG1_AT)
    sim.js.n_preempt[2] = 1
    assert PreemptUntilFit(FitGppVictim(), None).candidates(sim.view, set()).tolist() == [0, 1]


def test_nothing_preempted_when_no_victim_set_makes_room():
    # TE needs 8 GPUs; node 0: a (6) and b (2) but b is at the limit; node 1: c (8) too.
    sim = by_hand(scenario(FIG1[:3] + [("TE", 10, 8, 100, 0)]), FIG1_AT)
    sim.js.n_preempt[[1, 2]] = 1
    out = FitGpp(P=1).decide(sim.view)
    assert out == []


RANDOM_ROWS = [("BE", 0, 4, 1000, 5), ("BE", 0, 4, 1000, 5), ("BE", 0, 4, 1000, 5),
               ("BE", 0, 4, 1000, 5), ("TE", 10, 8, 100, 0)]
RANDOM_AT = {0: (0, 0), 1: (0, 4), 2: (1, 0), 3: (1, 4)}


def test_random_fallback_then_score():
    # No single BE job frees 8 GPUs on one node (4 + 0 free): none is eligible, so a
    # random one goes first; its node-mate is then eligible and chosen by score.
    firsts = set()
    for seed in range(12):
        sim = by_hand(scenario(RANDOM_ROWS), RANDOM_AT, seed=seed)
        sched = FitGpp()
        out = sched.decide(sim.view)
        assert [type(d) for d in out] == [Preempt, Preempt]
        (r1, r2) = sched.log
        assert (r1.reason, r2.reason) == ("random", "score")
        assert {r1.job, r2.job} in ({0, 1}, {2, 3})  # the two victims share a node
        firsts.add(r1.job)
    assert firsts == {0, 1, 2, 3}


def test_random_fallback_uses_view_rng_deterministically():
    picks = []
    for _ in range(2):
        sim = by_hand(scenario(RANDOM_ROWS), RANDOM_AT, seed=7)
        s = FitGpp()
        s.decide(sim.view)
        picks.append([r.job for r in s.log])
    assert picks[0] == picks[1]


def test_fallback_end_to_end_te_waits_for_both_gps():
    res = hetgym.simulate(scenario(RANDOM_ROWS), FitGpp(), seed=3, check_every_event=True)
    assert res.jobs.loc[4, "start"] == 15.0
    assert int(res.jobs["preemptions"].sum()) == 2


def test_lrtp_preempts_longest_remaining_until_fit():
    # remaining: a 1000 s, b 3000 s, c 2000 s (each 4 GPUs; a, b on node 0). TE: 8 GPUs.
    rows = [("BE", 0, 4, 1000, 0), ("BE", 0, 4, 3000, 0), ("BE", 0, 4, 2000, 0),
            ("BE", 0, 4, 500, 0), ("TE", 10, 8, 100, 0)]
    sim = by_hand(scenario(rows), RANDOM_AT)
    v = sim.view
    assert LongestRemainingVictim().pick(v, 4, np.array([0, 1, 2, 3]), v.capacity(), [0]) == (1, "lrtp")
    s = baselines.make("lrtp")
    out = s.decide(v)
    # b (node 0) then c (node 1): no node has 8 yet; then a (node 0 now empty) -> fits.
    assert [d.job for d in out if isinstance(d, Preempt)] == [1, 2, 0]
    (st,) = [d for d in out if isinstance(d, Start)]
    assert st.job == 4 and set(st.placement.nodes.tolist()) == {0}


def test_rand_preempts_random_until_fit_and_respects_p():
    sim = by_hand(scenario(RANDOM_ROWS), RANDOM_AT, seed=1)
    s = baselines.make("rand", P=1)
    out = s.decide(sim.view)
    vic = [d.job for d in out if isinstance(d, Preempt)]
    assert len(vic) >= 2 and len(set(vic)) == len(vic)
    # the TE job fits once both jobs of one node are out
    assert {0, 1} <= set(vic) or {2, 3} <= set(vic)
    assert all(r.reason == "random" for r in s.log)
    sim = by_hand(scenario(RANDOM_ROWS), RANDOM_AT, seed=1)
    sim.js.n_preempt[[0, 2]] = 1
    out = baselines.make("rand", P=1).decide(sim.view)
    assert out == []  # only b and d allowed, on different nodes: no fit, nothing done


def test_random_victim_rule_is_uniform_over_candidates():
    sim = by_hand(scenario(RANDOM_ROWS), RANDOM_AT, seed=0)
    v = sim.view
    got = {RandomVictim().pick(v, 4, np.array([0, 1, 2, 3]), v.capacity(), [0])[0]
           for _ in range(64)}
    assert got == {0, 1, 2, 3}


@pytest.mark.parametrize("P", [1, 2])
def test_no_be_job_preempted_more_than_p_times(P):
    # Many TE jobs needing a whole node keep arriving; BE jobs are long.
    rows = [("BE", 0, 8, 5000, 20) for _ in range(3)]
    rows += [("TE", 10 + 30 * k, 8, 25, 0) for k in range(12)]
    sc = scenario(rows, nodes=3)
    for name in ("fitgpp", "lrtp", "rand"):
        res = hetgym.simulate(sc, baselines.make(name, P=P), check_every_event=True)
        j = res.jobs
        assert j["preemptions"].max() == P, name
        assert (j.loc[j["job_class"] == "TE", "preemptions"] == 0).all()
        assert res.summary()["unfinished_jobs"] == 0


def test_registry_and_factories():
    assert {"fitgpp", "lrtp", "rand", "fifo"} <= set(baselines.names())
    s = baselines.make("fitgpp", s=2.0, P=3)
    assert isinstance(s, PreemptiveFIFO)
    assert s.preemption == PreemptUntilFit(FitGppVictim(2.0), 3)
    assert "fitgpp-lab" in hetgym.scenarios.names()


def test_victims_only_on_device_types_the_te_job_can_use():
    # One V100 node and one K80 node, each full with one BE job; the TE job runs on
    # V100 only. Whatever the rule, only the V100 job may go.
    df = pd.DataFrame({
        "job_id": [0, 1, 2], "arrival": [0.0, 0.0, 10.0], "user": 0,
        "job_class": ["BE", "BE", "TE"], "workers": [8, 8, 2], "work": [8000.0, 8000.0, 200.0],
        "tput_k80": [1.0, 1.0, 0.0], "tput_v100": [1.0, 1.0, 1.0],
        "cpus": 1.0, "mem_gb": 8.0, "grace_period": [300.0, 0.0, 0.0],
    })
    cluster = ClusterSpec([NodeSpec("k", count=1, gpu_type="K80", gpus=8, cpus=32, mem_gb=256),
                           NodeSpec("v", count=1, gpu_type="V100", gpus=8, cpus=32, mem_gb=256)])
    sc = Scenario(cluster=cluster, workload=Workload.from_frame(df),
                  options=SimOptions(restart_delay=0.0))
    k80, v100 = sc.device_types.index("k80"), sc.device_types.index("v100")
    for name in ("fitgpp", "lrtp", "rand"):
        sim = Simulator(sc, seed=0)
        sim.advance()
        sim.start(0, k80)  # job 0 on the K80 node (GP 300 s: FitGpp's score would avoid it)
        sim.start(1, v100)
        sim.advance()
        out = baselines.make(name).decide(sim.view)
        assert [d.job for d in out if isinstance(d, Preempt)] == [1], name
        # GP 0: the TE job starts at once on the V100 node
        (st,) = [d for d in out if isinstance(d, Start)]
        assert st.job == 2 and st.device == v100
