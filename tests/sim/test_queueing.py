"""Queueing theory check: strict FIFO on c identical single-GPU nodes is an M/M/c queue.

Poisson arrivals (rate lambda), exponential work on 1-it/s GPUs (mean 1/mu s),
``baselines.make("fifo")``. The mean wait in queue must match Erlang C:

    Wq = C(c, a) / (c mu - lambda),  a = lambda / mu,
    C(c, a) = (a^c / c! * c / (c - a)) / (sum_{k<c} a^k / k! + a^c / c! * c / (c - a))

and the share of jobs that wait must match C(c, a). Sizing (c = 2, rho = 0.5): the
relative standard deviation of the mean wait over n jobs is about 6 / sqrt(n)
(measured with the Kiefer-Wolfowitz recursion), so the slow test's 160 000 jobs
give about 1.5 % (5 % is > 3 sigma) and the fast test's 12 000 jobs about
5.5 % (25 % is > 4 sigma). Seeds are fixed, so both are deterministic.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import factorial

import baselines
import hetgym
from hetgym import ClusterSpec, NodeSpec, Scenario, SimOptions, Workload


def erlang_c(c: int, a: float) -> float:
    """Probability that an arrival waits in M/M/c with offered load ``a`` (< c)."""
    k = np.arange(c)
    tail = a**c / factorial(c) * c / (c - a)
    return float(tail / (np.sum(a**k / factorial(k)) + tail))


def mmc_scenario(c: int, lam: float, mu: float, n: int, seed: int) -> Scenario:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "job_id": np.arange(n),
        "arrival": np.cumsum(rng.exponential(1.0 / lam, n)),
        "user": 0,
        "job_class": "BE",
        "workers": 1,
        "work": rng.exponential(1.0 / mu, n),
        "tput_v100": 1.0,
        "cpus": 1.0,
        "mem_gb": 1.0,
    })
    cluster = ClusterSpec(nodes=[NodeSpec(name="g", count=c, gpu_type="V100", gpus=1, cpus=4,
                                          mem_gb=16)])
    # restart_delay is irrelevant (no preemption); a large one would show if it leaked in
    return Scenario(cluster=cluster, workload=Workload.from_frame(df),
                    options=SimOptions(restart_delay=1000.0))


def waits(c: int, rho: float, n: int, seeds: list[int], mean_service: float = 100.0):
    mu = 1.0 / mean_service
    lam = rho * c * mu
    out = []
    for seed in seeds:
        res = hetgym.simulate(mmc_scenario(c, lam, mu, n, seed), baselines.make("fifo"))
        j = res.jobs
        assert j["finished"].all() and res.metrics["restarts"] == 0
        w = (j["start"] - j["arrival"]).to_numpy()
        out.append(w[n // 50:])  # drop the warm-up from an empty system
    w = np.concatenate(out)
    a = lam / mu
    pc = erlang_c(c, a)
    return w, pc, pc / (c * mu - lam)


def test_erlang_c_formula() -> None:
    # M/M/1: C = rho; a textbook value: c = 2, a = 1 -> C = 1/3
    assert erlang_c(1, 0.7) == pytest.approx(0.7)
    assert erlang_c(2, 1.0) == pytest.approx(1.0 / 3.0)


def test_mm2_fifo_wait_fast() -> None:
    w, pc, wq = waits(c=2, rho=0.5, n=4000, seeds=[11, 12, 13])
    assert w.mean() == pytest.approx(wq, rel=0.25)
    assert (w > 1e-9).mean() == pytest.approx(pc, rel=0.25)


@pytest.mark.slow
def test_mm2_fifo_wait_erlang_c() -> None:
    w, pc, wq = waits(c=2, rho=0.5, n=20000, seeds=list(range(8)))
    assert w.mean() == pytest.approx(wq, rel=0.05)
    assert (w > 1e-9).mean() == pytest.approx(pc, rel=0.05)
