"""The ANDREAS Randomized Greedy search with node buckets and its shortcuts gives exactly
the plans (and draws) of the plain scan it replaced (``rg_search_nb(..., scan=True)``, the
same counter-based draws): whole runs, job by job, and single calls compared entry by entry;
abandoning iterations early (``prune``) changes nothing either, nor does running the
iterations in parallel chunks (``rg_search_par_nb``: any number of chunks, one or two
threads)."""

from __future__ import annotations

import numpy as np
import pytest

import baselines.andreas.schedulers as andreas_mod
import hetgym
from baselines.andreas.schedulers import AndreasRG
from baselines.andreas.draws import draw_nb, iter_key_nb, swap_pass_nb, threshold_nb
from baselines.andreas.kernel import rg_search_nb, rg_search_par_nb
from tests.baselines.test_fast_paths import assert_same_schedule

CASES = [
    ("fitgpp-lab", {"n_jobs": 120, "nodes": 12}),  # pinned running jobs, nothing held back
    # cores and memory bind, running jobs re-planned: GPUs, cores and memory held back
    ("fitgpp-lab", {"n_jobs": 120, "nodes": 12, "grace_scale": 0.0, "max_preemptions": None}),
    ("andreas-sim", {"n_nodes": 4}),  # running jobs re-planned: GPUs held back
    ("andreas-sim", {"n_nodes": 6, "gpus": "4/2", "seed": 1}),
    ("andreas-armida", {}),
]


NARGS = 34  # the kernel's arguments before scan and prune


def rg_search_ref_nb(*args):
    """The search as a plain scan of the class's nodes, no iteration abandoned (the reference)."""
    return rg_search_nb(*args[:NARGS], True, False)


def searching_with(search):
    """AndreasRG whose search kernel is ``search`` (same arguments as rg_search_nb), serial
    or threaded."""

    class RG(AndreasRG):
        def _plan_arrays(self, view):  # what plan and decide both call
            saved = andreas_mod.rg_search_nb, andreas_mod.rg_search_par_nb
            andreas_mod.rg_search_nb = search
            andreas_mod.rg_search_par_nb = lambda *args: search(*args[:-1])  # without chunks
            try:
                return super()._plan_arrays(view)
            finally:
                andreas_mod.rg_search_nb, andreas_mod.rg_search_par_nb = saved

    return RG


RefRG = searching_with(rg_search_ref_nb)  # the reference scan


def recorded_calls(sc, rg: AndreasRG) -> list[list]:
    """The search kernel's arguments at every decision point of a serial run of ``rg``."""
    calls = []

    def spy(*args):
        calls.append([a.copy() if isinstance(a, np.ndarray) else a for a in args[:NARGS]])
        return rg_search_nb(*args)

    saved = andreas_mod.rg_search_nb
    andreas_mod.rg_search_nb = spy
    try:
        hetgym.simulate(sc, rg)
    finally:
        andreas_mod.rg_search_nb = saved
    return calls


@pytest.mark.parametrize("name,kw", CASES)
@pytest.mark.parametrize("beta", [0.2, 0.7])
def test_runs_match_the_reference_search(name: str, kw: dict, beta: float) -> None:
    sc = hetgym.scenarios.get(name, **kw)
    assert_same_schedule(sc, AndreasRG(max_iter=30, beta=beta), RefRG(max_iter=30, beta=beta))


def test_calls_match_the_reference_search() -> None:
    """Every decision point of a run: the same f_OBJ and the same plan, bit for bit."""
    sc = hetgym.scenarios.get("andreas-sim", n_nodes=6, seed=2)
    calls = recorded_calls(sc, AndreasRG(max_iter=50, beta=0.5, parallel=False))
    assert len(calls) > 20
    improved = 0
    for args in calls:
        a, b, c = list(args), list(args), list(args)
        for x in (a, b, c):
            x[-2], x[-1] = np.empty_like(args[-2]), np.empty_like(args[-1])
        f = rg_search_nb(*a, False, True)
        assert f == rg_search_ref_nb(*b)
        assert (a[-2] == b[-2]).all() and (a[-1] == b[-1]).all()
        assert rg_search_nb(*c, False, False) == f  # no pruning: the same plan
        assert (a[-2] == c[-2]).all() and (a[-1] == c[-1]).all()
        improved += rg_search_nb(*args[:-4], 1, *args[-3:]) != f  # iteration 0 alone
    assert improved > 0  # the randomised iterations found better plans


def test_no_pruning_matches_on_runs() -> None:
    """A whole run (fitgpp-lab: an energy-only objective, where pruning abandons about
    half the iterations) is the same with and without pruning."""
    no_prune = searching_with(lambda *args: rg_search_nb(*args[:NARGS], False, False))
    sc = hetgym.scenarios.get("fitgpp-lab", n_jobs=150, nodes=12)
    assert_same_schedule(sc, AndreasRG(max_iter=60), no_prune(max_iter=60))


