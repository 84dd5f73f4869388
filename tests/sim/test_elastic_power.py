"""Elastic gang sizes, node power state, deadline metrics and checkpoints in
work units (docs/semantics.md): the engine against the reference simulator, and hand examples.

The parity tests draw the small scenarios of ``test_reference_equivalence`` and add
``min_workers``/``max_workers``/``scaling_exponent`` columns and the new options; a
seeded random scheduler starts and moves jobs with a random gang size g in their bounds
on random free GPUs and preempts at random. Both simulators must give the same run, the same
energy per node and the same busy node-seconds.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hetgym
from hetgym import ClusterSpec, NodeSpec, Scenario, SimOptions, Workload
from hetgym.decisions import Move, Placement, Preempt, SchedulerBase, SchedulingError, Start
from hetgym.metrics import node_books
from hetgym.sim.engine import Simulator
from hetgym.specs import PowerModel
from tests.sim.test_reference_equivalence import (
    assert_same,
    examples,
    run_both,
    scenarios,
)


@st.composite
def elastic_scenarios(draw) -> Scenario:
    sc = draw(scenarios(preempt=True, max_jobs=12, cpu_nodes=False))
    df = sc.workload.frame.copy()
    n = len(df)
    w = df["workers"].to_numpy()
    df["min_workers"] = [draw(st.integers(1, int(x))) for x in w]
    df["max_workers"] = [int(x) + draw(st.sampled_from([0, 0, 1, 2, 3])) for x in w]
    df["scaling_exponent"] = [draw(st.sampled_from([math.nan, math.nan, 0.8, 0.5, 1.0]))
                              for _ in range(n)]
    o = sc.options
    options = SimOptions(**{**{f: getattr(o, f) for f in o.__dataclass_fields__},
                            "idle_power": draw(st.sampled_from(["always", "busy_nodes"])),
                            "checkpoint_unit": draw(st.sampled_from(["seconds", "work"])),
                            "checkpoint_interval": draw(st.sampled_from([0.0, 1.0, 7.0, 30.0]))})
    return Scenario(cluster=sc.cluster, workload=Workload.from_frame(df), options=options)


class ElasticRandom:
    """Seeded random starts and moves with a gang size drawn in ``[min_workers,
    max_workers]`` on free GPUs of any node where the job can run, and random preemptions
    (from the view alone)."""

    def __init__(self, p_start: float = 0.6, p_preempt: float = 0.2, p_move: float = 0.15) -> None:
        self.p_start, self.p_preempt, self.p_move = p_start, p_preempt, p_move

    def _pick(self, view, cap, j: int, rng) -> Placement | None:
        """A random placement of a random gang size on ``cap``'s free GPUs, taken from it."""
        g = int(rng.integers(view.min_workers[j], view.max_workers[j] + 1))
        free = [(n, k) for n in range(len(view.node_device))
                if view.tput[j, view.node_device[n]] > 0
                for k in range(int(view.node_gpus[n])) if cap.gpu_owner[n, k] < 0]
        if len(free) < g:
            return None
        pick = sorted(free[i] for i in rng.permutation(len(free))[:g])
        pl = Placement.of([p[0] for p in pick], [p[1] for p in pick])
        trial = cap.copy()  # cores and memory must fit too
        trial.take(j, pl.nodes, pl.gpus)
        if (trial.free_cpus < -1e-9).any() or (trial.free_mem < -1e-9).any():
            return None
        cap.take(j, pl.nodes, pl.gpus)
        return pl

    def reset(self, view) -> None:
        pass

    def decide(self, view) -> list:
        rng = view.rng
        cap = view.capacity()
        out: list = []
        limit = view.max_preemptions
        held = 0
        for j in view.running.tolist():
            ok = not view.in_grace(j) and (limit is None or view.n_preempt[j] < limit)
            if ok and view.n_preempt[j] < 3 and rng.random() < self.p_preempt:
                out.append(Preempt(j))
                if view.grace[j] <= 0:
                    cap.give(j)
                    continue
            elif not view.in_grace(j) and rng.random() < self.p_move:
                cap.give(j)
                pl = self._pick(view, cap, j, rng)
                if pl is None:
                    g = int(view.nworkers[j])
                    cap.take(j, view.worker_node[j, :g], view.worker_gpu[j, :g])
                else:
                    out.append(Move(j, pl))
            held += 1
        for j in view.queue.tolist():
            if rng.random() >= self.p_start and held:
                continue
            pl = self._pick(view, cap, j, rng)
            if pl is None:
                continue
            out.append(Start(j, None, pl))
            held += 1
        return out


