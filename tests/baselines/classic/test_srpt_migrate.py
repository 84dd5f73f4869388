"""The AlloX paper's SRPT (``baselines.make("srpt", migrate=True)``): hand-computed
schedules on one GPU and one CPU, and capacity invariants on the paper's regime."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import baselines
import hetgym
from baselines.classic.schedulers import SRPT
from baselines.classic.srpt_migrate import MigratingSRPT
from hetgym.presets.allox import example_scenario
from hetgym.specs import Scenario
from hetgym.workload import Workload


def _jct(sc: Scenario, sched) -> dict[int, float]:
    res = hetgym.simulate(sc, sched, seed=0, check_every_event=True)
    return dict(zip(res.jobs["job_id"].tolist(), res.jobs["jct"].tolist()))


def test_registry_keeps_the_sticky_form_as_default() -> None:
    assert type(baselines.make("srpt")) is SRPT
    mig = baselines.make("srpt", migrate=True)
    assert isinstance(mig, MigratingSRPT) and mig.call_when_queue_empty


def test_a_cpu_job_moves_to_the_gpu_that_frees_up() -> None:
    """Job 1: 10 s on the GPU, 40 s on the CPU; job 2: 2 s / 4 s; both at t = 0.
    Job 2 ranks first and takes the GPU, job 1 the CPU. At t = 2 job 2 ends with 2/40 of
    job 1 done: the migrating SRPT moves it to the GPU (no restart cost), where the 95 %
    left takes 9.5 s: it ends at 11.5. The sticky SRPT leaves it on the CPU (ends at 40);
    waiting for the fastest type it starts at 2 and ends at 12."""
    sc = example_scenario([(10.0, 40.0), (2.0, 4.0)], gpus=1, cpus=1)
    assert _jct(sc, baselines.make("srpt", migrate=True)) == pytest.approx({1: 11.5, 2: 2.0})
    assert _jct(sc, baselines.make("srpt")) == pytest.approx({1: 40.0, 2: 2.0})
    assert _jct(sc, baselines.make("srpt", migrate=True, device="fastest")) == pytest.approx({1: 12.0, 2: 2.0})


def test_a_shorter_arrival_pushes_the_running_job_to_the_cpu_and_back() -> None:
    """Job 1 (10 s GPU, 100 s CPU) at t = 0, job 2 (2 s GPU, 100 s CPU) at t = 1. At 1,
    job 2 takes the GPU and job 1 (9 s left on the GPU) moves to the CPU, the fastest type
    with room; at 3 it moves back with 2/100 of its work done there: 0.88 x 10 s left,
    so it ends at 11.8."""
    base = example_scenario([(10.0, 100.0), (2.0, 100.0)], gpus=1, cpus=1)
    df = base.workload.frame.copy()
    df["arrival"] = [0.0, 1.0]
    sc = Scenario(cluster=base.cluster, workload=Workload.from_frame(pd.DataFrame(df)), options=base.options)
    res = hetgym.simulate(sc, baselines.make("srpt", migrate=True), seed=0, check_every_event=True)
    jct = dict(zip(res.jobs["job_id"].tolist(), res.jobs["jct"].tolist()))
    assert jct == pytest.approx({1: 11.8, 2: 2.0})
    assert res.jobs["restarts"].tolist() == [2, 0]


@pytest.mark.parametrize("device", ["fastest_free", "fastest"])
def test_paper_regime_keeps_capacity_and_finishes_every_job(device: str) -> None:
    """80 jobs of the paper's regime, capacity checked after every event; every job ends
    and none runs longer than on the CPUs alone (its slowest type here)."""
    sc = hetgym.scenarios.get("allox-hybrid", setting="paper", seed=1, n_jobs=80)
    res = hetgym.simulate(sc, baselines.make("srpt", migrate=True, device=device), seed=1,
                          check_every_event=True)
    assert res.jobs["finished"].all()
    f = sc.workload.frame
    slowest = (f["work"] / f[["tput_cpu", "tput_k80"]].min(axis=1)).to_numpy(float)
    assert np.all(res.jobs["exec_time"].to_numpy(float) <= slowest + 1e-6)
