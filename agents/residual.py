"""A gated residual policy: a baseline's own run, left only where a model is confident.

:class:`ResidualScheduler` is a :mod:`hetgym` scheduler. At each decision point of
:func:`hetgym.simulate` it asks the *base* scheduler (``baselines.make(base)``, AlloX
for ``hetero-small``, FitGpp for ``fitgpp-lab``) for its decisions, and, through a ``HetCluster-v0`` bound to the
simulator (:func:`agents.envtools.bind`, as :class:`agents.adapter.AgentScheduler`
does), builds the observation, the policy mask and a few *deviations*
(:func:`candidates`): "wait" (skip the base's decisions at this instant), per
device type the feasible window job with the shortest duration there and the oldest
one, and optionally (``preempt``) the preemption of the running job with the longest
remaining time. A *chooser* picks a deviation or none (-1): with none, ``decide`` returns
the base's decisions, so the run is the base's own; a start or preemption is carried out
on the simulator at once and the loop asks again at the same instant; "wait" returns ``[]``.

The *value* of a run (:meth:`ResidualConfig.value`, lower is better) is its ``metric``
(``avg_jct`` for ``hetero-small``), plus, for a family with a constraint (``fitgpp-lab``:
TE p95 slowdown, BE median slowdown bounded by FitGpp's), ``penalty`` times the excess of
the ``constraint`` column over its value in the *base's own run of the window* (the
bound, measured once per window when the scheduler is reset, :attr:`ResidualScheduler.bound`).
Bounding every window by the base's own figure keeps the mean over windows within the
base's mean, which is how ``agents.heldout``'s families are scored (the selection score
:class:`agents.evaluation.Score` is infinite when the constraint's mean exceeds the base's).

Unlike :class:`agents.rollout.SchedulerActor` (the base acting *in the env*: its first
start the action space can express, else wait), the base here is the baseline exactly
as :func:`hetgym.simulate` runs it: with a chooser that never deviates
(``tau = inf``) the run *is* the baseline's (a test checks it). The in-env AlloX
is far from that on crowded windows: AlloX's matching picks short jobs anywhere in the
queue, the env's action space only shows the 16 oldest, and when none of AlloX's
starts is in that window the in-env actor waits with machines idle (hetero-small test
window 17: it waits at 67 of 168 steps while 18-34 jobs queue).

When the chooser deviates, the base's decisions of that call are dropped and the base is
asked again; a base whose ``decide`` draws random numbers (FitGpp's fallback victim when
no BE job is eligible, ``view.rng``) has then drawn once more than in its own run, so the
teacher's value of the base is that of its run from this state with that draw made (only
after a deviation; with ``tau = inf`` the run is exactly the base's, tested).

Two choosers:

* :class:`RolloutChooser` (the teacher, and the data): the value of each deviation is
  the metric of the run that takes it and then follows the base to the end
  (:func:`deviation_value`, on a copy of the simulator), the base's value
  :func:`base_value` the same without the deviation; it records, per state, the
  observation, the mask, the base's starts in action space (:func:`base_vector`) and
  each candidate's relative advantage ``(V_base - Q) / V_base`` (NaN for actions that
  are no candidate), and acts on the best candidate if it beats the base (one step of
  policy iteration over the base's own run, never worse than the base on a window).
* :class:`ModelChooser`: a network (:class:`AdvantageNet`) predicts the relative
  advantage of every action from the observation and the base's starts; the best
  candidate is taken when its prediction exceeds ``tau`` (in percent of the base's
  metric), else the base acts.

:func:`generate` runs the teacher on windows (``workers`` processes), :func:`fit` trains
the network, :func:`save` / :func:`load_residual` store it (those three and the network live
in :mod:`agents.residual_fit`, re-exported here) (``torch.save``, a few hundred
kB). ``scripts/residual.py`` (config ``conf/experiment/residual_hetero_small.yaml``)
does the whole run; docs/agents.md has its results.
"""

from __future__ import annotations

import copy
import functools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from agents.envtools import EnvConfig, bind, policy_mask, refresh
from agents.residual_fit import (  # the network, its training, saving, loading (re-exported)
    AdvantageNet,
    FitConfig,
    ModelChooser,
    fit,
    load_residual,
    save,
)
from hetgym.decisions import Decision, Start

if TYPE_CHECKING:  # pragma: no cover
    from hetgym.envs.hetcluster import HetClusterEnv
    from hetgym.sim.engine import Simulator
    from hetgym.sim.view import View
    from hetgym.specs import Scenario

