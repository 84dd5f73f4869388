"""Controlled-load arrivals (``hetgym.traces.controlled``): FitGpp's "load kept at 2.0 under FIFO"."""

from __future__ import annotations

import numpy as np
import pytest

import hetgym
from baselines.fitgpp.schedulers import NodeLocalFIFO
from hetgym.traces.controlled import dominant_shares


@pytest.fixture(scope="module")
def lab():
    return hetgym.scenarios.get("fitgpp-lab", n_jobs=400, seed=3, nodes=6)


def _in_system(res, share: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Demand (sum of dominant shares) of the jobs in the system just after each time."""
    a = res.jobs["arrival"].to_numpy()
    e = res.jobs["end"].to_numpy()
    return np.array([share[(a <= t) & (e > t)].sum() for t in times])


def test_fifo_keeps_the_load_in_the_system_at_the_target(lab) -> None:
    res = hetgym.simulate(lab, NodeLocalFIFO(), seed=0)
    assert res.jobs["finished"].all()
    share = dominant_shares(lab.workload.frame, lab)
    last = float(res.jobs["arrival"].max())
    # every event instant before the last submission: demand in the system >= 2.0 (jobs are
    # submitted until it is), and below 2.0 + the largest single share
    times = np.unique(np.concatenate([res.jobs["arrival"], res.jobs["end"]]))
    times = times[times < last]
    load = _in_system(res, share, times)
    assert load.min() >= 2.0 - 1e-9
    assert load.max() < 2.0 + share.max() + 1e-9
    # arrivals are spread over time (a closed loop), not all at once
    assert 0 < (res.jobs["arrival"] == 0).sum() < len(share) / 4


def test_the_internal_fifo_is_the_registered_one_node_fifo(lab) -> None:
    """The arrival process was computed with FIFO: replayed with ``NodeLocalFIFO`` the
    demand tracks exactly, so each job's arrival is a completion (or 0)."""
    res = hetgym.simulate(lab, NodeLocalFIFO(), seed=0)
    ends = set(res.jobs["end"].round(9).tolist()) | {0.0}
    assert set(res.jobs["arrival"].round(9).tolist()) <= ends


def test_open_arrivals_remain_available_and_differ(lab) -> None:
    op = hetgym.scenarios.get("fitgpp-lab", n_jobs=400, seed=3, nodes=6, arrivals="open")
    a_open = op.workload.frame["arrival"].to_numpy()
    a_ctl = lab.workload.frame["arrival"].to_numpy()
    assert not np.allclose(a_open, a_ctl)
    # same jobs in the same order
    cols = ["workers", "job_class", "duration"] if "duration" in op.workload.frame else ["workers", "job_class"]
    for c in cols:
        assert op.workload.frame[c].tolist() == lab.workload.frame[c].tolist()
    with pytest.raises(ValueError, match="arrivals must be"):
        hetgym.scenarios.get("fitgpp-lab", n_jobs=10, arrivals="closed")


def test_same_arguments_same_arrivals() -> None:
    a = hetgym.scenarios.get("fitgpp-lab", n_jobs=120, seed=1, nodes=4).workload.frame["arrival"]
    from hetgym.presets import fitgpp

    fitgpp._ARRIVALS.clear()
    b = hetgym.scenarios.get("fitgpp-lab", n_jobs=120, seed=1, nodes=4).workload.frame["arrival"]
    assert a.tolist() == b.tolist()
