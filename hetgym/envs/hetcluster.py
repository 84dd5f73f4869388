"""``HetCluster-v0``: schedule deep-learning jobs on a hybrid CPU/GPU cluster."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from hetgym import scenarios as _scenarios
from hetgym._internals.dispatch import Binder
from hetgym.decisions import SchedulingError
from hetgym.envs.args import (
    ENDED,
    MAX_WINDOW,
    count_arg,
    discrete_action,
    episode_args,
    scenario_arg,
)
from hetgym.envs.features import SCALE, layout, obs_mode, obs_size
from hetgym.envs.fused import (
    ACT_GROW,
    ACT_INVALID,
    ACT_NOOP,
    EnvParams,
    EnvState,
    act_nb,
    decide_point_nb,
    env_mirror,
    refresh_nb,
)
from hetgym.envs.reward import N_REW, RewardTracker
from hetgym.metrics import summarize
from hetgym.sim.codes import STEP_LOG_FULL
from hetgym.sim.engine import InvariantError, Simulator
from hetgym.sim.state.layout import ACC_NOW, CTR_DONE, CTR_Q, CTR_RUN
from hetgym.sim.view import View
from hetgym.specs import Scenario

__all__ = ["HetClusterEnv"]


class HetClusterEnv(gym.Env):
    """Schedule the jobs of a trace window on a hybrid cluster, one decision per step.

    ## Description
    Jobs arrive over simulated time at a cluster of CPU nodes and GPU nodes of
    several generations. At each decision point the agent starts one of the
    first ``window`` waiting jobs on one device type (the environment places
    its workers), or waits until the next event (arrival, completion, end of a
    grace period). Several actions may be taken at one instant; when only
    "wait" is feasible the environment advances by itself. The simulator is
    the one behind :func:`hetgym.simulate` (docs/semantics.md).

    ## Action Space
    ``Discrete(K*C + R + 1)``: action ``k*C + c`` starts the k-th job of the
    window (queue order: arrival, preempted jobs first) on device type ``c``
    (``env.unwrapped.devices``); with ``preemption=True``, action ``K*C + r``
    preempts the r-th running BE job of the running window (R = ``run_window``,
    else R = 0); the last action waits (masked when nothing runs, every job has
    arrived and a start is feasible: waiting could then only end the episode). ``action_masks()`` (also
    ``info["action_mask"]``) marks the feasible ones; an infeasible action is
    handled as ``invalid_action`` says: ``"wait"`` or ``"raise"``.

    ## Observation Space
    ``Box(-1, 1, (obs_size,), float32)``; the table of every feature is in
    :mod:`hetgym.envs.features`, ``env.unwrapped.obs_layout`` lists them. Two layouts
    (``observation``): ``"v0"`` (default; times squashed by ``time_scale``, queue counts
    relative to the window, arrived / done as fractions of the episode's jobs) and
    ``"scaled"`` (times and counts on log scales, each job's speed-up per device type,
    nothing relative to the episode's job count or the window: one model's inputs mean
    the same at any size). Per (job slot, device type) candidate both layouts hold a
    fixed set of features (:func:`hetgym.envs.obs_candidates.candidate_table`).

    ## Rewards
    Named terms (``info["reward_terms"]``) weighted by the scenario objective
    (:mod:`hetgym.envs.reward`). Default ``jct``: minus the number of jobs in
    the system times the simulated time that passed, divided by
    ``reward_scale`` (3600 s), so the undiscounted episode return equals
    minus the total JCT in hours.

    ## Starting State
    ``reset(seed)`` draws a window of ``n_jobs`` consecutive jobs (by arrival)
    from the scenario's jobs (all of them when ``n_jobs`` is None) and
    advances to the first decision point.

    ## Episode End
    Terminated when every job of the window has completed; truncated after
    ``max_steps`` steps or at the scenario horizon. The final step's info has
    ``episode_metrics`` (see :mod:`hetgym.metrics`).
    Once an episode has ended, ``step`` raises ``RuntimeError`` until ``reset``.

    ## Arguments
    ``scenario`` (name or :class:`~hetgym.specs.Scenario`), ``scenario_kwargs``
    (overrides passed to ``hetgym.scenarios.get``), ``window`` (K, 16),
    ``n_jobs`` (jobs per episode window, 64; None = all), ``placement`` (pack, spread,
    topology; default the scenario's), ``invalid_action`` (wait, raise),
    ``preemption`` (False), ``run_window`` (8), ``reward_scale`` (3600),
    ``time_scale`` (s, 3600: the scale of the squashed time features of ``v0``),
    ``observation`` (``"v0"``, ``"scaled"``), ``max_steps`` (default 20 x jobs + 1000), ``render_mode`` (ansi, rgb_array).

    ## Vectorized
    ``gym.make_vec("HetCluster-v0", num_envs=N)`` (``vectorization_mode=
    "vector_entry_point"``, the default for this id) gives
    :class:`~hetgym.envs.batched.HetClusterVecEnv`, which steps all N envs in one
    compiled call, with exactly the trajectories of N single envs.

    ## Version History
    * v0: initial release; the ``observation="scaled"`` layout added as an option (the
      default stays ``"v0"``, so the dynamics and the default observation are unchanged).
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(self, scenario: str | Scenario = _scenarios.DEFAULT,
                 scenario_kwargs: dict[str, Any] | None = None, window: int = 16,
                 n_jobs: int | None = 64, placement: str | None = None,
                 invalid_action: str = "wait", preemption: bool = False, run_window: int = 8,
                 reward_scale: float = 3600.0, max_steps: int | None = None,
                 render_mode: str | None = None, time_scale: float = SCALE,
                 observation: str = "v0") -> None:
        sc = scenario_arg(scenario, scenario_kwargs)
        self.observation = observation
        self._obs_mode = obs_mode(observation)
        if placement is not None:
            sc = sc.replace(options={"placement": placement})
        self.scenario = sc
        self.devices = sc.device_types
        self.window = count_arg("window", window, most=MAX_WINDOW)
        self.n_dev = len(self.devices)
        self.preemption = bool(preemption)
        self.run_window = count_arg("run_window", run_window) if preemption else 0
        episode_args(self, len(sc.workload), n_jobs, max_steps, 20, invalid_action,
                     ("wait", "raise"), reward_scale, time_scale, render_mode)
        self.n_start_actions = self.window * self.n_dev
        self.wait_action = self.n_start_actions + self.run_window
        self.action_space = spaces.Discrete(self.wait_action + 1)
        self.observation_space = spaces.Box(
            -1.0, 1.0, (obs_size(self.window, self.n_dev, self.run_window, observation),),
            np.float32)
        self.sim: Simulator | None = None
        self._ended_episode = False
        self._own_sim = False  # self.sim was made by reset (not attached from outside)
        k, r = self.window, max(self.run_window, 1)
        self._es = EnvState(
            win=np.zeros(k, dtype=np.int64), rwin=np.zeros(r, dtype=np.int64),
            nwin=np.zeros(2, dtype=np.int64), mask2d=np.zeros((k, self.n_dev), dtype=np.bool_),
            mask=np.zeros(self.action_space.n, dtype=np.bool_), rew=np.zeros(N_REW),
            obs=np.zeros(self.observation_space.shape, dtype=np.float32),
            scratch=np.zeros(self.n_dev))
        self._mask, self._obs = self._es.mask, self._es.obs
        self._win, self._rwin = self._es.win, self._es.rwin
        self._n_win = 0
        self._n_rwin = 0
        self.reward = RewardTracker(sc.objective.as_dict(), self.reward_scale, self._es.rew)
        self._max_workers = int(sc.workload.frame["workers"].max())  # of the whole workload
        self.obs_layout = layout(self.window, self.n_dev, self.run_window, self.devices,
                                 observation)

    def __repr__(self) -> str:
        return (f"HetClusterEnv(scenario={self.scenario.name!r}, devices={self.devices}, "
                f"window={self.window}, windows={self.windows}, placement="
                f"{self.scenario.options.placement!r}, objective={self.scenario.objective.as_dict()}, "
                f"preemption={self.preemption}, observation={self.observation!r})")

    # ----------------------------------------------------------------- gym API
    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """Draw a window of jobs (:attr:`windows`) and advance to the first decision point."""
        self.start_episode(*self.draw_episode(seed))
        return self._obs.copy(), self._info(None)

    def start_episode(self, rows: np.ndarray | None, sim_seed: int) -> None:
        """Simulate ``rows`` with run seed ``sim_seed`` (refilling the simulator in place when
        the window fits it) and advance to the first decision point."""
        if self._own_sim and self.sim.reset_window(rows, sim_seed):
            self._restart()  # the same arrays, refilled: nothing to bind again
        else:
            self.attach(Simulator(self.scenario, seed=sim_seed, rows=rows))
            self._own_sim = True
        self._advance_until_decision(force=True)

    def draw_episode(self, seed: int | None) -> tuple[np.ndarray | None, int]:
        """Seed the env's RNG (``gym.Env.reset``) and draw the next episode's window rows
        and simulator seed (what ``reset`` simulates; the batched env's reset draws here too)."""
        super().reset(seed=seed)
        rows = self.windows.draw(self.np_random)
        return rows, int(self.np_random.integers(0, 2**31 - 1))

    def attach(self, sim: Simulator) -> None:
        """Make this env read its window, mask, observation and reward from ``sim``.

        ``reset`` calls it on the simulator it creates; ``agents.common.adapter`` calls it on
        the simulator of a :func:`hetgym.simulate` run, then :meth:`refresh`.
        Nothing is advanced.
        """
        if list(sim.devices) != list(self.devices):
            raise ValueError(f"simulator devices {sim.devices} differ from the env's {self.devices}")
        self.sim = sim
        self._own_sim = False
        cap_dev = np.asarray([sim.scenario.cluster.capacity(d) for d in self.devices],
                             dtype=np.float64)
        inv_best = self.reward.reset(sim)
        term_idx, term_w = self.reward.weight_arrays()
        self._ep = EnvParams(inv_best=inv_best, scale=self.reward_scale,
                             run_window=self.run_window, cap_dev=cap_dev,
                             max_cap=float(cap_dev.max()),
                             max_workers=float(self._max_workers),
                             time_scale=self.time_scale,
                             raise_invalid=self.invalid_action == "raise",
                             term_idx=term_idx, term_w=term_w,
                             energy_price=self.reward.energy_price,
                             obs_mode=self._obs_mode)
        self._bind()
        self.steps = 0
        self._stuck = False
        self._ended_episode = False

    def attach_view(self, view: View) -> None:
        """:meth:`attach` to the simulator behind a scheduler's ``view``: how an agent that
        decides inside :func:`hetgym.simulate` (``agents.common.adapter``) reads the run through
        this env. :meth:`attached_to` says whether it still does."""
        self.attach(view.simulator)

    def attached_to(self, view: View) -> bool:
        """Whether this env reads the simulator behind ``view``."""
        return self.sim is not None and self.sim is view.simulator

    def swap_sim(self, sim: Simulator) -> None:
        """Step ``sim`` (an own simulator of this env's scenario) from now on; the bound
        kernels are kept when its state has the same Numba types (the batched env keeps
        two simulators per sub-env, see :mod:`hetgym.envs.lazy_metrics`)."""
        old, self.sim = self.sim, sim
        self._own_sim = True
        if old is not None and sim.kP._type == old.kP._type and sim.kS._type == old.kS._type:
            self._bound_state = sim.state
        else:
            self._bind()

    def _restart(self) -> None:
        """After the simulator refilled its arrays for a new window: the env's own per-episode
        parameters (1 / best durations) and counters, in place."""
        self.reward.reset(self.sim, self._ep.inv_best)
        self.steps = 0
        self._stuck = False
        self._ended_episode = False

    _UNPICKLED = ("_decide", "_act", "_refresh", "_binder", "_bound_state", "_kep", "_kes")

    def __getstate__(self) -> dict[str, Any]:
        """Pickling and ``copy.deepcopy``: the bound kernels are left out and bound again
        (the simulator rebuilds its own structref mirror, see ``Simulator.__getstate__``)."""
        return {k: v for k, v in self.__dict__.items() if k not in self._UNPICKLED}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self.__dict__.get("sim") is not None and "_ep" in self.__dict__:
            self._bind()

    def _bind(self) -> None:
        """Entry points of the env kernels for the current state's types (see
        :mod:`hetgym._internals.dispatch`)."""
        sim = self.sim
        self._kep, self._kes = env_mirror(self._ep, self._es)
        b = Binder(sim.kP, sim.kS, self._kep, self._kes)
        self._decide = b.entry(decide_point_nb, True)
        self._act = b.entry(act_nb, 0)
        self._refresh = None  # bound on first use (only adapters call refresh)
        self._binder = b
        self._bound_state = sim.state

    def kernel_args(self) -> tuple:
        """The env kernels' arguments for the simulator's current state (bound again first
        if the simulator replaced its state, e.g. when its segment log grew)."""
        sim = self.sim
        if sim.state is not self._bound_state:
            self._bind()
        return sim.kP, sim.kS, self._kep, self._kes

    def _read_windows(self) -> None:
        self._n_win, self._n_rwin = self._es.nwin.tolist()

    def refresh(self) -> tuple[bool, np.ndarray]:
        """Recompute window, mask and observation for the simulator's current state.

        Returns whether a start or preemption is feasible, and the observation (a copy).
        """
        sim = self.sim
        if sim is None:
            raise RuntimeError("call reset() or attach() before refresh()")
        args = self.kernel_args()
        if self._refresh is None:
            self._refresh = self._binder.entry(refresh_nb)
        feasible = bool(self._refresh(*args))
        self._read_windows()
        return feasible, self._obs.copy()

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Apply one action, then run the simulator to the next decision point.

        An action the mask forbids is refused with ``invalid_action="raise"``; with
        ``"wait"`` it waits if waiting is allowed, else it does nothing (no time
        passes): it can neither end nor shorten the episode.
        """
        sim = self.sim
        if sim is None:
            raise RuntimeError("call reset() before step()")
        if self._ended_episode:
            raise RuntimeError(ENDED)
        a = self._check_action(action)
        self.steps += 1
        invalid = not self._mask[a]
        self.finish_action(a, int(self._act(a, *self.kernel_args())))
        terminated = bool(sim.state.run.ctr[CTR_DONE] == sim.n_jobs)
        truncated = (not terminated) and (self.steps >= self.max_steps or self._stuck)
        terms = self.reward.step_terms(sim, truncated)
        reward = self.reward.combine(terms)
        info = self._info(terms)
        info["invalid_action"] = invalid
        if terminated or truncated:
            info["episode_metrics"] = summarize(sim)
            self._ended_episode = True
        return self._obs.copy(), reward, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """Feasible actions (bool, length ``action_space.n``) for MaskablePPO."""
        return self._mask.copy()

    @property
    def candidate_table(self) -> Any:
        """Where each candidate's features lie in the observation
        (:func:`hetgym.envs.obs_candidates.candidate_table`; what a scoring policy reads)."""
        from hetgym.envs.obs_candidates import candidate_table

        return candidate_table(self)

    def window_jobs(self) -> np.ndarray:
        """Simulator job indices in the job window (slot k = actions ``k*C .. k*C + C-1``)."""
        return self._win[: self._n_win].copy()

    def running_window_jobs(self) -> np.ndarray:
        """Simulator job indices in the preemption window (slot r = action ``K*C + r``)."""
        return self._rwin[: self._n_rwin].copy()

    def decode(self, action: int) -> tuple[str, int, int]:
        """What ``action`` does now: ``("start", job, device)``, ``("preempt", job, -1)`` or
        ``("wait", -1, -1)`` (a slot beyond the window gives job -1)."""
        a = self._check_action(action)
        if a < self.n_start_actions:
            k, c = divmod(a, self.n_dev)
            return "start", int(self._win[k]) if k < self._n_win else -1, c
        if a < self.wait_action:
            r = a - self.n_start_actions
            return "preempt", int(self._rwin[r]) if r < self._n_rwin else -1, -1
        return "wait", -1, -1

    # ------------------------------------ driver interface (the batched env's)
    # What :class:`hetgym.envs.batched.HetClusterVecEnv` uses to step this env in its
    # compiled batch and to reset it: the same code as ``reset`` and ``step``, in parts
    # (with :meth:`draw_episode`, :meth:`start_episode`, :meth:`kernel_args`,
    # :meth:`finish_action` and :meth:`swap_sim` above, which ``reset`` and ``step`` call).

    def write_outputs_to(self, obs: np.ndarray, mask: np.ndarray) -> None:
        """Make the env kernels write this env's observation and mask into ``obs`` and
        ``mask`` (float32 and bool, 1-d, C-contiguous, this env's sizes) from now on, the
        current ones copied there first. Same types as the env's own arrays, so no kernel
        is compiled again."""
        obs[:] = self._es.obs
        mask[:] = self._es.mask
        self._es = self._es._replace(obs=obs, mask=mask)
        self._obs, self._mask = obs, mask

    def begin_refilled_episode(self) -> None:
        """After the env's own simulator and :attr:`episode_inv_best` were refilled in place
        for a new window (by :class:`hetgym.envs.refill.Refiller`): the step count and the
        stuck flag cleared, and the run advanced to its first decision point."""
        self.steps = 0
        self._stuck = False
        self._advance_until_decision(force=True)

    @property
    def stuck(self) -> bool:
        """Whether the last decision point was reached with no event left to advance to
        (the episode is then truncated)."""
        return self._stuck

    @property
    def owns_sim(self) -> bool:
        """Whether :attr:`sim` was made by this env (not attached from outside)."""
        return self._own_sim

    def leave_sim(self) -> None:
        """Leave :attr:`sim` as it is from now on: the next :meth:`start_episode` makes a new
        simulator instead of refilling it (its episode's metrics may still be read)."""
        self._own_sim = False

    @property
    def episode_inv_best(self) -> np.ndarray:
        """float64[J]: 1 / best duration of each job of the episode (the reward's
        normaliser), written in place when the episode is refilled."""
        return self._ep.inv_best

    @property
    def reward_acc(self) -> np.ndarray:
        """The reward terms' running sums that the env kernels write (float64[N_REW])."""
        return self._es.rew

    # -------------------------------------------------------------- internals
    def _check_action(self, action: Any) -> int:
        """The action as an int, or a ValueError saying what was expected."""
        return discrete_action(action, self.action_space.n)

    def _advance_until_decision(self, force: bool) -> None:
        """Advance events until a start/preempt is feasible (at least one event if ``force``).

        One Numba call (:func:`hetgym.envs.fused.decide_point_nb`) also updates the
        mask, the observation and the reward terms.
        """
        assert self.sim is not None
        self._after_decide(self._decide(bool(force), *self.kernel_args()))

    def finish_action(self, a: int, code: int) -> None:
        """Finish action ``a`` given the code of :func:`~hetgym.envs.fused.act_nb`: act again
        after growing the segment log, raise on a refused action or a failed start, and
        read the decision point reached (a no-op changes nothing). The batched env calls it
        for the sub-envs whose step its kernel left unfinished."""
        if code == ACT_GROW:  # a preemption needs room in the segment log
            self.sim.grow_segments()
            code = int(self._act(a, *self.kernel_args()))
        if code == ACT_INVALID or code >= 100:
            self._read_windows()
        if code == ACT_INVALID:
            raise SchedulingError(self.why_invalid(a))
        if code >= 100:
            k, c = divmod(a, self.n_dev)
            raise SchedulingError(f"action {a}: job {int(self._win[k])} could not start "
                                  f"on {self.devices[c]} (code {code - 100})")
        if code != ACT_NOOP:  # a no-op (infeasible, waiting masked): nothing happens
            self._after_decide(code)

    def _after_decide(self, code: int) -> None:
        sim = self.sim
        while code == STEP_LOG_FULL:  # segment log full: grow it and go on
            sim.grow_segments()
            code = self._decide(True, *self.kernel_args())
        if code < 0:
            raise InvariantError(f"simulator invariant violated (code {code}) at t={sim.now}")
        self._stuck = code == 0
        self._read_windows()

    def why_invalid(self, a: int) -> str:
        """Why action ``a`` is masked now (the message ``invalid_action='raise'`` gives)."""
        if a < self.n_start_actions:
            k, c = divmod(a, self.n_dev)
            if k >= self._n_win:
                return f"action {a}: start window slot {k}, but only {self._n_win} jobs wait"
            j = int(self._win[k])
            return (f"action {a}: job {j} (window slot {k}, {self.sim.jobs.workers[j]} workers) "
                    f"cannot start on {self.devices[c]} now (no room, or tput 0)")
        if a < self.wait_action:
            return f"action {a}: running-window slot {a - self.n_start_actions} holds no preemptible job"
        return f"action {a}: wait is not allowed now"

    def _info(self, terms: dict[str, float] | None) -> dict[str, Any]:
        run = self.sim.state.run
        ctr = run.ctr
        return {"action_mask": self._mask.copy(), "reward_terms": terms or {},
                "time": float(run.acc[ACC_NOW]), "queued": int(ctr[CTR_Q]),
                "running": int(ctr[CTR_RUN]), "done": int(ctr[CTR_DONE])}

    # ------------------------------------------------------------------ render
    def render(self) -> str | np.ndarray | None:
        """``ansi``: a text snapshot; ``rgb_array``: Gantt chart and utilisation."""
        if self.render_mode is None or self.sim is None:
            return None
        from hetgym.envs import render as R

        if self.render_mode == "ansi":
            return R.ansi(self.sim)
        return R.rgb_array(self.sim)
