"""The reward terms' rules (hetgym.envs.reward): the Python path (RewardTracker, the
decision envs) and the compiled path (HetCluster-v0's kernels) run the same functions."""

from __future__ import annotations

import numpy as np

from hetgym.envs.reward import (
    N_REW,
    REW_ENERGY_SEEN,
    REW_INV_BEST,
    TERMS,
    start_window,
    start_window_nb,
    take_terms,
    take_terms_nb,
    weighted_sum,
    weighted_sum_nb,
)


def test_take_terms_python_and_compiled_give_the_same_bits() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        rew = rng.normal(size=N_REW) * 10.0 ** rng.integers(-6, 6)
        energy, price = float(rng.uniform(0, 1e9)), float(rng.uniform(0, 1e-6))
        a, b = rew.copy(), rew.copy()
        out_a, out_b = np.zeros(len(TERMS)), np.zeros(len(TERMS))
        take_terms(a, energy, price, out_a)
        take_terms_nb(b, energy, price, out_b)
        assert out_a.tobytes() == out_b.tobytes() and a.tobytes() == b.tobytes()
        assert out_a[TERMS.index("energy_cost")] == -(energy - rew[REW_ENERGY_SEEN]) * price
        assert not a[:4].any() and a[REW_INV_BEST] == rew[REW_INV_BEST]
        assert a[REW_ENERGY_SEEN] == energy
        idx = rng.permutation(len(TERMS))[: rng.integers(1, len(TERMS) + 1)].astype(np.int64)
        w = rng.uniform(0, 3, size=len(idx))
        s = weighted_sum(out_a, idx, w)
        assert s == weighted_sum_nb(out_a, idx, w)
        assert s == sum(w[m] * out_a[idx[m]] for m in range(len(idx)))


def test_start_window_cuts_the_source_and_zeroes_the_accumulators() -> None:
    src = np.arange(10, dtype=np.float64) + 0.5
    for fn in (start_window, start_window_nb):
        rew, inv = np.ones(N_REW), np.zeros(4)
        fn(rew, inv, src, 3)
        np.testing.assert_array_equal(inv, src[3:7])
        assert not rew.any()
