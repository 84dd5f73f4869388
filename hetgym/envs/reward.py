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

if TYPE_CHECKING:  # pragma: no cover
    from hetgym.sim.engine import Simulator

__all__ = ["RewardTracker", "TERMS"]

TERMS = ("jct", "slowdown", "makespan", "energy_cost", "tardiness")


class RewardTracker:
    """Accumulates the reward terms over the events of one step."""

    def __init__(self, weights: dict[str, float], scale: float) -> None:
        unknown = [k for k in weights if k not in TERMS]
        if unknown:
            raise ValueError(f"unknown reward term(s) {unknown}; expected some of {TERMS}")
        self.weights = dict(weights)
        self.scale = float(scale)
        self._acc = dict.fromkeys(TERMS, 0.0)

    def __repr__(self) -> str:
        return f"RewardTracker(weights={self.weights}, scale={self.scale})"

    def reset(self, sim: "Simulator") -> None:
        """Start an episode."""
        jb = sim.jobs
        with np.errstate(divide="ignore"):
            best = np.min(np.where(jb.tput > 0, jb.work[:, None] / (jb.workers[:, None] * jb.tput),
                                   np.inf), axis=1)
        self._inv_best = 1.0 / best
        self._sum_inv = 0.0
        self._energy = sim.energy_j
        self._price = sim.options.energy_price * sim.options.pue / 3.6e6
        self.begin_step()

    def begin_step(self) -> None:
        """Zero the per-step accumulators."""
        for k in TERMS:
            self._acc[k] = 0.0

    def on_advance(self, sim: "Simulator", t0: float, arrived_before: int, done_before: int) -> None:
        """Account for the interval [t0, sim.now] and the events processed at its end."""
        dt = sim.now - t0
        n_sys = arrived_before - done_before
        acc = self._acc
        if dt > 0:
            acc["jct"] -= n_sys * dt / self.scale
            acc["slowdown"] -= self._sum_inv * dt
            if n_sys > 0 or arrived_before < sim.n_jobs:
                acc["makespan"] -= dt / self.scale
        if sim.next_arrival > arrived_before:
            self._sum_inv += float(self._inv_best[arrived_before:sim.next_arrival].sum())
        done = sim.last_done
        if sim.n_done > done_before and len(done):
            self._sum_inv -= float(self._inv_best[done].sum())
            late = np.maximum(0.0, sim.now - sim.jobs.deadline[done])
            acc["tardiness"] -= float((sim.jobs.weight[done] * late).sum()) / self.scale

    def end_step(self, sim: "Simulator", final: bool) -> dict[str, float]:
        """Terms of the step that just ended."""
        e = sim.energy_j
        self._acc["energy_cost"] = -(e - self._energy) * self._price
        self._energy = e
        return dict(self._acc)

    def combine(self, terms: dict[str, float]) -> float:
        """Weighted sum of the terms."""
        return float(sum(w * terms[k] for k, w in self.weights.items()))
