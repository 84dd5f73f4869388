"""The fast simulator (``hetgym.simulate``) against the pure-Python reference.

Hypothesis draws tiny clusters (1-4 nodes, GPU types mixed with CPU nodes,
optional custom GPU topologies) and 3-25 jobs, runs a scheduler on both
simulators and requires the same run: first start and end of every job
(rtol 1e-9), the same device, preemption and restart counts, the same run
segments, the same worker placements (node and GPU of every worker, recorded
at decision points by :class:`Recorder`), decision points, events, energy,
busy time per device type and the ``stalled`` flag.

Schedulers: FIFO (blocking / backfill, fastest-free / fastest-only device
choice, with and without rounds), SJF, SRPT (grace periods, preemption limits,
checkpoint loss), every registered baseline, and :class:`RandomScheduler`,
which makes seeded random starts (default placement or explicit mixed
placements across device types, CPU nodes included) and random preemptions
from the view alone.

Values are drawn from small dyadic sets (throughputs 0.5..4, integer
times and works) so that equal event times in exact arithmetic stay equal in
floating point and tie-breaking rules are exercised, not dodged.

The number of examples scales with ``HETGYM_REF_EXAMPLES`` (a multiplier,
default 1); the default run is derandomised so CI sees the same examples.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import baselines
import hetgym
from baselines.classic.schedulers import SRPT
from baselines.common.parts import FastestFirst, FastestOnly
from hetgym import ClusterSpec, NodeSpec, Scenario, SimOptions, Workload
from hetgym.decisions import Cadence, Move, Placement, Preempt, SchedulerBase, Start, cadence_of
from tests import reference_sim as R

SCALE = float(os.environ.get("HETGYM_REF_EXAMPLES", "1"))
DERANDOMIZE = "HETGYM_REF_EXAMPLES" not in os.environ


def examples(n: int) -> settings:
    return settings(max_examples=max(1, int(n * SCALE)), deadline=None, derandomize=DERANDOMIZE,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
                    print_blob=True)


# ------------------------------------------------------------------ strategies
GPU_TYPES = ("K80", "P100", "V100")


@st.composite
def clusters(draw, gpu_types=GPU_TYPES, cpu_nodes: bool = True, custom_topology: bool = False,
             min_gpus: int = 1, max_nodes: int = 4) -> ClusterSpec:
    kinds = list(gpu_types) + ([None] if cpu_nodes else [])
    total = draw(st.integers(1, max_nodes))
    groups = []
    left = total
    while left > 0:
        count = draw(st.integers(1, min(2, left)))
        left -= count
        groups.append(count)
    specs = []
    for i, count in enumerate(groups):
        kind = draw(st.sampled_from(kinds))
        cpus = draw(st.sampled_from([4, 8, 16]))
        mem = draw(st.sampled_from([16.0, 32.0, 64.0]))
        if kind is None:
            specs.append(NodeSpec(name=f"c{i}", count=count, gpu_type=None, gpus=0, cpus=cpus,
                                  mem_gb=mem))
            continue
        gpus = draw(st.integers(min_gpus, 4))
        topo = None
        if custom_topology and gpus > 1 and draw(st.booleans()):
            topo = [[0.0] * gpus for _ in range(gpus)]
            for a in range(gpus):
                for b in range(a + 1, gpus):
                    topo[a][b] = topo[b][a] = draw(st.sampled_from([0.5, 1.0, 2.0, 3.0, 5.0]))
        specs.append(NodeSpec(name=f"g{i}", count=count, gpu_type=kind, gpus=gpus, cpus=cpus,
                              mem_gb=mem, sockets=draw(st.integers(1, 2)), topology=topo))
    return ClusterSpec(nodes=specs)


@st.composite
def sim_options(draw, preempt: bool = False, topo: bool = False, horizon: bool = True,
                placements=("pack", "spread", "topology")) -> SimOptions:
    return SimOptions(
        restart_delay=draw(st.sampled_from([0.0, 3.0, 10.0])),
        checkpoint_interval=draw(st.sampled_from([0.0, 7.0, 30.0])) if preempt else 0.0,
        max_preemptions=draw(st.sampled_from([None, None, 1, 2])) if preempt else None,
        scaling_exponent=draw(st.sampled_from([1.0, 1.0, 0.8, 0.5])),
        topology_coeff=draw(st.sampled_from([0.1, 0.5, 1.0] if topo else [0.0, 0.1, 0.5])),
        network_distance=draw(st.sampled_from([4.0, 2.0, 1.0])),
        cpu_slot_cores=draw(st.sampled_from([None, None, 2, 4])),
        placement=draw(st.sampled_from(placements)),
        grace_period=draw(st.sampled_from([None, None, None, 0.0, 15.0])) if preempt else None,
        horizon=draw(st.sampled_from([math.inf] * 5 + [150.0])) if horizon else math.inf,
    )


def _fits(row: dict, cluster: ClusterSpec, options: SimOptions) -> bool:
    """Whether a job fits some device type of an empty cluster (reference slot rule)."""
    for d in cluster.device_types:
        if row[f"tput_{d}"] <= 0:
            continue
        need = row["cpus"] if d != "cpu" or options.cpu_slot_cores is None else options.cpu_slot_cores
        total = sum(n.count * R.slots_on_node(d == "cpu", need, row["mem_gb"], n.gpus, n.cpus, n.mem_gb)
                    for n in cluster.nodes if n.device == d)
        if total >= row["workers"]:
            return True
    return False


@st.composite
def scenarios(draw, *, gpu_types=GPU_TYPES, cpu_nodes: bool = True, preempt: bool = False,
              topo: bool = False, min_gpus: int = 1, max_jobs: int = 25,
              horizon: bool = True, placements=("pack", "spread", "topology"),
              workers=(1, 1, 1, 2, 2, 3, 4), cpus=(0.0, 1.0, 2.0, 3.0)) -> Scenario:
    cluster = draw(clusters(gpu_types=gpu_types, cpu_nodes=cpu_nodes, custom_topology=topo,
                            min_gpus=min_gpus))
    options = draw(sim_options(preempt=preempt, topo=topo, horizon=horizon,
                               placements=placements))
    devs = cluster.device_types
    n = draw(st.integers(3, max_jobs))
    span = draw(st.sampled_from([0, 50, 200, 600]))
    rows = []
    for i in range(n):
        row = {
            "job_id": 100 + i,
            "arrival": float(draw(st.integers(0, span))),
            "user": draw(st.sampled_from(["ann", "bob", "cy"])),
            "job_class": draw(st.sampled_from(["BE", "TE"])),
            "workers": draw(st.sampled_from(workers)),
            "work": float(draw(st.integers(1, 80)) * 5),
            "cpus": draw(st.sampled_from(cpus)),
            "mem_gb": draw(st.sampled_from([0.0, 2.0, 8.0, 16.0])),
            "grace_period": draw(st.sampled_from([0.0, 0.0, 10.0, 25.0])) if preempt else 0.0,
            "comm": draw(st.sampled_from([0.5, 1.0])) if topo else
            draw(st.sampled_from([0.0, 0.0, 1.0])),
        }
        for d in devs:
            row[f"tput_{d}"] = draw(st.sampled_from([0.0, 0.5, 1.0, 2.0, 4.0]))
        if not _fits(row, cluster, options):
            row.update(workers=1, cpus=1.0, mem_gb=1.0)
            row[f"tput_{cluster.nodes[0].device}"] = 1.0
        rows.append(row)
    df = pd.DataFrame(rows)
    if draw(st.booleans()):  # a column for a device type the cluster lacks
        df["tput_t4"] = 1.0
    return Scenario(cluster=cluster, workload=Workload.from_frame(df), options=options)


# --------------------------------------------------------------- test scheduler
@dataclass
class RandomScheduler(SchedulerBase):
    """Seeded random decisions made from the view alone (``view.rng``).

    Preempts random running jobs (never past the scenario's limit or its own
    ``max_own`` preemptions per job), starts random waiting jobs either with the
    simulator's placement (device given as index or key) or with an explicit
    random placement over every device type where the job can run (a mixed
    allocation), and with ``live`` always starts something when nothing would hold
    resources (without it, runs may end ``stalled``). With ``p_move`` it moves random
    running jobs (grace periods included) to a random explicit placement, and with
    ``p_wake`` it asks for random wake-ups (``next_wakeup``).
    """

    p_start: float = 0.6
    p_preempt: float = 0.25
    p_mixed: float = 0.5
    max_own: int = 3
    restart_now: bool = True
    round_length: float | None = None
    call_when_queue_empty: bool = False
    live: bool = True
    p_move: float = 0.0
    p_wake: float = 0.0

    @property
    def cadence(self) -> Cadence:
        return replace(super().cadence, wakeups=True)

    def reset(self, view) -> None:
        self.calls = 0

    def next_wakeup(self, view):
        if self.p_wake <= 0.0 or view.rng.random() >= self.p_wake:
            return None
        return view.now + float(view.rng.choice([0.5, 1.5, 3.0]))

    def _mixed(self, view, cap, j: int, rng) -> Placement | None:
        w = int(view.workers[j])
        free_c = np.array(cap.free_cpus, dtype=np.float64)
        free_m = np.array(cap.free_mem, dtype=np.float64)
        owner = np.array(cap.gpu_owner)
        nodes: list[int] = []
        gpus: list[int] = []
        for _ in range(w):
            opts = []
            for n in range(len(view.node_device)):
                d = int(view.node_device[n])
                if view.tput[j, d] <= 0:
                    continue
                if free_c[n] + 1e-9 < view.cpus_need[j, d] or free_m[n] + 1e-9 < view.mem[j]:
                    continue
                if view.dev_is_cpu[d]:
                    opts.append((n, -1))
                else:
                    opts.extend((n, g) for g in range(int(view.node_gpus[n])) if owner[n, g] < 0)
            if not opts:
                return None
            n, g = opts[int(rng.integers(len(opts)))]
            d = int(view.node_device[n])
            free_c[n] -= view.cpus_need[j, d]
            free_m[n] -= view.mem[j]
            if g >= 0:
                owner[n, g] = j
            nodes.append(n)
            gpus.append(g)
        pl = Placement.of(nodes, gpus)
        cap.take(j, pl.nodes, pl.gpus)
        return pl

    def decide(self, view) -> list:
        self.calls += 1
        rng = view.rng
        cap = view.capacity()
        limit = view.max_preemptions
        out: list = []
        requeued: list[int] = []
        holding = 0
        for j in view.running.tolist():
            movable = not view.in_grace(j) and (limit is None or view.n_preempt[j] < limit) \
                and view.n_preempt[j] < self.max_own
            if movable and rng.random() < self.p_preempt:
                out.append(Preempt(j))
                if view.grace[j] <= 0:
                    cap.give(j)
                    requeued.insert(0, j)
                    continue
            elif self.p_move > 0.0 and rng.random() < self.p_move:
                w = int(view.workers[j])
                here = (view.worker_node[j, :w].copy(), view.worker_gpu[j, :w].copy())
                cap.give(j)
                pl = self._mixed(view, cap, j, rng)
                if pl is None:
                    cap.take(j, *here)
                else:
                    out.append(Move(j, pl))
            holding += 1
        cands = (requeued if self.restart_now else []) + view.queue.tolist()
        for j in cands:
            if rng.random() >= self.p_start:
                continue
            pl = None
            if rng.random() < self.p_mixed:
                pl = self._mixed(view, cap, j, rng)
                if pl is not None:
                    out.append(Start(j, None, pl))
            else:
                devs = [d for d in range(len(view.devices)) if cap.fits(j, d)]
                if devs:
                    d = devs[int(rng.integers(len(devs)))]
                    pl = cap.place(j, d)
                    how = int(rng.integers(3))
                    out.append(Start(j, d) if how == 0 else Start(j, view.devices[d]) if how == 1
                               else Start(j, d, pl))
            if pl is not None:
                holding += 1
        if self.live and holding == 0 and cands:  # liveness: the cluster is empty, start the head
            j = cands[0]
            d = next(d for d in range(len(view.devices)) if cap.fits(j, d))
            out.append(Start(j, view.devices[d]))
        return out


# ----------------------------------------------------------------- comparison
class Recorder:
    """Wraps a scheduler and records, at every decision point, the placement of each
    running job's current run: ``{(job, restarts so far): ((node, gpu), ...)}``, and
    a trace of (time, queue order, running order, per-user service).

    It has the wrapped scheduler's cadence without its fast path, so decision points and
    wake-ups are those of the wrapped scheduler.
    """

    def __init__(self, inner) -> None:
        self.inner = inner
        self.cadence = replace(cadence_of(inner), fast_path=False)
        self.next_wakeup = inner.next_wakeup if self.cadence.wakeups else None
        self.placements: dict[tuple[int, int], tuple] = {}
        self.trace: list[tuple[float, tuple, tuple, tuple]] = []

    def reset(self, view) -> None:
        self.inner.reset(view)

    def decide(self, view) -> list:
        nodes, gpus, restarts = view.worker_node, view.worker_gpu, view.n_restart
        for j in view.running.tolist():
            w = int(view.nworkers[j])
            pl = tuple(zip(nodes[j, :w].tolist(), gpus[j, :w].tolist()))
            assert self.placements.setdefault((j, int(restarts[j])), pl) == pl
        self.trace.append((float(view.now), tuple(view.queue.tolist()),
                           tuple(view.running.tolist()), tuple(view.user_service.tolist())
                           + tuple(view.attained_service().tolist())))
        return self.inner.decide(view)


def run_both(scenario: Scenario, make_scheduler, seed: int = 0):
    rec_fast, rec_ref = Recorder(make_scheduler()), Recorder(make_scheduler())
    fast = hetgym.simulate(scenario, rec_fast, seed=seed, check_every_event=True)
    ref = R.simulate(scenario, rec_ref, seed=seed)
    fast.extra["placements"] = rec_fast.placements
    fast.extra["trace"] = rec_fast.trace
    ref.placements = rec_ref.placements
    ref.trace = rec_ref.trace
    return fast, ref


def assert_same(fast, ref, scenario: Scenario) -> None:
    a, b = fast.jobs, ref.jobs
    assert a["job_id"].tolist() == b["job_id"].tolist()
    for col in ("start", "end"):
        np.testing.assert_allclose(a[col].to_numpy(float), b[col].to_numpy(float), rtol=1e-9,
                                   atol=1e-9, equal_nan=True, err_msg=col)
    assert a["device"].tolist() == b["device"].tolist()
    assert a["preemptions"].tolist() == b["preemptions"].tolist()
    assert a["restarts"].tolist() == b["restarts"].tolist()
    assert a["finished"].tolist() == b["finished"].tolist()
    assert fast.stalled == ref.stalled
    np.testing.assert_allclose(a["exec_time"].to_numpy(float), b["exec_time"].to_numpy(float),
                               rtol=1e-9, atol=1e-6)
    seg_fast = [(j, s, e, d) for j, s, e, d, _ in fast.segments]
    assert [(j, d) for j, _, _, d in seg_fast] == [(j, d) for j, _, _, d in ref.segments]
    np.testing.assert_allclose([(s, e) for _, s, e, _ in seg_fast] or np.zeros((0, 2)),
                               [(s, e) for _, s, e, _ in ref.segments] or np.zeros((0, 2)),
                               rtol=1e-9, atol=1e-9)
    if "placements" in fast.extra:
        assert fast.extra["placements"] == ref.placements
        tf, tr = fast.extra["trace"], ref.trace
        assert [(q, r) for _, q, r, _ in tf] == [(q, r) for _, q, r, _ in tr]  # queue order
        if tf:
            np.testing.assert_allclose([t for t, *_ in tf], [t for t, *_ in tr], rtol=1e-9)
            np.testing.assert_allclose([u for *_, u in tf], [u for *_, u in tr], rtol=1e-9,
                                       atol=1e-6)
    m = fast.metrics
    assert m["decision_points"] == ref.decision_points
    assert m["events"] == ref.events
    assert m["energy_kwh"] == pytest.approx(ref.energy_kwh, rel=1e-9)
    span = max(ref.now, 1e-12)
    for d in scenario.device_types:
        cap = scenario.cluster.capacity(d)
        util = ref.busy_time[d] / (cap * span) if cap else 0.0
        assert m[f"util_{d}"] == pytest.approx(util, rel=1e-9, abs=1e-12), d


# ---------------------------------------------------------------------- tests
@examples(60)
@given(sc=scenarios(), blocking=st.booleans(), rounds=st.sampled_from([None, None, 40.0]),
       device=st.sampled_from(["fastest_free", "fastest_free", "fastest"]))
def test_fifo(sc: Scenario, blocking: bool, rounds, device: str) -> None:
    def make():
        s = baselines.make("fifo", blocking=blocking, device=device)
        s.round_length = rounds
        return s

    fast, ref = run_both(sc, make)
    assert_same(fast, ref, sc)


@examples(35)
@given(sc=scenarios())
def test_sjf(sc: Scenario) -> None:
    fast, ref = run_both(sc, lambda: baselines.make("sjf"))
    assert_same(fast, ref, sc)


@examples(50)
@given(sc=scenarios(preempt=True, max_jobs=15), rounds=st.sampled_from([None, 30.0]),
       fastest_only=st.booleans())
def test_srpt_preemption(sc: Scenario, rounds, fastest_only: bool) -> None:
    devices = FastestOnly() if fastest_only else FastestFirst()
    fast, ref = run_both(sc, lambda: SRPT(devices=devices, round_length=rounds))
    assert_same(fast, ref, sc)


@examples(80)
@given(sc=scenarios(preempt=True, max_jobs=15), seed=st.integers(0, 2**16),
       p_mixed=st.sampled_from([0.0, 0.5, 1.0]), restart_now=st.booleans(),
       rounds=st.sampled_from([None, None, 25.0]), every=st.booleans(),
       live=st.sampled_from([True, True, True, False]))
def test_random_decisions(sc: Scenario, seed: int, p_mixed: float, restart_now: bool,
                          rounds, every: bool, live: bool) -> None:
    fast, ref = run_both(
        sc, lambda: RandomScheduler(p_start=0.6 if live else 0.2, p_mixed=p_mixed,
                                    restart_now=restart_now, round_length=rounds,
                                    call_when_queue_empty=every, live=live),
        seed=seed)
    assert_same(fast, ref, sc)


@examples(60)
@given(sc=scenarios(preempt=True, max_jobs=12), seed=st.integers(0, 2**16),
       p_move=st.sampled_from([0.2, 0.5]), p_wake=st.sampled_from([0.0, 0.5, 1.0]),
       rounds=st.sampled_from([None, None, 25.0]))
def test_moves_and_wakeups(sc: Scenario, seed: int, p_move: float, p_wake: float, rounds) -> None:
    """Random ``Move`` decisions (grace periods and checkpoint loss included) and random
    wake-ups: same run on both simulators, attained service included."""
    fast, ref = run_both(
        sc, lambda: RandomScheduler(p_move=p_move, p_wake=p_wake, p_mixed=0.5,
                                    round_length=rounds), seed=seed)
    assert_same(fast, ref, sc)


@examples(40)
@given(sc=scenarios(gpu_types=("V100", "P100"), cpu_nodes=False, topo=True, min_gpus=2,
                    max_jobs=12, placements=("topology", "topology", "spread", "pack"),
                    workers=(1, 2, 2, 3, 4)),
       which=st.sampled_from(["fifo", "random"]), seed=st.integers(0, 2**16))
def test_topology_and_placement(sc: Scenario, which: str, seed: int) -> None:
    make = (lambda: baselines.make("fifo", blocking=False)) if which == "fifo" else \
        (lambda: RandomScheduler(p_mixed=0.3, call_when_queue_empty=True))
    fast, ref = run_both(sc, make, seed=seed)
    assert_same(fast, ref, sc)


#: Baselines whose reference run takes most of this file's time (their Python decisions on
#: every example): checked under -m slow.
_SLOW_REFERENCE = {"andreas-rg", "hadar", "topo-aware"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in _SLOW_REFERENCE else n
                                  for n in baselines.names()])
@examples(6)
@given(sc=scenarios(preempt=True, max_jobs=12))
def test_every_registered_baseline(name: str, sc: Scenario) -> None:
    """Paper baselines (AlloX, DRF, FitGpp, ...) read only the view: same run on both."""
    fast, ref = run_both(sc, lambda: baselines.make(name))
    assert_same(fast, ref, sc)


def test_reference_agrees_on_named_toy() -> None:
    """The hand-checkable toy scenario: both simulators give the documented FIFO run."""
    sc = hetgym.scenarios.get("toy-3jobs")
    fast, ref = run_both(sc, lambda: baselines.make("fifo"))
    assert_same(fast, ref, sc)
    assert ref.jobs["end"].tolist() == [3.0, 6.0, 8.0]


def test_comparison_can_fail() -> None:
    """A deliberately perturbed reference run is caught by :func:`assert_same`."""
    sc = hetgym.scenarios.get("toy-3jobs")
    fast, ref = run_both(sc, lambda: baselines.make("fifo"))
    ref.jobs.loc[2, "end"] += 1e-6
    with pytest.raises(AssertionError):
        assert_same(fast, ref, sc)
