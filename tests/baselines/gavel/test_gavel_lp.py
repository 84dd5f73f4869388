"""Gavel's allocation policies as pure functions: the LP examples of docs/gavel.md, and FIFO."""

from __future__ import annotations

import numpy as np
import pytest

from baselines.gavel import lp
from baselines.gavel.fifo import fifo_allocation


def _base_ok(x, sf, n):
    x = np.asarray(x)
    assert (x >= -1e-9).all()
    assert (x.sum(axis=1) <= 1 + 1e-9).all()
    assert (np.asarray(sf) @ x <= np.asarray(n) + 1e-9).all()


def test_g1_las_agnostic_one_type():
    """Agnostic LP example: 2 GPUs; J0 W=1, J1 W=2 -> X = (1.0, 0.5), t = 1.0."""
    T = lp.agnostic(np.array([[3.0], [7.0]]))  # throughputs ignored by the agnostic LAS
    x = lp.las(T, [1, 2], [2])
    assert x[:, 0] == pytest.approx([1.0, 0.5], abs=1e-7)
    t = min(x[0, 0] * 1 / 1.0, x[1, 0] * 2 / 1.0)  # sf_j x_j / P_j with P_j = 1
    assert t == pytest.approx(1.0, abs=1e-7)


def test_g2_las_perf_tie_break():
    """Aware LP tie-break example: P = (2.5, 1.5), t* = 4/3, hetgym's second stage gives X =
    [[1, 0], [0, 1]]."""
    T = np.array([[4.0, 1.0], [1.0, 2.0]])
    n = np.array([1, 1])
    assert lp.proportional_throughput(T, n) == pytest.approx([2.5, 1.5])
    x = lp.las(T, [1, 1], n)
    assert x == pytest.approx(np.array([[1.0, 0.0], [0.0, 1.0]]), abs=1e-7)
    share = (T * x).sum(axis=1) / lp.proportional_throughput(T, n)
    assert share.min() == pytest.approx(4 / 3, rel=1e-7)


def test_las_weights_and_unrunnable_job():
    T = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 0.0]])
    x = lp.las(T, [1, 1, 1], [1, 1], w=[2.0, 1.0, 1.0])
    _base_ok(x, [1, 1, 1], [1, 1])
    assert x[:, 1] == pytest.approx([0, 0, 0])  # no time where T = 0
    assert x[2] == pytest.approx([0, 0])
    # weighted max-min: x0 / 2 = x1 and x0 + x1 = 1
    assert x[0, 0] == pytest.approx(2 / 3, abs=1e-7)
    assert x[1, 0] == pytest.approx(1 / 3, abs=1e-7)


def test_max_throughput_puts_each_job_where_it_gains_most():
    T = np.array([[4.0, 1.0], [1.0, 2.0], [3.0, 2.9]])
    x = lp.max_throughput(T, [1, 1, 1], [1, 1])
    _base_ok(x, [1, 1, 1], [1, 1])
    assert (T * x).sum() == pytest.approx(6.9)  # J0 on type 0 (4) + J2 on type 1 (2.9)
    assert x == pytest.approx(np.array([[1, 0], [0, 0], [0, 1]]), abs=1e-9)


def test_min_makespan_feasible_and_within_bisection_tolerance():
    T = np.array([[2.0, 1.0], [1.0, 1.0]])
    rem = np.array([3600.0, 3600.0])
    x = lp.min_makespan(T, [1, 1], [1, 1], rem)
    _base_ok(x, [1, 1], [1, 1])
    rate = (T * x).sum(axis=1)
    # optimum: J0 on type 0 (2/s), J1 on type 1 (1/s) -> 3600 s; bisection stops within 5 %
    assert (rem / rate).max() <= 3600 * 1.05 + 1e-6
    assert (rem / rate).max() >= 3600 - 1e-6


def test_isolated_throughput_rows():
    T = np.array([[4.0, 1.0], [4.0, 1.0]])
    # x_iso = (n_k/m)/sf = (1/2, 1/2) for sf 1; (1/4, 1/4) for sf 2
    assert lp.isolated_throughput(T, [1, 2], [1, 1]) == pytest.approx([2.5, 1.25])


def test_finish_time_fairness_equalises_ratios():
    T = np.array([[2.0], [2.0]])
    rem = np.array([100.0, 300.0])
    x = lp.finish_time_fairness(T, [1, 1], [1], rem, [0.0, 0.0], [0.0, 0.0])
    _base_ok(x, [1, 1], [1])
    tiso = lp.isolated_throughput(T, [1, 1], [1])  # 1 each
    rho = (rem / (T * x).sum(axis=1)) / (rem / tiso)
    assert rho.max() == pytest.approx(1.0, rel=1e-3)  # each gets its isolated share


