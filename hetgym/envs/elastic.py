"""``HetClusterElastic-v0``: a node and a GPU count for each job, postponement, migration
and preemption of running jobs (ANDREAS' decision, Filippini et al. 2021, sec. IV)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hetgym.decisions import Decision, Move, Placement, Preempt, Start
from hetgym.envs.candidates import (
    default_starts,
    holds_gang,
    own_on_nodes,
)
from hetgym.envs.args import MAX_WINDOW, count_arg, scenario_arg
from hetgym.envs.decision_base import DecisionEnv, squash
from hetgym.envs.features import SCALE
from hetgym.sim.codes import GRACE as _GRACE
from hetgym.sim.codes import RUNNING
from hetgym.sim.rules import limit_code, may_preempt
from hetgym.specs import Scenario

__all__ = ["HetClusterElasticEnv"]


class HetClusterElasticEnv(DecisionEnv):
    """Choose a node and a GPU count for each job; migrate, preempt or postpone.

    ## Description
    The simulator behind :func:`hetgym.simulate` (docs/semantics.md) with elastic jobs
    (a gang of ``min_workers`` to ``max_workers`` GPUs, speed-up ``g^scaling_exponent``),
    and its decision points: events, plus every ``round_length`` seconds and every event
    (``every_event``) by default (ANDREAS re-plans at every submission, completion and every
    H = 300 s). At a decision point the agent takes one decision per action and ends with
    ``done``: start a waiting job on g GPUs of one node (jobs left waiting are postponed),
    move a running job to another node or GPU count (:class:`~hetgym.decisions.Move`:
    restart delay, checkpoint rule, no preemption counted), or preempt it. This is
    ANDREAS' decision: ``andreas-rg`` (Randomized Greedy), ``andreas-fifo``, ``andreas-edf``
    and ``andreas-ps`` act in it through
    :class:`~hetgym.envs.decision_base.SchedulerAgent` and give their
    :func:`hetgym.simulate` runs (tests/envs/test_elastic.py; the GPU ids within a node
    are the env's canonical ones, see below).

    ## Action Space
    ``Discrete((K + R)*M + 1)``. Slots 0..K-1 hold the first ``K`` (``window``) waiting
    jobs in queue order, slots K..K+R-1 the first ``R`` (``run_window``) jobs holding
    resources (start order). Candidates (at most ``M`` = ``max_candidates`` per slot), by
    node index then g ascending:

    * waiting job: ``Start`` on g of one node's GPUs (g from ``min_workers`` to
      ``max_workers``), the node of a type where the job runs with g free GPUs and room
      for g workers' cores and memory; the g lowest free GPU ids. A job that no single GPU
      server could hold (``min_workers`` workers, empty) gets one default-placement start
      per device type where it fits instead (the simulator's placement policy).
    * running job: ``Preempt`` first (when allowed: RUNNING, under the preemption limit),
      then ``Move`` to (node, g) for every configuration other than its current one that
      fits the node's free resources plus what the job holds there; the g lowest of the
      node's free GPU ids and the job's own there.

    Action ``s*M + m`` carries out candidate m of slot s; ``(K + R)*M`` is ``done``.
    ``action_masks()`` marks the candidates and ``done``; ``encode`` / ``decode`` translate
    (a start or move encodes by its node and GPU count). A masked action raises
    (``invalid_action="raise"``) or is taken as ``done``.

    ## Observation Space
    ``Box(-1, 1, ((K + R)*9 + (K + R)*M*8 + 5,), float32)``, listed by
    ``env.unwrapped.obs_layout``. Job slot (9): present; running (1/0); squash(time in the
    system, T); squash(best remaining duration, T); min_workers and max_workers / largest
    server's GPUs; deadline slack tanh((deadline - now) / T); squash(tardiness weight x T, 1);
    in a grace period (1/0). Candidate (8; 0 for an empty one): present; start, move,
    preempt (one-hot); g / largest server's GPUs; squash(remaining duration there, T);
    lateness tanh((now + that duration - deadline) / T); squash(active power of its g GPUs,
    1000 W). Global (5): squash(queue, K); squash(running, K); arrived / jobs; done / jobs;
    squash(now, T).

    ## Rewards
    Those of ``HetCluster-v0`` (:mod:`hetgym.envs.reward`), weighted by the scenario
    objective (ANDREAS' scenarios: ``energy_cost`` + ``tardiness``, whose episode return
    is minus the energy cost (EUR) and the weighted tardiness / ``reward_scale``). Actions
    other than ``done`` take no time and earn 0.

    ## Starting State / Episode End
    As ``HetClusterPlacement-v0``: ``reset(seed)`` draws ``n_jobs`` consecutive jobs and
    advances to the first decision point (``options={"on_start": f}``); terminated when
    every job is done, truncated (with the truncation charge) after ``max_steps``, at the
    horizon, when no event is left, or at an idle timed instant where nothing was decided
    and nothing is left to arrive; ``episode_metrics`` in the final info.
    Once an episode has ended, ``step`` raises ``RuntimeError`` until ``reset``.

    ## Arguments
    ``scenario`` (``andreas-sim``), ``scenario_kwargs``, ``window`` (K, 8), ``run_window``
    (R, 8), ``max_candidates`` (M; default the longest list the cluster allows, at most 64),
    ``n_jobs`` (64; None = all), ``round_length`` (300 s; None: events only),
    ``every_event`` (True), ``invalid_action`` (done, raise), ``reward_scale`` (3600),
    ``max_steps`` (40 x jobs + 1000), ``render_mode`` (ansi, rgb_array), ``time_scale`` (3600),
    ``skip_forced`` (as ``HetClusterPlacement-v0``).

    ## Version History
    * v0: initial release.
    """

    JOB_FEATURES = ("present", "running", "age", "best_duration", "min_workers", "max_workers",
                    "deadline_slack", "weight", "grace")
    CAND_FEATURES = ("present", "start", "move", "preempt", "gpus", "duration", "lateness",
                     "power")

    def __init__(self, scenario: str | Scenario = "andreas-sim",
                 scenario_kwargs: dict[str, Any] | None = None, window: int = 8,
                 run_window: int = 8, max_candidates: int | None = None,
                 n_jobs: int | None = 64, round_length: float | bool | None = 300.0,
                 every_event: bool = True, invalid_action: str = "done",
                 reward_scale: float = 3600.0, max_steps: int | None = None,
                 render_mode: str | None = None, time_scale: float = SCALE,
                 skip_forced: bool = False) -> None:
        sc = scenario_arg(scenario, scenario_kwargs)
        self.queue_window = count_arg("window", window, most=MAX_WINDOW)
        self.run_window = count_arg("run_window", run_window, least=0)
        if max_candidates is None:
            max_candidates = min(64, _largest_list(sc))
        super().__init__(sc, None, self.queue_window + self.run_window, max_candidates, n_jobs,
                         round_length, every_event, invalid_action, reward_scale, max_steps,
                         render_mode, time_scale,
                         skip_forced)
        self._gmax = max(1, max(spec.gpus for spec in sc.cluster.nodes))

    # ------------------------------------------------------------------ codec
    def slot_jobs(self) -> list[int]:
        """The first K waiting jobs, then the first R jobs holding resources."""
        sim = self.sim
        return (sim.queued()[: self.queue_window].tolist()
                + sim.running_jobs()[: self.run_window].tolist())

    def _one_server(self, j: int) -> bool:
        """Whether some GPU server where job ``j`` runs holds ``min_workers`` of it when empty."""
        return self.one_server(j, int(self.sim.jobs.min_workers[j]))

    def _configs(self, j: int, gpus: np.ndarray, cpus: np.ndarray, mem: np.ndarray
                 ) -> list[tuple[int, int]]:
        """(node, g) pairs that hold g workers of ``j`` with these free resources."""
        v = self.sim.view
        jb = self.sim.jobs
        fits = [holds_gang(v, j, g, gpus, cpus, mem)
                for g in range(int(jb.min_workers[j]), int(jb.max_workers[j]) + 1)]
        return [(n, int(jb.min_workers[j]) + i) for n in range(len(v.node_device))
                for i, ok in enumerate(fits) if ok[n]]

    def candidates(self, j: int) -> list[Decision]:
        """Class docstring: starts of a waiting job; preempt and moves of a running one."""
        v = self.sim.view
        owner = self.sim.ns.gpu_owner
        if v.status[j] not in (RUNNING, _GRACE):
            if not self._one_server(j):
                return default_starts(v, j)
            out: list[Decision] = []
            for n, g in self._configs(j, v.free_gpus, v.free_cpus, v.free_mem):
                ids = np.flatnonzero(owner[n, : int(v.node_gpus[n])] < 0)[:g]
                out.append(Start(j, int(v.node_device[n]), Placement.of([n] * g, ids)))
            return out
        out = []
        if may_preempt(v.status[j], v.n_preempt[j], limit_code(v.max_preemptions)):
            out.append(Preempt(j))
        og, oc, om = own_on_nodes(v, j)
        w = int(v.nworkers[j])
        here = set(v.worker_node[j, :w].tolist())
        cur = (next(iter(here)), w) if len(here) == 1 else None
        for n, g in self._configs(j, v.free_gpus + og, v.free_cpus + oc, v.free_mem + om):
            if (n, g) == cur:
                continue
            ids = np.flatnonzero((owner[n, : int(v.node_gpus[n])] < 0)
                                 | (owner[n, : int(v.node_gpus[n])] == j))[:g]
            out.append(Move(j, Placement.of([n] * g, ids), int(v.node_device[n])))
        return out

    def same(self, cand: Decision, decision: Decision) -> bool:
        """Same kind and job; a start or move on the same node with as many GPUs (a start
        without placement: the default-placement candidate of its device type)."""
        if type(cand) is not type(decision) or int(decision.job) != cand.job:
            return False
        if isinstance(cand, Preempt):
            return True
        if isinstance(decision, Start) and decision.placement is None:
            dev = self.sim.device_index(decision.device)
            return not self._one_server(cand.job) and cand.device == dev
        pl = self.sim.copies(int(decision.job), decision.placement)
        nodes = set(np.asarray(pl.nodes).tolist())
        if isinstance(cand, Start) and not self._one_server(cand.job):
            return sorted(zip(pl.nodes.tolist(), pl.gpus.tolist())) == sorted(
                zip(cand.placement.nodes.tolist(), cand.placement.gpus.tolist()))
        return nodes == {int(cand.placement.nodes[0])} and len(pl) == len(cand.placement)

    # --------------------------------------------------------------- features
    def job_features(self, j: int) -> Sequence[float]:
        """``JOB_FEATURES`` (class docstring)."""
        v, T = self.sim.view, self.time_scale
        age, best, slack = self.time_features(j)
        return [1.0, float(v.status[j] in (RUNNING, _GRACE)), age,
                best, v.min_workers[j] / self._gmax, v.max_workers[j] / self._gmax,
                slack, squash(v.weight[j] * T, 1.0), float(v.status[j] == _GRACE)]

    def candidate_features(self, j: int, cand: Decision) -> Sequence[float]:
        """``CAND_FEATURES`` (class docstring)."""
        v, T = self.sim.view, self.time_scale
        if isinstance(cand, Preempt):
            return [1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0]
        nodes = np.asarray(cand.placement.nodes)
        g = len(nodes)
        dev = int(v.node_device[nodes[0]])
        frac = v.remaining[j] / max(float(v.work[j]), 1e-12)
        dur = v.duration(j, dev, g) * frac
        dl = v.deadline[j]
        late = 0.0 if not np.isfinite(dl) else float(np.tanh((v.now + dur - dl) / T))
        power = float(np.sum(v.node_gpu_w[nodes]))
        return [1.0, float(isinstance(cand, Start)), float(isinstance(cand, Move)), 0.0,
                g / self._gmax, squash(dur, T), late, squash(power, 1000.0)]


def _largest_list(sc: Scenario) -> int:
    """The most candidates a slot can have: a preemption and every (node, g) of a GPU node."""
    fr = sc.workload.frame
    lo = fr["min_workers"] if "min_workers" in fr.columns else fr["workers"]
    hi = fr["max_workers"] if "max_workers" in fr.columns else fr["workers"]
    widths = int((hi - lo).max()) + 1
    gpu_nodes = sum(spec.count for spec in sc.cluster.nodes if spec.gpus)
    return max(len(sc.device_types), 1 + gpu_nodes * widths)
