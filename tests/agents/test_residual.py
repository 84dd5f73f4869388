"""The gated residual policy (agents.residual): tau = inf is the base's own run; records."""

from __future__ import annotations

import math

import numpy as np
import pytest

import baselines
import hetgym
from agents import residual as R
from agents.common.envtools import EnvConfig, window_rows, window_scenario
from agents.residual.rollouts import _finish
from hetgym import scenarios

CFG = EnvConfig(n_jobs=None, window=8, time_scale=36000.0)


@pytest.fixture(scope="module")
def windows():
    sc = scenarios.get(scenarios.DEFAULT, n_jobs=256, seed=5)
    env = EnvConfig(n_jobs=12).make(sc)
    return [window_scenario(sc, window_rows(env, s)) for s in range(2)]


@pytest.fixture(scope="module")
def records(windows):
    return R.generate(windows[:1], CFG, R.ResidualConfig(), log=lambda *_: None)


def _net(seed: int = 0):
    import torch

    torch.manual_seed(seed)
    env = CFG.make(scenarios.get(scenarios.DEFAULT, n_jobs=12, seed=5))
    return R.AdvantageNet(env.observation_space.shape[0], env.action_space.n, (16,))


@pytest.mark.parametrize("base", ["allox", "sjf"])
def test_tau_inf_is_the_base(windows, base):
    """With tau = inf the residual scheduler's run is the base's run through hetgym.simulate
    (same start time and device for every job), though it visits decision points."""
    cfg = R.ResidualConfig(base=base)
    for w in windows:
        s = R.ResidualScheduler(R.ModelChooser(_net(), math.inf), CFG, cfg)
        got = hetgym.simulate(w, s, seed=0)
        ref = hetgym.simulate(w, baselines.make(base), seed=0)
        assert s.points > 0 and s.deviations == 0
        for col in ("start", "device", "end"):
            assert got.jobs[col].tolist() == ref.jobs[col].tolist(), col
        assert got.summary()["avg_jct"] == ref.summary()["avg_jct"]


def test_records_have_consistent_shapes(records):
    """One row per state; advantages finite exactly on the allowed candidates; the teacher
    is never worse than the base on its window."""
    data, infos = records
    n = len(data["obs"])
    A = data["mask"].shape[1]
    assert n == infos[0]["states"] > 0
    assert data["base"].shape == data["mask"].shape == data["adv"].shape == (n, A)
    assert data["v_base"].shape == data["window"].shape == (n,)
    known = np.isfinite(data["adv"])
    assert known.any(axis=1).all() and not (known & ~data["mask"]).any()
    assert not (known & (data["base"] > 0)).any()  # the base's own starts are no deviations
    assert infos[0]["teacher"] <= infos[0]["base"] * (1 + 1e-12)


def test_values_match_the_run(windows):
    """At the first decision point, the base's value is the base's run, and a deviation's
    value is the run of a scheduler that takes it there and then follows the base."""
    seen = {}

    def chooser(sched, obs, mask, base, cand):
        if "v0" not in seen:
            seen["v0"] = R.base_value(sched.env.sim, sched.base)
            seen["a"] = cand[0]
            seen["q"] = R.deviation_value(sched.env, sched.base, cand[0])
            return -1
        return -1

    w = windows[1]
    hetgym.simulate(w, R.ResidualScheduler(chooser, CFG), seed=0)
    assert seen["v0"] == hetgym.simulate(w, baselines.make("allox")).summary()["avg_jct"]
    first = {"done": False}

    def once(sched, obs, mask, base, cand):
        if not first["done"]:
            first["done"] = True
            return seen["a"]
        return -1

    got = hetgym.simulate(w, R.ResidualScheduler(once, CFG), seed=0).summary()["avg_jct"]
    assert got == pytest.approx(seen["q"], rel=1e-12)


def test_fit_save_load_and_deviate(records, windows, tmp_path):
    """fit trains on the records; a saved model reloads with its tau; with tau = -inf the
    model deviates and the run still finishes every job."""
    data, _ = records
    net, stats = R.fit(data, R.FitConfig(hidden=(16,), epochs=2), log=lambda *_: None)
    assert np.isfinite(stats["train_loss"]) and stats["samples"] == len(data["obs"])
    p = R.save(tmp_path / "r.pt", net, CFG, R.ResidualConfig(), R.FitConfig(hidden=(16,)), -math.inf,
               data["obs"].shape[1], data["adv"].shape[1])
    s = R.load_residual(p)
    assert s.chooser.tau == -math.inf
    res = hetgym.simulate(windows[1], s, seed=0).summary()
    assert s.deviations > 0 and res["unfinished_jobs"] == 0


