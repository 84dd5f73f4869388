"""Train / validation / test splits per trace family that share no jobs (no torch here).

Each family has one *base workload* (a long table of jobs in arrival order,
:func:`base_workload`); :func:`split` cuts it chronologically into three parts:
the first ``train`` fraction is the training workload (the env draws its episode
windows there), then the validation part (model selection) and the test part (the
held-out table). A job belongs to exactly one part, so validation and test windows
share no job with training. Validation and test windows are consecutive runs of
``window_jobs`` jobs inside their part (:func:`part_windows`): disjoint from each
other while the part holds enough jobs, else spread evenly (overlapping) over it,
which :attr:`Split.test_overlap` reports.

==================  =====================================================================
family              base workload
==================  =====================================================================
``hetero-small``    the default scenario over 12,288 Philly-derived jobs (the shipped
                    trace has 12,987 that fit the cluster), load 0.8
``google-hybrid``   all 589 jobs of the shipped Google 2011 shard, load 1.0
``fitgpp-lab``      8,192 FitGpp lab jobs (30 % TE) on 2 nodes x 8 V100, controlled
                    arrivals (load 2.0 under FIFO), objective ``slowdown``
``google-on-hetero-small``  cross-trace test set: the Google jobs (job types drawn for
                    CPU/K80/P100/V100) on the default scenario's cluster, load 0.8
==================  =====================================================================

The FitGpp family is shrunk from the paper's 84 nodes to 2 (arrivals rescaled by
the preset), so that a 64-job window contends for the cluster; its env reward is
``slowdown`` (the env has no TE-only term, see docs/agents.md).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from hetgym.specs import Scenario

__all__ = ["FAMILIES", "FAMILY_METRIC", "Split", "base_workload", "split", "part_windows",
           "google_on_cluster"]

#: Families with a base workload, and their defaults: (builder kwargs, window jobs).
FAMILIES: dict[str, dict[str, Any]] = {
    "hetero-small": {"n_jobs": 12288, "seed": 0},
    "google-hybrid": {"n_jobs": None},  # the whole shipped shard
    "fitgpp-lab": {"n_jobs": 8192, "seed": 0, "nodes": 2},
    "google-on-hetero-small": {},
}

#: The main metric of each family (lower is better) and its constraint (column, or None).
FAMILY_METRIC: dict[str, tuple[str, str | None]] = {
    "hetero-small": ("avg_jct", None),
    "google-hybrid": ("avg_jct", None),
    "fitgpp-lab": ("te_p95_slowdown", "be_p50_slowdown"),
    "google-on-hetero-small": ("avg_jct", None),
}


def google_on_cluster(cluster_scenario: Scenario, load: float = 0.8, seed: int = 0) -> Scenario:
    """All shipped Google 2011 jobs on ``cluster_scenario``'s cluster and options.

    Job types (hence GPU/CPU throughputs) are drawn as ``google-hybrid`` draws them
    (:func:`hetgym.traces.google.load_google2011`, run times taken as CPU run times),
    for the cluster's device types; arrivals are scaled to offered ``load``.
    """
    from hetgym.traces.google import load_google2011
    from hetgym.presets.traces import _finish, _scenario

    devs = [d.lower() for d in cluster_scenario.cluster.device_types]
    df = load_google2011(devices=devs, duration_device="cpu", seed=seed)[0]
    df = _finish(df, cluster_scenario.cluster, cluster_scenario.options, n_jobs=None,
                 seed=seed, load=load, source="google-on-cluster")
    return _scenario(cluster_scenario.cluster, df, cluster_scenario.options,
                     f"google-on-{cluster_scenario.name}")


def base_workload(family: str) -> Scenario:
    """The long workload of ``family`` that :func:`split` cuts (module docstring)."""
    from hetgym import scenarios

    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; expected one of {sorted(FAMILIES)}")
    if family == "google-on-hetero-small":
        return google_on_cluster(scenarios.get("hetero-small", n_jobs=64, seed=0))
    sc = scenarios.get(family, **FAMILIES[family])
    if family == "fitgpp-lab":
        sc = dataclasses.replace(sc, objective="slowdown", name="fitgpp-lab")
    return sc


@dataclass(frozen=True)
class Split:
    """A family's chronological split.

    Attributes:
        family: Family name.
        base: The base workload.
        bounds: Row bounds ``(0, a, b, n)``: train ``[0, a)``, validation ``[a, b)``,
            test ``[b, n)``.
        train: The training workload (rows ``[0, a)`` as a scenario).
        val: Validation windows.
        test: Test windows.
        test_overlap: Whether test windows overlap each other (too few test jobs).
    """

    family: str
    base: Scenario
    bounds: tuple[int, int, int, int]
    train: Scenario
    val: list[Scenario]
    test: list[Scenario]
    test_overlap: bool

    def describe(self) -> str:
        """One line: the parts' row ranges and window counts."""
        _, a, b, n = self.bounds
        return (f"{self.family}: {n} jobs; train rows [0, {a}), validation [{a}, {b}) "
                f"({len(self.val)} windows), test [{b}, {n}) ({len(self.test)} windows"
                f"{', overlapping each other' if self.test_overlap else ', disjoint'})")


def part_windows(base: Scenario, lo: int, hi: int, window_jobs: int, n: int) -> list[Scenario]:
    """``n`` windows of ``window_jobs`` consecutive rows inside rows ``[lo, hi)`` of ``base``:
    back to back from ``lo`` when they fit, else with starts spread evenly over the part."""
    from agents.common.envtools import window_scenario

    size = hi - lo
    if window_jobs > size:
        raise ValueError(f"part [{lo}, {hi}) of {base.name} has {size} jobs, fewer than a "
                         f"window ({window_jobs})")
    if n * window_jobs <= size:
        starts = lo + window_jobs * np.arange(n)
    else:
        starts = np.round(np.linspace(lo, hi - window_jobs, n)).astype(np.int64)
    return [window_scenario(base, np.arange(s, s + window_jobs)) for s in starts.tolist()]


def split(family: str, window_jobs: int = 64, n_val: int = 8, n_test: int = 32,
          fractions: tuple[float, float] | None = None) -> Split:
    """Cut ``family``'s base workload into train / validation / test parts (module docstring).

    Args:
        family: A key of :data:`FAMILIES`.
        window_jobs: Jobs per validation / test window.
        n_val: Validation windows.
        n_test: Test windows.
        fractions: (train, validation) fractions of the rows; default: the test part
            gets ``n_test`` disjoint windows and validation ``n_val`` where the
            workload is long enough, else (0.6, 0.1).
    """
    from agents.common.envtools import window_scenario

    base = base_workload(family)
    n = len(base.workload.frame)
    if fractions is None:
        need_test, need_val = n_test * window_jobs, n_val * window_jobs
        if need_test + need_val <= n // 2:
            b = n - need_test
            a = b - need_val
        else:
            a, b = int(0.6 * n), int(0.7 * n)
    else:
        a = int(fractions[0] * n)
        b = a + int(fractions[1] * n)
    if not 0 < a < b < n:
        raise ValueError(f"split of {family}: bad bounds (0, {a}, {b}, {n})")
    train = window_scenario(base, np.arange(a)).replace(name=family)
    val = part_windows(base, a, b, window_jobs, n_val)
    test = part_windows(base, b, n, window_jobs, n_test)
    return Split(family=family, base=base, bounds=(0, a, b, n), train=train, val=val, test=test,
                 test_overlap=n_test * window_jobs > n - b)
