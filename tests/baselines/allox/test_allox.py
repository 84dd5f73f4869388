"""The AlloX family against the paper's worked examples, and its invariants.

Examples (all jobs at time 0, machines of one GPU or one CPU slot, restart delay 0):
Table 1 / Fig. 1, the SJF+ example (Fig. 5), the JSQ+ example (Fig. 4) and the
3-job example of sec. 3.1. Optima are checked by brute force, independently of
the matching.
"""

from __future__ import annotations

import itertools
import time

import numpy as np
import pandas as pd
import pytest

import baselines
import hetgym
from baselines.allox.schedulers import BASELINES, AlloX, JSQPlus
from baselines.allox.parts import AlloXProgress, MachinePool, match_first_jobs
from hetgym.presets.allox import (
    JSQ_PLUS_EXAMPLE,
    SJF_PLUS_EXAMPLE,
    TABLE1,
    THREE_JOBS,
    example_scenario,
    hybrid_cluster,
)
from hetgym.sim.engine import Simulator
from hetgym.specs import ClusterSpec, NodeSpec, Scenario, SimOptions
from hetgym.workload import Workload

TABLE1_USERS = [0, 1, 0, 1, 0, 1]
EXAMPLES = {  # name: (P, gpus, cpus, users)
    "table1": (TABLE1, 2, 2, TABLE1_USERS),
    "sjf+": (SJF_PLUS_EXAMPLE, 2, 2, None),
    "jsq+": (JSQ_PLUS_EXAMPLE, 2, 2, None),
    "3jobs": (THREE_JOBS, 1, 1, None),
}


def total_jct(p, assignment, gpus: int) -> tuple[float, float]:
    """Total JCT and makespan when job j runs on machine assignment[j] (GPUs first),
    jobs on a machine in shortest-first order (optimal for a fixed assignment)."""
    total, makespan = 0.0, 0.0
    for m in set(assignment):
        t = 0.0
        for d in sorted(p[j][0 if m < gpus else 1] for j in range(len(p)) if assignment[j] == m):
            t += d
            total += t
        makespan = max(makespan, t)
    return total, makespan


def brute_force_optimum(p, gpus: int, cpus: int) -> float:
    """Minimum total JCT over every assignment of jobs to machines."""
    machines = range(gpus + cpus)
    return min(total_jct(p, a, gpus)[0] for a in itertools.product(machines, repeat=len(p)))


def run_total(scenario: Scenario, scheduler) -> float:
    res = hetgym.simulate(scenario, scheduler, seed=0, check_every_event=True)
    assert res.jobs["finished"].all()
    return float(res.jobs["jct"].sum())


def scenario_of(name: str) -> Scenario:
    p, g, c, users = EXAMPLES[name]
    return example_scenario(p, gpus=g, cpus=c, users=users)


@pytest.mark.parametrize("name, optimum", [("table1", 75), ("sjf+", 80), ("jsq+", 180), ("3jobs", 17)])
def test_brute_force_optimum(name: str, optimum: float) -> None:
    p, g, c, _ = EXAMPLES[name]
    assert brute_force_optimum(p, g, c) == optimum


def test_table1_figure_schedule_is_76_not_optimal() -> None:
    """Fig. 1b (J1, J2 on one GPU, J3, J4 on the other, J5, J6 on the CPUs) totals 76
    with makespan 18 (the paper's "76/6" and "-76% makespan"); the optimum is 75."""
    total, makespan = total_jct(TABLE1, [0, 0, 1, 1, 2, 3], gpus=2)
    assert (total, makespan) == (76, 18)
    total, makespan = total_jct(TABLE1, [2, 3, 1, 0, 0, 1], gpus=2)  # a 75 schedule
    assert (total, makespan) == (75, 20)


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_allox_alpha1_reaches_the_optimum(name: str) -> None:
    p, g, c, _ = EXAMPLES[name]
    assert run_total(scenario_of(name), AlloX(alpha=1.0)) == brute_force_optimum(p, g, c)


def test_allox_on_registered_toy() -> None:
    assert run_total(hetgym.scenarios.get("toy-3jobs"), baselines.make("allox", alpha=1.0)) == 17


def test_es_table1_fcfs_is_181() -> None:
    """Fig. 1a: equal share, FCFS, favourite device if free else the other."""
    assert run_total(scenario_of("table1"), baselines.make("es", order="fcfs")) == 181


def test_sjf_plus_example() -> None:
    """Fig. 5: SJF+ puts jobs 1, 2 on the GPUs and 3, 4 on the CPUs: avg 50 (total 200)."""
    assert run_total(scenario_of("sjf+"), baselines.make("sjf+")) == 200


