"""The shared part of the decision envs (``HetClusterPlacement-v0``, ``HetClusterElastic-v0``).

A *decision env* runs the simulator behind :func:`hetgym.simulate` through its Python API
(:class:`~hetgym.sim.engine.Simulator`: ``advance``, ``apply``, ``set_wakeup``) and stops
at exactly the decision points :func:`hetgym.simulate` gives a scheduler with the same
``round_length``, ``every_event`` (``call_when_queue_empty``) and wake-ups. At a decision
point the agent takes decisions **one action at a time**; each action carries one
:mod:`hetgym.decisions` decision out at once (no simulated time passes), and the last
action, ``done``, ends the decision point: the simulator then advances to the next one.

Each env is its action *codec* and its features. The codec lists, for each job slot k of
the window (:meth:`DecisionEnv.slot_jobs`), at most ``M`` candidate decisions of that job
(:meth:`DecisionEnv.candidates`, canonical order, all feasible now); action ``k*M + m``
carries out candidate m of slot k, action ``K*M`` is ``done``. ``encode(decision)`` gives
the action of a decision (so a scheduler's ``decide(view)`` can drive the env, see
:class:`SchedulerAgent`), ``decode(action)`` the decision.

Reward, truncation charge and ``episode_metrics`` are those of ``HetCluster-v0``
(:mod:`hetgym.envs.reward`, the same kernel :func:`hetgym.envs.reward.accrue_nb` after each
event step).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from hetgym.decisions import Decision, SchedulingError, Wait, cadence_of
from hetgym.driver import DecisionPoints, ask_wakeup
from hetgym.envs.args import (ENDED, MAX_WINDOW, count_arg, discrete_action, episode_args, positive_arg,
                              scenario_arg)
from hetgym.envs.candidates import single_server
from hetgym.envs.features import Feature
from hetgym.envs.reward import RewardTracker, accrue_step_nb
from hetgym.metrics import summarize
from hetgym.sim.engine import Simulator
from hetgym.specs import Scenario

__all__ = ["DecisionEnv", "SchedulerAgent", "decision_point_kwargs", "play", "squash"]


def squash(x: Any, s: float) -> Any:
    """``x / (x + s)`` for ``x >= 0``: [0, inf) onto [0, 1)."""
    x = np.maximum(x, 0.0)
    return x / (x + s)


class DecisionEnv(gym.Env):
    """Base of the decision envs (module docstring); subclasses define the codec
    (:meth:`slot_jobs`, :meth:`candidates`, :meth:`same`) and the features
    (:meth:`job_features`, :meth:`candidate_features` with their names ``JOB_FEATURES``,
    ``CAND_FEATURES``).

    Observation: ``Box(-1, 1, (D,), float32)``, its entries listed in :attr:`obs_layout`
    (:class:`~hetgym.envs.features.Feature` rows): per job slot the ``JOB_FEATURES``, per
    (slot, candidate) the ``CAND_FEATURES`` (all 0 for an empty candidate), then the global
    features ``GLOBAL_FEATURES`` (:meth:`global_features`).
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}
    JOB_FEATURES: tuple[str, ...] = ()
    CAND_FEATURES: tuple[str, ...] = ()
    GLOBAL_FEATURES = ("queue_length", "running_jobs", "arrived", "done", "now")

    def __init__(self, scenario: str | Scenario, scenario_kwargs: dict[str, Any] | None,
                 window: int, max_candidates: int, n_jobs: int | None,
                 round_length: float | bool | None, every_event: bool,
                 invalid_action: str, reward_scale: float, max_steps: int | None,
                 render_mode: str | None, time_scale: float, skip_forced: bool = False) -> None:
        sc = scenario_arg(scenario, scenario_kwargs)
        self.scenario = sc
        self.devices = sc.device_types
        self.window = count_arg("window", window, most=MAX_WINDOW)
        self.max_candidates = count_arg("max_candidates", max_candidates)
        self.round_length = sc.options.round_length if round_length is True else (
            positive_arg("round_length", round_length, "seconds (or True: the scenario's, "
                         "None/False: events only)") if round_length else None)
        self.every_event = bool(every_event)
        self.rounds_only = False  # ask the agent at round boundaries only (HetClusterRounds-v0)
        self.skip_forced = bool(skip_forced)
        episode_args(self, len(sc.workload), n_jobs, max_steps, 40, invalid_action,
                     ("done", "raise"), reward_scale, time_scale, render_mode)
        self.done_action = self.window * self.max_candidates
        self.action_space = spaces.Discrete(self.done_action + 1)
        self.obs_layout = self._layout()
        self.observation_space = spaces.Box(-1.0, 1.0, (len(self.obs_layout),), np.float32)
        self.reward = RewardTracker(sc.objective.as_dict(), self.reward_scale)
        self.sim: Simulator | None = None
        self._ended_episode = False
        self._cands: list[list[Decision]] = []
        self._slots: list[int] = []
        self._mask = np.zeros(self.action_space.n, dtype=np.bool_)

    # ------------------------------------------------------------ codec hooks
    def slot_jobs(self) -> list[int]:
        """The jobs of the window, slot by slot (at most ``window``)."""
        raise NotImplementedError

    def candidates(self, job: int) -> list[Decision]:
        """The feasible candidate decisions of ``job`` now, canonical order (all of them;
        the env keeps the first ``max_candidates``)."""
        raise NotImplementedError

    def same(self, cand: Decision, decision: Decision) -> bool:
        """Whether ``decision`` is carried out by candidate ``cand`` (codec equality)."""
        raise NotImplementedError

    def job_features(self, job: int) -> Sequence[float]:
        """``JOB_FEATURES`` of a window job."""
        raise NotImplementedError

    def candidate_features(self, job: int, cand: Decision) -> Sequence[float]:
        """``CAND_FEATURES`` of one candidate of a window job."""
        raise NotImplementedError

    # ----------------------------------------------------------------- gym API
    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """Draw a window of jobs, build its simulator and advance to the first decision point.

        ``options={"on_start": f}`` calls ``f(view)`` before the first event (what
        :func:`hetgym.simulate` does with ``scheduler.reset``); a time it returns is the
        first wake-up (:meth:`set_wakeup`)."""
        super().reset(seed=seed)
        rows = self.windows.draw(self.np_random)
        sim_seed = int(self.np_random.integers(0, 2**31 - 1))
        self.sim = sim = Simulator(self.scenario, seed=sim_seed, round_length=self.round_length,
                                   rows=rows)
        self._inv_best = self.reward.reset(sim)
        self._single: dict[tuple[int, int], bool] = {}  # one_server's answers this episode
        self.steps = 0
        self._ended_episode = False
        self.point = 0  # decision points reached (sim.decision_points counts them too)
        self._points = DecisionPoints(sim, self.every_event, self._advance)
        on_start = (options or {}).get("on_start")
        if on_start is not None:
            first = on_start(sim.view)
            if first is not None:
                self.set_wakeup(first)
        self._ended = not self._next_point()
        self._refresh_point()
        return self._obs(), self._info(None)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Carry out one candidate decision (no time passes), or ``done``: advance to the
        next decision point. A masked action raises with ``invalid_action="raise"``, else it
        is taken as ``done``."""
        sim = self.sim
        if sim is None:
            raise RuntimeError("call reset() before step()")
        if self._ended_episode:
            raise RuntimeError(ENDED)
        a = self._check_action(action)
        self.steps += 1
        invalid = not self._mask[a]
        if invalid and self.invalid_action == "raise":
            raise SchedulingError(self.why_invalid(a))
        if invalid or a == self.done_action:
            self._finish_point()
        else:
            self.act(a)
            self._acted = True
        self._refresh_point()
        terminated = bool(sim.finished)
        truncated = (not terminated) and (self._ended or self.steps >= self.max_steps)
        terms = self.reward.step_terms(sim, truncated)
        info = self._info(terms)
        info["invalid_action"] = invalid
        if terminated or truncated:
            sim.stalled = not sim.finished and sim.now < self.scenario.options.horizon
            if terminated or self._ended:
                sim.check_final()
            info["episode_metrics"] = summarize(sim)
            self._ended_episode = True
        return self._obs(), self.reward.combine(terms), terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """Feasible actions (bool, length ``action_space.n``) for MaskablePPO; ``done`` is
        always feasible."""
        return self._mask.copy()

    def act(self, a: int) -> None:
        """Carry out feasible action ``a`` (not ``done``): its decision, at once."""
        self.sim.apply([self.decode(a)])

    def encode_actions(self, decision: Decision) -> list[int]:
        """The actions that carry out ``decision`` now, in order (here one: :meth:`encode`)."""
        return [self.encode(decision)]

    def one_server(self, j: int, w: int) -> bool:
        """Whether some GPU server where job ``j`` runs holds ``w`` of its workers when empty
        (:func:`~hetgym.envs.candidates.single_server`; cached for the episode)."""
        hit = self._single.get((j, w))
        if hit is None:
            hit = self._single[(j, w)] = single_server(self.sim.view, j, w)
        return hit

    def set_wakeup(self, t: float | None) -> None:
        """Ask for a decision point at time ``t`` (as a scheduler's ``next_wakeup``); call it
        before ``done``. ``None`` clears a pending wake-up."""
        self.sim.set_wakeup(t)

    def decode(self, action: int) -> Decision:
        """The decision that ``action`` carries out now (``SchedulingError`` if masked or done)."""
        k, m = self._slot_candidate(action)
        return self._cands[k][m]

    def _slot_candidate(self, action: Any) -> tuple[int, int]:
        """(slot k, candidate m) of a feasible action other than ``done``, else
        ``SchedulingError`` saying why it is masked."""
        a = self._check_action(action)
        if a == self.done_action or not self._mask[a]:
            raise SchedulingError(self.why_invalid(a))
        return divmod(a, self.max_candidates)

    def encode(self, decision: Decision) -> int:
        """The action that carries out ``decision`` now (``SchedulingError`` naming the job and
        the reason when no candidate of the window does)."""
        job = int(decision.job)
        if job not in self._slots:
            raise SchedulingError(f"{type(decision).__name__} of job {job}: the job is not in the "
                                  f"window {self._slots} (window={self.window})")
        k = self._slots.index(job)
        for m, c in enumerate(self._cands[k]):
            if self.same(c, decision):
                return k * self.max_candidates + m
        raise SchedulingError(f"{decision!r}: no candidate of job {job} (slot {k}) carries it out "
                              f"(its {len(self._cands[k])} candidates: {self._cands[k]})")

    @property
    def candidate_table(self) -> Any:
        """Where each candidate's features lie in the observation
        (:func:`hetgym.envs.obs_candidates.candidate_table`; what a scoring policy reads)."""
        from hetgym.envs.obs_candidates import candidate_table

        return candidate_table(self)

    def window_jobs(self) -> np.ndarray:
        """Job indices of the window (slot k = actions ``k*M .. k*M + M-1``)."""
        return np.asarray(self._slots, dtype=np.int64)

    def why_invalid(self, a: int) -> str:
        """Why action ``a`` is masked now."""
        if a == self.done_action:
            return f"action {a} is done: it decodes to no decision"
        k, m = divmod(a, self.max_candidates)
        if k >= len(self._slots):
            return f"action {a}: slot {k} is empty ({len(self._slots)} jobs in the window)"
        return self.why_slot(a, k, m)

    def why_slot(self, a: int, k: int, m: int) -> str:
        """Why action ``a`` (index m of filled slot k) is masked now."""
        return (f"action {a}: job {self._slots[k]} (slot {k}) has {len(self._cands[k])} "
                f"feasible candidates, not {m + 1}")

    def render(self) -> str | np.ndarray | None:
        """``ansi``: a text snapshot of the cluster and of the decision point (its window's
        jobs and how many decisions are feasible); ``rgb_array``: Gantt chart of the runs."""
        if self.render_mode is None or self.sim is None:
            return None
        from hetgym.envs import render as R

        if self.render_mode == "rgb_array":
            return R.rgb_array(self.sim)
        n_ok = int(self._mask.sum()) - int(self._mask[self.done_action])
        more = f" ... ({len(self._slots)} jobs)" if len(self._slots) > 8 else ""
        return (R.ansi(self.sim) + f"\n  decision point {self.point}: window "
                f"{self._slots[:8]}{more}, {n_ok} feasible decisions besides done")

    # -------------------------------------------------------------- internals
    def _check_action(self, action: Any) -> int:
        """The action as an int, or a ValueError saying what was expected."""
        return discrete_action(action, self.action_space.n)

    def _advance(self) -> bool:
        """One event step of the simulator with the reward terms it accrues."""
        sim = self.sim
        t0, arrived, done = sim.now, sim.next_arrival, sim.n_done
        moved = sim.advance()
        nd = len(sim.last_done) if moved else 0
        accrue_step_nb(self.reward.rew, self._inv_best, self.reward_scale, sim.jobs.deadline,
                       sim.jobs.weight, sim.last_done, nd, t0, sim.now, arrived,
                       sim.next_arrival, done)
        return moved

    def _next_point(self) -> bool:
        """Advance to the next decision point as :func:`hetgym.simulate` does
        (:class:`~hetgym.driver.DecisionPoints`); False when the run ends (every job done,
        or no event left)."""
        sim = self.sim
        while True:
            if not self._points.next():
                return False
            if self.rounds_only and not sim.view.at_round_boundary and not sim.finished:
                continue  # a scheduler's point where a round-based one decides nothing
            if sim.finished:  # a decision point with nothing left to decide
                return False
            self.point += 1
            self._acted = False
            return True

    def _finish_point(self) -> None:
        """``done``: end the decision point (the runner's rule for an idle timed instant)
        and advance to the next one."""
        if self._ended:
            return
        if self._points.idle_end(self._acted):
            self._ended = True  # every later timed instant would change nothing either
            return
        self._ended = not self._next_point()

    def _refresh_point(self) -> None:
        """:meth:`_refresh`; with ``skip_forced``, first ``done`` at every decision point
        where ``done`` is the only feasible action."""
        self._refresh()
        while self.skip_forced and not self._ended and not self._mask[:-1].any() \
                and not self.sim.finished:
            self._finish_point()
            self._refresh()

    def _refresh(self) -> None:
        """Window, candidates and mask of the current state."""
        self._mask[:] = False
        self._mask[self.done_action] = True
        if self._ended or self.sim.finished:
            self._slots, self._cands = [], []
            return
        self._slots = list(self.slot_jobs())[: self.window]
        self._cands = [self.candidates(j)[: self.max_candidates] for j in self._slots]
        for k, c in enumerate(self._cands):
            self._mask[k * self.max_candidates: k * self.max_candidates + len(c)] = True

    def _layout(self) -> list[Feature]:
        out: list[Feature] = []
        for k in range(self.window):
            out += [Feature(len(out) + i, "job", k, n, False) for i, n in enumerate(self.JOB_FEATURES)]
        for s in range(self.window * self.max_candidates):
            out += [Feature(len(out) + i, "candidate", s, n, False)
                    for i, n in enumerate(self.CAND_FEATURES)]
        out += [Feature(len(out) + i, "global", 0, n, False) for i, n in enumerate(self.GLOBAL_FEATURES)]
        return out

    def time_features(self, j: int) -> tuple[float, float, float]:
        """Of job ``j``: squash(time since arrival, T); squash(best remaining duration over
        the device types, T); deadline slack tanh((deadline - now) / T), 1 if none."""
        v, T = self.sim.view, self.time_scale
        best = float(np.min(v.durations(np.asarray([j]), remaining=True)))
        dl = v.deadline[j]
        slack = 1.0 if not np.isfinite(dl) else float(np.tanh((dl - v.now) / T))
        return (float(squash(v.now - v.arrival[j], T)),
                float(squash(best, T)) if np.isfinite(best) else 1.0, slack)

    def global_features(self) -> list[float]:
        """``GLOBAL_FEATURES``: squash(queue length, K); squash(running jobs, K); arrived and
        done fractions; squash(now, T)."""
        sim = self.sim
        k = float(self.window)
        return [squash(sim.n_queue, k), squash(sim.n_running, k), sim.next_arrival / sim.n_jobs,
                sim.n_done / sim.n_jobs, squash(sim.now, self.time_scale)]

    def _obs(self) -> np.ndarray:
        nj, nc, m = len(self.JOB_FEATURES), len(self.CAND_FEATURES), self.max_candidates
        obs = np.zeros(self.observation_space.shape, dtype=np.float32)
        cbase = self.window * nj
        for k, j in enumerate(self._slots):
            obs[k * nj: (k + 1) * nj] = self.job_features(j)
            for i, c in enumerate(self._cands[k]):
                s = cbase + (k * m + i) * nc
                obs[s: s + nc] = self.candidate_features(j, c)
        obs[len(obs) - len(self.GLOBAL_FEATURES):] = self.global_features()
        return np.clip(obs, -1.0, 1.0)

    def _info(self, terms: dict[str, float] | None) -> dict[str, Any]:
        sim = self.sim
        return {"action_mask": self._mask.copy(), "reward_terms": terms or {}, "time": sim.now,
                "queued": sim.n_queue, "running": sim.n_running, "done": sim.n_done,
                "decision_point": self.point}


def decision_point_kwargs(scheduler: Any) -> dict[str, Any]:
    """The env arguments that give a decision env the decision points
    :func:`hetgym.simulate` gives ``scheduler`` (``round_length``, ``every_event``)."""
    c = cadence_of(scheduler)
    return {"round_length": c.round_length, "every_event": c.every_instant}


class SchedulerAgent:
    """A scheduler acting as a policy in a decision env.

    At each decision point it calls ``scheduler.decide(view)`` once and encodes the
    decisions one at a time (:meth:`DecisionEnv.encode`, against the state the earlier
    ones left), then asks for its wake-up (``next_wakeup``) and takes ``done``: the run of
    :func:`hetgym.simulate`. Use ``env.reset(seed=..., options=agent.reset_options())``.

    Args:
        scheduler: Anything with ``reset(view)`` / ``decide(view)`` (``next_wakeup`` optional).
        strict: Raise :class:`~hetgym.decisions.SchedulingError` for a decision the env
            cannot express (job outside the window, no such candidate); with False it is
            skipped and counted in :attr:`skipped` (the run then differs from
            :func:`hetgym.simulate`'s: behaviour cloning with a small window).
    """

    def __init__(self, scheduler: Any, strict: bool = True) -> None:
        self.scheduler = scheduler
        self.cadence = cadence_of(scheduler)
        self.strict = bool(strict)
        self.skipped = 0
        self._point = -1
        self._todo: list[Decision] = []
        self._queued: list[int] = []

    def reset_options(self) -> dict[str, Callable[[Any], None]]:
        """``reset`` options that reset the scheduler (and ask its first wake-up, when its
        cadence has wake-ups) before the first event, as :func:`hetgym.simulate` does."""
        def on_start(view: Any) -> float | None:
            self._point = -1
            self.scheduler.reset(view)
            return self.scheduler.next_wakeup(view) if self.cadence.wakeups else None

        return {"on_start": on_start}

    def act(self, env: DecisionEnv) -> int:
        """The next action: the scheduler's next decision at this point, else ``done``."""
        env = env.unwrapped
        if env.point != self._point:
            self._point = env.point
            self._todo = list(self.scheduler.decide(env.sim.view) or [])
            self._queued = []
        if self._queued:
            return self._queued.pop(0)
        while self._todo:
            d = self._todo.pop(0)
            if isinstance(d, Wait):
                continue
            try:
                self._queued = env.encode_actions(d)
            except SchedulingError:
                if self.strict:
                    raise
                self.skipped += 1
                continue
            return self._queued.pop(0)
        ask_wakeup(env, env.sim.view, self.scheduler, self.cadence)
        return env.done_action


def play(env: Any, agent: SchedulerAgent, seed: int | None = None
         ) -> tuple[list[tuple[np.ndarray, np.ndarray, int, float]], dict[str, Any]]:
    """One episode of ``agent`` in ``env`` (reset with ``seed``): the
    ``(observation, mask, action, reward)`` of every step and the final step's info."""
    u = env.unwrapped
    obs, info = env.reset(seed=seed, options=agent.reset_options())
    out = []
    while True:
        mask = u.action_masks()
        a = agent.act(u)
        nxt, r, term, trunc, info = env.step(a)
        out.append((obs, mask, a, float(r)))
        obs = nxt
        if term or trunc:
            return out, info
