"""The batched env's compiled episode reset (hetgym.envs.refill), its lazily computed
``episode_metrics`` (hetgym.envs.lazy_metrics) and its kernel choice (hetgym.autopar)."""

from __future__ import annotations

import copy
import pickle

import gymnasium as gym
import numpy as np
import pytest

import hetgym  # noqa: F401  (registers the env)
from hetgym.autopar import KernelChooser
from hetgym.envs.batched import HetClusterVecEnv
from hetgym.envs.refill import Refiller
from hetgym.metrics import summarize
from hetgym.sim.engine import Simulator
from hetgym.sim.state.jobs import best_durations

# scratch arrays of new_state (zero-filled, so that reset_window refills deterministically): content means nothing
SCRATCH = {"running", "out_done", "out_grace", "out_node", "out_gpu", "qtmp"}


def _named(tup, prefix=""):
    for name, x in zip(tup._fields, tup):
        if isinstance(x, tuple):
            yield from _named(x, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", x


def _assert_same_sim(a: Simulator, b: Simulator) -> None:
    for (name, x), (name_b, y) in zip(_named(a.params), _named(b.params)):
        assert name == name_b
        np.testing.assert_array_equal(x, y, err_msg=name)
    for (name, x), (_, y) in zip(_named(a.state), _named(b.state)):
        if name.split(".")[-1] not in SCRATCH:
            assert x.shape == y.shape, name
            assert x.tobytes() == y.tobytes(), name  # bit for bit (NaN, -0.0 included)
    assert (a.seed, a.decision_points, a.stalled) == (b.seed, b.decision_points, b.stalled)
    np.testing.assert_array_equal(a.rows, b.rows)
    assert a.rng.bit_generator.state == b.rng.bit_generator.state
    assert len(a.last_done) == len(b.last_done) == 0
    va, vb = a.view, b.view  # built on first use: the View of reset_window
    assert va.rng is a.rng and va.now == vb.now
    for name in ("arrival", "status", "free_gpus", "worker_node"):
        np.testing.assert_array_equal(getattr(va, name), getattr(vb, name))
    np.testing.assert_array_equal(va.job_type_id, vb.job_type_id)
    assert type(a.view) is type(vb)  # put in its place


@pytest.mark.parametrize("kwargs", [
    {"n_jobs": 10, "window": 6},  # windows of the default scenario with gangs of 1, 2 or 4
    {"n_jobs": 64},
    {"scenario": "fitgpp-lab", "scenario_kwargs": {"n_jobs": 256}, "n_jobs": 16,
     "preemption": True},
])
def test_refill_gives_the_arrays_of_reset_window(kwargs: dict) -> None:
    """After some steps, the compiled refill leaves the simulator as ``reset_window`` leaves
    a copy of it (same shapes, so that one refills too)."""
    env = gym.make("HetCluster-v0", **kwargs).unwrapped
    env.reset(seed=1)
    refiller = Refiller(env.scenario, env.n_jobs)
    rng = np.random.default_rng(0)
    refilled = 0
    for k in range(40):
        for _ in range(int(rng.integers(0, 30))):  # dirty the state
            *_, te, tr, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
            if te or tr:
                break
        rows = env.windows.draw(rng)
        seed = int(rng.integers(1 << 30))
        if k % 7 == 3:  # a grown segment log is filled, not copied
            env.sim.grow_segments()
        ref = copy.deepcopy(env.sim)
        if not refiller.reset(env.sim, rows, seed, env._ep.inv_best, env._es.rew):
            assert not refiller.fits(env.sim, int(rows[0]))
            env.start_episode(rows, seed)
            continue
        refilled += 1
        assert ref.reset_window(rows, seed)
        _assert_same_sim(env.sim, ref)
        np.testing.assert_array_equal(env._ep.inv_best, 1.0 / best_durations(ref.jobs))
        assert not env._es.rew.any()
        env.steps, env._stuck, env._ended_episode = 0, False, False
        env._advance_until_decision(force=True)
    assert refilled >= 10


def test_refill_declines_a_window_of_other_shapes() -> None:
    env = gym.make("HetCluster-v0", n_jobs=10, window=6).unwrapped
    env.reset(seed=0)
    refiller = Refiller(env.scenario, env.n_jobs)
    wmax = refiller.source.wmax
    here = env.sim.state.run.out_node.shape[0]
    other = int(np.flatnonzero(wmax != here)[0])
    before = [a.copy() for a in env.sim.state.job]
    assert not refiller.reset(env.sim, np.arange(other, other + 10), 5, env._ep.inv_best,
                              env._es.rew)
    for a, b in zip(env.sim.state.job, before):
        np.testing.assert_array_equal(a, b)  # nothing changed


def test_batched_env_refills_its_simulators() -> None:
    vec = HetClusterVecEnv(num_envs=2, n_jobs=64)
    vec.reset(seed=0)
    sims = {id(e.sim) for e in vec.envs}
    rng = np.random.default_rng(0)
    ends = 0
    for _ in range(400):
        m = vec.action_masks()
        *_, term, trunc, _ = vec.step((rng.random(m.shape) * m).argmax(axis=1))
        ends += int((term | trunc).sum())
        sims |= {id(e.sim) for e in vec.envs}
    assert ends >= 4
    assert len(sims) <= 4  # two simulators per sub-env at most: refilled, never rebuilt


@pytest.mark.parametrize("mode", ["next_step", "same_step"])
def test_episode_metrics_read_late_equal_the_single_envs(mode: str) -> None:
    """Metrics kept unread over many episodes give the single envs' values when read."""
    n, kw = 3, {"n_jobs": 10, "window": 6}
    vec = HetClusterVecEnv(num_envs=n, autoreset_mode=mode, **kw)
    singles = [gym.make("HetCluster-v0", **kw).unwrapped for _ in range(n)]
    vec.reset(seed=4)
    for i, e in enumerate(singles):
        e.reset(seed=4 + i)
    kept: list[list] = [[] for _ in range(n)]
    want: list[list] = [[] for _ in range(n)]
    pending = [False] * n
    rng = np.random.default_rng(1)
    for _ in range(150):
        masks = vec.action_masks()
        acts = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        *_, info = vec.step(acts)
        for i, e in enumerate(singles):
            if pending[i]:
                e.reset()
                pending[i] = False
                continue
            *_, te, tr, inf = e.step(int(acts[i]))
            if te or tr:
                want[i].append(inf["episode_metrics"])
                got = (info["final_info"][i] if mode == "same_step" else info)["episode_metrics"]
                kept[i].append(got if mode == "same_step" else got[i])
                if mode == "same_step":
                    e.reset()
                else:
                    pending[i] = True
    assert sum(len(k) for k in kept) >= 6
    for k, w in zip(kept, want):
        assert len(k) == len(w)
        for m, x in zip(k, w):
            assert dict(m) == pytest.approx(x, nan_ok=True)


def test_episode_metrics_mapping_and_pickle() -> None:
    env = gym.make("HetCluster-v0", n_jobs=8, window=4).unwrapped
    env.reset(seed=0)
    while True:
        *_, te, tr, inf = env.step(int(np.flatnonzero(env.action_masks())[0]))
        if te or tr:
            break
    from hetgym.envs.lazy_metrics import MetricsLedger

    ledger = MetricsLedger()
    m = ledger.issue(env.sim)
    assert ledger.held(env.sim) and not m.computed
    ledger.release(env.sim)  # computed before the simulator would be reused
    assert m.computed and not ledger.held(env.sim)
    assert dict(m) == pytest.approx(summarize(env.sim), nan_ok=True)
    assert m["avg_jct"] == pytest.approx(inf["episode_metrics"]["avg_jct"])
    back = pickle.loads(pickle.dumps(m))
    assert type(back) is dict and back.keys() == m.keys()
    m2 = ledger.issue(env.sim)
    del m2
    assert not ledger.held(env.sim)  # nobody holds it: nothing to keep


def test_kernel_chooser_keeps_the_faster_and_tries_the_other_rarely() -> None:
    now = [0.0]
    ch = KernelChooser(share=0.05, clock=lambda: now[0])
    rng = np.random.default_rng(0)

    def run(cost: dict, calls: int, p_slice: float = 0.0) -> tuple[list[int], list[float]]:
        used = []
        for _ in range(calls):
            k = ch.pick()
            t = cost[k] + (400.0 if rng.random() < p_slice else 0.0)  # now and then a time slice
            used.append((k, t))
            now[0] += t
            ch.record(k, t)
        return [k for k, _ in used], [t for _, t in used]

    used, times = run({0: 1.0, 1: 30.0}, 3000, p_slice=0.05)  # threads 30x slower (a busy core)
    assert ch.best == 0
    spent = sum(t for k, t in zip(used[200:], times[200:]) if k == 1)
    assert 0 < spent < 0.1 * sum(times[200:])  # trials take a small share of the time
    run({0: 1.0, 1: 0.5}, 3000, p_slice=0.05)  # the other core frees up: threads win again
    assert ch.best == 1
    used, _ = run({0: 1.0, 1: 0.5}, 30000)
    assert used.count(1) > 0.98 * len(used) and 0 in used  # serial still tried now and then
    assert ch.median[1] == 0.5