__all__ = [
    "RECORD_KEYS",
    "AdvantageNet",
    "FitConfig",
    "ModelChooser",
    "ResidualConfig",
    "ResidualScheduler",
    "RolloutChooser",
    "base_value",
    "base_vector",
    "candidates",
    "copy_sim",
    "deviation_value",
    "fit",
    "generate",
    "load_residual",
    "longest_remaining_preemption",
    "save",
]

#: Keys of the records :func:`generate` returns (arrays with one row per visited state).
RECORD_KEYS = ("obs", "base", "mask", "adv", "v_base", "window")


@dataclass(frozen=True)
class ResidualConfig:
    """The base and the deviations of a residual policy.

    Attributes:
        base: ``baselines.make`` name of the base scheduler (no rounds, timers or calls
            with an empty queue: its rollouts run as :func:`agents.rollout.finish_sim`).
        base_params: Its parameters.
        wait: "Wait" (skip the base's decisions at this instant) is a deviation.
        shortest: Per device type, the feasible window job with the shortest duration there.
        oldest: Per device type, the first feasible window job (queue order).
        preempt: The preemption of the running window job (env's run window, allowed by
            the mask) with the longest remaining time is a deviation.
        metric: Episode metric (lower is better) the teacher minimises.
        rel_tol: The teacher deviates only when better by more than this fraction.
        constraint: Summary column bounded by its value in the base's own run of the
            window (None: no constraint).
        penalty: Weight of the constraint's excess over that bound in the value.
        myopic: The rollouts see only the jobs that have arrived (:func:`copy_sim` with
            ``myopic``): the teacher then knows nothing of future arrivals, as a policy
            does, and a rollout's value is over the jobs arrived so far; with a
            constraint, its bound is then the base's figure over the same jobs (the base's
            myopic rollout from that state), not the whole window's.
        futures: K > 0: each rollout copy's not-yet-arrived jobs are replaced by a future
            sampled from ``futures_family``'s training rows (:mod:`agents.futures`), K
            futures per decision point shared by the base and every candidate; a value is
            the mean over the K futures, each bounded (with a constraint) by the base's
            figure in the same future. 0: the copies hold the window's real future.
        futures_seed: Seed of the futures (with the window and the decision point).
        futures_family: The family whose training rows the futures are drawn from
            (``scripts/residual.py`` sets it to its family when ``futures`` > 0).
    """

    base: str = "allox"
    base_params: dict[str, Any] = field(default_factory=dict)
    wait: bool = True
    shortest: bool = True
    oldest: bool = True
    preempt: bool = False
    metric: str = "avg_jct"
    rel_tol: float = 1e-9
    constraint: str | None = None
    penalty: float = 0.0
    myopic: bool = False
    futures: int = 0
    futures_seed: int = 0
    futures_family: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "base_params", dict(self.base_params))
        if self.futures < 0 or (self.futures and self.myopic):
            raise ValueError(f"ResidualConfig: futures must be >= 0 and not with myopic, got "
                             f"futures={self.futures}, myopic={self.myopic}")

    def make_base(self) -> Any:
        """A fresh base scheduler."""
        import baselines

        return baselines.make(self.base, **self.base_params)

    def value(self, summary: dict[str, float], bound: float = math.inf) -> float:
        """The value of a run with ``summary`` (lower is better): ``metric``, plus
        ``penalty * max(0, constraint - bound)`` when there is a constraint (a missing or
        NaN constraint, e.g. a window without BE jobs, adds nothing); ``inf`` when the
        metric is not finite."""
        v = float(summary[self.metric])
        if not math.isfinite(v):
            return math.inf
        if self.constraint is not None and self.penalty and math.isfinite(bound):
            c = float(summary.get(self.constraint, math.nan))
            if c > bound:
                v += self.penalty * (c - bound)
        return v


def base_vector(env: HetClusterEnv, decisions: Sequence[Decision]) -> np.ndarray:
    """float32[A]: 1 at ``k*C + c`` for each start of ``decisions`` of window slot ``k``
    on device type ``c`` (the base's decisions in the env's action space), 1 at "wait"
    when the base starts nothing."""
    out = np.zeros(env.action_space.n, dtype=np.float32)
    slot = {int(j): k for k, j in enumerate(env.window_jobs().tolist())}
    started = False
    for d in decisions:
        if isinstance(d, Start):
            started = True
            k = slot.get(int(d.job))
            if k is not None and d.device is not None:
                out[k * env.n_dev + env.sim.device_index(d.device)] = 1.0
    if not started:
        out[env.wait_action] = 1.0
    return out


