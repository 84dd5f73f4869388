"""Tiresias' compiled walk (baselines/tiresias/kernels.py): every kernel answer checked
against the Python it stands for, at every call, and whole runs compared with the walk
tried job by job (``compiled=False``) and the walk as first written (``_walk_plain``)."""

from __future__ import annotations

import numpy as np
import pytest

import hetgym
from baselines.classic.schedulers import _free_in
from baselines.gavel.place import current
from baselines.tiresias.schedulers import Tiresias
from tests.baselines.test_fast_paths import assert_same_schedule, workload
from tests.baselines.test_speed_paths import PlainTiresias

# Slow (Tiresias kernels against the Python walk): run with -m slow.
pytestmark = pytest.mark.slow


class CheckedTiresias(Tiresias):
    """Tiresias whose kernels are checked at every call on a copy of the scratch plan:
    ``skip(i) = k``: every waiting job in ``[i, k)`` finds no room on any of its types,
    and the job at ``k``, if waiting, does; ``keep_run``: the same jobs kept and the
    same free capacity (bit for bit) as ``_free_in`` and ``take`` one by one."""

    def reset(self, view) -> None:
        super().reset(view)
        self.skipped = self.kept_checked = 0

    def _skipper(self, view, plan, key, waiting):
        skip = super()._skipper(view, plan, key, waiting)
        if skip is None:
            return None

        def checked(i: int) -> int:
            k = skip(i)
            for p in range(i, min(k + 1, len(key))):
                if not waiting[p]:
                    assert p == k
                    break
                j = int(key[p])
                room = any(plan.copy().place(j, d) is not None
                           for d in self.devices.candidates(view, j))
                assert room == (p == k), (p, k, j)
                self.skipped += p < k
            return k
        return checked

    def _keeper(self, view, plan, key, waiting):
        keep_run = super()._keeper(view, plan, key, waiting)

        def checked(i: int, kept: np.ndarray) -> int:
            ref = plan.copy()
            end = next((p for p in range(i, len(key)) if waiting[p]), len(key))
            want = []
            for p in range(i, end):
                j = int(key[p])
                where = current(view, j)
                if _free_in(ref, view, j, *where):
                    ref.take(j, *where)
                    want.append(p - i)
            e = keep_run(i, kept)
            assert e == end
            assert np.flatnonzero(kept[i:e]).tolist() == want
            for a, b in zip(plan.ns, ref.ns):
                assert np.array_equal(a, b)
            self.kept_checked += e - i
            return e
        return checked


SCENARIOS = [("fitgpp-lab", {"n_jobs": 256}), ("hadar-sim", {}), ("synthetic-hybrid", {}),
             ("hetero-small", {"n_jobs": 80})]


@pytest.mark.parametrize(("scen", "kw"), [("fitgpp-lab", {"n_jobs": 512}), ("hadar-sim", {}),
                                         ("hetero-small", {"n_jobs": 80})])
def test_kernels_answer_as_python_at_every_call(scen: str, kw: dict) -> None:
    """Both kernels checked at every call; both had work (waiting jobs passed over,
    running jobs met after a placement)."""
    t = CheckedTiresias.make()
    hetgym.simulate(hetgym.scenarios.get(scen, **kw), t)
    assert t.skipped > 0 and t.kept_checked > 0


@pytest.mark.parametrize("order", ["random", "cluster"])
@pytest.mark.parametrize(("scen", "kw"), SCENARIOS)
def test_compiled_walk_same_schedule(scen: str, kw: dict, order: str) -> None:
    sc = hetgym.scenarios.get(scen, **kw)
    slow = Tiresias.make(order=order)
    slow.compiled = False
    assert_same_schedule(sc, Tiresias.make(order=order), slow)
    assert_same_schedule(sc, Tiresias.make(order=order), PlainTiresias.make(order=order))


@pytest.mark.parametrize("seed", range(3))
def test_compiled_walk_with_grace_limits_and_cpu_nodes(seed: int) -> None:
    """Grace periods, a preemption limit, CPU nodes, cores and memory not all integers."""
    sc = workload(seed, 120, 100.0, grace=True, cpu_nodes=True, halves=True)
    t = CheckedTiresias.make()
    slow = Tiresias.make()
    slow.compiled = False
    assert_same_schedule(sc, t, slow)
