"""SRPT's compiled decision point (``baselines.classic.srpt_kernels``): its heaps, and runs that
grow its start arrays, against the plain ranking of every job (``PlainSRPT``)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import baselines
from baselines.classic.schedulers import SRPT
from baselines.classic.srpt_arrays import heap_pop_nb, heap_push_nb
from baselines.classic.srpt_plan import SRPTPlan
from tests.baselines.test_fast_paths import PlainSRPT, assert_same_schedule, workload


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**20), n=st.integers(1, 200))
def test_heaps_give_jobs_in_key_tie_order(seed, n) -> None:
    """Pushes and pops in random order: every pop is the least ``(key, tie)`` left."""
    rng = np.random.default_rng(seed)
    key = rng.choice([0.0, 1.0, 2.5, np.inf], n)  # many equal keys: ties decide
    tie = rng.permutation(n) - n // 2
    base = 3
    heap = np.full(n + base, -7, dtype=np.int64)
    inside: set[int] = set()
    size = 0
    for j in rng.permutation(n).tolist():
        heap_push_nb(heap, base, size, j, key, tie)
        size += 1
        inside.add(j)
        if rng.random() < 0.3:
            top = int(heap_pop_nb(heap, base, size, key, tie))
            size -= 1
            assert top == min(inside, key=lambda i: (key[i], tie[i]))
            inside.remove(top)
    out = []
    while size:
        out.append(int(heap_pop_nb(heap, base, size, key, tie)))
        size -= 1
    assert out == sorted(inside, key=lambda i: (key[i], tie[i]))
    assert (heap[:base] == -7).all()  # the heap stays in its slice


def test_many_starts_at_once_grow_the_start_arrays(monkeypatch) -> None:
    """A decision point that starts more jobs than the start arrays hold makes its plan
    again with longer ones (arrays of one row at first here)."""
    monkeypatch.setattr(SRPTPlan, "first_rows", 1)
    sc = workload(7, 120, 0.0, grace=True, cpu_nodes=True)
    fast = baselines.make("srpt")
    assert_same_schedule(sc, fast, PlainSRPT(False))
    assert fast._groups is not None and len(fast._groups.job) > 4


def test_decide_gives_the_plan_as_decisions() -> None:
    """``decide`` (the plan as decision objects, applied one by one by the runner) and
    ``decide_and_apply`` (planned and applied in one compiled call) run alike."""
    sc = workload(9, 100, 100.0, grace=True, cpu_nodes=False)

    class DecideOnly:
        round_length = None

        def __init__(self) -> None:
            self.inner = SRPT()

        def reset(self, view) -> None:
            self.inner.reset(view)

        def decide(self, view):
            return self.inner.decide(view)

    one_by_one = DecideOnly()
    assert_same_schedule(sc, one_by_one, PlainSRPT(False))
    assert one_by_one.inner._groups is not None  # the fast path stayed on