def candidates(env: HetClusterEnv, mask: np.ndarray, base: np.ndarray, cfg: ResidualConfig) -> list[int]:
    """The deviations allowed by ``mask`` (module docstring), each once, none that the
    base itself takes now (``base``: :func:`base_vector`; the base's own preemptions are
    not marked there, so a preemption the base makes now can be a candidate: it then
    only moves it before the base's other decisions at this instant)."""
    from agents.rollout import shortest_per_device

    cand: list[int] = []
    if cfg.wait and mask[env.wait_action] and not base[env.wait_action]:
        cand.append(env.wait_action)
    if cfg.shortest:
        cand += shortest_per_device(env, mask)
    if cfg.oldest:
        C = env.n_dev
        starts = mask[: env.n_start_actions].reshape(-1, C)
        for c in range(C):
            ok = np.flatnonzero(starts[:, c])
            if len(ok):
                cand.append(int(ok[0]) * C + c)
    if cfg.preempt:
        cand += longest_remaining_preemption(env, mask)
    seen: set[int] = set()
    return [a for a in cand if not (a in seen or seen.add(a) or base[a])]


def longest_remaining_preemption(env: HetClusterEnv, mask: np.ndarray) -> list[int]:
    """The allowed preemption action of the running window job with the longest remaining
    time (remaining work / rate; ties to the earlier slot), as a list of 0 or 1 action."""
    n_run = env.wait_action - env.n_start_actions
    if n_run <= 0:
        return []
    ok = np.flatnonzero(mask[env.n_start_actions: env.wait_action])
    run = env.running_window_jobs()
    ok = ok[ok < len(run)]
    if not len(ok):
        return []
    view = env.sim.view
    jobs = run[ok]
    rate = np.asarray(view.rate)[jobs]
    with np.errstate(divide="ignore"):
        rem = np.where(rate > 0, np.asarray(view.remaining)[jobs] / rate, np.inf)
    return [env.n_start_actions + int(ok[int(np.argmax(rem))])]


Fill = Callable[["Simulator"], None]


def copy_sim(sim: Simulator, sched: Any, myopic: bool = False, fill: Fill | None = None) -> tuple[Simulator, Any]:
    """Deep copies of ``sim`` and ``sched`` whose view reads the copied arrays
    (see :func:`agents.rollout.copy_env`). ``myopic``: in the copy, the jobs that have not
    arrived never arrive (arrival time ``inf``), so a run of it ends with the jobs arrived
    so far, and its metrics (:func:`hetgym.metrics.summarize`, over finished jobs) are theirs.
    ``fill(copy)``: rewrites the copy's not-yet-arrived jobs before its view is made (a
    sampled future, :meth:`agents.futures.FutureSource.fill`)."""
    s, b = copy.deepcopy((sim, sched))
    if myopic:
        s.jobs.arrival[s.next_arrival:] = np.inf
    if fill is not None:
        fill(s)
    s.view = s.view.__class__(s)
    return s, b


Value = str | Callable[[dict[str, float]], float]


def _finish_summary(sim: Simulator, sched: Any, decide_now: bool) -> dict[str, float] | None:
    from agents.rollout import finish_sim

    # decide_now False is "wait": no decisions at this instant, the base from the next event on
    s = finish_sim(sim, sched, decide_now)
    # jobs left (a "wait" with nothing to wake the run): no value
    return None if sim.n_done < sim.next_arrival else s


def _value(s: dict[str, float] | None, metric: Value) -> float:
    """``metric`` of a run's summary; ``inf`` for a run that left jobs (None) or a non-finite value."""
    if s is None:
        return math.inf
    v = float(s[metric] if isinstance(metric, str) else metric(s))
    return v if math.isfinite(v) else math.inf


def _finish(sim: Simulator, sched: Any, metric: Value, decide_now: bool) -> float:
    return _value(_finish_summary(sim, sched, decide_now), metric)


def base_summary(sim: Simulator, sched: Any, myopic: bool = False, fill: Fill | None = None) -> dict[str, float] | None:
    """The summary of the run that follows ``sched`` from now (as :func:`base_value`;
    ``fill`` as :func:`copy_sim`); None when it leaves arrived jobs unfinished."""
    s, b = copy_sim(sim, sched, myopic, fill)
    return _finish_summary(s, b, True)


def base_value(sim: Simulator, sched: Any, metric: Value = "avg_jct", myopic: bool = False) -> float:
    """``metric`` (a summary column, or a function of the summary such as
    :meth:`ResidualConfig.value`) of the run that follows ``sched`` from now (on copies;
    ``myopic``: of the jobs arrived so far, :func:`copy_sim`)."""
    return _value(base_summary(sim, sched, myopic), metric)