# ----------------------------------------------------- FitGpp as the base (fitgpp-lab)

FCFG = EnvConfig(n_jobs=None, window=8, preemption=True, run_window=4, time_scale=3600.0)
FIT = R.ResidualConfig(base="fitgpp", preempt=True, metric="te_p95_slowdown",
                       constraint="be_p50_slowdown", penalty=10.0)


@pytest.fixture(scope="module")
def fit_windows():
    import dataclasses

    sc = scenarios.get("fitgpp-lab", n_jobs=256, seed=0, nodes=2)
    sc = dataclasses.replace(sc, objective="slowdown")
    return [window_scenario(sc, np.arange(s, s + 32)) for s in (0, 96)]


def test_tau_inf_is_fitgpp(fit_windows):
    """With FitGpp as the base (preemption actions and the preemption deviation on), tau = inf
    runs FitGpp's schedule exactly, preemptions included."""
    pre = 0
    for w in fit_windows:
        s = R.ResidualScheduler(R.ModelChooser(None, math.inf), FCFG, FIT)
        got = hetgym.simulate(w, s, seed=0)
        ref = hetgym.simulate(w, baselines.make("fitgpp"), seed=0)
        assert s.points > 0 and s.deviations == 0 and s.bound == math.inf
        for col in ("start", "device", "end", "preemptions"):
            assert got.jobs[col].tolist() == ref.jobs[col].tolist(), col
        assert got.summary()["te_p95_slowdown"] == ref.summary()["te_p95_slowdown"]
        pre += int(ref.summary()["preemptions"])
    assert pre > 0  # FitGpp preempted on these windows


def test_value_penalises_the_constraint_over_the_bound():
    """value = metric + penalty x excess of the constraint over the bound; no penalty at or
    under the bound, with no bound, or without a constraint; inf for a non-finite metric."""
    s = {"te_p95_slowdown": 1.5, "be_p50_slowdown": 1.3}
    assert FIT.value(s, 1.25) == pytest.approx(1.5 + 10.0 * 0.05)
    assert FIT.value(s, 1.3) == FIT.value(s, math.inf) == 1.5
    assert R.ResidualConfig(metric="te_p95_slowdown").value(s, 1.0) == 1.5
    assert FIT.value({**s, "te_p95_slowdown": math.nan}, 1.3) == math.inf


def test_fitgpp_teacher_bound_and_preemption_value(fit_windows):
    """The teacher's bound is the constraint in FitGpp's own run of the window; a preemption
    deviation's value is the run that preempts there and then follows FitGpp."""
    w = fit_windows[0]
    ref = hetgym.simulate(w, baselines.make("fitgpp"), seed=0).summary()
    seen = {}

    def chooser(sched, obs, mask, base, cand):
        pre = [a for a in cand if sched.env.decode(a)[0] == "preempt"]
        if pre and "q" not in seen:
            seen["a"] = pre[0]
            seen["q"] = R.deviation_value(sched.env, sched.base, pre[0], sched.value)
        return -1

    chooser.needs_bound = True
    s = R.ResidualScheduler(chooser, FCFG, FIT)
    hetgym.simulate(w, s, seed=0)
    assert s.bound == ref["be_p50_slowdown"]
    assert "q" in seen
    first = {"done": False}

    def once(sched, obs, mask, base, cand):
        if not first["done"] and seen["a"] in cand:
            first["done"] = True
            return seen["a"]
        return -1

    once.needs_bound = True
    s2 = R.ResidualScheduler(once, FCFG, FIT)
    got = hetgym.simulate(w, s2, seed=0).summary()
    assert first["done"] and s2.deviations == 1
    assert s2.value(got) == pytest.approx(seen["q"], rel=1e-12)


def test_fit_config_bounds_and_weights(records):
    """clip_low replaces -clip as the lower clip; pos_weight = 1 with the default clip is the
    plain fit (the same weights as before these options)."""
    assert R.FitConfig(clip=2.0).bounds == (-2.0, 2.0)
    assert R.FitConfig(clip=30.0, clip_low=-2.0).bounds == (-2.0, 30.0)
    data, _ = records
    a, _ = R.fit(data, R.FitConfig(hidden=(8,), epochs=1), log=lambda *_: None)
    b, _ = R.fit(data, R.FitConfig(hidden=(8,), epochs=1, pos_weight=1.0, clip_low=-2.0), log=lambda *_: None)
    c, _ = R.fit(data, R.FitConfig(hidden=(8,), epochs=1, pos_weight=5.0), log=lambda *_: None)
    wa, wb, wc = ([p.detach().numpy().copy() for p in n.parameters()] for n in (a, b, c))
    assert all(np.array_equal(x, y) for x, y in zip(wa, wb))
    assert not all(np.array_equal(x, y) for x, y in zip(wa, wc)) or not (data["adv"] > 0).any()


