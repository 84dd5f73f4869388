"""``HetClusterRounds-v0``: at each round boundary, assign jobs to GPUs of any types and
servers one job at a time, with copies for forkable jobs (Hadar / HadarE's decision,
Sultana et al., TPDS, sec. III and V; Gavel's, Narayanan et al., OSDI'20, sec. 5)."""

from __future__ import annotations

from typing import Any

import numpy as np

from hetgym.decisions import Decision, Move, Placement, Preempt, SchedulingError, Start
from hetgym.envs.args import scenario_arg
from hetgym.envs.candidates import own_on_nodes
from hetgym.envs.decision_base import DecisionEnv
from hetgym.envs.features import SCALE, Feature
from hetgym.sim.codes import DONE, FUTURE, GRACE, QUEUED, RUNNING
from hetgym.sim.rules import covers, limit_code, may_preempt
from hetgym.specs import Scenario

__all__ = ["HetClusterRoundsEnv"]


class HetClusterRoundsEnv(DecisionEnv):
    """Re-plan the cluster at each round boundary, one worker at a time.

    ## Description
    The simulator behind :func:`hetgym.simulate` (docs/semantics.md) with rounds
    (docs/semantics.md, *Rounds*): the agent is asked at round boundaries only (every
    ``round_length`` s, default the scenario's), as Hadar, HadarE and Gavel act. At a boundary
    it builds each decision worker by worker: it picks a job of the window and puts its workers
    one at a time on explicit GPUs (any type, any server: mixed and multi-server gangs allowed); a
    non-forkable job's decision is issued when its gang is complete, a forkable job's when
    the agent *commits* (one copy, or several copies of a full gang on pairwise distinct
    servers: forking). The decision is a ``Start`` for a waiting job, a ``Move`` for a
    running one (restart delay, no preemption counted); a running job can also be
    preempted. ``done`` ends the round (a gang left half-built is dropped). ``hadar``,
    ``hadare`` and the ``gavel-*`` policies act in it through
    :class:`~hetgym.envs.decision_base.SchedulerAgent` and give exactly their
    :func:`hetgym.simulate` runs (tests/envs/test_rounds.py).

    ## Action Space
    ``Discrete(K*M + 1)`` with ``M = N*G + 2`` (N servers, G the most GPUs of one).
    The window: the first ``K`` (``window``) unfinished arrived jobs by (arrival, index),
    running or waiting (a job keeps its slot through the round). For slot k:
    ``k*M + n*G + g`` puts the next worker of its job on GPU g of server n (g = 0 on a
    CPU server: a CPU worker); ``k*M + N*G`` preempts it; ``k*M + N*G + 1`` commits its
    gang (forkable jobs). ``K*M`` is ``done``. ``action_masks()``: while a gang is being
    built only that job's actions are feasible (and ``done``); a worker's GPU must be free
    or the job's own (a move), not taken by the gang already, on a type where the job runs,
    with room for the gang's cores and memory on that server; a new copy's servers must be
    unused by its earlier copies, at most ``max_copies`` copies; commit needs whole gangs;
    preempt needs a RUNNING job under the preemption limit. ``encode_actions(decision)``
    gives a decision's actions, ``decode`` what one action does.

    ## Observation Space
    ``Box(-1, 1, (K*(9 + C) + N*G*(4 + C) + 5,), float32)``, listed by
    ``env.unwrapped.obs_layout``. Job slot (9 + C): present; running; in a grace period;
    being built now; squash(time since arrival, T); squash(best remaining duration, T);
    workers / G; forkable; copies it runs / ``max(max_copies, 1)`` capped at 1; per type
    c its throughput there / its best (0 where it cannot run). GPU (4 + C): exists; free;
    owner's slot (slot + 1) / K, 0 if free or outside the window; taken by the gang being
    built; device type one-hot (C). Global (5) as the other decision envs.

    ## Rewards
    Those of ``HetCluster-v0`` (:mod:`hetgym.envs.reward`), weighted by the scenario
    objective (default ``jct``: the return is minus the total JCT in hours). Actions
    other than ``done`` take no time and earn 0.

    ## Starting State / Episode End
    As ``HetClusterPlacement-v0`` (``reset(seed, options={"on_start": f})``; terminated
    when every job is done; truncated with the truncation charge after ``max_steps``, at
    the horizon, when no event is left, or at an idle round boundary where nothing was
    decided and nothing is left to arrive; ``episode_metrics`` in the final info).
    Once an episode has ended, ``step`` raises ``RuntimeError`` until ``reset``.

    ## Arguments
    ``scenario`` (``hadar-sim``), ``scenario_kwargs``, ``window`` (K, 32), ``n_jobs``
    (64; None = all), ``round_length`` (True: the scenario's), ``invalid_action`` (done,
    raise), ``reward_scale`` (3600), ``max_steps`` (default 40 x jobs x largest gang +
    1000), ``render_mode`` (ansi, rgb_array), ``time_scale`` (3600), ``skip_forced`` (as
    ``HetClusterPlacement-v0``).

    ## Version History
    * v0: initial release.
    """

    JOB_BASE = ("present", "running", "grace", "building", "age", "best_duration", "workers",
                "forkable", "copies")
    GPU_BASE = ("exists", "free", "owner_slot", "building")

    def __init__(self, scenario: str | Scenario = "hadar-sim",
                 scenario_kwargs: dict[str, Any] | None = None, window: int = 32,
                 n_jobs: int | None = 64, round_length: float | bool | None = True,
                 every_event: bool = True, invalid_action: str = "done",
                 reward_scale: float = 3600.0, max_steps: int | None = None,
                 render_mode: str | None = None, time_scale: float = SCALE,
                 skip_forced: bool = False) -> None:
        sc = scenario_arg(scenario, scenario_kwargs)
        if not round_length:
            raise ValueError("HetClusterRounds-v0 needs rounds: round_length must be True or > 0")
        self.n_nodes = len(_node_gpus(sc))
        self.G = max(1, int(_node_gpus(sc).max()))
        widest = int(sc.workload.frame["workers"].max())
        n = len(sc.workload) if n_jobs is None else min(int(n_jobs), len(sc.workload))
        if max_steps is None:
            max_steps = 40 * n * widest + 1000
        super().__init__(sc, None, window, self.n_nodes * self.G + 2, n_jobs, round_length,
                         every_event, invalid_action, reward_scale, max_steps, render_mode,
                         time_scale, skip_forced)
        self.rounds_only = True
        self.n_gpu_actions = self.n_nodes * self.G

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """See :meth:`DecisionEnv.reset`."""
        self._job, self._gang = -1, []
        return super().reset(seed=seed, options=options)

    # ------------------------------------------------------------------ codec
    def slot_jobs(self) -> list[int]:
        """The first K unfinished arrived jobs by (arrival, index)."""
        st = self.sim.js.status
        live = np.flatnonzero((st != FUTURE) & (st != DONE))
        order = np.lexsort((live, self.sim.jobs.arrival[live]))
        return live[order][: self.window].tolist()

    def _limit(self, j: int) -> int:
        """Most workers of a gang under construction (all copies)."""
        jb = self.sim.jobs
        if not jb.forkable[j] or jb.min_workers[j] != jb.max_workers[j]:
            return int(jb.workers[j])
        mc = self.sim.params.opts.max_copies
        cap = self.n_nodes if mc is None or mc < 0 else int(mc)
        return int(jb.workers[j]) * max(1, cap)

    def _forkable(self, j: int) -> bool:
        return self._limit(j) > int(self.sim.jobs.workers[j])

    def _gpu_mask(self, j: int) -> np.ndarray:
        """bool[N*G]: GPUs the next worker of job ``j`` may take."""
        sim, v = self.sim, self.sim.view
        jb, nd = sim.jobs, sim.nodes
        owner = sim.ns.gpu_owner[:, : self.G]
        gang = self._gang if self._job == j else []
        out = np.zeros((self.n_nodes, self.G), dtype=np.bool_)
        if len(gang) >= self._limit(j):
            return out.ravel()
        mine = (owner == j) if sim.js.status[j] in (RUNNING, GRACE) else np.zeros_like(owner, bool)
        exists = np.arange(self.G)[None, :] < nd.gpus[:, None]
        out[:] = exists & ((owner < 0) | mine)
        out[:, 0] |= nd.gpus == 0  # a CPU worker on a CPU server
        _, oc, om = own_on_nodes(v, j) if sim.js.status[j] in (RUNNING, GRACE) else (0, 0.0, 0.0)
        w = int(jb.workers[j])
        used = np.zeros(self.n_nodes, dtype=np.int64)
        earlier: set[int] = set()
        for i, (n, g) in enumerate(gang):
            used[n] += 1
            if g >= 0:
                out[n, g] = False
            if i < (len(gang) // w) * w:
                earlier.add(n)  # servers of the copies already complete
        need_c = (used + 1) * jb.cpus_need[j, nd.dev]
        need_m = (used + 1) * jb.mem[j]
        room = ((jb.tput[j, nd.dev] > 0) & covers(sim.ns.free_cpus + oc, need_c)
                & covers(sim.ns.free_mem + om, need_m))
        if earlier:
            room[list(earlier)] = False
        out &= room[:, None]
        return out.ravel()

    def _refresh(self) -> None:
        """Mask of the current state (class docstring)."""
        m, ng = self.max_candidates, self.n_gpu_actions
        self._mask[:] = False
        self._mask[self.done_action] = True
        self._cands = []
        if self._ended or self.sim.finished:
            self._slots = []
            return
        self._slots = self.slot_jobs()
        sim = self.sim
        limit = limit_code(sim.options.max_preemptions)
        for k, j in enumerate(self._slots):
            if self._job >= 0 and j != self._job:
                continue
            base = k * m
            self._mask[base: base + ng] = self._gpu_mask(j)
            if self._job < 0 and may_preempt(sim.js.status[j], sim.js.n_preempt[j], limit):
                self._mask[base + ng] = True
            w = int(sim.jobs.workers[j])
            if self._job == j and self._forkable(j) and len(self._gang) % w == 0:
                self._mask[base + ng + 1] = True

    def act(self, a: int) -> None:
        """Add a worker, preempt, or commit (class docstring)."""
        k, m = divmod(a, self.max_candidates)
        j = self._slots[k]
        if m == self.n_gpu_actions:
            self.sim.apply([Preempt(j)])
            return
        if m == self.n_gpu_actions + 1:
            self._issue()
            return
        n, g = divmod(m, self.G)
        self._job = j
        self._gang.append((n, g if self.sim.nodes.gpus[n] > 0 else -1))
        if not self._forkable(j) and len(self._gang) == int(self.sim.jobs.workers[j]):
            self._issue()

    def _issue(self) -> None:
        """Start or move the job of the gang under construction."""
        j, gang = self._job, self._gang
        self._job, self._gang = -1, []
        w = int(self.sim.jobs.workers[j])
        parts = [Placement.of([n for n, _ in gang[c: c + w]], [g for _, g in gang[c: c + w]])
                 for c in range(0, len(gang), w)]
        arg = parts[0] if len(parts) == 1 else parts
        d = Start(j, None, arg) if self.sim.js.status[j] == QUEUED else Move(j, arg)
        self.sim.apply([d])

    def _finish_point(self) -> None:
        self._job, self._gang = -1, []  # a gang left half-built is dropped
        super()._finish_point()

    def decode(self, action: int) -> Decision:
        """What ``action`` does now: ``Preempt``, or the ``Start`` / ``Move`` that a commit
        issues; an add-worker action decodes to the job's gang so far (a ``Start`` /
        ``Move`` with the partial placement, issued only when complete)."""
        k, m = self._slot_candidate(action)
        j = self._slots[k]
        if m == self.n_gpu_actions:
            return Preempt(j)
        gang = list(self._gang) if self._job == j else []
        if m < self.n_gpu_actions:
            n, g = divmod(m, self.G)
            gang.append((n, g if self.sim.nodes.gpus[n] > 0 else -1))
        pl = Placement.of([n for n, _ in gang], [g for _, g in gang])
        return Start(j, None, pl) if self.sim.js.status[j] == QUEUED else Move(j, pl)

    def encode_actions(self, decision: Decision) -> list[int]:
        """The actions of ``decision``: one preemption, or one per worker (copies in order)
        and, for a forkable job, the commit."""
        j = int(decision.job)
        if j not in self._slots:
            raise SchedulingError(f"{type(decision).__name__} of job {j}: the job is not in the "
                                  f"window (window={self.window})")
        if self._job >= 0:
            raise SchedulingError(f"{decision!r}: the gang of job {self._job} is being built")
        base = self._slots.index(j) * self.max_candidates
        if isinstance(decision, Preempt):
            return [base + self.n_gpu_actions]
        if not isinstance(decision, (Start, Move)) or decision.placement is None:
            raise SchedulingError(f"{decision!r}: this env takes Start / Move with explicit "
                                  "placements, or Preempt")
        pl = decision.placement
        parts = [pl] if isinstance(pl, Placement) else list(pl)
        out = []
        for p in parts:
            for n, g in zip(np.asarray(p.nodes).tolist(), np.asarray(p.gpus).tolist()):
                out.append(base + n * self.G + max(g, 0))
        if self._forkable(j):
            out.append(base + self.n_gpu_actions + 1)
        return out

    def encode(self, decision: Decision) -> int:
        """The first action of :meth:`encode_actions`."""
        return self.encode_actions(decision)[0]

    def why_slot(self, a: int, k: int, m: int) -> str:
        """Why action ``a`` (index m of filled slot k) is masked now."""
        j = self._slots[k]
        if self._job >= 0 and j != self._job:
            return f"action {a}: the gang of job {self._job} is being built, not job {j}'s"
        what = ("preempt" if m == self.n_gpu_actions else "commit" if m > self.n_gpu_actions
                else f"a worker on server {m // self.G} GPU {m % self.G}")
        return f"action {a}: job {j} (slot {k}) cannot take {what} now"

    # --------------------------------------------------------------- features
    def _layout(self) -> list[Feature]:
        devs = self.scenario.device_types
        job = list(self.JOB_BASE) + [f"speed_{d}" for d in devs]
        gpu = list(self.GPU_BASE) + [f"type_{d}" for d in devs]
        out: list[Feature] = []
        for k in range(self.window):
            out += [Feature(len(out) + i, "job", k, n, False) for i, n in enumerate(job)]
        for s in range(self.n_nodes * self.G):
            out += [Feature(len(out) + i, "gpu", s, n, False) for i, n in enumerate(gpu)]
        out += [Feature(len(out) + i, "global", 0, n, False) for i, n in enumerate(self.GLOBAL_FEATURES)]
        return out

    def _obs(self) -> np.ndarray:
        sim = self.sim
        jb, js, nd = sim.jobs, sim.js, sim.nodes
        c_n = len(self.devices)
        nj, ng = len(self.JOB_BASE) + c_n, len(self.GPU_BASE) + c_n
        obs = np.zeros(self.observation_space.shape, dtype=np.float32)
        mc = sim.params.opts.max_copies
        for k, j in enumerate(self._slots):
            age, best, _ = self.time_features(j)
            t = jb.tput[j]
            sp = t / t.max() if t.max() > 0 else t
            obs[k * nj: (k + 1) * nj] = [
                1.0, float(js.status[j] == RUNNING), float(js.status[j] == GRACE),
                float(j == self._job), age, best, jb.workers[j] / self.G, float(jb.forkable[j]),
                min(1.0, js.n_copies[j] / max(1, mc if mc and mc > 0 else 1)), *sp]
        slot = np.zeros(sim.n_jobs + 1)
        slot[np.asarray(self._slots, dtype=np.int64)] = np.arange(1, len(self._slots) + 1) / self.window
        owner = sim.ns.gpu_owner[:, : self.G]
        exists = np.arange(self.G)[None, :] < nd.gpus[:, None]
        gpu = np.zeros((self.n_nodes, self.G, ng), dtype=np.float32)
        gpu[..., 0] = exists
        gpu[..., 1] = exists & (owner < 0)
        gpu[..., 2] = np.where(owner >= 0, slot[np.maximum(owner, 0)], 0.0)
        for n, g in self._gang:
            gpu[n, max(g, 0), 3] = 1.0
        gpu[..., 4:] = (np.arange(c_n)[None, :] == nd.dev[:, None])[:, None, :] & exists[..., None]
        base = self.window * nj
        obs[base: base + gpu.size] = gpu.ravel()
        obs[len(obs) - len(self.GLOBAL_FEATURES):] = self.global_features()
        return np.clip(obs, -1.0, 1.0)


def _node_gpus(sc: Scenario) -> np.ndarray:
    """GPUs of every node of the scenario's cluster, in the simulator's node order."""
    return np.asarray([spec.gpus for spec in sc.cluster.nodes for _ in range(spec.count)])