def deviation_value(env: HetClusterEnv, sched: Any, action: int, metric: Value = "avg_jct",
                    myopic: bool = False, fill: Fill | None = None) -> float:
    """``metric`` (as :func:`base_value`) of the run that takes env ``action`` now (a start,
    a preemption or "wait"), then follows ``sched`` (on copies of ``env``'s bound simulator;
    ``fill`` as :func:`copy_sim`)."""
    s, b = copy_sim(env.sim, sched, myopic, fill)
    kind, job, dev = env.decode(action)
    if kind == "wait":
        return _finish(s, b, metric, False)
    if kind == "start":
        s.start(job, dev)
    elif kind == "preempt":
        s.preempt(job)
    else:  # pragma: no cover - decode gives only these
        raise ValueError(f"deviation_value: action {action} is a {kind}")
    return _finish(s, b, metric, True)


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

    round_length = None
    call_when_queue_empty = False

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
        sim = view.simulator
        self.base = self.cfg.make_base()
        self.base.reset(view)
        env = self.env_config.make(sim.scenario, n_jobs=None)
        bind(env, sim)
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
        if self.env is None or self.env.sim is not view.simulator:
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


class RolloutChooser:
    """The rollout teacher over the base's own run; records every state (module docstring).

    With ``cfg.futures`` = K > 0 the values are means over K sampled futures
    (:mod:`agents.futures`; the base and every candidate in the same K futures).

    Args:
        act: ``"teacher"`` (take the best candidate when it beats the base) or ``"base"``
            (record only; the run is the base's).
        source: Where futures are drawn from (default: the training rows of
            ``cfg.futures_family``, :func:`agents.futures.family_source`).
    """

    needs_bound = True  # ResidualScheduler.reset measures the constraint's bound for it

    def __init__(self, act: str = "teacher", source: Any = None) -> None:
        if act not in ("teacher", "base"):
            raise ValueError(f"RolloutChooser: act must be 'teacher' or 'base', got {act!r}")
        self.act = act
        self.source = source
        self.rows: dict[str, list] = {k: [] for k in RECORD_KEYS if k != "window"}
        self.rollouts = 0

    def __repr__(self) -> str:
        return f"RolloutChooser(act={self.act!r})"

    def fills(self, sched: ResidualScheduler) -> list[Fill | None]:
        """The futures of this decision point: ``[None]`` (the copies' own future, or none
        with ``myopic``; also when no job is left to arrive), else K fills of sampled futures."""
        cfg, sim = sched.cfg, sched.env.sim
        if not cfg.futures or sim.next_arrival >= sim.n_jobs:
            return [None]
        from agents import futures as F

        if self.source is None:
            if cfg.futures_family is None:
                raise ValueError("RolloutChooser: futures > 0 needs futures_family (or a source)")
            self.source = F.family_source(cfg.futures_family, sched.env_config.n_jobs or 64)
        src, w = self.source, F.window_key(sim)
        starts = [src.draw(sim, F.future_rng(cfg.futures_seed, w, sched.points, k)) for k in range(cfg.futures)]
        return [functools.partial(src.fill, start=s) for s in starts]

    def values(self, sched: ResidualScheduler, cand: list[int], fill: Fill | None) -> tuple[float, np.ndarray]:
        """The base's value and each candidate's in one future (``fill``; None: the copies'
        own). With ``myopic`` or a sampled future and a constraint, the bound is the base's
        figure in the same run's jobs; else the window's (:attr:`ResidualScheduler.bound`)."""
        metric, my, cons = sched.value, sched.cfg.myopic, sched.cfg.constraint
        s0 = base_summary(sched.env.sim, sched.base, my, fill)
        if (my or fill is not None) and cons is not None:
            metric = functools.partial(sched.cfg.value, bound=math.inf if s0 is None else float(s0[cons]))
        q = np.array([deviation_value(sched.env, sched.base, a, metric, my, fill) for a in cand])
        self.rollouts += 1 + len(cand)
        return _value(s0, metric), q

    def __call__(self, sched: ResidualScheduler, obs: np.ndarray, mask: np.ndarray, base: np.ndarray,
                 cand: list[int]) -> int:
        vals = [self.values(sched, cand, f) for f in self.fills(sched)]
        v0 = float(np.mean([v for v, _ in vals]))
        q = np.mean([x for _, x in vals], axis=0)
        adv = np.full(len(mask), np.nan, dtype=np.float32)
        if math.isfinite(v0) and v0 > 0:
            adv[cand] = np.where(np.isfinite(q), (v0 - q) / v0, -1.0)
        for k, v in (("obs", obs), ("base", base), ("mask", mask), ("adv", adv), ("v_base", v0)):
            self.rows[k].append(v)
        i = int(np.argmin(q))
        if self.act == "teacher" and q[i] < v0 - sched.cfg.rel_tol * abs(v0):
            return cand[i]
        return -1