def test_lp_rejects_bad_shapes():
    with pytest.raises(ValueError, match="jobs=2, types=1"):
        lp.las(np.ones((2, 2)), [1, 1], [1])


class _Draw:
    """A generator stub whose ``integers(n)`` returns a fixed index (mod n)."""

    def __init__(self, i: int) -> None:
        self.i = i

    def integers(self, n: int) -> int:
        return self.i % n


NAMES = ["k80", "v100"]


def test_fifo_intended_rule_no_overfill():
    T = np.ones((3, 2))
    for draw in (0, 1):
        alloc = fifo_allocation({}, [0, 1, 2], T, np.array([1, 1, 1]), np.array([1, 1]), NAMES,
                                "base", _Draw(draw))
        assert sorted(alloc) == [0, 1] and sorted(alloc.values()) == [0, 1]  # J2 waits


def test_fifo_perf_takes_fastest_with_room():
    T = np.array([[1.0, 4.0], [1.0, 4.0], [1.0, 4.0]])
    alloc = fifo_allocation({}, [0, 1, 2], T, np.array([1, 1, 1]), np.array([1, 1]), NAMES,
                            "perf", _Draw(0))
    assert alloc == {0: 1, 1: 0}


def test_fifo_defect_stale_type_overfills():
    """Gavel's base mode gives every queued job the name-last type (v100) and may
    over-fill it when the drawn type removed from the list is not the assigned one."""
    T = np.ones((3, 2))
    alloc = fifo_allocation({}, [0, 1, 2], T, np.array([1, 1, 1]), np.array([1, 1]), NAMES,
                            "base", _Draw(1), defects=True)
    assert alloc == {0: 1, 1: 1, 2: 1}  # three jobs on one V100
    alloc = fifo_allocation({}, [0, 1, 2], T, np.array([1, 1, 1]), np.array([1, 1]), NAMES,
                            "base", _Draw(0), defects=True)
    assert alloc == {0: 1}  # k80 removed from the list although v100 was filled


def test_fifo_defect_completion_counts_held_gpus_free():
    T = np.ones((3, 2))
    prev = {0: 1, 1: 1}  # J0, J1 on the two V100s; J0 has completed
    sf = np.array([1, 2])
    ok = fifo_allocation(prev, [1, 2], T, sf, np.array([2, 2]), NAMES, "base", _Draw(0))
    assert ok == {1: 1, 2: 0}  # J2 (2 GPUs) only fits the K80s
    bad = fifo_allocation(prev, [1, 2], T, sf, np.array([2, 2]), NAMES, "base", _Draw(0),
                          defects=True)
    assert bad == {1: 1, 2: 1}  # 3 GPUs given out on 2 V100s


def test_g2_interior_point_lies_on_the_optimal_face():
    """Aware LP tie-break example with ``solution="interior"`` (Gavel's default here): an
    optimal point of the face (J1 all on K80, J0 on V100 for 5/6 to 1 of its time), not
    necessarily a vertex."""
    T = np.array([[4.0, 1.0], [1.0, 2.0]])
    x = lp.las(T, [1, 1], [1, 1], solution="interior")
    _base_ok(x, [1, 1], [1, 1])
    assert x[1] == pytest.approx([0.0, 1.0], abs=1e-6)
    assert 5 / 6 - 1e-6 <= x[0, 0] <= 1 + 1e-9 and x[0, 1] == pytest.approx(0.0, abs=1e-6)
    share = (T * x).sum(axis=1) / lp.proportional_throughput(T, [1, 1])
    assert share.min() == pytest.approx(4 / 3, rel=1e-6)
    with pytest.raises(ValueError, match="solution"):
        lp.las(T, [1, 1], [1, 1], solution="center")


@pytest.mark.parametrize("solution", lp.SOLUTIONS)
def test_makespan_and_ftf_both_solutions_feasible(solution):
    T = np.array([[2.0, 1.0], [1.0, 1.0], [3.0, 0.5]])
    rem = np.array([3600.0, 1800.0, 7200.0])
    for x in (lp.min_makespan(T, [1, 1, 1], [1, 1], rem, solution=solution),
              lp.finish_time_fairness(T, [1, 1, 1], [1, 1], rem, [0, 0, 0], [0, 0, 0],
                                      solution=solution)):
        _base_ok(x, [1, 1, 1], [1, 1])
        assert ((T * x).sum(axis=1) > 0).all()
