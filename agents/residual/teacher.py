"""The rollout teacher of a gated residual policy (:mod:`agents.residual`) and the data it
generates.

:class:`RolloutChooser` values each deviation by the run that takes it and then follows
the base (:mod:`agents.residual.rollouts`), records every state (:data:`RECORD_KEYS`) and
acts on the best deviation if it beats the base; :func:`generate` runs it on windows
(``workers`` processes) and returns the records that :func:`agents.residual.network.fit`
trains the network on.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from agents.common.envtools import EnvConfig
from agents.residual.deviations import ResidualConfig
from agents.residual.rollouts import Fill, _value, base_summary, deviation_value
from agents.residual.scheduler import ResidualScheduler

if TYPE_CHECKING:  # pragma: no cover
    from hetgym.specs import Scenario

__all__ = ["RECORD_KEYS", "RolloutChooser", "generate"]

#: Keys of the records :func:`generate` returns (arrays with one row per visited state).
RECORD_KEYS = ("obs", "base", "mask", "adv", "v_base", "window")


class RolloutChooser:
    """The rollout teacher over the base's own run; records every state (module docstring).

    With ``cfg.futures`` = K > 0 the values are means over K sampled futures
    (:mod:`agents.residual.futures`; the base and every candidate in the same K futures).

    Args:
        act: ``"teacher"`` (take the best candidate when it beats the base) or ``"base"``
            (record only; the run is the base's).
        source: Where futures are drawn from (default: the training rows of
            ``cfg.futures_family``, :func:`agents.residual.futures.family_source`).
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
        from agents.residual import futures as F

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

