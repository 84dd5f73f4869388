"""Co-location interference (docs/semantics.md *Interference*): hand examples and
parity with the pure-Python reference simulator."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import baselines
import hetgym
from hetgym import ClusterSpec, NodeSpec, Scenario, SimOptions, Workload
from hetgym.decisions import Move, Placement, Preempt, Start
from hetgym.specs import minsky_topology
from tests.sim.test_reference_equivalence import (
    RandomScheduler,
    assert_same,
    examples,
    run_both,
    scenarios,
)

MINSKY = ClusterSpec(nodes=[NodeSpec(name="minsky", gpu_type="P100", gpus=4, cpus=16,
                                     mem_gb=512, sockets=2, topology=minsky_topology())])


def _jobs(rows: list[dict]) -> Workload:
    base = {"user": "u", "job_class": "BE", "cpus": 0.0, "mem_gb": 0.0, "comm": 1.0}
    return Workload.from_frame(pd.DataFrame([{**base, **r} for r in rows]))


class Fixed:
    """Starts each waiting job on its fixed GPUs of node 0 once they are free; preempts job
    ``j`` at the decision point at time ``preempt_at[j]``."""

    def __init__(self, gpus: dict[int, list[int]], preempt_at: dict[int, float] | None = None):
        self.gpus = gpus
        self.preempt_at = preempt_at or {}

    def reset(self, view) -> None:
        pass

    def decide(self, view) -> list:
        out = [Preempt(j) for j, t in self.preempt_at.items()
               if view.now == t and view.status[j] == 2]
        owner = view.capacity().gpu_owner[0].copy()
        for d in out:
            owner[owner == d.job] = -1
        for j in view.queue.tolist():
            if j in self.gpus and (owner[self.gpus[j]] < 0).all() and \
                    not any(isinstance(d, Preempt) and d.job == j for d in out):
                owner[self.gpus[j]] = j
                out.append(Start(j, None, Placement.of([0] * len(self.gpus[j]), self.gpus[j])))
        return out


def _t3(second_arrival: float, **opts) -> Scenario:
    wl = _jobs([{"job_id": 1, "arrival": 0.0, "workers": 2, "work": 100.0, "tput_p100": 0.5},
                {"job_id": 2, "arrival": second_arrival, "workers": 2, "work": 100.0,
                 "tput_p100": 0.5}])
    options = SimOptions(restart_delay=0.0, topology_coeff=0.125,
                         **{"interference_coeff": 0.3, **opts})
    return Scenario(cluster=MINSKY, workload=wl, options=options)


@pytest.mark.parametrize("sim", ["fast", "ref"])
def test_t3_both_at_zero(sim: str) -> None:
    """Interference-dynamics example (docs/topo.md): spread pairs {0,2} and {1,3} share both
    sockets: each at 0.8 x 1/1.3 = 0.615385 of its ideal rate, both end at 162.5 s."""
    sc = _t3(0.0)
    res = _run(sim, sc, Fixed({0: [0, 2], 1: [1, 3]}))
    assert res.jobs["end"].tolist() == pytest.approx([162.5, 162.5], rel=1e-12)


@pytest.mark.parametrize("sim", ["fast", "ref"])
def test_t3_second_at_fifty(sim: str) -> None:
    """Interference dynamics example: J2 starts at 50: J1 ends at 147.5, J2 speeds back up to
    0.8 and ends at 197.5."""
    res = _run(sim, _t3(50.0), Fixed({0: [0, 2], 1: [1, 3]}))
    assert res.jobs["end"].tolist() == pytest.approx([147.5, 197.5], rel=1e-12)


def test_t3_rates_seen_by_scheduler() -> None:
    """The view's rates change at J2's start: 0.8 alone, 0.8/1.3 together."""
    seen = []

    class Probe(Fixed):
        def decide(self, view):
            out = super().decide(view)
            seen.append((view.now, view.rate.tolist()))
            return out

    sim = hetgym.simulate(_t3(50.0), Probe({0: [0, 2], 1: [1, 3]}), check_every_event=True)
    assert sim.jobs["end"].tolist() == pytest.approx([147.5, 197.5], rel=1e-12)
    assert seen[0] == (0.0, [0.0, 0.0])  # before the start at t=0
    assert seen[1][0] == 50.0 and seen[1][1] == pytest.approx([0.8, 0.0])


def test_domain_socket_vs_node() -> None:
    """Packed pairs {0,1} and {2,3} share no socket (no interference), but share the node."""
    for domain, end in (("socket", 100.0), ("node", 130.0)):
        res = _run("fast", _t3(0.0, interference_domain=domain), Fixed({0: [0, 1], 1: [2, 3]}))
        assert res.jobs["end"].tolist() == pytest.approx([end, end], rel=1e-12), domain


def test_off_by_default_and_single_gpu_jobs_insensitive() -> None:
    """coeff 0: no effect; 1-GPU jobs are neither sensitive nor pressing (bw default)."""
    res = _run("fast", _t3(0.0, interference_coeff=0.0), Fixed({0: [0, 2], 1: [1, 3]}))
    assert res.jobs["end"].tolist() == pytest.approx([125.0, 125.0], rel=1e-12)
    wl = _jobs([{"job_id": 1, "arrival": 0.0, "workers": 2, "work": 100.0, "tput_p100": 0.5},
                {"job_id": 2, "arrival": 0.0, "workers": 1, "work": 50.0, "tput_p100": 1.0}])
    sc = Scenario(cluster=MINSKY, workload=wl,
                  options=SimOptions(restart_delay=0.0, topology_coeff=0.125,
                                     interference_coeff=0.3))
    res = _run("fast", sc, Fixed({0: [0, 1], 1: [2]}))
    assert res.jobs["end"].tolist() == pytest.approx([100.0, 50.0])
    # an explicit bw column makes the 1-GPU job press: J1 slowed by 1/(1 + 0.3 x 1 x 2) while
    # together... but J2 sits on socket 1 and J1 on socket 0: still nothing
    res = _run("fast", sc, Fixed({0: [0, 2], 1: [1]}))
    assert res.jobs["end"].tolist() == pytest.approx([125.0, 50.0])
    wl2 = Workload.from_frame(wl.frame.assign(bw=[np.nan, 2.0]))
    res = _run("fast", sc.replace(workload=wl2), Fixed({0: [0, 2], 1: [1]}))
    # J1 at 0.8/1.6 = 0.5 for 50 s (25 done), then 0.8: 75 / 0.8 = 93.75 more
    assert res.jobs["end"].tolist() == pytest.approx([143.75, 50.0], rel=1e-12)


def test_pairwise_table() -> None:
    """Table mode: J1 (type a) next to J2 (type b) is slowed by table[(a, b)] = 1.5."""
    wl = _jobs([{"job_id": 1, "arrival": 0.0, "workers": 1, "work": 30.0, "tput_p100": 1.0,
                 "job_type": "a"},
                {"job_id": 2, "arrival": 0.0, "workers": 1, "work": 10.0, "tput_p100": 1.0,
                 "job_type": "b"}])
    sc = Scenario(cluster=MINSKY, workload=wl,
                  options=SimOptions(restart_delay=0.0, interference_table={("a", "b"): 1.5}))
    for sim in ("fast", "ref"):
        res = _run(sim, sc, Fixed({0: [0], 1: [1]}))
        # J1 at 1/1.5 while J2 runs (10 s: 6.667 done), then 1.0: ends 10 + 23.333
        assert res.jobs["end"].tolist() == pytest.approx([10 + 30 - 10 / 1.5, 10.0], rel=1e-12)


def _two_spread_and_a_third(cluster: ClusterSpec, third_work: float) -> Scenario:
    """J1, J2: 2-GPU comm-1 jobs of ideal 100 s at t=0; J3: a 1-GPU job at t=50."""
    wl = _jobs([{"job_id": 1, "arrival": 0.0, "workers": 2, "work": 100.0, "tput_p100": 0.5},
                {"job_id": 2, "arrival": 0.0, "workers": 2, "work": 100.0, "tput_p100": 0.5},
                {"job_id": 3, "arrival": 50.0, "workers": 1, "work": third_work,
                 "tput_p100": 1.0, "comm": 0.0}])
    return Scenario(cluster=cluster, workload=wl,
                    options=SimOptions(restart_delay=0.0, topology_coeff=0.125,
                                       interference_coeff=0.3))


@pytest.mark.parametrize("sim", ["fast", "ref"])
def test_preemption_and_restart_refresh_neighbours(sim: str) -> None:
    """Interference dynamics example with a preemption: J2 is preempted at t=50 (J3 arrives then
    and takes GPU 1 for 10 s); J1 speeds up to 0.8 at once, and slows to 0.8/1.3 again when J2
    restarts at 60."""
    sc = _two_spread_and_a_third(MINSKY, 10.0)
    res = _run(sim, sc, Fixed({0: [0, 2], 1: [1, 3], 2: [1]}, preempt_at={1: 50.0}))
    slow = 0.8 / 1.3
    j1 = 50 * slow + 10 * 0.8  # done by t=60
    end1 = 60 + (100 - j1) / slow
    j2 = 50 * slow + (end1 - 60) * slow  # J2 done when J1 ends
    end2 = end1 + (100 - j2) / 0.8
    assert res.jobs["end"].tolist() == pytest.approx([end1, end2, 60.0], rel=1e-12)


@pytest.mark.parametrize("sim", ["fast", "ref"])
def test_move_refreshes_both_placements(sim: str) -> None:
    """Interference dynamics example with a move: J1 on {0, 2} and J2 on {1, 3} of node 0 slow
    each other (0.8/1.3); at t=50 (J3, a 1-GPU job that presses nobody, arrives to make a
    decision point) J2 moves to GPUs 1 and 3 of node 1: the move refreshes both nodes, and both
    jobs run at 0.8 (spread, alone) from then on."""
    cluster = ClusterSpec(nodes=[NodeSpec(name="minsky", count=2, gpu_type="P100", gpus=4,
                                          cpus=16, mem_gb=512, sockets=2,
                                          topology=minsky_topology())])
    sc = _two_spread_and_a_third(cluster, 1.0)

    class Mover(Fixed):
        def decide(self, view):
            if view.now == 50.0:
                return [Move(1, Placement.of([1, 1], [1, 3])),
                        Start(2, None, Placement.of([1], [0]))]
            return super().decide(view)

    res = _run(sim, sc, Mover({0: [0, 2], 1: [1, 3]}))
    slow = 0.8 / 1.3
    done = 50 * slow  # each by t=50
    assert res.jobs["end"].tolist() == pytest.approx([50 + (100 - done) / 0.8] * 2 + [51.0],
                                                     rel=1e-12)


def _run(sim: str, sc: Scenario, sched):
    if sim == "fast":
        return hetgym.simulate(sc, sched, check_every_event=True)
    from tests import reference_sim as R

    return R.simulate(sc, sched)


# ------------------------------------------------------------------ parity
@st.composite
def interfering(draw, **kw) -> Scenario:
    sc = draw(scenarios(**kw))
    types = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=len(sc.workload.frame),
                          max_size=len(sc.workload.frame)))
    bw = draw(st.lists(st.sampled_from([np.nan, np.nan, 0.0, 0.5, 2.0]),
                       min_size=len(types), max_size=len(types)))
    wl = Workload.from_frame(sc.workload.frame.assign(job_type=types, bw=bw))
    opts = {"interference_coeff": draw(st.sampled_from([0.25, 0.5, 1.0])),
            "interference_domain": draw(st.sampled_from(["socket", "node"]))}
    if draw(st.booleans()):
        opts["interference_table"] = {(a, b): draw(st.sampled_from([1.0, 1.25, 1.5, 2.0]))
                                      for a in "abc" for b in "abc" if draw(st.booleans())}
    return sc.replace(workload=wl, options=opts)


@examples(40)
@given(sc=interfering(preempt=True, max_jobs=12, workers=(1, 2, 2, 3, 4)),
       seed=st.integers(0, 2**16), p_mixed=st.sampled_from([0.0, 0.5, 1.0]),
       p_move=st.sampled_from([0.0, 0.3]), p_wake=st.sampled_from([0.0, 0.5]))
def test_parity_random_decisions(sc: Scenario, seed: int, p_mixed: float, p_move: float,
                                 p_wake: float) -> None:
    """Random starts, placements, preemptions, moves and wake-ups with interference: the
    same run on both simulators."""
    fast, ref = run_both(sc, lambda: RandomScheduler(p_mixed=p_mixed, p_move=p_move,
                                                     p_wake=p_wake), seed=seed)
    assert_same(fast, ref, sc)


@examples(25)
@given(sc=interfering(gpu_types=("V100", "P100"), cpu_nodes=False, topo=True, min_gpus=2,
                      max_jobs=12, workers=(1, 2, 2, 3, 4)))
def test_parity_fifo(sc: Scenario) -> None:
    fast, ref = run_both(sc, lambda: baselines.make("fifo", blocking=False))
    assert_same(fast, ref, sc)


def test_parity_can_fail() -> None:
    """The reference sees interference: switching it off there changes the run."""
    sc = _t3(0.0)
    fast = hetgym.simulate(sc, Fixed({0: [0, 2], 1: [1, 3]}))
    from tests import reference_sim as R

    ref = R.simulate(sc.replace(options={"interference_coeff": 0.0}), Fixed({0: [0, 2], 1: [1, 3]}))
    with pytest.raises(AssertionError):
        assert_same(fast, ref, sc)


@pytest.mark.parametrize("name", ["topo-aware", "topo-aware-p", "topo-fcfs", "topo-bf"])
@examples(10)
@given(sc=interfering(gpu_types=("V100", "P100"), cpu_nodes=False, topo=True, min_gpus=2,
                      max_jobs=12, workers=(1, 2, 2, 3, 4)))
def test_parity_topo_baselines(name: str, sc: Scenario) -> None:
    """The TOPO schedulers read interference columns and socket maps from the view: the
    same run on both simulators."""
    fast, ref = run_both(sc, lambda: baselines.make(name))
    assert_same(fast, ref, sc)
