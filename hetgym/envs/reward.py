"""Named reward terms of ``HetCluster-v0`` and their weighted sum (STYLE.md item 8).

Each term integrates over the simulated time that passed in a step, so that
the undiscounted episode return of a term is a paper metric:

===========  ==========================================================  ===========================
term         per step                                                    episode return
===========  ==========================================================  ===========================
jct          - (jobs in system) x dt / scale                             - total JCT / scale
slowdown     - sum over jobs in system of dt / best-device duration      - sum of JCT / best duration
makespan     - dt / scale while jobs remain                              - makespan / scale
energy_cost  - energy cost (EUR, price x PUE) of the step                - energy cost of the run
tardiness    - weight x max(0, end - deadline) / scale at completions    - total weighted tardiness / scale
===========  ==========================================================  ===========================

``scale`` is the env's ``reward_scale`` (3600 s by default).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from hetgym.sim.state import best_durations

if TYPE_CHECKING:  # pragma: no cover
    from hetgym.sim.engine import Simulator

__all__ = ["RewardTracker", "TERMS"]

TERMS = ("jct", "slowdown", "makespan", "energy_cost", "tardiness")


class RewardTracker:
    """Weights of the named terms and their combination.

    The terms themselves are accumulated inside the fused step kernel
    (:func:`hetgym.envs.fused.decide_point_nb`) into a ``float64[5]`` array;
    :meth:`terms` reads them out, with the energy cost of the step.
    """

    def __init__(self, weights: dict[str, float], scale: float) -> None:
        unknown = [k for k in weights if k not in TERMS]
        if unknown:
            raise ValueError(f"unknown reward term(s) {unknown}; expected some of {TERMS}")
        self.weights = dict(weights)
        self.scale = float(scale)
        self.rew = np.zeros(5)
        self._energy = 0.0
        self._price = 0.0

    def __repr__(self) -> str:
        return f"RewardTracker(weights={self.weights}, scale={self.scale})"

    def reset(self, sim: "Simulator") -> np.ndarray:
        """Start an episode; returns 1 / best-device duration per job (for the kernel)."""
        best = best_durations(sim.jobs)
        self.rew[:] = 0.0
        self._energy = sim.energy_j
        self._price = sim.options.energy_price * sim.options.pue / 3.6e6
        return 1.0 / best

    def begin_step(self) -> None:
        """Zero the per-step accumulators (the running sum in [4] is kept)."""
        self.rew[:4] = 0.0

    def terms(self, sim: "Simulator") -> dict[str, float]:
        """Terms of the step that just ended."""
        e = sim.energy_j
        r = self.rew
        out = {"jct": float(r[0]), "slowdown": float(r[1]), "makespan": float(r[2]),
               "energy_cost": -(e - self._energy) * self._price, "tardiness": float(r[3])}
        self._energy = e
        return out

    def combine(self, terms: dict[str, float]) -> float:
        """Weighted sum of the terms."""
        return float(sum(w * terms[k] for k, w in self.weights.items()))