def test_jsq_plus_example_both_semantics() -> None:
    """Fig. 4: with machine queues (the text of sec. 2.2) jobs 3, 4 queue behind 1, 2 on
    the GPUs (80 < 160): avg 60. Without queueing they take the CPUs: the paper's avg 100."""
    assert run_total(scenario_of("jsq+"), baselines.make("jsq+")) == 240
    assert run_total(scenario_of("jsq+"), JSQPlus(queueing=False)) == 400


def test_matching_pruning_is_exact() -> None:
    """Pruned columns give the same optimum as the full [P, 2P, ..., nP] + D matrix."""
    from scipy.optimize import linear_sum_assignment

    rng = np.random.default_rng(1)
    for _ in range(30):
        n, c = int(rng.integers(1, 12)), 2
        p = rng.uniform(1, 20, (n, c)) * rng.uniform(1, 5, (1, c))
        p[rng.random((n, c)) < 0.1] = np.inf
        p[np.isinf(p).all(axis=1), 0] = 3.0
        m = int(rng.integers(1, 6))
        dev = rng.integers(0, c, m)
        omega = np.where(rng.random(m) < 0.5, 0.0, rng.uniform(0, 30, m))
        omega[rng.random(m) < 0.3] = 7.0  # ties among busy machines
        pool = MachinePool(dev=dev, omega=omega, now=0.0)
        arrival = -rng.uniform(0, 10, n)
        first, cost = match_first_jobs(p, arrival, pool)
        full = np.concatenate([k * p[:, dev] + omega[None, :] - arrival[:, None]
                               for k in range(1, n + 1)], axis=1)
        if not np.isfinite(full).any(axis=1).all() or not np.isfinite(p[:, np.unique(dev)]).any(axis=1).all():
            continue
        r, cc = linear_sum_assignment(full)
        assert cost == pytest.approx(full[r, cc].sum())
        assert ((first >= -1) & (first < n)).all()


def test_progress_value_paper_example() -> None:
    """Sec. 3.3.2: CPU config (1 CPU, 20), GPU config (1 GPU, 5); capacity 8 CPUs, 2 GPUs,
    64 GB: dominant share 1/2; on the CPU the value is discounted to 1/8."""
    cluster = ClusterSpec(nodes=[
        NodeSpec(name="gpu", count=2, gpu_type="K80", gpus=1, cpus=1, mem_gb=16),
        NodeSpec(name="cpu", count=8, gpu_type=None, gpus=0, cpus=1, mem_gb=4),
    ])
    df = pd.DataFrame({"job_id": [0], "arrival": 0.0, "user": 0, "job_class": "BE", "workers": 1,
                       "work": 20.0, "tput_k80": 4.0, "tput_cpu": 1.0, "cpus": 1.0, "mem_gb": 2.0})
    sc = Scenario(cluster=cluster, workload=Workload.from_frame(df))
    view = Simulator(sc).view
    prog = AlloXProgress()
    prog.reset(view)
    assert prog.value(0, view.devices.index("k80")) == pytest.approx(0.5)
    assert prog.value(0, view.devices.index("cpu")) == pytest.approx(0.125)


def test_allox_raises_alpha_rather_than_idle() -> None:
    """Sec. 4.4: user 0's jobs would rather wait for the GPU; the CPU goes to user 1."""
    sc = example_scenario([(10, 100), (10, 100), (10, 12)], gpus=1, cpus=1, users=[0, 0, 1])
    assert run_total(sc, AlloX(alpha=0.5)) == 42
    assert run_total(sc, AlloX(alpha=0.5, raise_alpha=False)) == 60


def test_alpha_out_of_range() -> None:
    with pytest.raises(ValueError, match="alpha"):
        baselines.make("allox", alpha=1.5)


def test_registered() -> None:
    names = baselines.names()
    for n in ("allox", "allox+", "es", "drff", "drfs", "drfa", "bf", "jsq+", "sjf+", "srpt"):
        assert n in names
    assert "allox-hybrid" in hetgym.scenarios.names()


def test_es_static_share() -> None:
    """ES: each of 2 users owns one GPU (the single CPU slot goes to user 0); user 0's
    third job waits for her GPU although user 1's GPU is idle from t=10."""
    sc = example_scenario([(10, 50)] * 4, gpus=2, cpus=1, users=[0, 0, 0, 1])
    res = hetgym.simulate(sc, baselines.make("es"), seed=0, check_every_event=True)
    jobs = res.jobs.sort_values("job_id")
    assert (jobs["start"].to_numpy() == [0, 0, 10, 0]).all()


def test_drff_waits_for_gpu_drfa_does_not() -> None:
    sc = example_scenario(SJF_PLUS_EXAMPLE, gpus=2, cpus=2)
    assert hetgym.simulate(sc, baselines.make("drff"), seed=0).summary()["util_cpu"] == 0.0
    assert hetgym.simulate(sc, baselines.make("drfa"), seed=0).summary()["util_cpu"] > 0.0