def test_fit_config_targets_regress_and_classify(records):
    """The default head's targets and weights are the old ones (clipped percent, pos_weight on
    the gains, 0 where no candidate); the classifier's are "gains more than gain_min percent",
    weighted pos_weight x the gain on the positives, and it trains."""
    adv = np.array([[0.05, -0.5, np.nan, 0.004, 0.0]], dtype=np.float32)
    y, w = R.FitConfig(clip=30.0, clip_low=-2.0, pos_weight=5.0).targets(adv)
    np.testing.assert_allclose(y, [[5.0, -2.0, 0.0, 0.4, 0.0]], rtol=1e-6)
    np.testing.assert_allclose(w, [[5.0, 1.0, 0.0, 5.0, 1.0]])
    y, w = R.FitConfig(clip=30.0, clip_low=-2.0, pos_weight=2.0, head="classify", gain_min=1.0).targets(adv)
    np.testing.assert_array_equal(y, [[1.0, 0.0, 0.0, 0.0, 0.0]])
    np.testing.assert_allclose(w, [[10.0, 1.0, 0.0, 1.0, 1.0]], rtol=1e-6)
    with pytest.raises(ValueError):
        R.FitConfig(head="rank")
    data, _ = records
    net, stats = R.fit(data, R.FitConfig(hidden=(8,), epochs=1, head="classify"), log=lambda *_: None)
    reg, _ = R.fit(data, R.FitConfig(hidden=(8,), epochs=1), log=lambda *_: None)
    assert np.isfinite(stats["train_loss"])
    assert not all(np.array_equal(a.detach().numpy(), b.detach().numpy())
                   for a, b in zip(net.parameters(), reg.parameters()))


def test_cv_folds_are_grouped_by_window():
    """Cross-validation folds: contiguous blocks of windows; a fold's training states are
    exactly those of the other blocks; every `every`-th window of the block is held back."""
    from scripts.residual import cv_folds, pd_concat_inf

    ids = np.repeat(np.arange(8), 3)
    folds = cv_folds(ids, 8, 4, every=1)
    assert [h for _, h in folds] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    for mask, held in folds:
        assert set(ids[mask]).isdisjoint(held) and set(ids[~mask]) == set(held)
    assert [h for _, h in cv_folds(ids, 8, 2, every=2)] == [[0, 2], [4, 6]]
    import pandas as pd

    runs = pd.DataFrame({"scheduler": ["fitgpp", "tau=1.0"], "x": [1.0, 2.0]})
    assert list(pd_concat_inf(runs, "fitgpp", [math.inf, 1.0]).scheduler) == ["fitgpp", "tau=1.0", "tau=inf"]
    assert len(pd_concat_inf(runs, "fitgpp", [1.0])) == 2


