"""Named reward terms of ``HetCluster-v0`` and their weighted sum.

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

``scale`` is the env's ``reward_scale`` (3600 s by default). Reward that accrues
before the first decision point (during ``reset``) is paid with the first step, so
the return of an episode covers all of its simulated time.

**Truncation charge.** When an episode is truncated (``max_steps``, the horizon, or
no event left with jobs unfinished), the final step also charges every unfinished
job as if, from then on, the jobs holding resources ran to their projected end
(jobs in a grace period are suspended at its end) and the others then ran one at
a time, shortest first, each alone on its fastest device type that can hold it,
from its arrival at the earliest, paying the restart delay if it ran before, at
the slowest topology factor the cluster allows. That is a schedule the simulator
could carry out, so a truncated return is never better than the return of
finishing the jobs: no action sequence gains by truncation. The charge enters
``jct``, ``slowdown``, ``makespan`` and ``tardiness`` (``info["reward_terms"]``
of the final step); the energy of that continuation is not charged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from hetgym.sim.codes import DONE, GRACE, RUNNING
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

    def __init__(self, weights: dict[str, float], scale: float,
                 rew: np.ndarray | None = None) -> None:
        unknown = [k for k in weights if k not in TERMS]
        if unknown:
            raise ValueError(f"unknown reward term(s) {unknown}; expected some of {TERMS}")
        self.weights = dict(weights)
        self._items = tuple(self.weights.items())
        self.scale = float(scale)
        self.rew = np.zeros(6) if rew is None else rew  # see hetgym.envs.fused.REW_*
        self._price = 0.0

    def __repr__(self) -> str:
        return f"RewardTracker(weights={self.weights}, scale={self.scale})"

    def reset(self, sim: "Simulator") -> np.ndarray:
        """Start an episode; returns 1 / best-device duration per job (for the kernel)."""
        best = best_durations(sim.jobs)
        self.rew[:] = 0.0
        self._price = sim.options.energy_price * sim.options.pue / 3.6e6
        return 1.0 / best

    @property
    def energy_price(self) -> float:
        """EUR per joule of IT energy (price x PUE / 3.6e6), set by :meth:`reset`."""
        return self._price

    def weight_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """The weighted terms as (indices into :data:`TERMS`, weights), in the objective's
        order: what the compiled reward (``hetgym.envs.fused.step_reward_nb``) sums."""
        idx = np.asarray([TERMS.index(k) for k, _ in self._items], dtype=np.int64)
        return idx, np.asarray([w for _, w in self._items], dtype=np.float64)

    def terms(self, sim: "Simulator") -> dict[str, float]:
        """Terms accrued since the last call (the first call also covers ``reset``);
        zeroes the per-step accumulators (the running sum in [4] is kept)."""
        e = sim.energy_j
        r = self.rew
        jct, slowdown, makespan, tardiness = r[:4].tolist()
        out = {"jct": jct, "slowdown": slowdown, "makespan": makespan,
               "energy_cost": -(e - float(r[5])) * self._price, "tardiness": tardiness}
        r[5] = e
        r[:4] = 0.0
        return out

    def truncation_charge(self, sim: "Simulator") -> dict[str, float]:
        """Terms charged for the unfinished jobs of a truncated episode (module docstring)."""
        end, first = continuation_ends(sim)
        jb = sim.jobs
        now = sim.now
        from_t = np.maximum(now, jb.arrival[first])
        span = end - from_t
        best = best_durations(jb)[first]
        late = np.maximum(0.0, end - jb.deadline[first])
        mk = (end.max() - now) if len(end) else 0.0
        return {"jct": -float(span.sum()) / self.scale, "slowdown": -float((span / best).sum()),
                "makespan": -float(mk) / self.scale, "energy_cost": 0.0,
                "tardiness": -float((jb.weight[first] * late).sum()) / self.scale}

    def with_truncation_charge(self, sim: "Simulator", terms: dict[str, float]) -> dict[str, float]:
        """``terms`` (a truncated step's, however computed) plus the :meth:`truncation_charge`."""
        charge = self.truncation_charge(sim)
        return {k: v + charge[k] for k, v in terms.items()}

    def step_terms(self, sim: "Simulator", truncated: bool) -> dict[str, float]:
        """:meth:`terms`, plus the :meth:`truncation_charge` on a truncated step."""
        terms = self.terms(sim)
        return self.with_truncation_charge(sim, terms) if truncated else terms

    def combine(self, terms: dict[str, float]) -> float:
        """Weighted sum of the terms."""
        total = 0.0
        for k, w in self._items:
            total += w * terms[k]
        return total


def continuation_ends(sim: "Simulator") -> tuple[np.ndarray, np.ndarray]:
    """End times of the unfinished jobs in the continuation schedule of the truncation
    charge (module docstring), and the jobs (indices) they belong to."""
    jb, js, o = sim.jobs, sim.js, sim.options
    now = sim.now
    left = np.flatnonzero(js.status != DONE)
    running = sim.running_jobs()
    free_at = now
    end = np.empty(len(left))
    pos = {int(j): i for i, j in enumerate(left.tolist())}
    suspended: dict[int, float] = {}
    for j in running.tolist():
        if js.status[j] == GRACE and js.grace_end[j] < js.finish[j]:
            t = js.grace_end[j]
            done = js.rate[j] * max(0.0, t - max(now, js.resume_at[j]))
            suspended[j] = max(js.remaining[j] - done, 0.0)
        else:
            t = js.finish[j]
            end[pos[j]] = t
        free_at = max(free_at, t)
    rest = [j for j in left.tolist() if j in suspended or js.status[j] not in (RUNNING, GRACE)]
    amount = js.remaining.copy()
    for j, r in suspended.items():
        amount[j] = r
    # slowest topology factor any placement can have (distance <= the largest one)
    dmax = max(float(sim.nodes.dist.max()), float(o.network_distance))
    slow = 1.0 + o.topology_coeff * jb.comm * max(0.0, dmax - 1.0)
    dur = best_durations(jb, amount, o.scaling_exponent) * slow
    t = free_at
    for j in sorted(rest, key=lambda j: (dur[j], j)):
        start = max(t, float(jb.arrival[j]))
        ran_before = not np.isnan(js.first_start[j])
        t = start + (o.restart_delay if ran_before else 0.0) + dur[j]
        end[pos[j]] = t
    return end, left
