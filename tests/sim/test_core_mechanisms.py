"""Hand-computed cases for the core mechanisms the paper families build on: scheduler
wake-ups (``next_wakeup``), the atomic ``Move``, and the View's timing and topology
additions (``attained_service``, ``run_start``, round flag and index, socket map,
``jobs_on_node``, ``job_type_id``, ``rate_of``). Every full run is also checked against
the pure-Python reference simulator (``run`` from ``test_mechanisms``)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import hetgym
from hetgym import NodeSpec
from hetgym.decisions import Cadence, Move, Placement, Preempt, SchedulerBase, SchedulingError, Start
from hetgym.sim import Simulator
from tests import reference_sim as R
from tests.sim.test_mechanisms import make, run

QUAD = NodeSpec(name="q", count=1, gpu_type="V100", gpus=4, cpus=16, mem_gb=64, sockets=2)


class Timed(SchedulerBase):
    """Starts every waiting job with the default placement (lowest free GPUs); ``plan`` maps a
    decision time to decisions; ``wakes`` lists the wake-up times it asks for in order."""

    @property
    def cadence(self) -> Cadence:
        return replace(super().cadence, wakeups=True)

    def __init__(self, plan=None, wakes=(), round_length=None) -> None:
        self.plan = dict(plan or {})
        self.wakes = list(wakes)
        self.round_length = round_length

    def reset(self, view) -> None:
        self.log: list[tuple] = []
        self.todo = list(self.wakes)

    def decide(self, view) -> list:
        self.log.append((view.now, view.queue.tolist(), float(view.remaining[0]),
                         view.at_round_boundary, view.round_index,
                         float(view.attained_service(0))))
        cap = view.capacity()
        out = [Start(j, 0, cap.place(j, 0)) for j in view.queue.tolist()]
        return out + list(self.plan.pop(view.now, []))

    def next_wakeup(self, view):
        while self.todo and self.todo[0] <= view.now:
            self.todo.pop(0)
        return self.todo[0] if self.todo else None


# ------------------------------------------------------------------- wake-ups
def test_wakeup_is_a_decision_point_at_exactly_that_time_and_changes_nothing() -> None:
    # one job of 100 iterations at 1 it/s: it ends at 100 with or without the wake-up at 12.25
    sc = make([QUAD], [dict(work=100.0, tput_v100=1.0)])
    plain, _ = run(sc, lambda: Timed())
    woken, sched = run(sc, lambda: Timed(wakes=[12.25]))
    assert [t for t, *_ in sched.log] == [0.0, 12.25]
    assert sched.log[1][2] == pytest.approx(100.0 - 12.25)  # progress integrated to the wake-up
    assert woken.jobs["end"].tolist() == plain.jobs["end"].tolist() == [100.0]
    assert woken.metrics["events"] == plain.metrics["events"] + 1


def test_wakeup_in_the_past_is_refused() -> None:
    sc = make([QUAD], [dict(work=100.0, tput_v100=1.0)])

    class Bad(Timed):
        def next_wakeup(self, view):
            return view.now

    with pytest.raises(SchedulingError, match="next_wakeup returned"):
        hetgym.simulate(sc, Bad())
    with pytest.raises(SchedulingError, match="next_wakeup returned"):
        R.simulate(sc, Bad())


# ----------------------------------------------------------------------- Move
def test_move_pays_restart_delay_and_checkpoint_loss_without_a_preemption() -> None:
    # 100 iterations at 1 it/s on GPU 0; at t=10 moved to GPU 3 with restart delay 5 and a
    # checkpoint every 4 s: fmod(10, 4) = 2 iterations lost -> 92 left; no progress in
    # [10, 15] (the wake-up at 12.5 sees 92 left), then 92 s: the job ends at 15 + 92 = 107.
    sc = make([QUAD], [dict(work=100.0, tput_v100=1.0)], restart_delay=5.0,
              checkpoint_interval=4.0, max_preemptions=0)
    res, sched = run(sc, lambda: Timed(plan={10.0: [Move(0, Placement.of([0], [3]))]},
                                       wakes=[10.0, 12.5]))
    assert res.jobs["end"].tolist() == [107.0]
    assert res.jobs["restarts"].tolist() == [1] and res.jobs["preemptions"].tolist() == [0]
    assert [round(x[2], 9) for x in sched.log] == [100.0, 90.0, 92.0]
    assert [(s, e) for _, s, e, _, _ in res.segments] == [(0.0, 10.0), (10.0, 107.0)]
    # attained service counts held time, restart delay included: 10 s, then 12.5 s at 12.5
    assert [x[5] for x in sched.log] == [0.0, 10.0, 12.5]


def test_move_of_a_job_in_its_grace_period_cancels_it() -> None:
    # grace 20 s: preempted at t=10 it would stop at 30; moved at t=12 it keeps running
    # (one preemption, one restart): 10 + 2 = 12 it done by t=12, restart 0 s -> ends 100.
    sc = make([QUAD], [dict(work=100.0, tput_v100=1.0, grace_period=20.0)], restart_delay=0.0)
    res, _ = run(sc, lambda: Timed(plan={10.0: [Preempt(0)],
                                         12.0: [Move(0, Placement.of([0], [1]))]},
                                   wakes=[10.0, 12.0]))
    assert res.jobs["end"].tolist() == [100.0]
    assert res.jobs["preemptions"].tolist() == [1] and res.jobs["restarts"].tolist() == [1]


def test_move_to_the_same_placement_changes_nothing() -> None:
    sc = make([QUAD], [dict(work=100.0, tput_v100=1.0)], restart_delay=5.0)
    res, _ = run(sc, lambda: Timed(plan={10.0: [Move(0, Placement.of([0], [0]))]}, wakes=[10.0]))
    assert res.jobs["end"].tolist() == [100.0]
    assert res.jobs["restarts"].tolist() == [0]
    assert len(res.segments) == 1


def test_invalid_move_raises_and_loses_nothing() -> None:
    sc = make([QUAD], [dict(work=100.0, tput_v100=1.0), dict(job_id=1, work=50.0, tput_v100=1.0)])
    sim = Simulator(sc)
    assert sim.advance()
    sim.apply([Start(0, None, Placement.of([0], [0])), Start(1, None, Placement.of([0], [1]))])
    before = [a.copy() for a in (sim.js.remaining, sim.js.finish, sim.ns.free_gpus,
                                 sim.ns.gpu_owner, sim.js.n_restart)]
    with pytest.raises(SchedulingError, match="GPU is busy"):
        sim.move(0, Placement.of([0], [1]))  # GPU 1 holds job 1
    with pytest.raises(SchedulingError, match="not RUNNING"):
        sim.move(5, Placement.of([0], [2]))
    with pytest.raises(SchedulingError, match="1 workers, placement has 2"):
        sim.move(0, Placement.of([0, 0], [2, 3]))
    after = (sim.js.remaining, sim.js.finish, sim.ns.free_gpus, sim.ns.gpu_owner, sim.js.n_restart)
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a, b)
    sim.check_capacity()
    # a move may reuse the job's own GPUs: 2-worker job on GPUs 0,1 -> GPUs 1,2
    sc2 = make([QUAD], [dict(workers=2, work=100.0, tput_v100=1.0)])
    sim = Simulator(sc2)
    sim.advance()
    sim.start(0, None, Placement.of([0, 0], [0, 1]))
    sim.move(0, Placement.of([0, 0], [1, 2]))
    assert sim.ns.gpu_owner[0].tolist() == [-1, 0, 0, -1]
    sim.check_capacity()


# ------------------------------------------------------------------ the View
def test_view_timing_and_round_flags() -> None:
    # rounds of 10 s, a 2-worker job of 50 iterations at 2 it/s (ends at 25), a wake-up at
    # 15: boundaries at 0, 10, 20 (round 0, 1, 2), not at 15 (still round 1) nor at the
    # completion at 25 (a decision point too: with rounds every event instant is one)
    sc = make([QUAD], [dict(work=50.0, workers=2, tput_v100=1.0)])
    res, sched = run(sc, lambda: Timed(wakes=[15.0], round_length=10.0))
    times = [(t, b, k) for t, _, _, b, k, _ in sched.log]
    assert times == [(0.0, True, 0), (10.0, True, 1), (15.0, False, 1), (20.0, True, 2),
                     (25.0, False, 2)]
    assert res.jobs["end"].tolist() == [25.0]
    # attained service of the 2-worker job: 2 x held time
    assert [x[5] for x in sched.log] == [0.0, 20.0, 30.0, 40.0, 50.0]


def test_view_topology_and_rate_of() -> None:
    sc = make([QUAD, NodeSpec(name="k", count=1, gpu_type="K80", gpus=2, cpus=8, mem_gb=64)],
              [dict(workers=2, work=100.0, tput_v100=2.0, tput_k80=1.0, job_type="resnet"),
               dict(job_id=1, work=10.0, tput_v100=1.0, job_type="lm"),
               dict(job_id=2, work=10.0, tput_v100=1.0, job_type="resnet")],
              topology_coeff=0.5)
    sim = Simulator(sc)
    v = sim.view
    assert v.node_socket_of_gpu.tolist() == [[0, 0, 1, 1], [0, 0, -1, -1]]
    assert v.node_sockets.tolist() == [2, 1]
    assert v.job_type_id.tolist() == [0, 1, 0]
    # mixed placement: 2 workers x slowest (K80, 1 it/s), across nodes: topology factor
    # 1 / (1 + 0.5 x comm x (network_distance - 1)); comm defaults to 0 -> factor 1
    assert v.rate_of(0, Placement.of([0, 1], [0, 0])) == pytest.approx(2.0)
    assert v.rate_of(0, Placement.of([0, 0], [0, 1])) == pytest.approx(4.0)
    sim.advance()
    sim.start(0, None, Placement.of([0, 0], [0, 2]))
    sim.start(1, None, Placement.of([0], [1]))
    assert float(sim.js.rate[0]) == v.rate_of(0, Placement.of([0, 0], [0, 2]))
    assert v.jobs_on_node(0).tolist() == [0, 1] and v.jobs_on_node(1).tolist() == []
    assert v.run_start[0] == 0.0
    with pytest.raises(ValueError, match="out of range"):
        v.rate_of(0, Placement.of([0, 7], [0, 0]))


@pytest.mark.parametrize("name", ["tiresias", "gavel-las"])
def test_attained_service_is_the_written_formula_bit_for_bit(name, monkeypatch) -> None:
    """``View.attained_service`` (held time added to the live jobs only) equals, at every
    call in whole runs of schedulers that use it (grace periods and preemptions on
    fitgpp-lab), the formula written out over every job (attained + (now - run_start) x
    workers where running or in a grace period, else + 0), whole and job by job, bit for bit."""
    import baselines
    from hetgym.sim.codes import GRACE, RUNNING
    from hetgym.sim.view import View

    real = View.attained_service
    seen = {"calls": 0, "live": 0}

    def checked(view, job=None):
        js = view.simulator.js  # the simulator's own arrays
        live = (js.status == RUNNING) | (js.status == GRACE)
        want = js.attained + np.where(live, (view.now - np.nan_to_num(js.run_start)) * js.nworkers, 0.0)
        got = real(view)
        assert got.dtype == np.float64 and got.tobytes() == want.tobytes()
        for j in np.flatnonzero(live)[:3].tolist() + [0]:
            assert real(view, j) == float(want[j])
        seen["calls"] += 1
        seen["live"] += int(live.sum())
        return real(view, job)

    monkeypatch.setattr(View, "attained_service", checked)
    hetgym.simulate(hetgym.scenarios.get("fitgpp-lab", n_jobs=512), baselines.make(name))
    assert seen["calls"] > 20 and seen["live"] > 100
