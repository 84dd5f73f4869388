"""The gated residual scheduler (:mod:`agents.residual`): the base's decisions unless a
chooser deviates.

:class:`ResidualScheduler` is a :mod:`hetgym` scheduler: at each decision point it asks
the base for its decisions and, through a ``HetCluster-v0`` bound to the simulator, builds
the observation, the policy mask and the deviations
(:func:`agents.residual.deviations.candidates`); a :data:`Chooser` picks one or none. The
choosers are :class:`agents.residual.teacher.RolloutChooser` (the teacher) and
:class:`agents.residual.network.ModelChooser` (the network).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from agents.common.envtools import EnvConfig, bind, policy_mask, refresh
from agents.residual.deviations import ResidualConfig, base_vector, candidates
from agents.residual.rollouts import base_value
from hetgym.decisions import Decision

if TYPE_CHECKING:  # pragma: no cover
    from hetgym.envs.hetcluster import HetClusterEnv
    from hetgym.sim.view import View

__all__ = ["Chooser", "ResidualScheduler"]


Chooser = Callable[[Any, np.ndarray, np.ndarray, np.ndarray, list[int]], int]


class ResidualScheduler:
    """The base's decisions unless the chooser deviates (module docstring).

    Args:
        chooser: ``chooser(sched, obs, mask, base, cand) -> action or -1`` (``sched``: this
            scheduler, whose ``env``, ``base`` and ``decisions`` it may read).
        env_config: The env arguments of the observation (window, time scale, ...).
        cfg: Base and deviations.
        name: Label.
    """

    def __init__(self, chooser: Chooser, env_config: EnvConfig, cfg: ResidualConfig | None = None,
                 name: str = "residual") -> None:
        self.chooser = chooser
        self.env_config = env_config
        self.cfg = cfg or ResidualConfig()
        self.name = name
        self.env: HetClusterEnv | None = None
        self.base: Any = None
        self.decisions: list[Decision] = []
        self.deviations = 0
        self.points = 0
        self.bound = math.inf

    def __repr__(self) -> str:
        return f"ResidualScheduler(name={self.name!r}, base={self.cfg.base!r}, chooser={self.chooser!r})"

    def reset(self, view: View) -> None:
        """A fresh base on the simulator, and an env bound to it; with a constraint whose
        penalty is set and a chooser that values runs (``chooser.needs_bound``, the
        teacher), :attr:`bound`: the constraint in the base's own run of this window, from
        the reset state on copies (one run of the base)."""
        self.base = self.cfg.make_base()
        self.base.reset(view)
        env = self.env_config.make(view.scenario, n_jobs=None)
        bind(env, view)
        sim = env.sim
        self.env = env
        self.deviations = 0
        self.points = 0
        self.bound = math.inf
        if self.cfg.constraint is not None and self.cfg.penalty and getattr(self.chooser, "needs_bound", False):
            self.bound = base_value(sim, self.base, self.cfg.constraint)

    def value(self, summary: dict[str, float]) -> float:
        """:meth:`ResidualConfig.value` of a run of this window (this window's bound)."""
        return self.cfg.value(summary, self.bound)

    def decide(self, view: View) -> list[Decision]:
        """Deviations (carried out at once), then the base's decisions (or none after "wait")."""
        if self.env is None or not self.env.attached_to(view):
            self.reset(view)
        env = self.env
        sim = env.sim
        limit = 4 * (sim.n_queue + sim.n_running) + 16
        for _ in range(limit):
            feasible, obs = refresh(env)
            self.decisions = list(self.base.decide(view) or [])
            if sim.finished or not feasible:
                break
            mask = policy_mask(env, self.env_config.no_idle_wait)
            base = base_vector(env, self.decisions)
            cand = candidates(env, mask, base, self.cfg)
            self.points += 1
            a = int(self.chooser(self, obs, mask, base, cand)) if cand else -1
            if a < 0:
                break
            if a not in cand:
                raise ValueError(f"chooser returned {a}, not a candidate {cand}")
            self.deviations += 1
            kind, job, dev = env.decode(a)
            if kind == "wait":
                return []
            if kind == "preempt":
                sim.preempt(job)
            else:
                sim.start(job, dev)
        else:
            self.decisions = list(self.base.decide(view) or [])
        return self.decisions
