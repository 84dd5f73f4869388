"""The env's window and mask written incrementally (only the rows of the current and the
last window, see ``hetgym.envs.fused.update_mask_nb``) equal a computation from zeroed
arrays, step by step, also when the window shrinks and across episodes."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import hetgym  # noqa: F401
from hetgym.envs.fused import EnvState, env_mirror, refresh_nb


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
        refresh_nb(env.sim.kP, env.sim.kS, *env_mirror(env._ep, ref))
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


@pytest.mark.parametrize("kwargs", [{}, {"preemption": True, "run_window": 4},
                                    {"scenario": "topo-sim", "window": 4, "n_jobs": 32}])
def test_mask_fill_writes_out_the_gang_rule(kwargs):
    """``mask_fill_nb`` writes ``fits_arrays_nb``'s rule out on scalars (reference counts):
    on the node states of a random masked run, for every job and device type, its answer
    is ``tput > 0`` and ``fits_nb``'s, so the two copies of the rule cannot drift apart."""
    from hetgym.sim.kernels.fit import fits_nb, mask_fill_nb

    env = gym.make("HetCluster-v0", **kwargs).unwrapped
    rng = np.random.default_rng(0)
    env.reset(seed=2)
    seen = np.zeros(2, dtype=np.int64)  # (False, True) answers compared
    for _ in range(150):
        sim = env.sim
        ks, jb = sim.kernel_state, sim.jobs
        n_jobs, n_dev = jb.tput.shape
        out = np.ones((n_jobs, n_dev), dtype=np.bool_)
        mask_fill_nb(np.arange(n_jobs, dtype=np.int64), np.int64(n_jobs), np.int64(n_jobs),
                     ks.jobs, ks.nodes, ks.ns, out)
        for j in range(n_jobs):
            for c in range(n_dev):
                want = bool(jb.tput[j, c] > 0.0) and bool(
                    fits_nb(c, jb.workers[j], jb.cpus_need[j, c], jb.mem[j], ks.nodes, ks.ns))
                assert bool(out[j, c]) == want, (j, c)
                seen[int(want)] += 1
        m = env.action_masks()
        _, _, term, trunc, _ = env.step(int(rng.choice(np.flatnonzero(m))))
        if term or trunc:
            env.reset()
    assert seen.min() > 100  # both answers occur (full nodes and free ones)
