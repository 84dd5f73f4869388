"""ANDREAS RG's tables in one compiled call (:mod:`baselines.andreas.prep`) give
exactly what the NumPy builders it replaced gave (kept below as the reference):
:class:`ReferenceRG` keeps ``AndreasRG.plan`` / ``decide`` as they were written before (the
reference). At every decision point of whole runs the search is called with the same
arguments bit for bit (dtypes and shapes included), the decisions and f_OBJ are the same,
and so is the schedule, job by job: where running jobs are pinned (fitgpp-lab), re-planned
(fitgpp-lab without grace periods or preemption limit, andreas-sim), and where some waiting
jobs are outside ANDREAS' model (hetero-small: CPU nodes, gangs no single node holds).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import baselines.andreas.schedulers as andreas_mod
import hetgym
from baselines.andreas.schedulers import AndreasRG
from baselines.andreas.configs import pinned_nodes_nb
from baselines.andreas.kernel import rg_search_nb
from baselines.andreas.parts import (
    ConfigTable,
    NodeClasses,
    config_table,
    current_configs,
    may_fit,
    plan_decisions,
    relabel_nodes,
    start_outside_model,
)
from hetgym.decisions import Decision
from hetgym.sim.codes import GRACE
from tests.baselines.test_speed_paths import assert_same_results

# The NumPy builders that andreas_prep.plan_tables_nb replaced, kept here as its reference.


def pinned_mask(view, run: np.ndarray, node: np.ndarray) -> np.ndarray:
    """Which of the running jobs ``run`` (their ``node`` from :func:`current_configs`) a
    plan keeps where they are (in a grace period, with a grace period, at the preemption
    limit, or outside the model: ``node`` < 0)."""
    bad = (np.asarray(view.status[run]) == GRACE) | (view.grace[run] > 0) | (node < 0)
    if view.max_preemptions is not None:
        bad |= view.n_preempt[run] >= view.max_preemptions
    return bad


def pinned_nodes(view, classes: NodeClasses, pinned: list[int]):
    """Per node: free GPUs, open flag and first-ending (time, EUR) left by pinned jobs
    (:func:`~baselines.andreas.configs.pinned_nodes_nb`)."""
    n_nodes = len(view.node_device)
    free = np.asarray(view.node_gpus, dtype=np.int64).copy()
    is_open = np.zeros(n_nodes, dtype=np.bool_)
    first_t = np.full(n_nodes, np.inf)
    first_c = np.zeros(n_nodes)
    now = float(view.now)
    jobs = np.asarray(pinned, dtype=np.int64)
    sim = getattr(view, "simulator", None)  # the projected ends in one read (= expected_finish)
    fin = (sim.js.finish[jobs] if sim is not None
           else np.array([view.expected_finish(j) for j in pinned], dtype=np.float64))
    t_left = np.asarray(fin, dtype=np.float64) - now
    pinned_nodes_nb(jobs, view.nworkers, view.worker_node, view.worker_gpu, t_left,
                    classes.of_node, classes.rate, free, is_open, first_t, first_c)
    return free, is_open, first_t, first_c


def resource_table(view, classes: NodeClasses, tab: ConfigTable, cur: np.ndarray,
                   cur_g: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cores and memory for the search (assumption *node classes and binding*;
    :mod:`baselines.andreas.fit`): ``(node_rc0, cfg_rc, cur_rc)``. ``cfg_rc[i, e]`` = (g x
    cores, g x memory) of entry e of row i (job ``tab.jobs[i]``) on its class's device;
    ``cur_rc[i]`` = what row i holds on its node ``cur[i]`` now (g = ``cur_g[i]``; 0 where
    ``cur[i]`` < 0); ``node_rc0[n]`` = the cores and memory free on node n with the rows
    ``rows`` that run now taken off it (the plan re-places them; the other running jobs keep
    theirs)."""
    jobs = tab.jobs
    dev = classes.dev[tab.cls]
    cfg_rc = np.empty(tab.g.shape + (2,))
    cfg_rc[..., 0] = tab.g * view.cpus_need[jobs[:, None], dev]
    cfg_rc[..., 1] = tab.g * view.mem[jobs][:, None]
    cur_rc = np.zeros((len(jobs), 2))
    on = np.flatnonzero(cur >= 0)
    if len(on):
        d = np.asarray(view.node_device)[cur[on]]
        cur_rc[on, 0] = cur_g[on] * view.cpus_need[jobs[on], d]
        cur_rc[on, 1] = cur_g[on] * view.mem[jobs[on]]
    node_rc0 = np.stack([np.asarray(view.free_cpus, dtype=np.float64),
                         np.asarray(view.free_mem, dtype=np.float64)], axis=1)
    back = rows[cur[rows] >= 0]
    np.add.at(node_rc0, cur[back], cur_rc[back])
    return node_rc0, cfg_rc, cur_rc


