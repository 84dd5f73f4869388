"""Sampled futures for the rollout teacher (agents.residual.futures, ResidualConfig.futures)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import baselines
import hetgym
from agents import residual as R
from agents.residual import futures as F
from agents.common.envtools import EnvConfig, window_scenario
from hetgym import scenarios
from hetgym.sim.engine import Simulator
from hetgym.sim.state.jobs import build_jobs

FCFG = EnvConfig(n_jobs=None, window=8, preemption=True, run_window=4, time_scale=3600.0)
TE = R.ResidualConfig(base="fitgpp", metric="te_p95_slowdown")  # no constraint: the window's bound plays no part
FIT = R.ResidualConfig(base="fitgpp", metric="te_p95_slowdown", constraint="be_p50_slowdown", penalty=10.0)


@pytest.fixture(scope="module")
def lab():
    sc = scenarios.get("fitgpp-lab", n_jobs=256, seed=0, nodes=2)
    sc = dataclasses.replace(sc, objective="slowdown")
    return sc, window_scenario(sc, np.arange(96, 128))


class RealFuture(F.FutureSource):
    """The window's own jobs, the block always its real future (the clairvoyant copy)."""

    def draw(self, sim, rng):
        return sim.next_arrival


def _arrays(sim: Simulator) -> dict[str, np.ndarray]:
    out = {}
    for part in (sim.params.jobs, sim.state.job, sim.state.node, sim.state.run):
        for name, a in part._asdict().items():
            out[f"{type(part).__name__}.{name}"] = np.array(a, copy=True)
    return out


def _midway(window, n: int = 8) -> tuple[Simulator, object]:
    """A simulator of ``window`` run by FitGpp until ``n`` jobs have arrived, and its FitGpp."""
    sim = Simulator(window, seed=0)
    b = baselines.make("fitgpp")
    b.reset(sim.view)
    while sim.next_arrival < n and sim.advance():
        if sim.n_queue:
            sim.apply(b.decide(sim.view) or [])
    assert 0 < sim.next_arrival < sim.n_jobs
    return sim, b


def _run(window, cfg, source=None):
    ch = R.RolloutChooser("teacher", source=source)
    s = R.ResidualScheduler(ch, FCFG, cfg)
    res = hetgym.simulate(window, s, seed=0).summary()
    return res, {k: np.asarray(v) for k, v in ch.rows.items()}, s


def test_one_real_future_is_the_clairvoyant_teacher(lab):
    """K = 1 with the window's real future as the sample gives the clairvoyant teacher's
    labels and run exactly (the fill rewrites the future slots with the same values)."""
    _, w = lab
    ref, ref_rows, _ = _run(w, TE)
    src = RealFuture.from_scenario(w)
    got, rows, s = _run(w, dataclasses.replace(TE, futures=1), src)
    timing = ("decision_time_p50", "decision_time_p99")  # wall clock
    assert s.deviations > 0 and {k: v for k, v in got.items() if k not in timing} == \
        {k: v for k, v in ref.items() if k not in timing}
    for k in ref_rows:
        np.testing.assert_array_equal(rows[k], ref_rows[k], err_msg=k)


def test_a_sampled_future_is_the_source_block_after_now(lab):
    """A fill puts the source rows in every job array of the copy's future slots (arrival
    and deadline shifted together, remaining = work), keeps the past, and starts the block
    after now with the source's gaps; the copy then runs all its jobs."""
    from agents.imitation.rollout import finish_sim

    sc, w = lab
    sim, b = _midway(w)
    src = F.FutureSource.from_scenario(sc, np.arange(0, 96))
    m, n = sim.next_arrival, sim.n_jobs - sim.next_arrival
    start = src.draw(sim, F.future_rng(0, 1, 2, 3))
    s, bb = R.copy_sim(sim, b, fill=lambda c: src.fill(c, start))
    rows = np.arange(start, start + n)
    for f in F.JOB_FIELDS:
        np.testing.assert_array_equal(getattr(s.jobs, f)[m:], getattr(src.jobs, f)[rows], err_msg=f)
        np.testing.assert_array_equal(getattr(s.jobs, f)[:m], getattr(sim.jobs, f)[:m], err_msg=f)
    np.testing.assert_array_equal(s.js.remaining[m:], src.jobs.work[rows])
    arr = s.jobs.arrival
    np.testing.assert_array_equal(arr[:m], sim.jobs.arrival[:m])
    assert arr[m] > sim.now and arr[m] - arr[m - 1] == pytest.approx(src.jobs.arrival[start] - src.jobs.arrival[start - 1])
    np.testing.assert_allclose(np.diff(arr[m:]), np.diff(src.jobs.arrival[rows]), rtol=0, atol=1e-6)
    assert (s.jobs.job_id == sim.jobs.job_id).all()
    finish_sim(s, bb)
    assert s.n_done == sim.n_jobs
    assert not np.array_equal(s.jobs.work, sim.jobs.work)


