"""A process pool of batched envs steps exactly like one batched env of all the copies."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

from agents.sb3.vecenv import BatchedVecEnv  # noqa: E402
from agents.sb3.vecpool import BatchedSubprocVecEnv  # noqa: E402
from hetgym import scenarios  # noqa: E402


def test_pool_matches_one_batched_env():
    sc = scenarios.get("hetero-small", n_jobs=48)
    kw = {"scenario": sc, "n_jobs": 8, "window": 4}
    one = BatchedVecEnv(4, **kw)
    pool = BatchedSubprocVecEnv(2, 2, **kw)
    try:
        one.seed(3)
        pool.seed(3)
        o1, o2 = one.reset(), pool.reset()
        np.testing.assert_array_equal(o1, o2)
        rng = np.random.default_rng(0)
        ends = 0
        for _ in range(60):
            m = one.action_masks()
            np.testing.assert_array_equal(m, np.stack(pool.env_method("action_masks")))
            a = np.array([rng.choice(np.flatnonzero(row)) for row in m])
            one.step_async(a)
            pool.step_async(a)
            r1, r2 = one.step_wait(), pool.step_wait()
            for x, y in zip(r1[:3], r2[:3]):
                np.testing.assert_array_equal(x, y)
            for d1, d2 in zip(r1[3], r2[3]):
                assert d1.keys() == d2.keys()
            ends += int(r1[2].sum())
        assert ends > 0  # episodes ended and were reset on both sides
        assert pool.get_attr("n_dev") == one.get_attr("n_dev")
        assert pool.has_attr("action_masks") and not pool.has_attr("no_such_attribute")
        assert pool.get_attr("reset", indices=[1]) == ["<method reset>"]
    finally:
        pool.close()
