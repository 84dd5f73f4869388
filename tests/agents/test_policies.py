"""The set encoder (``agents.sb3.policies.SetEncoder``): equivariance and a training smoke run."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import hetgym  # noqa: E402,F401
from agents.common.envtools import EnvConfig  # noqa: E402
from agents.sb3.policies import SetEncoder  # noqa: E402
from hetgym import scenarios  # noqa: E402


def _encoder_and_obs(preemption: bool = False):
    env = EnvConfig(n_jobs=24, window=6, preemption=preemption, run_window=3).make(
        scenarios.get("hetero-small"))
    obs, _ = env.reset(seed=1)
    for i in range(12):  # start two jobs, then let arrivals queue up (wait)
        m = env.action_masks()
        a = int(np.flatnonzero(m)[0]) if i < 2 or not m[env.wait_action] else env.wait_action
        obs, *_ = env.step(a)
    torch.manual_seed(0)
    enc = SetEncoder(env.observation_space, env.window, env.n_dev, env.run_window, embed_dim=16)
    enc.eval()
    return env, enc, torch.as_tensor(obs[None], dtype=torch.float32)


@pytest.mark.parametrize("preemption", [False, True])
def test_job_slots_are_encoded_equivariantly(preemption: bool) -> None:
    env, enc, x = _encoder_and_obs(preemption)
    k, f, d = enc.k, enc.job_f, enc.d
    present = x[0, : k * f].reshape(k, f)[:, 0] > 0.5
    assert present.sum() >= 2, "the test needs at least two waiting jobs"
    perm = torch.randperm(k, generator=torch.Generator().manual_seed(3))
    xp = x.clone()
    xp[0, : k * f] = x[0, : k * f].reshape(k, f)[perm].reshape(-1)
    with torch.no_grad():
        a, b = enc(x)[0], enc(xp)[0]
    assert a.shape == (enc.features_dim,)
    # job embeddings move with their slots; everything after them is unchanged
    torch.testing.assert_close(b[: k * d].reshape(k, d), a[: k * d].reshape(k, d)[perm],
                               rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(b[k * d:], a[k * d:], rtol=1e-5, atol=1e-5)
    # and the encoding does depend on the jobs (a test that can fail)
    xz = x.clone()
    xz[0, 2] += 0.3
    with torch.no_grad():
        assert not torch.allclose(enc(xz)[0][k * d:], a[k * d:])


def test_empty_window_gives_finite_features() -> None:
    env, enc, x = _encoder_and_obs()
    x = x.clone()
    x[0, : enc.k * enc.job_f] = 0.0
    with torch.no_grad():
        out = enc(x)
    assert torch.isfinite(out).all()


def test_maskable_ppo_trains_with_the_set_encoder(tmp_path) -> None:
    from agents.sb3.agent import AgentConfig, make_vec_env

    cfg = EnvConfig(n_jobs=12, window=6)
    venv = make_vec_env("hetero-small", cfg, n_envs=2, vec_env="batched")
    model = AgentConfig(n_steps=32, batch_size=32, n_epochs=1, net_arch=(32,), features="set",
                        embed_dim=8).build(venv)
    assert isinstance(model.policy.features_extractor, SetEncoder)
    model.learn(64)
    model.save(tmp_path / "m.zip")
    from sb3_contrib import MaskablePPO

    again = MaskablePPO.load(tmp_path / "m.zip")
    obs = venv.reset()
    a1, _ = model.predict(obs, deterministic=True, action_masks=np.stack(venv.env_method("action_masks")))
    a2, _ = again.predict(obs, deterministic=True, action_masks=np.stack(venv.env_method("action_masks")))
    np.testing.assert_array_equal(a1, a2)