def test_the_real_simulator_is_untouched(lab):
    """Futures are written into copies only, also when a drawn job has more workers than
    the window's arrays hold (the copy's are widened)."""
    sc, _ = lab
    w = window_scenario(sc, np.arange(160, 192))  # at most 5 workers a job; the source's 0-159 up to 7
    sim, b = _midway(w)
    src = F.FutureSource.from_scenario(sc, np.arange(0, 160))
    wide = int(sim.state.job.worker_node.shape[1])
    big = np.flatnonzero(src.jobs.workers > wide)
    assert len(big), "the source should hold a job wider than the window's arrays"
    start = int(big[0])  # a block that starts with it
    before = _arrays(sim)
    s, bb = R.copy_sim(sim, b, fill=lambda c: src.fill(c, start))
    assert s.js.worker_node.shape[1] > wide and sim.js.worker_node.shape[1] == wide
    from agents.imitation.rollout import finish_sim

    finish_sim(s, bb)
    assert s.n_done == sim.n_jobs and int(s.js.nworkers.max()) > wide  # the wide job ran
    ch = R.RolloutChooser("base", source=src)
    cfg = dataclasses.replace(FIT, futures=3)
    st = R.ResidualScheduler(ch, FCFG, cfg)
    hetgym.simulate(w, st, seed=0)
    after = _arrays(sim)
    for k in before:
        np.testing.assert_array_equal(after[k], before[k], err_msg=k)


def test_same_seed_same_labels_and_common_futures(lab):
    """The same (seed, window, decision point) gives the same labels; another seed other
    labels; the base and every candidate of a decision point see the same K futures."""
    sc, w = lab
    src = F.FutureSource.from_scenario(sc, np.arange(0, 96))
    seen: list[tuple[int, int]] = []

    class Logged(F.FutureSource):
        def fill(self, sim, start):
            seen.append((len(ch.rows["obs"]), start))
            super().fill(sim, start)

    cfg = dataclasses.replace(FIT, futures=2)
    a = _run(w, cfg, src)
    ch = R.RolloutChooser("teacher", source=Logged(src.jobs, src.type_names))
    s = R.ResidualScheduler(ch, FCFG, cfg)
    hetgym.simulate(w, s, seed=0)
    for k in a[1]:
        np.testing.assert_array_equal(np.asarray(ch.rows[k]), a[1][k], err_msg=k)
    # per decision point: 2 futures x (1 + candidates) fills, each future's start repeated
    by_point: dict[int, list[int]] = {}
    for p, start in seen:
        by_point.setdefault(p, []).append(start)
    for p, starts in by_point.items():
        k = len(starts) // 2
        assert len(starts) == 2 * k and starts == [starts[0]] * k + [starts[k]] * k
    other = _run(w, dataclasses.replace(cfg, futures_seed=1), src)
    assert not np.array_equal(np.nan_to_num(other[1]["adv"]), np.nan_to_num(a[1]["adv"])) or \
        len(other[1]["adv"]) != len(a[1]["adv"])


def test_futures_config_checks():
    with pytest.raises(ValueError):
        R.ResidualConfig(futures=2, myopic=True)
    with pytest.raises(ValueError):
        R.ResidualConfig(futures=-1)
    assert F.future_rng(0, 1, 2, 3).integers(1 << 30) == F.future_rng(0, 1, 2, 3).integers(1 << 30)


def test_family_source_holds_the_training_rows_only(monkeypatch):
    """family_source draws from the split's training rows [0, a) of its base workload."""
    import agents.evaluation.heldout as H

    sc = scenarios.get("fitgpp-lab", n_jobs=256, seed=0, nodes=2)

    class Sp:
        base, bounds = sc, (0, 100, 150, 256)

    monkeypatch.setattr(H, "split", lambda family, window_jobs=64: Sp)
    F.family_source.cache_clear()
    try:
        src = F.family_source("x")
        full = build_jobs(sc)
        assert len(src) == 100
        np.testing.assert_array_equal(src.jobs.job_id, full.job_id[:100])
    finally:
        F.family_source.cache_clear()