@examples(60)
@given(sc=elastic_scenarios(), seed=st.integers(0, 2**16))
def test_elastic_power_checkpoint_parity(sc: Scenario, seed: int) -> None:
    fast, ref = run_both(sc, ElasticRandom, seed=seed)
    assert_same(fast, ref, sc)
    start = 0
    for spec in sc.cluster.nodes:
        e = sum(ref.node_energy[start:start + spec.count]) / 3.6e6
        assert fast.metrics[f"energy_kwh_node_{spec.name}"] == pytest.approx(e, rel=1e-9, abs=1e-15)
        start += spec.count
    on = sum(ref.node_busy) if sc.options.idle_power == "busy_nodes" else len(ref.node_busy) * ref.now
    assert fast.metrics["node_on_seconds"] == pytest.approx(on, rel=1e-9, abs=1e-9)
    assert sum(ref.node_energy) / 3.6e6 == pytest.approx(fast.metrics["energy_kwh"], rel=1e-9, abs=1e-15)


# ------------------------------------------------------------------ hand examples
def _scenario(rows: list[dict], nodes: list[NodeSpec], **opts) -> Scenario:
    return Scenario(cluster=ClusterSpec(nodes), workload=Workload.from_frame(pd.DataFrame(rows)),
                    options=SimOptions(**opts))


NODE_A = NodeSpec("A", gpu_type="V100", gpus=2, cpus=8, mem_gb=64,
                  power=PowerModel(idle_w=100.0, gpu_active_w=250.0, cpu_core_active_w=0.0))
NODE_B = NodeSpec("B", gpu_type="T4", gpus=1, cpus=8, mem_gb=64,
                  power=PowerModel(idle_w=50.0, gpu_active_w=70.0, cpu_core_active_w=0.0))


def _job(i: int, work: float, **kw) -> dict:
    row = {"job_id": i, "arrival": 0.0, "user": "u", "job_class": "BE", "workers": 1,
           "work": work, "cpus": 0.0, "mem_gb": 0.0, "tput_v100": 1.0, "tput_t4": 0.5}
    row.update(kw)
    return row


class Fixed:
    """Starts given jobs with given placements at their arrival (a script)."""

    def __init__(self, plan: dict[int, tuple[list[int], list[int]]]) -> None:
        self.plan = plan

    def reset(self, view) -> None:
        pass

    def decide(self, view) -> list:
        return [Start(j, None, Placement.of(*self.plan[j])) for j in view.queue.tolist()
                if j in self.plan]


def test_elastic_rate_and_duration() -> None:
    """g = 2 of an elastic job with e = 0.8 runs at 2 * 1 * 2**-0.2 it/s: 600 it end at 344.61 s;
    view.duration agrees; a gang outside the bounds is refused, naming the bounds."""
    sc = _scenario([_job(0, 600.0, max_workers=2, scaling_exponent=0.8)], [NODE_A, NODE_B],
                   restart_delay=0.0, idle_power="busy_nodes")
    res = hetgym.simulate(sc, Fixed({0: ([0, 0], [0, 1])}))
    assert res.jobs["end"][0] == pytest.approx(600.0 / 2 ** 0.8, rel=1e-12)
    sim = Simulator(sc)
    assert sim.view.duration(0, 0, g=2) == pytest.approx(344.6095, rel=1e-6)
    assert sim.view.duration(0, 0) == 600.0
    sim.advance()
    with pytest.raises(SchedulingError, match="1 to 2 workers"):
        sim.start(0, None, Placement.of([0, 0, 1], [0, 1, 0]))


