"""A plan applied in one compiled call (``Simulator.apply_plan``, SRPT's ``decide_and_apply``)
gives the same run as the same decisions applied one by one (``Simulator.apply``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import baselines
import hetgym
from baselines.classic.schedulers import SRPT
from baselines.common.parts import FastestOnly
from hetgym.decisions import Cadence, Placement, Preempt, SchedulingError, Start, cadence_of
from hetgym.sim.codes import JobStatus
from hetgym.sim.engine import Simulator
from tests.baselines.test_fast_paths import workload

ROOT = Path(__file__).resolve().parents[2]


class OneByOne:
    """A scheduler's ``decide`` alone: the runner applies its decisions one by one."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.cadence = Cadence(round_length=cadence_of(inner).round_length)

    def reset(self, view) -> None:
        self.inner.reset(view)

    def decide(self, view):
        return self.inner.decide(view)


def _scale(n: int, load: float):
    spec = importlib.util.spec_from_file_location("bench_scale", ROOT / "scripts" / "bench_scale.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod.scale_scenario(n, load)


def _same_run(sc, make, check_every_event: bool = False) -> None:
    a = hetgym.simulate(sc, make(), check_every_event=check_every_event)
    b = hetgym.simulate(sc, OneByOne(make()), check_every_event=check_every_event)
    pd.testing.assert_frame_equal(a.jobs, b.jobs, check_exact=True)
    assert a.segments == b.segments
    assert a.metrics["decision_points"] == b.metrics["decision_points"]


@pytest.mark.parametrize("name", ["toy-3jobs", "hetero-small"])
def test_srpt_plan_in_one_call_on_presets(name) -> None:
    _same_run(hetgym.scenarios.get(name), lambda: baselines.make("srpt"), check_every_event=True)


def test_srpt_plan_in_one_call_on_fitgpp_lab() -> None:
    sc = hetgym.scenarios.get("fitgpp-lab", n_jobs=300)
    _same_run(sc, lambda: baselines.make("srpt"))
    _same_run(sc, lambda: SRPT(devices=FastestOnly()))


def test_srpt_plan_in_one_call_on_the_scaling_workload() -> None:
    sc = _scale(1500, 1.2)
    res = hetgym.simulate(sc, baselines.make("srpt"))
    assert res.jobs["preemptions"].sum() > 1000  # the batched path does preempt, a lot
    _same_run(sc, lambda: baselines.make("srpt"))


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_srpt_plan_in_one_call_with_grace_limits_and_checkpoints(seed) -> None:
    """Grace periods, preemption limits, checkpoint loss, restart delays, CPU nodes; every
    event's capacity invariants checked on the batched path too."""
    _same_run(workload(seed, 120, 100.0, grace=True, cpu_nodes=True), lambda: baselines.make("srpt"),
              check_every_event=True)


def _busy_sim():
    """A simulator of hetero-small at its first instant with two jobs waiting, and those jobs."""
    sim = Simulator(hetgym.scenarios.get("hetero-small"))
    while sim.n_queue < 2 and sim.advance():
        pass
    return sim, [int(j) for j in sim.queued()]


def _plan_arrays(sim, starts):
    """``(jobs, devs, nodes, gpus)`` arrays for ``[(job, dev, Placement), ...]``."""
    wmax = sim.js.worker_node.shape[1]
    k = max(len(starts), 1)
    jobs, devs = np.zeros(k, dtype=np.int64), np.zeros(k, dtype=np.int64)
    nodes, gpus = np.full((k, wmax), -1, dtype=np.int64), np.full((k, wmax), -1, dtype=np.int64)
    for i, (j, d, p) in enumerate(starts):
        jobs[i], devs[i] = j, d
        nodes[i, : len(p)], gpus[i, : len(p)] = p.nodes, p.gpus
    return jobs, devs, nodes, gpus


def _first_fit(sim, job):
    """A placement of ``job`` on its first device type with room (from a scratch copy)."""
    cap = sim.view.capacity()
    for d in range(len(sim.devices)):
        p = cap.place(job, d)
        if p is not None:
            return d, p
    raise AssertionError(f"job {job} fits nowhere")


def test_apply_plan_refuses_as_apply_does() -> None:
    """A refused decision raises apply()'s error; the decisions before it stay applied."""
    sim, q = _busy_sim()
    ref, _ = _busy_sim()
    a, b = q[0], q[1]
    d, p = _first_fit(sim, a)
    # the same start twice: the second is refused (job a is no longer QUEUED)
    jobs, devs, nodes, gpus = _plan_arrays(sim, [(a, d, p), (a, d, p)])
    with pytest.raises(SchedulingError) as got:
        sim.apply_plan(np.zeros(0, dtype=np.int64), 0, jobs, devs, nodes, gpus, 2)
    with pytest.raises(SchedulingError) as want:
        ref.apply([Start(a, d, p), Start(a, d, p)])
    assert str(got.value) == str(want.value)
    assert sim.js.status[a] == ref.js.status[a] == JobStatus.RUNNING and sim.n_running == 1  # the first started
    with pytest.raises(SchedulingError) as got:
        sim.apply_plan(np.asarray([b]), 1, jobs, devs, nodes, gpus, 0)
    with pytest.raises(SchedulingError) as want:
        ref.apply([Preempt(b)])
    assert str(got.value) == str(want.value) and f"job {b}" in str(got.value)


def test_apply_plan_matches_apply_step_by_step() -> None:
    """Preempt then start through apply_plan leaves the same state arrays as apply()."""
    sc = hetgym.scenarios.get("hetero-small")
    sims = [Simulator(sc), Simulator(sc)]
    for s in sims:
        while s.n_queue < 2 and s.advance():
            pass
    q = [int(j) for j in sims[0].queued()]
    d, p = _first_fit(sims[0], q[0])
    sims[0].apply([Start(q[0], d, p)])
    jobs, devs, nodes, gpus = _plan_arrays(sims[1], [(q[0], d, p)])
    sims[1].apply_plan(np.zeros(0, dtype=np.int64), 0, jobs, devs, nodes, gpus, 1)
    d2, p2 = _first_fit(sims[0], q[1])
    sims[0].apply([Preempt(q[0]), Start(q[1], d2, Placement(p2.nodes, p2.gpus))])
    jobs, devs, nodes, gpus = _plan_arrays(sims[1], [(q[1], d2, p2)])
    sims[1].apply_plan(np.asarray([q[0]]), 1, jobs, devs, nodes, gpus, 1)
    scratch = {"out_done", "out_grace", "out_node", "out_gpu", "scr_i", "scr_f", "qtmp"}
    for part in ("job", "node", "run"):
        x, y = getattr(sims[0].state, part), getattr(sims[1].state, part)
        for f in set(x._fields) - scratch:
            u, v = getattr(x, f), getattr(y, f)
            if f == "running":  # the list's tail past the running count is not state
                u, v = u[: sims[0].n_running], v[: sims[1].n_running]
            if f == "queue":
                u, v = sims[0].queued(), sims[1].queued()
            np.testing.assert_array_equal(u, v, err_msg=f"{part}.{f}")
    assert sims[0].n_running == 1 and sims[0].js.status[q[0]] == JobStatus.QUEUED
