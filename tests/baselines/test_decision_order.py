"""Round emitters (Gavel's ``carry_out``, Hadar's ``emit``): decisions in an order the
engine accepts when CPU cores bind (a move onto a node waits for the job leaving it),
and no preemption past the scenario's ``max_preemptions``; the fitgpp-lab runs that
failed on both counts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import baselines
import hetgym
from baselines.gavel.place import carry_out
from baselines.hadar.emit import emit
from baselines.common.ledger import Ledger, at_limit, preemptible
from hetgym import ClusterSpec, NodeSpec, Scenario, SimOptions, Workload
from hetgym.decisions import Move, Placement, Preempt, Start
from hetgym.sim.engine import Simulator


def _sim(n_jobs: int = 2, max_preemptions=None) -> Simulator:
    """Three nodes of 2 V100 and 4 cores; jobs of one worker needing 3 cores each."""
    cluster = ClusterSpec(nodes=[NodeSpec(name="n", count=3, gpu_type="V100", gpus=2, cpus=4,
                                          mem_gb=64)])
    df = pd.DataFrame({"job_id": np.arange(n_jobs), "arrival": 0.0, "user": "u", "job_class": "BE",
                       "workers": 1, "work": 1000.0, "tput_v100": 1.0, "cpus": 3.0, "mem_gb": 1.0})
    sc = Scenario(cluster=cluster, workload=Workload.from_frame(df),
                  options=SimOptions(restart_delay=0.0, max_preemptions=max_preemptions))
    sim = Simulator(sc)
    sim.advance()  # the arrivals at t = 0
    return sim


def _pl(node: int, gpu: int) -> Placement:
    return Placement.of([node], [gpu])


def _where(sim: Simulator, j: int) -> tuple[int, int]:
    return int(sim.view.worker_node[j, 0]), int(sim.view.worker_gpu[j, 0])


def test_move_waits_for_the_job_leaving_the_cores():
    """Job 0 moves onto node 1, whose GPU 1 is free but whose cores job 1 holds until it
    moves to node 2: job 1's move comes first (before: job 0's, rejected by the engine)."""
    sim = _sim()
    sim.apply([Start(0, "v100", _pl(0, 0)), Start(1, "v100", _pl(1, 0))])
    plan = {0: (0, _pl(1, 1)), 1: (0, _pl(2, 0))}
    dec = carry_out(sim.view, plan)
    assert [(type(d), d.job) for d in dec] == [(Move, 1), (Move, 0)]
    sim.apply(dec)
    assert _where(sim, 0) == (1, 1) and _where(sim, 1) == (2, 0)
    h = emit(sim.view, {0: [_pl(2, 1)], 1: [_pl(0, 0)]})  # 0 onto node 2 when 1 has left
    assert [(type(d), d.job) for d in h] == [(Move, 1), (Move, 0)]
    sim.apply(h)
    assert _where(sim, 0) == (2, 1) and _where(sim, 1) == (0, 0)


def test_core_cycle_broken_by_a_preemption():
    """Jobs 0 and 1 swap nodes on distinct GPUs: a cycle through cores only, broken by
    preempting job 0 and starting it after job 1's move."""
    sim = _sim()
    sim.apply([Start(0, "v100", _pl(0, 0)), Start(1, "v100", _pl(1, 0))])
    dec = carry_out(sim.view, {0: (0, _pl(1, 1)), 1: (0, _pl(0, 1))})
    assert [(type(d), d.job) for d in dec] == [(Preempt, 0), (Move, 1), (Start, 0)]
    sim.apply(dec)
    assert _where(sim, 0) == (1, 1) and _where(sim, 1) == (0, 1)
    h = emit(sim.view, {0: [_pl(0, 0)], 1: [_pl(1, 0)]})
    assert [(type(d), d.job) for d in h] == [(Preempt, 0), (Move, 1), (Start, 0)]
    sim.apply(h)
    assert _where(sim, 0) == (0, 0) and _where(sim, 1) == (1, 0)


def test_cycle_at_the_preemption_limit_stays_put():
    """Both jobs of the cycle were preempted once (limit 1): no Preempt; both keep running
    where they are, and a start onto the cores they keep is dropped."""
    sim = _sim(n_jobs=3, max_preemptions=1)
    sim.apply([Start(0, "v100", _pl(0, 0)), Start(1, "v100", _pl(1, 0))])
    sim.apply([Preempt(0), Preempt(1)])
    sim.apply([Start(0, "v100", _pl(0, 0)), Start(1, "v100", _pl(1, 0))])
    v = sim.view
    assert at_limit(v, 0) and not preemptible(v, 0) and preemptible(v, 2) is False  # 2 waits
    plan = {0: (0, _pl(1, 1)), 1: (0, _pl(0, 1)), 2: (0, _pl(1, 0))}
    assert carry_out(v, plan) == []
    assert emit(v, {j: [p] for j, (_, p) in plan.items()}) == []


def test_ledger_matches_the_engine():
    """The ledger's test is the engine's: GPUs, cores, a job's own resources in a move,
    and what a preemption frees."""
    sim = _sim(n_jobs=3)
    sim.apply([Start(0, "v100", _pl(0, 0)), Start(1, "v100", _pl(1, 0))])
    led = Ledger(sim.view)
    assert not led.fits(2, _pl(0, 1))  # 3 + 3 cores > 4
    assert not led.fits(2, _pl(0, 0))  # GPU taken
    assert not led.move(0, _pl(1, 1))  # job 1's cores
    assert led.move(1, _pl(1, 1))  # its own cores
    assert not led.fits(2, _pl(1, 0)) and led.start(2, _pl(2, 0))
    led.preempt(0)
    assert led.fits(1, _pl(0, 1))
    with pytest.raises(hetgym.SchedulingError, match="CPU cores exceeded"):
        sim.apply([Move(0, _pl(1, 1))])
    sim.apply([Move(1, _pl(1, 1)), Start(2, "v100", _pl(2, 0))])


@pytest.mark.parametrize("name,params", [
    ("gavel-las", {"n_jobs": 500}), ("gavel-las", {"n_jobs": 64, "nodes": 2, "seed": 2}),
    ("hadar", {"n_jobs": 60}), ("hadare", {"n_jobs": 16, "nodes": 2}),
    ("hadar", {"n_jobs": 64, "nodes": 2}), ("hadare", {"n_jobs": 64, "nodes": 2})])
def test_fitgpp_lab_runs(name, params):
    """The smallest fitgpp-lab slices that failed: a Move or Start onto cores a later move
    frees ("CPU cores exceeded"; all four), a second preemption of a job under
    ``max_preemptions=1`` (Hadar, 64 jobs on 2 nodes). The limit holds throughout."""
    sc = hetgym.scenarios.get("fitgpp-lab", **params)
    res = hetgym.simulate(sc, baselines.make(name))
    assert not res.stalled and res.summary()["unfinished_jobs"] == 0
    assert (res.jobs["preemptions"] <= 1).all()
