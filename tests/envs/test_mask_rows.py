"""The env's window and mask written incrementally (only the rows of the current and the
last window, see ``hetgym.envs.fused.update_mask_nb``) equal a computation from zeroed
arrays, step by step, also when the window shrinks and across episodes."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import hetgym  # noqa: F401
from hetgym.envs.fused import EnvState, refresh_nb


def _fresh(es: EnvState) -> EnvState:
    return EnvState(*[np.zeros_like(a) for a in es])


@pytest.mark.parametrize("kwargs", [{}, {"preemption": True, "run_window": 4}, {"window": 4}])
def test_mask_rows_equal_a_computation_from_zeros(kwargs):
    env = gym.make("HetCluster-v0", **kwargs).unwrapped
    rng = np.random.default_rng(0)
    env.reset(seed=1)
    shrank = 0
    last = int(env._es.nwin[0])
    for _ in range(400):
        m = env.action_masks()
        a = int(rng.choice(np.flatnonzero(m)))
        _, _, term, trunc, _ = env.step(a)
        es = env._es
        ref = _fresh(es)
        refresh_nb(env.sim.kP, env.sim.kS, env._ep, ref)
        nq, nr = (int(x) for x in ref.nwin)
        assert es.nwin.tolist() == [nq, nr]
        assert np.array_equal(es.win[:nq], ref.win[:nq])
        assert np.array_equal(es.rwin[:nr], ref.rwin[:nr])
        assert np.array_equal(es.mask2d, ref.mask2d)
        assert np.array_equal(es.mask, ref.mask)
        assert np.array_equal(es.obs, ref.obs)
        shrank += nq < last
        last = nq
        if term or trunc:
            env.reset()
            last = int(env._es.nwin[0])
    assert shrank > 10  # the window did shrink (stale rows would show)
