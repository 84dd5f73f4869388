"""The ANDREAS Randomized Greedy search with node buckets and its shortcuts gives exactly
the plans (and draws) of the plain scan it replaced (``rg_search_nb(..., scan=True)``, main's
search): whole runs, job by job, and single calls compared entry by entry."""

from __future__ import annotations

import numpy as np
import pytest

import baselines.andreas as andreas_mod
import hetgym
from baselines.andreas import AndreasRG
from baselines.andreas_kernel import rg_search_nb
from tests.baselines.test_fast_paths import assert_same_schedule

CASES = [
    ("fitgpp-lab", {"n_jobs": 120, "nodes": 12}),  # pinned running jobs, nothing held back
    ("andreas-sim", {"n_nodes": 4}),  # running jobs re-planned: GPUs held back
    ("andreas-sim", {"n_nodes": 6, "gpus": "4/2", "seed": 1}),
    ("andreas-armida", {}),
]


def rg_search_ref_nb(*args):
    """The search as a plain scan of the class's nodes (the reference)."""
    return rg_search_nb(*args, True)


class RefRG(AndreasRG):
    """AndreasRG whose search is the reference scan."""

    def plan(self, view):
        saved = andreas_mod.rg_search_nb
        andreas_mod.rg_search_nb = rg_search_ref_nb
        try:
            return super().plan(view)
        finally:
            andreas_mod.rg_search_nb = saved


@pytest.mark.parametrize("name,kw", CASES)
@pytest.mark.parametrize("beta", [0.2, 0.7])
def test_runs_match_the_reference_search(name: str, kw: dict, beta: float) -> None:
    sc = hetgym.scenarios.get(name, **kw)
    assert_same_schedule(sc, AndreasRG(max_iter=30, beta=beta), RefRG(max_iter=30, beta=beta))


def test_calls_match_the_reference_search() -> None:
    """Every decision point of a run: the same f_OBJ and the same plan, bit for bit."""
    sc = hetgym.scenarios.get("andreas-sim", n_nodes=6, seed=2)
    calls = []

    def spy(*args):
        calls.append([a.copy() if isinstance(a, np.ndarray) else a for a in args])
        return rg_search_nb(*args)

    saved = andreas_mod.rg_search_nb
    andreas_mod.rg_search_nb = spy
    try:
        hetgym.simulate(sc, AndreasRG(max_iter=50, beta=0.5))
    finally:
        andreas_mod.rg_search_nb = saved
    assert len(calls) > 20
    for args in calls:
        a, b = list(args), list(args)
        a[-2], a[-1] = np.empty_like(args[-2]), np.empty_like(args[-1])
        b[-2], b[-1] = np.empty_like(args[-2]), np.empty_like(args[-1])
        assert rg_search_nb(*a) == rg_search_ref_nb(*b)
        assert (a[-2] == b[-2]).all() and (a[-1] == b[-1]).all()