class ReferenceRG(AndreasRG):
    """``AndreasRG.plan`` and ``decide`` as written before the tables moved into one
    compiled call (the NumPy builders above and in baselines.andreas.parts)."""

    def plan(self, view: Any) -> tuple[dict[int, tuple[int, int]], list[int], list[int], float]:
        seed = int(view.rng.integers(2**31 - 1))
        cl = self.classes
        run = np.asarray(view.running, dtype=np.int64)
        node_r, cls_r, g_r = current_configs(view, cl, run)
        bad = pinned_mask(view, run, node_r)
        pinned = run[bad].tolist()
        keep = ~bad
        running = run[keep].tolist()
        queued = view.queue.tolist()
        cand = np.asarray(running + queued, dtype=np.int64)
        n_run = len(running)
        n_q = len(queued)
        cur = np.concatenate([node_r[keep], np.full(n_q, -1, dtype=np.int64)])
        cur_cls = np.concatenate([cls_r[keep], np.full(n_q, -1, dtype=np.int64)])
        cur_g = np.concatenate([g_r[keep], np.full(n_q, -1, dtype=np.int64)])
        tab = config_table(view, cl, cand, (cur_cls, cur_g))
        has = (tab.dlen + tab.clen) > 0
        outside = cand[n_run:][~has[n_run:]].tolist()
        stuck = cand[:n_run][~has[:n_run]].tolist()
        if stuck:
            pinned += stuck
            running = [j for j in running if j not in set(stuck)]
        free, is_open, first_t, first_c = pinned_nodes(view, cl, pinned)
        rows = np.flatnonzero(has)
        if len(rows) == 0:
            return {}, running, outside, 0.0
        arrival = view.arrival[cand]
        base = rows[np.lexsort((cand[rows], arrival[rows], -tab.delta[rows]))]
        cur_g = np.maximum(cur_g, 0)
        node_rc0, cfg_rc, cur_rc = resource_table(view, cl, tab, cur, cur_g, rows)
        out_node = np.empty(len(cand), dtype=np.int64)
        out_cfg = np.empty(len(cand), dtype=np.int64)
        f = self._search(base, np.ascontiguousarray(view.weight[cand]),
                         np.ascontiguousarray(view.deadline[cand]), tab.cls, tab.g, tab.t, tab.dl,
                         tab.dlen, tab.cl, tab.clen, tab.mj, cur, cur_g, cl.of_node, free, is_open, first_t,
                         first_c, node_rc0, cfg_rc, cur_rc, cl.start, cl.nodes, cl.rate, float(view.now),
                         self.round_length, float(self.rho), float(self.alpha), float(self.beta), float(self.pi),
                         int(self.max_iter), seed, out_node, out_cfg, False, True)
        sel = base[out_node[base] >= 0]
        targets = dict(zip(cand[sel].tolist(),
                           zip(out_node[sel].tolist(), tab.g[sel, out_cfg[sel]].tolist())))
        current = {int(cand[r]): (int(cur[r]), int(cur_g[r])) for r in range(n_run) if cur[r] >= 0}
        rc = (dict(zip(cand[sel].tolist(), cfg_rc[sel, out_cfg[sel]])), node_rc0) if current else None
        return relabel_nodes(targets, current, cl, free, rc), running, outside, float(f)

    def decide(self, view: Any) -> list[Decision]:
        targets, running, outside, f = self.plan(view)
        self.last_objective = f
        sim = getattr(view, "simulator", None)
        if not running and not outside and sim is not None:
            ns = sim.ns
            if not may_fit(view, ns.free_gpus, ns.free_cpus, ns.free_mem, targets).any():
                return []
        cap = view.capacity()
        out = plan_decisions(view, cap, targets, running)
        return out + start_outside_model(view, cap, outside)


