"""Counter-based random draws of the ANDREAS Randomized Greedy search (paper section IV,
Algorithm 1; the swap rule of docs/andreas.md): Numba kernels.

Every draw of an iteration is a pure function of (the call's seed, the iteration, a
counter): :func:`iter_key_nb` keys the iteration, :func:`draw_nb` is draw number ``ctr``
(splitmix64's output function on a Weyl sequence), so the iterations do not depend on each
other and an abandoned iteration changes no other draw. The seed is drawn once per call
from the run's RNG (``view.rng``), so a run repeats. Also here: the randomised choices
built on the draws, the swap rule's pass over adjacent pairs (:func:`swap_pass_nb`, and the
integer thresholds :func:`threshold_nb` the search compares raw bits with) and the pick
among the first entries of a list (``_pick_nb``). The search is :mod:`baselines.andreas.kernel`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["draw_nb", "iter_key_nb", "swap_pass_nb", "threshold_nb"]

# ---- counter-based draws: every draw of an iteration is a pure function of (the call's seed,
# the iteration, a counter), splitmix64's output function on a Weyl sequence, so that the
# iterations do not depend on each other (an abandoned iteration changes no other draw).

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


@njit(cache=True, inline="always")
def _mix_nb(z):
    """splitmix64's finaliser of the uint64 z."""
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@njit(cache=True, inline="always")
def iter_key_nb(seed, it):
    """Key of iteration ``it`` of the search seeded with ``seed``."""
    return _mix_nb(_mix_nb(np.uint64(seed)) + np.uint64(it) * _GOLDEN)


@njit(cache=True, inline="always")
def _bits_nb(key, ctr):
    """Draw number ``ctr`` of the iteration with key ``key``: 53 uniform bits (int64)."""
    return np.int64(_mix_nb(key + (np.uint64(ctr) + np.uint64(1)) * _GOLDEN) >> np.uint64(11))


@njit(cache=True, inline="always")
def draw_nb(key, ctr):
    """Uniform [0, 1) double number ``ctr`` of the iteration with key ``key`` (53 bits)."""
    return float(_bits_nb(key, ctr)) * (1.0 / 9007199254740992.0)


@njit(cache=True)
def threshold_nb(p):
    """The integer T with ``_bits_nb(...) < T`` exactly when ``draw_nb(...) < p`` (x / 2^53
    < p for an integer x < 2^53 is x < ceil(p x 2^53), the product exact)."""
    return np.int64(min(max(np.ceil(p * 9007199254740992.0), 0.0), 9007199254740992.0))


@njit(cache=True, inline="always")
def _below_nb(key, ctr, top):
    """Uniform integer in [0, top) from draw ``ctr``."""
    return min(int(draw_nb(key, ctr) * top), top - 1)


@njit(cache=True, inline="always")
def _swap_p_nb(a, b, pi):
    """Swap rule (docs/andreas.md, *Assumptions*): probability of swapping an adjacent pair of
    weights (a ahead, b behind)."""
    return 0.5 - pi if a > b else (0.5 + pi if a < b else 0.5)


@njit(cache=True)
def swap_pass_nb(order, weight, pi, key):
    """One randomised pass over adjacent pairs from the head (assumption *swap rule*): swap (i,
    i+1) with probability 0.5 - pi if w_i > w_{i+1}, 0.5 + pi if w_i < w_{i+1}, else 0.5 (heavier
    jobs tend to stay ahead); pair i uses draw 4 i of the iteration ``key``. The search
    makes the same pass lazily (position by position); this is its reference."""
    for i in range(order.shape[0] - 1):
        if draw_nb(key, 4 * i) < _swap_p_nb(weight[order[i]], weight[order[i + 1]], pi):
            x = order[i]
            order[i] = order[i + 1]
            order[i + 1] = x


@njit(cache=True, inline="always")
def _pick_nb(n, frac, randomised, key, ctr):
    """Index among the first max(1, round(frac * n)) entries: 0, or uniform (draw ``ctr``)
    if randomised."""
    if not randomised or n <= 1:
        return 0
    top = max(1, int(np.round(frac * n)))
    return 0 if top == 1 else _below_nb(key, ctr, top)
