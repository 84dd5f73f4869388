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
from numba import njit

from hetgym.sim.codes import DONE, GRACE, RUNNING
from hetgym.sim.state.jobs import best_durations

if TYPE_CHECKING:  # pragma: no cover
    from hetgym.sim.engine import Simulator

__all__ = ["N_REW", "REW_ENERGY_SEEN", "REW_INV_BEST", "REW_JCT", "REW_MAKESPAN",
           "REW_SLOWDOWN", "REW_TARDINESS", "RewardTracker", "TERMS", "accrue_nb",
           "accrue_step_nb", "inv_best_durations", "start_window", "start_window_nb",
           "take_terms", "take_terms_nb", "weighted_sum", "weighted_sum_nb"]

TERMS = ("jct", "slowdown", "makespan", "energy_cost", "tardiness")

#: Entries of the accumulator ``rew`` (``EnvState.rew`` of ``HetCluster-v0``,
#: ``RewardTracker.rew``): the step's terms (signed and scaled, see the table above), the
#: running sum of 1 / best duration over the jobs in the system, and the energy (J) when
#: the terms were last read.
REW_JCT, REW_SLOWDOWN, REW_MAKESPAN, REW_TARDINESS, REW_INV_BEST, REW_ENERGY_SEEN = range(6)
N_REW = 6


# The rules of the terms, each one plain function that Python calls and that the env
# kernels call compiled (``name_nb``: the same function under ``njit(inline="always")``),
# so that the compiled and the Python paths run the same operations in the same order.
def inv_best_durations(jobs) -> np.ndarray:
    """1 / best-device duration from scratch of each job of ``jobs`` (a ``JobArrays``):
    the weight of a job in the ``slowdown`` term (a rule per job, so the whole
    workload's, cut, equals a window's own)."""
    return 1.0 / best_durations(jobs)


def start_window(rew, inv_best, inv_src, start):
    """The reward's part of an episode reset: ``inv_best[r] = inv_src[start + r]`` for the
    window's jobs, and every accumulator of ``rew`` zeroed."""
    for r in range(inv_best.shape[0]):
        inv_best[r] = inv_src[start + r]
    for k in range(rew.shape[0]):
        rew[k] = 0.0


def take_terms(rew, energy, price, out):
    """The terms accrued since they were last taken into ``out`` (float64[5], :data:`TERMS`
    order), ``energy``: the simulator's energy (J) now, ``price``: EUR per J; zeroes the
    per-step accumulators of ``rew`` (the running sum of 1 / best duration is kept)."""
    out[0] = rew[REW_JCT]
    out[1] = rew[REW_SLOWDOWN]
    out[2] = rew[REW_MAKESPAN]
    out[3] = -(energy - rew[REW_ENERGY_SEEN]) * price
    out[4] = rew[REW_TARDINESS]
    rew[REW_ENERGY_SEEN] = energy
    for k in range(4):
        rew[k] = 0.0


def weighted_sum(terms, idx, w):
    """The reward of a step: ``sum(w[m] * terms[idx[m]])`` in the objective's order
    (``idx``, ``w``: :meth:`RewardTracker.weight_arrays`)."""
    total = 0.0
    for m in range(idx.shape[0]):
        total += w[m] * terms[idx[m]]
    return total


start_window_nb = njit(cache=True, inline="always")(start_window)
take_terms_nb = njit(cache=True, inline="always")(take_terms)
weighted_sum_nb = njit(cache=True, inline="always")(weighted_sum)


@njit(cache=True, inline="always")
def accrue_nb(rew, inv_best, scale, deadline, weight, out_done, nd, t0, now, arrived, arrived_now,
              done):
    """Add to ``rew`` (see ``REW_*``) the reward terms of one event step from ``t0`` to
    ``now``: ``arrived`` / ``done`` jobs before it, ``arrived_now`` after it, the jobs it
    completed in ``out_done[:nd]`` (the rules of the table above)."""
    n_jobs = deadline.shape[0]
    dt = now - t0
    n_sys = arrived - done
    if dt > 0.0:
        rew[REW_JCT] -= n_sys * dt / scale
        rew[REW_SLOWDOWN] -= rew[REW_INV_BEST] * dt
        if n_sys > 0 or arrived < n_jobs:
            rew[REW_MAKESPAN] -= dt / scale
    for j in range(arrived, arrived_now):
        rew[REW_INV_BEST] += inv_best[j]
    for k in range(nd):
        j = out_done[k]
        rew[REW_INV_BEST] -= inv_best[j]
        late = now - deadline[j]
        if late > 0.0:
            rew[REW_TARDINESS] -= weight[j] * late / scale


@njit(cache=True)
def accrue_step_nb(rew, inv_best, scale, deadline, weight, out_done, nd, t0, now, arrived,
                   arrived_now, done):
    """:func:`accrue_nb` called from Python (the decision envs, after ``Simulator.advance``)."""
    accrue_nb(rew, inv_best, scale, deadline, weight, out_done, nd, t0, now, arrived, arrived_now,
              done)


class RewardTracker:
    """Weights of the named terms and their combination.

    The terms themselves are accumulated by :func:`accrue_nb` (inside the fused step
    kernel :func:`hetgym.envs.fused.decide_point_nb`, or after each event step of a
    decision env) into ``rew`` (``REW_*``); :meth:`terms` reads them out with
    :func:`take_terms`, the rule the compiled reward
    (:func:`hetgym.envs.fused.step_reward_nb`) calls too.
    """

    def __init__(self, weights: dict[str, float], scale: float,
                 rew: np.ndarray | None = None) -> None:
        unknown = [k for k in weights if k not in TERMS]
        if unknown:
            raise ValueError(f"unknown reward term(s) {unknown}; expected some of {TERMS}")
        self.weights = dict(weights)
        self._items = tuple(self.weights.items())
        self.scale = float(scale)
        self.rew = np.zeros(N_REW) if rew is None else rew  # see REW_*
        self._price = 0.0
        self._idx, self._w = self.weight_arrays()
        self._out = np.zeros(len(TERMS))

    def __repr__(self) -> str:
        return f"RewardTracker(weights={self.weights}, scale={self.scale})"

    def reset(self, sim: "Simulator", inv_best: np.ndarray | None = None) -> np.ndarray:
        """Start an episode (:func:`start_window`); returns 1 / best-device duration per job
        (for :func:`accrue_nb`), written into ``inv_best`` when given."""
        src = inv_best_durations(sim.jobs)
        out = src if inv_best is None else inv_best
        start_window(self.rew, out, src, 0)
        self._price = sim.options.energy_price * sim.options.pue / 3.6e6
        return out

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
        take_terms(self.rew, sim.energy_j, self._price, self._out)
        return dict(zip(TERMS, self._out.tolist()))

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
        """Weighted sum of the terms (:func:`weighted_sum`)."""
        return float(weighted_sum([terms[k] for k in TERMS], self._idx, self._w))


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
