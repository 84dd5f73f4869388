"""Every registered baseline runs every registered scenario to the end: a small slice of
each scenario (``n_jobs`` where the scenario takes it), no error, not stalled, every job
finished (ES may stall where its static share gives a user no machine, as its
docstring says; checked). The slow variant runs larger slices (where the fitgpp-lab failures of Gavel
and Hadar showed: moves onto cores a later move frees, preemptions past the limit)."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import baselines
import hetgym
from hetgym import scenarios
from hetgym.sim.engine import Simulator

# under pytest-xdist (--dist loadfile) these tests run in one worker, one after the other:
# the first compiles every baseline's kernels and the others load them from Numba's cache
# (two workers running two scenarios at once each compiled all of them, ~300 s of CPU)

#: (scenario, baseline) pairs that do not apply, with the reason (none today)
NOT_APPLICABLE: dict[tuple[str, str], str] = {}


def _expected_stall(name: str, sched, sc, res) -> bool:
    """ES (``baselines.allox.drf.EqualShare``) gives some users no machine at all when users
    outnumber machines; their jobs never start, by its definition (its docstring). Such a
    stall is expected when every unfinished job belongs to a user with a zero quota."""
    quota = getattr(sched, "quota", None)
    if name != "es" or quota is None:
        return False
    left = np.flatnonzero(~res.jobs["finished"].to_numpy())  # rows in job index order
    users = np.asarray(Simulator(sc).view.user)[left]
    return bool(len(users) and (quota[users] == 0).all())


def _slice(name: str, n_jobs: int):
    params = inspect.signature(scenarios._FACTORIES[name]).parameters
    return scenarios.get(name, **({"n_jobs": n_jobs} if "n_jobs" in params else {}))


def _failures(name: str, n_jobs: int) -> list[str]:
    sc = _slice(name, n_jobs)
    bad = []
    for b in baselines.names():
        if (name, b) in NOT_APPLICABLE:
            continue
        sched = baselines.make(b)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = hetgym.simulate(sc, sched)
        except Exception as exc:  # noqa: BLE001 - collect every pair's failure, then report them all
            bad.append(f"{b}: {type(exc).__name__}: {exc}")
            continue
        left = int(res.summary()["unfinished_jobs"])
        if (res.stalled or left) and not _expected_stall(b, sched, sc, res):
            bad.append(f"{b}: stalled={res.stalled}, {left} unfinished jobs")
    return bad


@pytest.mark.parametrize("name", scenarios.names())
def test_every_baseline_runs_a_small_slice(name):
    bad = _failures(name, 30)
    assert not bad, f"{name} (n_jobs=30): " + "; ".join(bad)


@pytest.mark.slow
@pytest.mark.parametrize("name", scenarios.names())
def test_every_baseline_runs_a_larger_slice(name):
    bad = _failures(name, 200)
    assert not bad, f"{name} (n_jobs=200): " + "; ".join(bad)
