"""The faster forms of the paper-family baselines give exactly the
schedules of the straightforward rules kept here (the code they replaced).

Each fast form is run job by job (start, end, device, preemptions, restarts, segments,
decision points) against its plain form on workloads whose queues grow well past a few
jobs (``fitgpp-lab`` slices, the paper families' own presets).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

import hetgym
from baselines.andreas.schedulers import FirstPrinciple
from baselines.andreas.parts import config_table, start_outside_model, take_gpus
from baselines.gavel.schedulers import Gavel
from baselines.tiresias.schedulers import Tiresias
from hetgym.decisions import Decision, Placement, Start
from tests.baselines.test_fast_paths import assert_same_schedule

# Slow (compiled walks against the plain Python walks): run with -m slow.
pytestmark = pytest.mark.slow


def assert_same_results(a: hetgym.Result, b: hetgym.Result) -> None:
    """Job by job: start, end, device, preemptions, restarts; segments; decision points."""
    cols = ["start", "end", "device", "preemptions", "restarts"]
    pd.testing.assert_frame_equal(a.jobs[cols], b.jobs[cols], check_exact=True)
    assert a.segments == b.segments
    assert a.metrics["decision_points"] == b.metrics["decision_points"]


class PlainFirstPrinciple(FirstPrinciple):
    """The first-principle methods as written before: the configuration table of the
    whole sorted queue at every decision point, every job tried on every entry."""

    def decide(self, view: Any) -> list[Decision]:
        q = np.asarray(view.queue, dtype=np.int64)
        if len(q) == 0:
            return []
        jobs = self._sorted(view, q)
        tab = config_table(view, self.classes, jobs)
        cap = view.capacity()
        out: list[Decision] = []
        outside: list[int] = []
        for i, j in enumerate(jobs.tolist()):
            entries = tab.entries(i)
            if not entries:
                outside.append(j)
                continue
            for e in entries:
                k, g = int(tab.cls[i, e]), int(tab.g[i, e])
                n = self._node(view, cap, j, k, g)
                if n >= 0:
                    out.append(Start(j, None, take_gpus(view, cap, j, n, g)))
                    break
        return out + start_outside_model(view, cap, outside)


ANDREAS_SCENARIOS = [("fitgpp-lab", {"n_jobs": 300}), ("andreas-armida", {}),
                     ("andreas-sim", {}), ("hetero-small", {"n_jobs": 60})]


@pytest.mark.parametrize("order", ["fifo", "edf", "ps"])
@pytest.mark.parametrize("exclusive", [True, False])
@pytest.mark.parametrize("scen,kw", ANDREAS_SCENARIOS)
def test_first_principle_matches_plain_walk(order: str, exclusive: bool, scen: str, kw: dict) -> None:
    sc = hetgym.scenarios.get(scen, **kw)
    assert_same_schedule(sc, FirstPrinciple(order, exclusive), PlainFirstPrinciple(order, exclusive))


def plain_first(self, job: int, dev: int, w: int) -> Placement | None:
    """Gavel's server walk as written before: every node of the type, its free GPUs listed."""
    v = self.view
    nodes: list[int] = []
    gpus: list[int] = []
    c, m = float(v.cpus_need[job, dev]), float(v.mem[job])
    slots = (lambda n: [-1] * w) if bool(np.asarray(v.dev_is_cpu)[dev]) else \
        (lambda n: np.flatnonzero(self.gpu[n]).tolist())
    for n in np.flatnonzero(np.asarray(v.node_device) == dev).tolist():
        cpu, mem = self.cpu[n], self.mem[n]
        for g in slots(n):
            if len(nodes) == w or cpu + 1e-9 < c or mem + 1e-9 < m:
                break
            nodes.append(n)
            gpus.append(g)
            cpu -= c
            mem -= m
        if len(nodes) == w:
            break
    if len(nodes) < w:
        return None
    pl = Placement.of(nodes, gpus)
    self.take(job, pl.nodes, pl.gpus)
    return pl


GAVEL_SCENARIOS = [("fitgpp-lab", {"n_jobs": 300}), ("hadar-sim", {}),
                   ("synthetic-hybrid", {}), ("hetero-small", {"n_jobs": 80})]


@pytest.mark.parametrize("policy", ["las", "fifo-perf", "maxtput"])
@pytest.mark.parametrize("scen,kw", GAVEL_SCENARIOS)
def test_gavel_server_walk_matches_plain(policy: str, scen: str, kw: dict, monkeypatch) -> None:
    """Gavel's compiled assignment gives the schedule of the plain server walk (every node
    of the type, its free GPUs listed)."""
    sc = hetgym.scenarios.get(scen, **kw)
    from baselines.gavel import schedulers as gavel_mod
    from tests.baselines.gavel import gavel_reference

    fast = hetgym.simulate(sc, Gavel(policy=policy))
    monkeypatch.setattr(gavel_reference._Free, "first", plain_first)
    monkeypatch.setattr(gavel_mod, "assign_workers", gavel_reference.assign_workers)
    assert_same_results(fast, hetgym.simulate(sc, Gavel(policy=policy)))


class PlainTiresias(Tiresias):
    """Tiresias with the walk as first written (:meth:`Tiresias._walk_plain`)."""

    def _decide_all(self, view):
        return self._walk_plain(view)


TIRESIAS_SCENARIOS = [("fitgpp-lab", {"n_jobs": 400}), ("hadar-sim", {}),
                      ("synthetic-hybrid", {}), ("hetero-small", {"n_jobs": 80})]


@pytest.mark.parametrize("scen,kw", TIRESIAS_SCENARIOS)
def test_tiresias_walk_matches_plain(scen: str, kw: dict) -> None:
    sc = hetgym.scenarios.get(scen, **kw)
    assert_same_schedule(sc, Tiresias.make(), PlainTiresias.make())


def test_tiresias_walk_matches_plain_with_grace_and_limits() -> None:
    """Grace periods and a preemption limit pin running jobs out of the walk."""
    from tests.baselines.test_fast_paths import workload

    for seed in range(4):
        sc = workload(seed, 120, 100.0, grace=True, cpu_nodes=True)
        assert_same_schedule(sc, Tiresias.make(), PlainTiresias.make())


def test_first_principle_inside_the_model_computed_in_chunks() -> None:
    """Whether each job has a configuration, computed per 4,096 jobs at reset, is the
    whole table's answer (past a chunk boundary, with jobs outside the model too)."""
    from hetgym.sim.engine import Simulator

    sc = hetgym.scenarios.get("philly-hetero", n_jobs=4500)  # about 9% outside the model
    sim = Simulator(sc)
    fp = FirstPrinciple()
    fp.reset(sim.view)
    tab = config_table(sim.view, fp.classes, np.arange(sim.view.n_jobs))
    want = (tab.dlen + tab.clen) > 0
    assert len(fp._inside) == 4500 and (fp._inside == want).all()
    assert want[4096:].any() and not want.all()