def test_spread_order_prefixes_cover_the_range():
    """Bit-reversed order: a permutation, and every prefix of length 2^k has one window in each
    of 2^k equal blocks (a data stage cut by its time budget still covers the train rows)."""
    from scripts.residual import spread_order

    for n in (1, 2, 5, 8, 13, 64):
        order = spread_order(n)
        assert sorted(order) == list(range(n))
    order = spread_order(64)
    for k in (1, 2, 4, 8, 16):
        assert sorted(i * k // 64 for i in order[:k]) == list(range(k))
    with pytest.raises(ValueError, match="window_order"):
        from types import SimpleNamespace

        from scripts.residual import train_windows
        train_windows(SimpleNamespace(base=None, bounds=(0, 100)), 10, 4, None, "random")


def test_train_windows_lazy_and_ordered(windows):
    """train_windows builds each window when indexed; "spread" permutes the same starts; a slice
    stays lazy and keeps the order; window i is window_scenario of its rows."""
    from types import SimpleNamespace

    from scripts.residual import LazyWindows, spread_order, train_windows

    sc = scenarios.get(scenarios.DEFAULT, n_jobs=256, seed=5)
    sp = SimpleNamespace(base=sc, bounds=(0, 200))
    rows = train_windows(sp, 12, 8, None)
    spread = train_windows(sp, 12, 8, None, "spread")
    assert isinstance(rows, LazyWindows) and len(rows) == 8
    assert spread.starts.tolist() == rows.starts[spread_order(8)].tolist()
    assert train_windows(sp, 12, 8, 3, "spread").starts.tolist() == spread.starts[:3].tolist()
    assert isinstance(spread[2:5], LazyWindows) and spread[2:5].starts.tolist() == spread.starts[2:5].tolist()
    s = int(spread.starts[1])
    got = hetgym.simulate(spread[1], baselines.make("fifo"), seed=0).jobs
    ref = hetgym.simulate(window_scenario(sc, np.arange(s, s + 12)), baselines.make("fifo"), seed=0).jobs
    assert got["end"].tolist() == ref["end"].tolist()


def test_generate_workers_and_time_budget_keep_a_prefix(windows, records):
    """Windows in worker processes give the serial records; a time budget keeps the finished
    prefix of the windows (here only window 0, run before the workers start)."""
    cfg = R.ResidualConfig()
    serial, s_info = R.generate(windows, CFG, cfg, log=lambda *_: None)
    par, p_info = R.generate(windows, CFG, cfg, workers=2, log=lambda *_: None)
    assert [i["teacher"] for i in s_info] == [i["teacher"] for i in p_info]
    for k in serial:
        np.testing.assert_array_equal(serial[k], par[k], err_msg=k)
    msgs: list[str] = []
    cut, c_info = R.generate(windows, CFG, cfg, workers=2, time_budget_s=0.0, log=msgs.append)
    assert len(c_info) == 1 and any("1 of 2 windows kept" in m for m in msgs)
    for k in records[0]:
        np.testing.assert_array_equal(cut[k], records[0][k], err_msg=k)


def test_myopic_rollouts_see_only_arrived_jobs(windows):
    """A myopic copy finishes exactly the jobs arrived so far (its metric is theirs) and leaves
    the simulator's own arrivals alone; the full rollout also runs the later arrivals."""
    from agents.imitation.rollout import finish_sim
    from hetgym.sim.engine import Simulator

    sim = Simulator(windows[0], seed=0)
    b = baselines.make("allox")
    b.reset(sim.view)
    while sim.next_arrival < 3 and sim.advance():
        if sim.n_queue:
            sim.apply(b.decide(sim.view) or [])
    arr, na = sim.jobs.arrival.copy(), sim.next_arrival
    assert 0 < na < sim.n_jobs
    s, bb = R.copy_sim(sim, b, myopic=True)
    summ = finish_sim(s, bb)
    assert s.n_done == na and summ["avg_jct"] == R.base_value(sim, b, "avg_jct", myopic=True)
    full, fb = R.copy_sim(sim, b)
    finish_sim(full, fb)
    assert full.n_done == sim.n_jobs
    np.testing.assert_array_equal(sim.jobs.arrival, arr)
    assert R.base_summary(sim, b, myopic=True)["avg_jct"] == summ["avg_jct"]


def test_a_rollout_that_leaves_jobs_has_no_value(windows):
    """A myopic "wait" when nothing runs and every arrived job waits leaves those jobs for
    ever: its value is inf, not the metric of the jobs that did finish."""
    from hetgym.sim.engine import Simulator

    sim = Simulator(windows[0], seed=0)
    b = baselines.make("allox")
    b.reset(sim.view)
    assert sim.advance() and sim.n_queue and not sim.n_running  # the first arrival, nothing runs
    assert _finish(*R.copy_sim(sim, b, myopic=True), "avg_jct", False) == math.inf
    assert math.isfinite(_finish(*R.copy_sim(sim, b, myopic=True), "avg_jct", True))


def test_myopic_teacher_with_a_constraint_bounds_by_the_base_over_the_same_jobs(fit_windows):
    """With a constraint, a myopic state's base value is the base's myopic run valued with
    that run's own constraint as the bound (so the base has no penalty), and every
    candidate's advantage is against it."""
    import dataclasses

    cfg = dataclasses.replace(FIT, myopic=True)
    seen = []
    ch = R.RolloutChooser("base")

    def chooser(sched, obs, mask, base, cand):
        a = ch(sched, obs, mask, base, cand)
        if len(seen) < 3 and cand:
            s0 = R.base_summary(sched.env.sim, sched.base, myopic=True)
            if s0 is not None and math.isfinite(s0[cfg.metric]):
                seen.append((ch.rows["v_base"][-1], s0[cfg.metric]))
        return a

    chooser.needs_bound = True
    s = R.ResidualScheduler(chooser, FCFG, cfg)
    got = hetgym.simulate(fit_windows[0], s, seed=0)
    ref = hetgym.simulate(fit_windows[0], baselines.make("fitgpp"), seed=0)
    assert got.jobs["end"].tolist() == ref.jobs["end"].tolist()  # act="base": FitGpp's run
    assert seen and all(v == m for v, m in seen)