def test_swap_draws_in_integers_are_the_float_draws() -> None:
    """The search compares 53 random bits with threshold_nb(p): exactly draw < p."""
    rng = np.random.default_rng(0)
    for p in [0.45, 0.55, 0.5, 0.0, 1.0, 0.3 + 1e-17, -0.2, 1.3, *rng.random(20)]:
        thr = threshold_nb(p)
        for x in [thr - 1, thr, thr + 1, 0, 2**53 - 1, *rng.integers(0, 2**53, 50)]:
            if 0 <= x < 2**53:
                assert (float(x) / 2.0**53 < p) == (x < thr)


def test_counter_draws_are_uniform_and_independent_of_order() -> None:
    """Draws are a pure function of (seed, iteration, counter), uniform on [0, 1)."""
    key = iter_key_nb(12345, 7)
    u = np.array([draw_nb(key, c) for c in range(20000)])
    assert draw_nb(key, 19999) == u[-1] and draw_nb(iter_key_nb(12345, 7), 3) == u[3]
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.01 and abs(np.mean(u < 0.25) - 0.25) < 0.01
    assert draw_nb(iter_key_nb(12345, 8), 3) != u[3] and draw_nb(iter_key_nb(12346, 7), 3) != u[3]
    # the swap pass over a fixed order: p = 0.5 for equal weights swaps about half the pairs
    order = np.arange(2000)
    swap_pass_nb(order, np.ones(2000), 0.05, key)
    assert sorted(order) == list(range(2000)) and 0.3 < np.mean(order != np.arange(2000)) < 0.9


def fresh_out(args: list) -> list:
    """``args`` with new output arrays (filled with garbage: the kernel must write them)."""
    a = list(args)
    a[-2], a[-1] = np.full_like(args[-2], 99), np.full_like(args[-1], 99)
    return a


@pytest.mark.parametrize("name,kw", [("andreas-sim", {"n_nodes": 6, "gpus": "4/2", "seed": 3}),
                                     ("fitgpp-lab", {"n_jobs": 150, "nodes": 12})])
def test_parallel_chunks_match_the_serial_loop(name: str, kw: dict) -> None:
    """Every decision point of a run: rg_search_par_nb with 1, 2, 3, 7 or more chunks than
    iterations gives rg_search_nb's f_OBJ and plan bit for bit, with and without pruning
    (ties between chunks go to the earlier iteration)."""
    calls = recorded_calls(hetgym.scenarios.get(name, **kw), AndreasRG(max_iter=40, parallel=False))
    assert len(calls) > 10
    for args in calls:
        for prune in (True, False):
            a = fresh_out(args)
            f = rg_search_nb(*a, False, prune)
            for chunks in (1, 2, 3, 7, 100):
                b = fresh_out(args)
                assert rg_search_par_nb(*b, False, prune, chunks) == f
                assert (a[-2] == b[-2]).all() and (a[-1] == b[-1]).all()
        one = fresh_out(args)
        one[-4] = 1  # max_iter = 1: iteration 0 alone, no chunk
        b = fresh_out(one)
        assert rg_search_par_nb(*b, False, True, 2) == rg_search_nb(*one, False, True)
        assert (one[-2] == b[-2]).all() and (one[-1] == b[-1]).all()


@pytest.mark.parametrize("name,kw", [("fitgpp-lab", {"n_jobs": 200, "nodes": 12}),
                                     ("andreas-sim", {"n_nodes": 6, "seed": 4})])
def test_runs_match_with_one_or_two_threads(name: str, kw: dict) -> None:
    """Whole runs job by job: the threaded search with one thread, with two, and the serial
    search (``parallel=False``) give the same schedule."""
    import numba

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("Numba has one thread here (NUMBA_NUM_THREADS)")
    sc = hetgym.scenarios.get(name, **kw)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = AndreasRG(max_iter=100, parallel=True)
        hetgym.simulate(sc, one)  # (compiles)
        numba.set_num_threads(2)
        assert_same_schedule(sc, AndreasRG(max_iter=100, parallel=True), AndreasRG(max_iter=100, parallel=False))
        numba.set_num_threads(1)
        assert_same_schedule(sc, AndreasRG(max_iter=100, parallel=True), AndreasRG(max_iter=100, parallel=False))
    finally:
        numba.set_num_threads(before)


def test_the_kernel_chooser_times_both_kernels_and_keeps_the_schedule() -> None:
    """The default (``parallel=None``): on the chooser's trial calls both kernels run, the
    one not kept on copies; the schedule is the serial search's."""
    import numba

    if numba.get_num_threads() < 2:
        pytest.skip("Numba has one thread here: the chooser is not used")
    ran = []

    class Spied(AndreasRG):
        def _run(self, k: int, args: tuple) -> tuple[float, float]:
            ran.append(k)
            return super()._run(k, args)

    sc = hetgym.scenarios.get("fitgpp-lab", n_jobs=200, nodes=12)
    assert_same_schedule(sc, Spied(max_iter=100), AndreasRG(max_iter=100, parallel=False))
    assert ran.count(0) >= 6 and ran.count(1) >= 6  # a trial of six calls ran both