def _gen_one(args: tuple[int, Scenario, EnvConfig, ResidualConfig, str]) -> tuple[int, dict, dict]:
    import hetgym

    i, w, env_config, cfg, act = args
    ch = RolloutChooser(act)
    sched = ResidualScheduler(ch, env_config, cfg, name="teacher")
    t0 = time.process_time()
    res = hetgym.simulate(w, sched, seed=0).summary()
    base = hetgym.simulate(w, cfg.make_base(), seed=0).summary()
    rows = {k: np.asarray(v) for k, v in ch.rows.items()}
    info = {"window": i, "teacher": float(res[cfg.metric]), "base": float(base[cfg.metric]),
            "states": len(ch.rows["obs"]), "deviations": sched.deviations, "rollouts": ch.rollouts,
            "cpu_s": time.process_time() - t0}
    if cfg.constraint is not None:
        info.update({"teacher_value": sched.value(res), "base_value": sched.value(base),
                     f"teacher_{cfg.constraint}": float(res[cfg.constraint]),
                     f"base_{cfg.constraint}": float(base[cfg.constraint]), "bound": sched.bound})
    return i, rows, info


_GEN: tuple | None = None  # (windows, env_config, cfg, act) of the running :func:`generate`, inherited by its workers


def _gen_index(i: int) -> tuple[int, dict, dict]:
    windows, env_config, cfg, act = _GEN
    return _gen_one((i, windows[i], env_config, cfg, act))


def generate(windows: Sequence[Scenario], env_config: EnvConfig, cfg: ResidualConfig,
             act: str = "teacher", workers: int = 1, log: Any = print,
             time_budget_s: float | None = None) -> tuple[dict[str, np.ndarray], list[dict]]:
    """Run the rollout teacher (:class:`RolloutChooser`) on ``windows``; the records
    (:data:`RECORD_KEYS`, states of all windows in window order) and one info dict per
    window (teacher's and base's metric, states, deviations, rollouts, CPU seconds).

    ``workers > 1`` runs window 0 in this process (its compilation is then inherited) and
    the others in that many processes (``fork``), results taken in window order.
    ``time_budget_s``: no result is taken after that many seconds (wall, from the call);
    the windows returned are then the longest finished *prefix* of ``windows`` (the same
    records as a call on ``windows[:k]``), and the rest is dropped (``log`` says how many)."""
    global _GEN
    jobs = range(len(windows))  # each window is built where it runs (``windows`` may be lazy)
    _GEN = (windows, env_config, cfg, act)
    out: dict[int, tuple[dict, dict]] = {}
    t0 = time.monotonic()

    def take(i: int, rows: dict, info: dict) -> None:
        out[i] = (rows, info)
        log(f"[residual] window {i}: {info}")

    try:
        if workers > 1 and len(jobs) > 1:
            import multiprocessing as mp

            take(*_gen_index(0))
            with mp.get_context("fork").Pool(workers) as pool:  # the workers inherit _GEN
                it = pool.imap(_gen_index, jobs[1:])
                for _ in jobs[1:]:
                    left = None if time_budget_s is None else time_budget_s - (time.monotonic() - t0)
                    try:
                        r = it.next(timeout=None if left is None else max(left, 0.0))
                    except mp.TimeoutError:
                        break
                    take(*r)
                pool.terminate()
        else:
            for j in jobs:
                if out and time_budget_s is not None and time.monotonic() - t0 > time_budget_s:
                    break
                take(*_gen_index(j))
    finally:
        _GEN = None
    if len(out) < len(jobs):
        log(f"[residual] time budget of {time_budget_s} s: {len(out)} of {len(jobs)} windows kept "
            f"(the first {len(out)}), {len(jobs) - len(out)} dropped")
    parts = [out[i][0] for i in sorted(out)]
    data = {k: np.concatenate([p[k] for p in parts]) if parts else np.zeros(0)
            for k in RECORD_KEYS if k != "window"}
    data["window"] = np.concatenate([np.full(len(p["obs"]), i) for i, p in zip(sorted(out), parts)])
    data["obs"] = data["obs"].astype(np.float32)
    data["base"] = data["base"].astype(np.float32)
    data["mask"] = data["mask"].astype(bool)
    data["adv"] = data["adv"].astype(np.float32)
    return data, [out[i][1] for i in sorted(out)]

