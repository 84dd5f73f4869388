"""Every registered baseline runs every registered scenario to the end: a small slice of
each scenario (``n_jobs`` where the scenario takes it), no error, not stalled, every job
finished. The slow variant runs larger slices (where the fitgpp-lab failures of Gavel
and Hadar showed: moves onto cores a later move frees, preemptions past the limit)."""

from __future__ import annotations

import inspect
import warnings

import pytest

import baselines
import hetgym
from hetgym import scenarios

#: (scenario, baseline) pairs that do not apply, with the reason (none today)
NOT_APPLICABLE: dict[tuple[str, str], str] = {}


def _slice(name: str, n_jobs: int):
    params = inspect.signature(scenarios._FACTORIES[name]).parameters
    return scenarios.get(name, **({"n_jobs": n_jobs} if "n_jobs" in params else {}))


def _failures(name: str, n_jobs: int) -> list[str]:
    sc = _slice(name, n_jobs)
    bad = []
    for b in baselines.names():
        if (name, b) in NOT_APPLICABLE:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = hetgym.simulate(sc, baselines.make(b))
        except Exception as exc:  # collect every pair's failure, then report them all
            bad.append(f"{b}: {type(exc).__name__}: {exc}")
            continue
        left = int(res.summary()["unfinished_jobs"])
        if res.stalled or left:
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
