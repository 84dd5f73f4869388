"""The batched ``HetCluster-v0`` (``gym.make_vec``): exactly N single envs, stepped at once."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import hetgym  # noqa: F401  (registers the env)
from hetgym.decisions import SchedulingError
from hetgym.envs.batched import HetClusterVecEnv

SMALL = dict(n_jobs=10, window=6)


def _policy(rng: np.random.Generator, mask: np.ndarray, p_invalid: float) -> int:
    if rng.random() < p_invalid:
        return int(rng.integers(len(mask)))
    return int(rng.choice(np.flatnonzero(mask)))


def _compare(n: int, steps: int, mode: str, seed: int, p_invalid: float = 0.1,
             parallel: bool | None = None, **kwargs) -> tuple[int, int]:
    """Step a batched env and n single envs with the same actions; every output must be equal.
    Returns (episodes ended, truncations)."""
    vec = HetClusterVecEnv(num_envs=n, autoreset_mode=mode, parallel=parallel, **kwargs)
    singles = [gym.make("HetCluster-v0", **kwargs).unwrapped for _ in range(n)]
    obs, info = vec.reset(seed=seed)
    for i, env in enumerate(singles):
        o, inf = env.reset(seed=seed + i)
        np.testing.assert_array_equal(obs[i], o)
        np.testing.assert_array_equal(info["action_mask"][i], env.action_masks())
        assert info["time"][i] == inf["time"]
    rng = np.random.default_rng(seed)
    pending = [False] * n
    ended = truncs = 0
    for _ in range(steps):
        masks = vec.action_masks()
        acts = np.array([_policy(rng, masks[i], p_invalid) for i in range(n)])
        obs, rew, term, trunc, info = vec.step(acts)
        for i, env in enumerate(singles):
            if pending[i]:  # next_step autoreset: this step resets the env
                o, _ = env.reset()
                r, te, tr, inf = 0.0, False, False, None
                pending[i] = False
            else:
                o, r, te, tr, inf = env.step(int(acts[i]))
            if te or tr:
                ended += 1
                truncs += int(tr)
                if mode == "same_step":
                    assert info["_final_obs"][i] and info["_final_info"][i]
                    got = info["final_info"][i]["episode_metrics"]
                    np.testing.assert_array_equal(info["final_obs"][i], o)
                    o, _ = env.reset()
                else:
                    assert info["_episode_metrics"][i]
                    got = info["episode_metrics"][i]
                assert got == pytest.approx(inf["episode_metrics"], nan_ok=True)
                if mode != "same_step":
                    pending[i] = True
            assert rew[i] == r, (i, rew[i], r)  # bit for bit
            assert (term[i], trunc[i]) == (te, tr)
            np.testing.assert_array_equal(obs[i], o)
            np.testing.assert_array_equal(vec.action_masks()[i], env.action_masks())
            if inf is not None and not (mode == "same_step" and (te or tr)):
                assert info["time"][i] == inf["time"] and info["done"][i] == inf["done"]
                assert info["invalid_action"][i] == inf["invalid_action"]
                for k, v in inf["reward_terms"].items():
                    assert info["reward_terms"][k][i] == v
    return ended, truncs


def test_make_vec_gives_the_batched_env() -> None:
    vec = gym.make_vec("HetCluster-v0", num_envs=3, **SMALL)
    assert isinstance(vec.unwrapped if hasattr(vec, "unwrapped") else vec, HetClusterVecEnv)
    single = gym.make("HetCluster-v0", **SMALL)
    assert vec.single_action_space == single.action_space
    assert vec.observation_space.shape == (3,) + single.observation_space.shape
    obs, info = vec.reset(seed=0)
    assert obs.shape == (3,) + single.observation_space.shape
    assert vec.action_masks().shape == (3, single.action_space.n)
    assert gym.make_vec("HetCluster-v0", num_envs=2, vectorization_mode="sync", **SMALL).num_envs == 2


@pytest.mark.parametrize("mode", ["next_step", "same_step"])
@pytest.mark.parametrize("parallel", [None, False, True])
def test_batched_equals_single_envs(mode: str, parallel: bool | None) -> None:
    # None: the kernel is chosen as it runs (both are used: hetgym.autopar)
    ended, _ = _compare(4, 120, mode, seed=3, parallel=parallel, **SMALL)
    assert ended >= 4  # episodes end and autoreset is exercised


def test_batched_with_preemption_and_truncation() -> None:
    # fitgpp-lab has BE jobs to preempt; max_steps truncates (the charge is added in Python)
    ended, truncs = _compare(3, 150, "next_step", seed=11, p_invalid=0.2,
                             scenario="fitgpp-lab", scenario_kwargs={"n_jobs": 64},
                             n_jobs=16, window=6, preemption=True, run_window=4, max_steps=25)
    assert truncs >= 2


def test_bad_actions_are_refused_with_a_clear_error() -> None:
    vec = HetClusterVecEnv(num_envs=2, **SMALL)
    vec.reset(seed=0)
    with pytest.raises(ValueError, match=r"shape \(2,\)"):
        vec.step(np.zeros(3, dtype=np.int64))
    with pytest.raises(ValueError, match="out of range"):
        vec.step(np.array([0, 10_000]))
    with pytest.raises(ValueError, match="integer"):
        vec.step(np.array([0.5, 1.0]))
    strict = HetClusterVecEnv(num_envs=2, invalid_action="raise", **SMALL)
    strict.reset(seed=0)
    masks = strict.action_masks()
    bad = int(np.flatnonzero(~masks[1])[0])
    with pytest.raises(SchedulingError, match="env 1"):
        strict.step(np.array([int(np.flatnonzero(masks[0])[0]), bad]))


def test_sb3_vecenv_adapter_trains_maskable_ppo() -> None:
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    from agents.sb3.vecenv import BatchedVecEnv

    venv = BatchedVecEnv(4, **SMALL)
    venv.seed(5)
    obs = venv.reset()
    assert obs.shape == (4,) + venv.observation_space.shape
    masks = np.stack(venv.env_method("action_masks"))
    assert masks.shape == (4, venv.action_space.n)
    seen_end = False
    rng = np.random.default_rng(0)
    for _ in range(60):
        acts = np.array([rng.choice(np.flatnonzero(m)) for m in venv.action_masks()])
        venv.step_async(acts)
        obs, rew, dones, infos = venv.step_wait()
        for i in np.flatnonzero(dones):
            seen_end = True
            assert infos[i]["terminal_observation"].shape == venv.observation_space.shape
            assert "episode_metrics" in infos[i]
    assert seen_end
    model = MaskablePPO("MlpPolicy", venv, n_steps=32, batch_size=64, n_epochs=1, seed=0,
                        device="cpu")
    model.learn(256)
    assert model.num_timesteps >= 256


def test_reset_in_place_gives_the_run_of_a_fresh_simulator() -> None:
    """``reset`` refills the simulator's arrays when the new window fits them; the episode
    is then exactly the one a fresh env (a new simulator) gives for the same seed."""
    env = gym.make("HetCluster-v0", **SMALL).unwrapped
    env.reset(seed=0)
    rng = np.random.default_rng(1)
    reused = 0
    ended = False
    for seed in range(1, 9):
        before = env.sim
        for _ in range(int(rng.integers(3, 30))):  # leave some state behind
            if ended:  # an ended episode refuses step until reset
                break
            _, _, term, trunc, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
            ended = term or trunc
        obs, _ = env.reset(seed=seed)
        ended = False
        reused += env.sim is before
        fresh = gym.make("HetCluster-v0", **SMALL).unwrapped
        obs2, _ = fresh.reset(seed=seed)
        np.testing.assert_array_equal(obs, obs2)
        for a, b in zip(env.sim.state.job, fresh.sim.state.job):
            if a.shape != b.shape:  # worker slots sized for a wider earlier window: -1 padding
                assert a.shape[0] == b.shape[0] and (a[:, b.shape[1]:] == -1).all()
                a = a[:, : b.shape[1]]
            np.testing.assert_array_equal(a, b)
        for _ in range(40):
            m = env.action_masks()
            np.testing.assert_array_equal(m, fresh.action_masks())
            a = int(rng.choice(np.flatnonzero(m)))
            o1, r1, t1, u1, _ = env.step(a)
            o2, r2, t2, u2, _ = fresh.step(a)
            np.testing.assert_array_equal(o1, o2)
            assert (r1, t1, u1) == (r2, t2, u2)
            ended = t1 or u1
            if ended:
                break
    assert reused >= 3


def test_sub_envs_observe_into_the_batch_rows() -> None:
    """The sub-envs' kernels write observation and mask straight into the batch's rows
    (no copy in the batch kernel); a row written from an env's own arrays (the copying
    branch of ``write_row_nb``) is the same."""
    from hetgym.envs.fused import reset_row_nb

    vec = HetClusterVecEnv(num_envs=3, **SMALL)
    vec.reset(seed=4)
    rng = np.random.default_rng(0)
    for _ in range(30):
        m = vec.action_masks()
        vec.step(np.array([rng.choice(np.flatnonzero(r)) for r in m]))
    for i, env in enumerate(vec.envs):
        assert np.shares_memory(env._es.obs, vec._obs[i])
        assert np.shares_memory(env._es.mask, vec._mask[i])
        np.testing.assert_array_equal(env.action_masks(), vec.action_masks()[i])
    single = gym.make("HetCluster-v0", **SMALL).unwrapped
    o, _ = single.reset(seed=6)
    outs = [np.zeros(2), np.zeros((2, 5)), np.zeros(2, dtype=np.bool_), np.zeros(2, dtype=np.bool_),
            np.zeros((2,) + o.shape, dtype=np.float32),
            np.zeros((2, single.action_space.n), dtype=np.bool_), np.zeros((2, 4))]
    reset_row_nb(1, single.sim.kS, single._kes, np.zeros(2, dtype=np.int64), *outs)
    np.testing.assert_array_equal(outs[4][1], o)
    np.testing.assert_array_equal(outs[5][1], single.action_masks())
    assert not outs[4][0].any() and not outs[5][0].any()


def test_batched_equals_single_envs_while_segment_logs_grow(monkeypatch) -> None:
    """Segment logs that start with one row grow again and again during the batched run
    (the simulator replaces its state's arrays and builds a new mirror; the batch's typed
    list then points at the new one). The old arrays are poisoned as they are replaced, so
    a kernel still reaching them through the batch gives other segments: trajectories,
    segment logs and their sizes equal those of single envs."""
    from hetgym.sim import engine
    from hetgym.sim.engine import Simulator

    real_new, real_grow = engine.new_state, Simulator.grow_segments
    grown: list[int] = []

    def tiny_log(params):
        st = real_new(params)
        return st._replace(run=st.run._replace(seg_i=np.zeros((1, 4), dtype=np.int64),
                                               seg_f=np.zeros((1, 2))))

    def grow(self):
        old = self.state.run
        real_grow(self)
        old.seg_i.fill(-7)  # no kernel may log into (or read) the replaced arrays
        old.seg_f.fill(np.nan)
        grown.append(self.state.run.seg_i.shape[0])

    monkeypatch.setattr(engine, "new_state", tiny_log)
    monkeypatch.setattr(Simulator, "grow_segments", grow)
    kwargs = {"scenario": "fitgpp-lab", "scenario_kwargs": {"n_jobs": 64}, "n_jobs": 16,
              "window": 6, "preemption": True, "run_window": 4, "max_steps": 40}
    n = 3
    vec = HetClusterVecEnv(num_envs=n, parallel=False, **kwargs)
    singles = [gym.make("HetCluster-v0", **kwargs).unwrapped for _ in range(n)]
    vec.reset(seed=5)
    for i, env in enumerate(singles):
        env.reset(seed=5 + i)
    rng = np.random.default_rng(5)
    pending = [False] * n
    for _ in range(120):
        masks = vec.action_masks()
        acts = np.array([_policy(rng, masks[i], 0.1) for i in range(n)])
        obs, rew, term, trunc, _ = vec.step(acts)
        for i, env in enumerate(singles):
            if pending[i]:
                o, _ = env.reset()
                r, te, tr = 0.0, False, False
                pending[i] = False
            else:
                o, r, te, tr, _ = env.step(int(acts[i]))
                pending[i] = te or tr
            assert (rew[i], term[i], trunc[i]) == (r, te, tr)
            np.testing.assert_array_equal(obs[i], o)
            if not pending[i]:
                assert vec.envs[i].sim.segments == env.sim.segments
                # grown as often: a batch still stepping a replaced (full) log would grow it
                # again on every step
                assert vec.envs[i].sim.state.run.seg_i.shape == env.sim.state.run.seg_i.shape
    n_vec = sum(len(e.sim.segments) for e in vec.envs)
    assert len(grown) >= 2 * n and n_vec >= 3  # logs grew in both kinds of env, runs logged
