"""One small hand-computed case per simulation mechanism, plus run invariants.

Every case is checked against numbers worked out by hand (in the comments)
and, where a full run is involved, also against the pure-Python reference
simulator (``tests/reference_sim.py``).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import pandas as pd
import pytest

import baselines
import hetgym
from hetgym import ClusterSpec, NodeSpec, PowerModel, Scenario, SimOptions, Workload
from hetgym.decisions import Placement, Preempt, SchedulerBase, SchedulingError, Start
from hetgym.sim import InvariantError, Simulator
from tests import reference_sim as R


# --------------------------------------------------------------------- helpers
def make(nodes: list[NodeSpec], jobs: list[dict], **options) -> Scenario:
    """Scenario from node specs and job dicts (defaults: arrival 0, 1 worker, 1 core, 1 GB)."""
    rows = []
    for i, j in enumerate(jobs):
        row = dict(job_id=i, arrival=0.0, user="u0", job_class="BE", workers=1, work=100.0,
                   cpus=1.0, mem_gb=1.0)
        row.update(j)
        rows.append(row)
    df = pd.DataFrame(rows)
    cluster = ClusterSpec(nodes=nodes)
    for d in cluster.device_types:
        col = f"tput_{d}"
        df[col] = df[col].fillna(0.0) if col in df.columns else 0.0
    return Scenario(cluster=cluster, workload=Workload.from_frame(df), options=SimOptions(**options))


class Script(SchedulerBase):
    """Scheduler driven by a function of the view; logs every decision point."""

    call_when_queue_empty = True

    def __init__(self, fn: Callable, round_length=None) -> None:
        self.fn = fn
        self.round_length = round_length
        self.log: list[tuple[float, list[int], list[int]]] = []

    def reset(self, view) -> None:
        self.view = view
        self.log = []

    def decide(self, view) -> list:
        self.log.append((view.now, view.queue.tolist(), view.running.tolist()))
        return self.fn(view)


def start_all(view) -> list:
    """Start waiting jobs in queue order on their first device type with room."""
    cap = view.capacity()
    out = []
    for j in view.queue.tolist():
        for d in range(len(view.devices)):
            pl = cap.place(j, d)
            if pl is not None:
                out.append(Start(j, d, pl))
                break
    return out


def run(sc: Scenario, factory: Callable, seed: int = 0):
    """Run the fast and the reference simulator; they must agree. Returns (fast, scheduler)."""
    sched = factory()
    fast = hetgym.simulate(sc, sched, seed=seed, check_every_event=True)
    ref = R.simulate(sc, factory(), seed=seed)
    np.testing.assert_allclose(fast.jobs["start"], ref.jobs["start"], rtol=1e-9, equal_nan=True)
    np.testing.assert_allclose(fast.jobs["end"], ref.jobs["end"], rtol=1e-9, equal_nan=True)
    assert fast.jobs["device"].tolist() == ref.jobs["device"].tolist()
    assert fast.metrics["energy_kwh"] == pytest.approx(ref.energy_kwh, rel=1e-9)
    return fast, sched


V100 = NodeSpec(name="v", count=1, gpu_type="V100", gpus=1, cpus=8, mem_gb=64)


# ------------------------------------------------------------------ mechanisms
def test_gang_start_over_two_nodes() -> None:
    # two 1-GPU nodes, one 2-worker job: it needs both; rate = 2 x 1 = 2 it/s -> 100 / 2 = 50 s
    sc = make([NodeSpec(name="v", count=2, gpu_type="V100", gpus=1, cpus=8, mem_gb=64)],
              [dict(workers=2, tput_v100=1.0)])
    sim = Simulator(sc)
    assert sim.advance()
    sim.start(0, "v100")
    w = sim.js.worker_node.shape[1]
    assert sorted(sim.js.worker_node[0, :w].tolist()) == [0, 1]
    assert sim.js.worker_gpu[0, :w].tolist() == [0, 0]
    assert sim.ns.free_gpus.tolist() == [0, 0]
    fast, _ = run(sc, lambda: baselines.make("fifo"))
    assert fast.jobs["start"][0] == 0.0 and fast.jobs["end"][0] == pytest.approx(50.0, rel=1e-12)


def test_gang_waits_for_whole_gang() -> None:
    # job 0 (1 worker, 100 s) holds one of two GPUs; job 1 (2 workers) cannot start before 100
    sc = make([NodeSpec(name="v", count=2, gpu_type="V100", gpus=1, cpus=8, mem_gb=64)],
              [dict(tput_v100=1.0), dict(workers=2, tput_v100=1.0, arrival=1.0)])
    fast, _ = run(sc, lambda: baselines.make("fifo"))
    assert fast.jobs["start"].tolist() == [0.0, 100.0]
    assert fast.jobs["end"].tolist() == pytest.approx([100.0, 150.0])


def test_mixed_types_rate_is_workers_times_slowest() -> None:
    # a V100 worker (4 it/s) and a K80 worker (1 it/s): rate = 2 x min(4, 1) = 2 -> 50 s
    # (the 2-GPU K80 node lets the job pass the "fits some configuration" check)
    nodes = [V100, NodeSpec(name="k", gpu_type="K80", gpus=2, cpus=8, mem_gb=64)]
    sc = make(nodes, [dict(workers=2, tput_v100=4.0, tput_k80=1.0)])
    assert sc.device_types == ["k80", "v100"]

    def fn(view):
        if view.queue.size:
            return [Start(0, None, Placement.of([0, 1], [0, 0]))]
        return []

    fast, _ = run(sc, lambda: Script(fn))
    row = fast.jobs.iloc[0]
    assert row["device"] == "mixed"
    assert row["end"] == pytest.approx(50.0, rel=1e-12)
    # the same job on the two V100s of a bigger node: 2 x 4 = 8 it/s -> 12.5 s
    sc2 = make([NodeSpec(name="v", gpu_type="V100", gpus=2, cpus=8, mem_gb=64)],
               [dict(workers=2, tput_v100=4.0, tput_k80=1.0)])
    fast2, _ = run(sc2, lambda: baselines.make("fifo"))
    assert fast2.jobs["end"][0] == pytest.approx(12.5, rel=1e-12)


def test_mixed_cpu_and_gpu_workers() -> None:
    # one worker on a CPU node (0.5 it/s) and one on a V100 (2 it/s): rate = 2 x 0.5 = 1 -> 100 s
    nodes = [NodeSpec(name="c", gpu_type=None, gpus=0, cpus=8, mem_gb=64), V100]
    sc = make(nodes, [dict(workers=2, tput_v100=2.0, tput_cpu=0.5, cpus=2.0)])
    fn = (lambda view: [Start(0, None, Placement.of([0, 1], [-1, 0]))] if view.queue.size else [])
    fast, _ = run(sc, lambda: Script(fn))
    assert fast.jobs["end"][0] == pytest.approx(100.0, rel=1e-12)
    assert fast.jobs["device"][0] == "mixed"


def test_sublinear_scaling() -> None:
    # W = 4, exponent 0.5: rate = 4 x 1 x 4 ** -0.5 = 2 it/s -> 100 / 2 = 50 s
    sc = make([NodeSpec(name="v", gpu_type="V100", gpus=4, cpus=8, mem_gb=64)],
              [dict(workers=4, tput_v100=1.0)], scaling_exponent=0.5)
    fast, sched = run(sc, lambda: Script(start_all))
    assert fast.jobs["end"][0] == pytest.approx(50.0, rel=1e-12)
    assert sched.view.duration(0, 0) == pytest.approx(50.0, rel=1e-12)


TOPO = [[0, 3, 1, 3],
        [3, 0, 3, 1],
        [1, 3, 0, 3],
        [3, 1, 3, 0]]


@pytest.mark.parametrize("placement, gpus, end", [
    # pack takes the lowest free ids 0, 1: distance 3 -> factor 1 / (1 + 0.5 x 1 x (3 - 1)) = 1/2
    # -> rate 2 x 1 x 1/2 = 1 it/s -> 100 s
    ("pack", [0, 1], 100.0),
    # topology takes the closest pair 0, 2: distance 1 -> factor 1 -> rate 2 -> 50 s
    ("topology", [0, 2], 50.0),
])
def test_topology_factor(placement: str, gpus: list[int], end: float) -> None:
    node = NodeSpec(name="t", gpu_type="V100", gpus=4, cpus=8, mem_gb=64, topology=TOPO)
    sc = make([node], [dict(workers=2, tput_v100=1.0, comm=1.0)], topology_coeff=0.5,
              placement=placement)
    sim = Simulator(sc)
    sim.advance()
    sim.start(0, "v100")
    assert sim.js.worker_gpu[0, :2].tolist() == gpus
    fast, _ = run(sc, lambda: baselines.make("fifo"))
    assert fast.jobs["end"][0] == pytest.approx(end, rel=1e-12)


def test_topology_factor_across_nodes_and_comm_zero() -> None:
    # two nodes: distance = network_distance 4 -> factor 1 / (1 + 0.1 x 0.5 x 3) = 1 / 1.15
    # rate = 2 / 1.15 -> 100 x 1.15 / 2 = 57.5 s; the same job with comm = 0 takes 50 s
    two = [NodeSpec(name="v", count=2, gpu_type="V100", gpus=1, cpus=8, mem_gb=64)]
    sc = make(two, [dict(workers=2, tput_v100=1.0, comm=0.5)], topology_coeff=0.1)
    fast, _ = run(sc, lambda: baselines.make("fifo"))
    assert fast.jobs["end"][0] == pytest.approx(57.5, rel=1e-12)
    sc0 = make(two, [dict(workers=2, tput_v100=1.0, comm=0.0)], topology_coeff=0.1)
    fast0, _ = run(sc0, lambda: baselines.make("fifo"))
    assert fast0.jobs["end"][0] == pytest.approx(50.0, rel=1e-12)


def te_first(view) -> list:
    """FitGpp-like: a waiting TE job preempts running BE jobs; TE jobs start first."""
    out: list = []
    q = view.queue.tolist()
    te = [j for j in q if view.job_class[j] == 1]
    if te and view.free_gpus.sum() == 0:
        out += [Preempt(j) for j in view.running.tolist()
                if view.job_class[j] == 0 and not view.in_grace(j)]
    cap = view.capacity()
    for j in te + [j for j in q if j not in te]:
        pl = cap.place(j, 0)
        if pl is not None:
            out.append(Start(j, 0, pl))
    return out


def test_preemption_with_grace_period() -> None:
    # BE (100 it, 1 it/s) starts at 0; TE (10 it) arrives at 10 and preempts it with GP = 20:
    # BE keeps running until 30 (30 it done, 70 left), TE starts exactly at 30, ends at 40;
    # BE restarts at 40, pays the 10 s restart delay, ends at 50 + 70 = 120.
    sc = make([V100], [dict(job_class="BE", tput_v100=1.0, grace_period=20.0),
                       dict(job_class="TE", tput_v100=1.0, work=10.0, arrival=10.0)],
              restart_delay=10.0)
    fast, sched = run(sc, lambda: Script(te_first))
    j = fast.jobs
    assert j["start"].tolist() == [0.0, 30.0]
    assert j["end"].tolist() == pytest.approx([120.0, 40.0])
    assert j["preemptions"].tolist() == [1, 0]
    assert j["restarts"].tolist() == [1, 0]
    assert fast.segments[0][:3] == (0, 0.0, 30.0)
    # at 30 the suspended BE job is at the head of the queue, before the waiting TE job
    at30 = [q for t, q, _ in sched.log if t == 30.0]
    assert at30 == [[0, 1]]


def test_job_finishing_in_grace_period_completes() -> None:
    # BE needs 25 s; preempted at 10 with GP = 20 it completes at 25 (no suspension, no restart)
    sc = make([V100], [dict(job_class="BE", tput_v100=1.0, work=25.0, grace_period=20.0),
                       dict(job_class="TE", tput_v100=1.0, work=10.0, arrival=10.0)])
    fast, _ = run(sc, lambda: Script(te_first))
    j = fast.jobs
    assert j["end"].tolist() == pytest.approx([25.0, 35.0])
    assert j["preemptions"].tolist() == [1, 0] and j["restarts"].tolist() == [0, 0]


def test_preempted_jobs_go_to_head_of_queue() -> None:
    # job 0 runs; job 1 waits (arrived at 1); at 5 job 0 is preempted (GP 0): queue = [0, 1]
    sc = make([V100], [dict(tput_v100=1.0), dict(tput_v100=1.0, arrival=1.0),
                       dict(tput_v100=1.0, arrival=5.0)])

    def fn(view):
        if view.now == 5.0:
            return [Preempt(0)]
        return start_all(view) if view.now == 0.0 else []

    sched = Script(fn)
    sim = Simulator(sc)
    sched.reset(sim.view)
    while sim.advance() and sim.now <= 5.0:
        sim.apply(sched.decide(sim.view))
    assert sim.view.queue.tolist() == [0, 1, 2]


def test_preemption_limit_raises() -> None:
    sc = make([V100], [dict(tput_v100=1.0), dict(tput_v100=1.0, arrival=5.0),
                       dict(tput_v100=1.0, arrival=8.0)], max_preemptions=1)

    def fn(view):  # preempt job 0 at the arrivals at 5 and 8 and put it straight back
        if view.now in (5.0, 8.0):
            return [Preempt(0), Start(0, "v100")]
        return start_all(view)

    with pytest.raises(SchedulingError, match="limit 1"):
        hetgym.simulate(sc, Script(fn))
    with pytest.raises(SchedulingError):
        R.simulate(sc, Script(fn))
    # with a limit of 2 the same run goes through: two preemptions, two restarts
    sc2 = sc.replace(options={"max_preemptions": 2})
    fast, _ = run(sc2, lambda: Script(fn))
    assert fast.jobs["preemptions"][0] == 2 and fast.jobs["restarts"][0] == 2


def test_restart_delay() -> None:
    # preempted at 20 (GP 0, no checkpoints: nothing lost) and restarted at once:
    # 80 it left, progress resumes at 20 + 10 = 30 -> ends at 110; it held the GPU 0-110
    sc = make([V100], [dict(tput_v100=1.0), dict(tput_v100=1.0, work=1.0, arrival=20.0)],
              restart_delay=10.0)

    def fn(view):
        if view.now == 20.0:
            return [Preempt(0), Start(0, "v100")]
        return [Start(j, "v100") for j in view.queue.tolist()[:1] if view.free_gpus.sum()]

    fast, _ = run(sc, lambda: Script(fn))
    j = fast.jobs
    assert j["end"][0] == pytest.approx(110.0, rel=1e-12)
    assert j["restarts"][0] == 1 and j["exec_time"][0] == pytest.approx(110.0)
    assert j["start"][1] == pytest.approx(110.0)  # job 1 waited for the GPU


@pytest.mark.parametrize("ci, delay, t_pre, end", [
    # interval 15, preempted at 40 after 40 s of progress: fmod(40, 15) = 10 it lost,
    # 100 - 40 + 10 = 70 left, restarted at 40 with no delay -> ends at 110
    (15.0, 0.0, 40.0, 110.0),
    # no checkpoint interval: nothing lost -> 60 left -> ends at 100
    (0.0, 0.0, 40.0, 100.0),
    # interval 15, restart delay 10, preempted at 40 -> 70 left, resumes at 50 -> ends at 120
    (15.0, 10.0, 40.0, 120.0),
])
def test_checkpoint_loss(ci: float, delay: float, t_pre: float, end: float) -> None:
    sc = make([V100], [dict(tput_v100=1.0), dict(tput_v100=1.0, work=1.0, arrival=t_pre)],
              checkpoint_interval=ci, restart_delay=delay)

    def fn(view):
        if view.now == t_pre:
            return [Preempt(0), Start(0, "v100")]
        return [Start(0, "v100")] if view.now == 0.0 else []

    fast, _ = run(sc, lambda: Script(fn))
    assert fast.jobs["end"][0] == pytest.approx(end, rel=1e-12)


def test_checkpoint_loss_counts_from_resume() -> None:
    # interval 15, restart delay 10. Preempted at 20 (20 s progress: fmod = 5 lost -> 85 left),
    # restarted at 20, resumes at 30; preempted again at 52: 22 s since resume, fmod(22, 15) = 7
    # lost -> 85 - 22 + 7 = 70 left; restarted at 52, resumes at 62 -> ends at 132.
    sc = make([V100], [dict(tput_v100=1.0), dict(tput_v100=1.0, work=1.0, arrival=20.0),
                       dict(tput_v100=1.0, work=1.0, arrival=52.0)],
              checkpoint_interval=15.0, restart_delay=10.0)

    def fn(view):
        if view.now in (20.0, 52.0):
            return [Preempt(0), Start(0, "v100")]
        return [Start(0, "v100")] if view.now == 0.0 else []

    fast, _ = run(sc, lambda: Script(fn))
    assert fast.jobs["end"][0] == pytest.approx(132.0, rel=1e-12)
    assert fast.jobs["restarts"][0] == 2


def test_preempt_during_restart_delay_loses_nothing() -> None:
    # restarted at 20 (resume 30), preempted again at 25, before any progress: fmod(0, 15) = 0
    # 80 it left after the first preemption (fmod(20, 15) = 5 lost -> 85 left). So: 85 left,
    # restarted at 25, resumes at 35 -> ends at 120.
    sc = make([V100], [dict(tput_v100=1.0), dict(tput_v100=1.0, work=1.0, arrival=20.0),
                       dict(tput_v100=1.0, work=1.0, arrival=25.0)],
              checkpoint_interval=15.0, restart_delay=10.0)

    def fn(view):
        if view.now in (20.0, 25.0):
            return [Preempt(0), Start(0, "v100")]
        return [Start(0, "v100")] if view.now == 0.0 else []

    fast, _ = run(sc, lambda: Script(fn))
    assert fast.jobs["end"][0] == pytest.approx(120.0, rel=1e-12)


def test_round_decision_points() -> None:
    # one job arriving at 130 running 350 s; rounds of 100 s on the grid 0, 100, 200, ...:
    # decision points at 130 (arrival), 200, 300, 400 (rounds) and 480 (completion)
    sc = make([V100], [dict(tput_v100=1.0, work=350.0, arrival=130.0)], round_length=100.0)
    fast, sched = run(sc, lambda: Script(start_all, round_length=True))
    assert [t for t, _, _ in sched.log] == [130.0, 200.0, 300.0, 400.0, 480.0]
    assert fast.metrics["decision_points"] == 5
    _, sched2 = run(sc, lambda: Script(start_all, round_length=250.0))
    assert [t for t, _, _ in sched2.log] == [130.0, 250.0, 480.0]


def test_no_decision_point_without_waiting_jobs() -> None:
    # FIFO does not set call_when_queue_empty: the completion at 100 (nothing waits) is no
    # decision point; arrivals at 0 and 50 and the completion at 100 with job 1 waiting are.
    sc = make([V100], [dict(tput_v100=1.0), dict(tput_v100=1.0, arrival=50.0)])
    fast, _ = run(sc, lambda: baselines.make("fifo"))
    assert fast.metrics["decision_points"] == 3  # 0, 50, 100 (job 1 waits); not 200
    assert fast.jobs["end"].tolist() == [100.0, 200.0]


def test_energy_and_cost() -> None:
    # V100 node: idle 100 W, 200 W per busy GPU; a job runs 0-3600 s: 300 W x 3600 s = 0.3 kWh.
    # CPU node: idle 50 W, 5 W per busy core; a 4-core job runs 0-1800 s:
    # 50 W x 3600 s + 20 W x 1800 s = 216 kJ = 0.06 kWh. Total 0.36 kWh;
    # cost = 0.36 x 0.2 EUR/kWh x PUE 1.5 = 0.108 EUR.
    nodes = [NodeSpec(name="v", gpu_type="V100", gpus=1, cpus=8, mem_gb=64,
                      power=PowerModel(idle_w=100.0, gpu_active_w=200.0, cpu_core_active_w=7.0)),
             NodeSpec(name="c", gpu_type=None, gpus=0, cpus=8, mem_gb=64,
                      power=PowerModel(idle_w=50.0, cpu_core_active_w=5.0))]
    sc = make(nodes, [dict(tput_v100=1.0, work=3600.0),
                      dict(tput_cpu=1.0, work=1800.0, cpus=4.0)],
              energy_price=0.2, pue=1.5)
    fast, _ = run(sc, lambda: Script(start_all))
    m = fast.metrics
    assert m["energy_kwh"] == pytest.approx(0.36, rel=1e-12)
    assert m["energy_cost"] == pytest.approx(0.108, rel=1e-12)
    assert m["util_v100"] == pytest.approx(1.0)
    assert m["util_cpu"] == pytest.approx(4 * 1800 / (8 * 3600))


def test_energy_idle_before_first_arrival() -> None:
    # nothing runs before the arrival at 1000: idle power counts from 0.
    # default V100 node: idle 100 + 35 W, 265 W active; job 0 runs 1000-1100:
    # 135 x 1100 + 265 x 100 = 175000 J
    sc = make([V100], [dict(tput_v100=1.0, arrival=1000.0)])
    fast, _ = run(sc, lambda: baselines.make("fifo"))
    assert fast.metrics["energy_kwh"] == pytest.approx(175000 / 3.6e6, rel=1e-12)


def test_per_user_service() -> None:
    # ann's 2-worker job holds 2 GPUs for 50 s (100 worker-s); bob's 1-worker job holds 1 GPU
    # for 100 s (100 worker-s), then bob's second job 1 GPU from 100 to 150 (grace/wait none).
    node = NodeSpec(name="v", gpu_type="V100", gpus=3, cpus=8, mem_gb=64)
    sc = make([node], [dict(user="ann", workers=2, tput_v100=1.0),
                       dict(user="bob", tput_v100=1.0),
                       dict(user="bob", tput_v100=1.0, work=50.0, arrival=100.0)])
    fast, sched = run(sc, lambda: Script(start_all))
    assert sched.view.user_service.tolist() == pytest.approx([100.0, 150.0])
    ref = R.simulate(sc, Script(start_all))
    assert ref.service == pytest.approx([100.0, 150.0])


def test_cpu_slot_cores() -> None:
    # cpu_slot_cores = 4: a CPU node with 8 cores holds 2 workers whatever the job's cpus
    nodes = [NodeSpec(name="c", gpu_type=None, gpus=0, cpus=8, mem_gb=64)]
    sc = make(nodes, [dict(tput_cpu=1.0, cpus=1.0)] * 3, cpu_slot_cores=4)
    fast, _ = run(sc, lambda: baselines.make("fifo"))
    assert fast.jobs["start"].tolist() == [0.0, 0.0, 100.0]


# ------------------------------------------------------------------ invariants
@pytest.fixture(scope="module")
def busy_scenario() -> Scenario:
    return hetgym.scenarios.get("synthetic-hybrid", n_jobs=60, nodes=4, gpus_per_node=4,
                                rate=1 / 30.0, mean_duration=600.0, seed=3,
                                checkpoint_interval=60.0, max_preemptions=3)


@pytest.mark.parametrize("name", ["fifo", "sjf", "srpt"])
def test_every_job_completes_once(busy_scenario: Scenario, name: str) -> None:
    res = hetgym.simulate(busy_scenario, baselines.make(name), check_every_event=True)
    j = res.jobs
    assert j["finished"].all() and res.metrics["unfinished_jobs"] == 0
    assert (j["end"] >= j["start"]).all() and (j["start"] >= j["arrival"]).all()
    # each job's last segment ends at its end, once
    last = {}
    for job, s, e, _, _ in res.segments:
        assert s <= e
        last[job] = e
    assert sorted(last) == list(range(len(j)))
    assert [last[k] for k in range(len(j))] == pytest.approx(j["end"].tolist())
    if name == "srpt":
        assert res.metrics["preemptions"] > 0


def test_time_never_goes_back(busy_scenario: Scenario) -> None:
    sched = Script(start_all)
    hetgym.simulate(busy_scenario, sched, check_every_event=True)
    times = [t for t, _, _ in sched.log]
    assert len(times) > 10 and all(b >= a for a, b in zip(times, times[1:]))


def _random_preemptor():
    from tests.sim.test_reference_equivalence import RandomScheduler

    return RandomScheduler(p_start=0.5, p_preempt=0.3, p_mixed=0.5, call_when_queue_empty=True)


def test_same_seed_same_run() -> None:
    sc = hetgym.scenarios.get("synthetic-hybrid", n_jobs=25, nodes=4, gpus_per_node=4,
                              rate=1 / 30.0, mean_duration=600.0, seed=5, checkpoint_interval=60.0)
    a = hetgym.simulate(sc, _random_preemptor(), seed=7)
    b = hetgym.simulate(sc, _random_preemptor(), seed=7)
    c = hetgym.simulate(sc, _random_preemptor(), seed=8)
    cols = ["start", "end", "device", "preemptions", "restarts"]
    pd.testing.assert_frame_equal(a.jobs[cols], b.jobs[cols])
    assert a.segments == b.segments and a.metrics["energy_kwh"] == b.metrics["energy_kwh"]
    assert not a.jobs[cols].equals(c.jobs[cols])  # the seed matters (view.rng)


def _sim_with_running_job() -> Simulator:
    sc = make([NodeSpec(name="v", count=2, gpu_type="V100", gpus=2, cpus=8, mem_gb=64)],
              [dict(workers=2, tput_v100=1.0, cpus=2.0)])
    sim = Simulator(sc)
    sim.advance()
    sim.start(0, "v100")
    sim.check_capacity()  # consistent so far
    return sim


@pytest.mark.parametrize("corrupt", [
    lambda s: s.ns.free_gpus.__setitem__(0, s.ns.free_gpus[0] + 1),  # GPU books off
    lambda s: s.ns.free_gpus.__setitem__(1, -1),  # over-allocation
    lambda s: s.ns.free_cpus.__setitem__(0, s.ns.free_cpus[0] - 1.0),  # CPU books off
    lambda s: s.ns.gpu_owner.__setitem__((0, 0), 5),  # GPU owned by another job
    lambda s: s.ns.free_mem.__setitem__(0, -3.0),  # memory over-allocated
])
def test_check_capacity_catches_corruption(corrupt) -> None:
    sim = _sim_with_running_job()
    corrupt(sim)
    with pytest.raises(InvariantError):
        sim.check_capacity()


# ------------------------------------------------ regressions of bugs found here
class _Timeout(Exception):
    pass


def _with_alarm(seconds: int, fn):
    import signal

    def handler(signum, frame):
        raise _Timeout(f"still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, handler)
    signal.alarm(seconds)
    try:
        return fn()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _gang_too_big_for_fastest() -> Scenario:
    # 2-worker job, fastest on V100 (4 it/s) but there is only one V100; two K80s hold it
    nodes = [V100, NodeSpec(name="k", gpu_type="K80", gpus=2, cpus=8, mem_gb=64)]
    return make(nodes, [dict(workers=2, tput_v100=4.0, tput_k80=1.0)])


def test_stalled_queue_with_rounds_ends() -> None:
    """Regression (was a bug in hetgym/runner.py): with a round length, a round boundary
    is an event whenever a job waits, even when nothing runs and no job is left to
    arrive, so a scheduler leaving a job waiting on an idle cluster got a decision point
    every round forever and ``simulate`` never returned (``horizon=inf``). Now a round
    on an idle cluster with nothing to arrive and no decision ends the run ``stalled``,
    as the run without rounds does."""
    sc = _gang_too_big_for_fastest()

    class Never(SchedulerBase):
        """Leaves every job waiting."""

        round_length = None

        def reset(self, view):
            pass

        def decide(self, view):
            return []

    sched = Never()
    assert hetgym.simulate(sc, sched).stalled  # no rounds: ends, stalled
    sched.round_length = 40.0
    try:
        res = _with_alarm(2, lambda: hetgym.simulate(sc, sched))
    except _Timeout:
        pytest.fail("simulate() with round_length did not return on a stalled queue")
    assert res.stalled


def test_fastest_only_waits_for_a_type_that_can_hold_the_gang() -> None:
    """Regression (was a bug in baselines/common/parts.py ``FastestOnly.candidates``): it
    returned ``argmax(tput)`` even when the nodes of that type can never hold the job's
    gang, so ``make("fifo"/"sjf"/"srpt", device="fastest")`` left such a job waiting
    forever (run stalled, job unfinished)."""
    res = hetgym.simulate(_gang_too_big_for_fastest(), baselines.make("fifo", device="fastest"))
    assert res.jobs["finished"].all(), "the job never started"


def test_allox_cpu_machines_with_zero_core_jobs() -> None:
    """Regression (was a bug in baselines/allox/parts.py ``slot_cores`` /
    ``slots_per_device``): with ``cpu_slot_cores`` unset, the cores of one CPU machine
    were the jobs' median ``cpus`` floored at 1e-9, so jobs needing 0 cores (valid:
    ``cpus >= 0``) made a 4-core node count as 4e9 machines and ``allox``, ``allox+``
    and ``jsq+`` ran out of memory. The simulator places such workers by memory
    (16 GB / 1 GB = 16 per node); the AlloX count must not exceed that."""
    from baselines.allox.parts import slots_per_device

    nodes = [NodeSpec(name="k", gpu_type="K80", gpus=1, cpus=4, mem_gb=16),
             NodeSpec(name="c", gpu_type=None, gpus=0, cpus=4, mem_gb=16)]
    sc = make(nodes, [dict(tput_k80=1.0, tput_cpu=0.5, cpus=0.0)] * 3)
    sim = Simulator(sc)
    sim.advance()
    c = sim.view.devices.index("cpu")
    placeable = max(sim.view.capacity().slots(j, c) for j in range(3))
    assert placeable == 16
    assert slots_per_device(sim.view)[c] <= placeable


# ------------------------------------------------- found bugs (fail until fixed)
def test_start_device_must_match_explicit_placement() -> None:
    """BUG (hetgym/sim/engine.py ``Simulator.start``): when a ``Start`` carries both a
    ``device`` and an explicit ``placement``, the device is ignored. ``Start(j, "v100",
    placement on a K80 node)`` silently runs the job on the K80 (4x slower here) instead
    of rejecting the contradictory decision. Proposed fix: when ``device`` is not None and
    the placement is on a single device type, raise ``SchedulingError`` if they differ
    (``device=None`` stays the way to ask for a mixed allocation)."""
    nodes = [V100, NodeSpec(name="k", gpu_type="K80", gpus=1, cpus=8, mem_gb=64)]
    sc = make(nodes, [dict(tput_v100=4.0, tput_k80=1.0)])
    k80_node = 1
    fn = (lambda view: [Start(0, "v100", Placement.of([k80_node], [0]))] if view.queue.size
          else [])
    with pytest.raises(SchedulingError):
        hetgym.simulate(sc, Script(fn))


def test_unreached_horizon_changes_nothing() -> None:
    """BUG (hetgym/sim/events/step.py ``step_nb``): when no event is left
    (``t == inf``) and the horizon is finite, time still jumps to the horizon, so a run
    that finished at 100 s with ``horizon=150`` integrates 50 s more idle power and
    reports ``util_v100 = 0.667`` (makespan 100, 100 busy GPU-seconds): the metrics
    depend on a horizon the run never reached. ``Simulator.advance``'s docstring says it
    does nothing when there is no further event and moves to the horizon only when the
    next event lies past it; ``metrics`` defines util over the makespan. Proposed fix:
    move to the horizon only when ``horizon < t < inf``. (tests/reference_sim.py
    ``RefSim.step`` mirrors the current rule so the equivalence tests stay comparable;
    change it there too.)"""
    def run_with(h: float):
        sc = make([V100], [dict(tput_v100=1.0)], horizon=h)
        return hetgym.simulate(sc, baselines.make("fifo")).metrics

    a, b = run_with(math.inf), run_with(150.0)
    assert a["energy_kwh"] == pytest.approx(135 * 100 / 3.6e6 + 265 * 100 / 3.6e6)
    assert b["energy_kwh"] == pytest.approx(a["energy_kwh"])
    assert b["util_v100"] == pytest.approx(1.0)