def test_busy_nodes_energy_worked_example_a1() -> None:
    """Configuration-choice example (docs/andreas.md) energy: J1 on A x 2 (0-344.61 s), J2 on B
    x 1 (0-600 s): 278,765.7 J with busy_nodes (EUR 0.0177140), + A's idle 100 W x 255.39 s with
    "always" (EUR 0.0193369)."""
    rows = [_job(0, 600.0, max_workers=2, scaling_exponent=0.8),
            _job(1, 300.0, max_workers=2, scaling_exponent=0.8)]
    plan = {0: ([0, 0], [0, 1]), 1: ([1], [0])}
    t1 = 600.0 / 2 ** 0.8
    for mode, euro in (("busy_nodes", 0.0177140), ("always", 0.0193369)):
        res = hetgym.simulate(_scenario(rows, [NODE_A, NODE_B], restart_delay=0.0, idle_power=mode),
                              Fixed(plan))
        joules = t1 * 600.0 + 600.0 * 120.0 + (0.0 if mode == "busy_nodes" else 100.0 * (600.0 - t1))
        m = res.summary()
        assert m["energy_kwh"] * 3.6e6 == pytest.approx(joules, rel=1e-12)
        assert m["energy_cost"] == pytest.approx(euro, abs=5e-8)
        assert m["energy_kwh_node_A"] * 3.6e6 == pytest.approx(joules - 72000.0, rel=1e-12)
        assert m["energy_kwh_node_B"] * 3.6e6 == pytest.approx(72000.0, rel=1e-12)
        on = t1 + 600.0 if mode == "busy_nodes" else 2 * 600.0
        assert m["node_on_seconds"] == pytest.approx(on, rel=1e-12)
    assert joules == pytest.approx(278765.7 + 100.0 * (600.0 - t1), abs=0.05)


def test_deadline_metrics_and_total_cost() -> None:
    """Two jobs one after another on one GPU: J1 ends 100 (d 150), J2 ends 200 (d 120, w 3):
    one miss, tardiness (0 + 80) / 2 = 40, max 80, total cost = energy + 240 x price."""
    rows = [_job(0, 100.0, deadline=150.0), _job(1, 100.0, deadline=120.0, weight=3.0),
            _job(2, 50.0)]
    sc = _scenario(rows, [NODE_A.__class__("A", gpu_type="V100", gpus=1, cpus=8, mem_gb=64)],
                   restart_delay=0.0, tardiness_price=0.01)
    res = hetgym.simulate(sc, hetgym_fifo())
    m = res.summary()
    assert res.jobs["end"].tolist() == [100.0, 200.0, 250.0]
    assert (m["deadline_misses"], m["avg_tardiness"], m["max_tardiness"]) == (1.0, 40.0, 80.0)
    assert m["tardiness_cost"] == 240.0
    assert m["total_cost"] == pytest.approx(m["energy_cost"] + 2.4, rel=1e-12)


def hetgym_fifo():
    import baselines

    return baselines.make("fifo")


def test_checkpoint_in_work_units() -> None:
    """checkpoint_unit="work", q = 1 iteration: preempted at 250.5 s at 1 it/s, 250 whole
    iterations are kept (0.5 lost); with seconds and interval 100 s: 50.5 s are lost."""
    class PreemptAt(SchedulerBase):
        round_length = 250.5

        def __init__(self) -> None:
            self.done = False

        def reset(self, view) -> None:
            pass

        def decide(self, view) -> list:
            if view.queue.size:
                return [Start(int(view.queue[0]), 0)]
            if not self.done and view.now >= 250.5:
                self.done = True
                return [Preempt(0), Start(0, 0)]
            return []

    for unit, interval, left in (("work", 1.0, 750.0), ("seconds", 100.0, 800.0)):
        sc = _scenario([_job(0, 1000.0)], [NodeSpec("A", gpu_type="V100", gpus=1)],
                       restart_delay=0.0, checkpoint_unit=unit, checkpoint_interval=interval)
        res = hetgym.simulate(sc, PreemptAt())
        assert res.jobs["end"][0] == pytest.approx(250.5 + left, rel=1e-12), unit


def test_defaults_fill_and_bad_bounds() -> None:
    """No elastic columns: bounds = workers and exponent = the scenario's; bad bounds raise
    naming the column."""
    wl = Workload.from_frame(pd.DataFrame([_job(0, 10.0, workers=2)]))
    assert wl.frame["min_workers"].tolist() == [2] and wl.frame["max_workers"].tolist() == [2]
    with pytest.raises(ValueError, match="min_workers"):
        Workload.from_frame(pd.DataFrame([_job(0, 10.0, workers=2, min_workers=3)]))
    with pytest.raises(ValueError, match="max_workers"):
        Workload.from_frame(pd.DataFrame([_job(0, 10.0, workers=2, max_workers=1)]))
    with pytest.raises(ValueError, match="scaling_exponent"):
        Workload.from_frame(pd.DataFrame([_job(0, 10.0, scaling_exponent=1.5)]))
    with pytest.raises(ValueError, match="idle_power"):
        SimOptions(idle_power="never")
    sim = Simulator(_scenario([_job(0, 10.0)], [NODE_A], idle_power="busy_nodes"))
    assert np.array_equal(sim.state.run.node_units, [0])
    assert node_books(sim)[0].tolist() == [0.0]