def _random_scenario(seed: int) -> Scenario:
    """Small random hybrid scenario: cpu + two GPU types, gangs of 1-4, 4 users."""
    rng = np.random.default_rng(seed)
    n = 40
    cluster = ClusterSpec(nodes=[
        NodeSpec(name="cpu", count=2, gpu_type=None, gpus=0, cpus=16, mem_gb=64),
        NodeSpec(name="k80", count=2, gpu_type="K80", gpus=2, cpus=16, mem_gb=64),
        NodeSpec(name="v100", count=1, gpu_type="V100", gpus=4, cpus=32, mem_gb=64),
    ])
    base = rng.uniform(1.0, 5.0, n)
    df = pd.DataFrame({
        "job_id": np.arange(n), "arrival": np.sort(rng.exponential(20.0, n).cumsum()),
        "user": rng.integers(0, 4, n), "job_class": "BE",
        "workers": rng.choice([1, 1, 1, 2, 4], n), "work": rng.lognormal(6.0, 1.0, n),
        "tput_cpu": base / rng.uniform(1.8, 10.0, n), "tput_k80": base,
        "tput_v100": base * rng.uniform(1.5, 3.0, n) * (rng.random(n) > 0.1),
        "cpus": rng.choice([1.0, 2.0, 8.0], n), "mem_gb": 8.0,
    })
    df.loc[df["workers"] > 2, "tput_cpu"] = 0.0  # CPU gangs of 4 would not fit 2 CPU nodes
    return Scenario(cluster=cluster, workload=Workload.from_frame(df),
                    options=SimOptions(cpu_slot_cores=8))


@pytest.mark.parametrize("name", sorted(BASELINES))
@pytest.mark.parametrize("seed", [0, 1])
def test_invariants_every_baseline(name: str, seed: int) -> None:
    """Capacity never over-allocated, every job done once, on a random hybrid scenario."""
    sc = _random_scenario(seed)
    res = hetgym.simulate(sc, baselines.make(name), seed=seed, check_every_event=True)
    assert res.jobs["finished"].all()
    assert not res.stalled


@pytest.mark.parametrize("name", ["allox", "allox+", "jsq+"])
def test_invariants_without_cpu_slot_option(name: str) -> None:
    """Jobs' own ``cpus`` on CPU nodes (no ``cpu_slot_cores``)."""
    sc = _random_scenario(3).replace(options={"cpu_slot_cores": None})
    res = hetgym.simulate(sc, baselines.make(name), seed=0, check_every_event=True)
    assert res.jobs["finished"].all()


def test_allox_hybrid_scenario() -> None:
    sc = hetgym.scenarios.get("allox-hybrid", n_jobs=60, seed=0)
    assert sc.cluster.capacity("k80") == 20
    assert sc.cluster.capacity("cpu") == 400 and sc.options.cpu_slot_cores == 20
    assert sum(n.count * n.mem_gb for n in sc.cluster.nodes) == 1280
    fr = sc.workload.frame
    assert len(fr) == 60 and fr["user"].nunique() <= 10
    speedup = fr["tput_k80"] / fr["tput_cpu"]
    assert speedup.between(1.8, 10.0).all()
    res = hetgym.simulate(sc, baselines.make("allox"), seed=0, check_every_event=True)
    assert res.jobs["finished"].all()


def _latency_scenario(n: int = 200) -> Scenario:
    rng = np.random.default_rng(0)
    g = rng.lognormal(np.log(1800.0) - 0.5, 1.0, n)
    df = pd.DataFrame({"job_id": np.arange(n), "arrival": 0.0, "user": rng.integers(0, 10, n),
                       "job_class": "BE", "workers": 1, "work": g, "tput_k80": 1.0,
                       "tput_cpu": 1.0 / rng.uniform(1.8, 10.0, n), "cpus": 1.0, "mem_gb": 8.0})
    return Scenario(cluster=hybrid_cluster(), workload=Workload.from_frame(df),
                    options=SimOptions(cpu_slot_cores=20, restart_delay=0.0))


@pytest.mark.slow
def test_decision_latency_200_jobs_40_machines() -> None:
    """AlloX (default alpha) decides on 200 waiting jobs x 40 free machines in < 50 ms."""
    sim = Simulator(_latency_scenario())
    sim.advance()
    sched = AlloX()
    sched.reset(sim.view)
    assert len(sim.view.queue) == 200 and len(sched.decide(sim.view)) == 40
    times = []
    for _ in range(20):
        t = time.process_time()
        sched.decide(sim.view)
        times.append(time.process_time() - t)
    assert float(np.median(times)) < 0.050