def described(d: Decision) -> tuple:
    """A decision as plain values (kind, job, device, nodes, GPUs)."""
    pl = getattr(d, "placement", None)
    where = () if pl is None else (pl.nodes.dtype, pl.nodes.tolist(), pl.gpus.dtype, pl.gpus.tolist())
    return (type(d).__name__, d.job, getattr(d, "device", None)) + where


def recorded(cls: type, sc: hetgym.Scenario, **kw: Any) -> tuple[hetgym.Result, list, list, list]:
    """A run of ``cls(**kw)``: its result, the search's arguments at every call (copies,
    the outputs after the call), every decision point's decisions and f_OBJ."""
    calls: list = []
    points: list = []
    objectives: list = []

    def spy(*args):
        f = rg_search_nb(*args)
        calls.append([a.copy() if isinstance(a, np.ndarray) else a for a in args] + [f])
        return f

    class Spied(cls):
        def decide(self, view):
            out = super().decide(view)
            points.append([described(d) for d in out])
            objectives.append(self.last_objective)
            return out

    saved = andreas_mod.rg_search_nb
    andreas_mod.rg_search_nb = spy
    try:
        res = hetgym.simulate(sc, Spied(parallel=False, **kw))
    finally:
        andreas_mod.rg_search_nb = saved
    return res, calls, points, objectives


def same_value(a: Any, b: Any) -> bool:
    """Bit for bit: arrays of the same dtype, shape and bytes, or scalars of the same type
    and the same float64 bytes."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and a.shape == b.shape and a.tobytes() == b.tobytes())
    return type(a) is type(b) and np.float64(a).tobytes() == np.float64(b).tobytes()


CASES = [
    ("fitgpp-lab", {"n_jobs": 300, "nodes": 12}, {}),  # running jobs pinned, cores and memory bind
    ("fitgpp-lab", {"n_jobs": 200, "nodes": 10, "seed": 3}, {"beta": 0.7}),
    ("fitgpp-lab", {"n_jobs": 200, "nodes": 12, "grace_scale": 0.0, "max_preemptions": None},
     {}),  # running jobs re-planned: moves, preemptions, relabelled nodes
    ("andreas-sim", {"n_nodes": 4}, {}),
    ("andreas-sim", {"n_nodes": 6, "gpus": "4/2", "seed": 1}, {"alpha": 0.3}),
    ("helios", {"n_jobs": 60}, {}),  # waiting jobs outside the model
    ("hadar-sim", {"n_jobs": 40}, {}),
]


@pytest.mark.parametrize("name,kw,rg_kw", CASES)
def test_tables_and_plans_match_the_numpy_builders(name: str, kw: dict, rg_kw: dict) -> None:
    sc = hetgym.scenarios.get(name, **kw)
    a, calls_a, points_a, f_a = recorded(AndreasRG, sc, max_iter=40, **rg_kw)
    b, calls_b, points_b, f_b = recorded(ReferenceRG, sc, max_iter=40, **rg_kw)
    assert len(calls_a) == len(calls_b) > 10
    for i, (x, y) in enumerate(zip(calls_a, calls_b)):
        assert len(x) == len(y)
        for k, (u, v) in enumerate(zip(x, y)):
            assert same_value(u, v), f"search call {i}, argument {k} differs"
    assert points_a == points_b
    assert [np.float64(f).tobytes() for f in f_a] == [np.float64(f).tobytes() for f in f_b]
    assert_same_results(a, b)
    assert any(points_a)


def test_cases_cover_every_path() -> None:
    """The cases above reach decision points with re-planned running jobs (moved or
    preempted, nodes relabelled), with waiting jobs outside the model (started on a device),
    and with starts and nothing re-planned (the compiled start walk)."""
    seen = {"replanned": 0, "outside": 0, "walk": 0}

    class Counted(AndreasRG):
        def _plan_arrays(self, view):
            out = super()._plan_arrays(view)
            seen["replanned"] += bool(out[3])
            seen["outside"] += bool(out[4])
            seen["walk"] += not out[3] and not out[4] and len(out[0]) > 0
            return out

    moved = preempted = 0
    for name, kw, rg_kw in CASES:
        res = hetgym.simulate(hetgym.scenarios.get(name, **kw), Counted(max_iter=5, parallel=False, **rg_kw))
        moved += int(res.jobs["restarts"].sum())
        preempted += int(res.jobs["preemptions"].sum())
    assert min(seen.values()) > 10, seen
    assert moved > 10 and preempted > 10
