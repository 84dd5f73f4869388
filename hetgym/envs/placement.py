"""``HetClusterPlacement-v0``: which GPUs of which server a waiting job gets, or postpone it
(TOPO-AWARE's decision, Amaral et al. SC'17 sec. 4)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from math import comb
from typing import Any

import numpy as np

from hetgym.decisions import Decision, Placement, Start
from hetgym.envs.candidates import (
    default_starts,
    holds_gang,
    placement_key,
)
from hetgym.envs.args import scenario_arg
from hetgym.envs.decision_base import DecisionEnv, squash
from hetgym.envs.features import SCALE
from hetgym.specs import Scenario

__all__ = ["HetClusterPlacementEnv"]


class HetClusterPlacementEnv(DecisionEnv):
    """Choose the GPU set, within one server, of each waiting job, or postpone it.

    ## Description
    The simulator behind :func:`hetgym.simulate` (docs/semantics.md), with its decision
    points: events (arrival, completion, grace end), and round boundaries / every event
    when ``round_length`` / ``every_event`` ask for them (as a scheduler's
    ``round_length`` / ``call_when_queue_empty``). At a decision point the agent starts
    waiting jobs one action at a time, each on an explicit set of free GPUs of ONE server
    (the candidates below), and ends the decision point with ``done``: the jobs it did not
    start are postponed to the next one. This is TOPO-AWARE's decision (which NVLink pair,
    socket or spread set a job gets, or TOPO-AWARE-P's postponement): ``topo-aware``,
    ``topo-aware-p``, ``topo-bf`` and ``topo-fcfs`` act in it through
    :class:`~hetgym.envs.decision_base.SchedulerAgent` and give exactly their
    :func:`hetgym.simulate` runs (tests/envs/test_placement.py).

    ## Action Space
    ``Discrete(K*M + 1)``. The window holds the first ``K`` (``window``) waiting jobs in
    queue order; job slot k has up to ``M`` (``max_candidates``) candidates, listed by
    server index, then lexicographically by GPU ids: every W-subset of the free GPUs of
    every GPU server of a type where the job runs (throughput > 0) whose free cores and
    memory hold the W workers. A job that no single GPU server could hold even when empty
    instead gets one candidate per device type where its gang fits now, placed by the
    simulator's placement policy. Action ``k*M + m`` starts slot k's job on candidate m;
    action ``K*M`` is ``done``. ``action_masks()`` (also ``info["action_mask"]``) marks
    the candidates that exist (all feasible) and ``done`` (always); ``env.unwrapped.
    encode(Start)`` / ``decode(action)`` translate. A masked action raises
    (``invalid_action="raise"``) or is taken as ``done``.

    ## Observation Space
    ``Box(-1, 1, (K*8 + K*M*6 + 5,), float32)``, listed by ``env.unwrapped.obs_layout``.
    Job slot (8): present; squash(wait so far, T); squash(best-device duration of the
    remaining work, T); workers / largest server's GPUs; comm (communication share);
    min_utility (TOPO-AWARE-P's threshold); TE class; deadline slack tanh((deadline - now) / T).
    Candidate (6; 0 for an empty one): present; throughput there / the job's best;
    mean pairwise GPU distance level / the server's largest (0 for one GPU); sockets
    spanned / W; free GPUs left on the server / its GPUs; interference the job would suffer,
    ``squash(interference_coeff x sens x sum of the pressure of the other jobs in the
    touched sockets (the whole node with interference_domain="node"), 1)``.
    Global (5): squash(queue, K); squash(running, K); arrived / jobs; done / jobs;
    squash(now, T). ``squash(x, s) = x / (x + s)``; T = ``time_scale``.

    ## Rewards
    Those of ``HetCluster-v0`` (:mod:`hetgym.envs.reward`: named terms in
    ``info["reward_terms"]`` weighted by the scenario objective; the default ``jct``
    returns minus the total JCT in hours). Actions other than ``done`` take no time
    and earn 0.

    ## Starting State
    ``reset(seed)`` draws a window of ``n_jobs`` consecutive jobs (all when None) and
    advances to the first decision point; ``options={"on_start": f}`` calls ``f(view)``
    before the first event.

    ## Episode End
    Terminated when every job has completed; truncated after ``max_steps`` steps, at the
    horizon, when no event is left with jobs unfinished, or at an idle timed instant
    where nothing was decided and nothing is left to arrive (as :func:`hetgym.simulate`
    ends such a run); truncation adds ``HetCluster-v0``'s truncation charge. The final
    step's info has ``episode_metrics`` (:func:`hetgym.metrics.summarize`).
    Once an episode has ended, ``step`` raises ``RuntimeError`` until ``reset``.

    ## Arguments
    ``scenario`` (default ``topo-sim``), ``scenario_kwargs``, ``window`` (K, 8),
    ``max_candidates`` (M; default: the largest candidate list the scenario's jobs can
    have, at most 64), ``n_jobs`` (64; None = all), ``round_length`` (None),
    ``every_event`` (False), ``invalid_action`` (done, raise), ``reward_scale`` (3600),
    ``max_steps`` (default 40 x jobs + 1000), ``render_mode`` (ansi, rgb_array), ``time_scale`` (3600),
    ``skip_forced`` (False; True: decision points where only ``done`` is feasible are passed
    by themselves, for learners: a scheduler acting through :class:`SchedulerAgent` needs
    False, since it is called at every one of its decision points).

    ## Version History
    * v0: initial release.
    """

    JOB_FEATURES = ("present", "wait", "best_duration", "workers", "comm", "min_utility",
                    "te_class", "deadline_slack")
    CAND_FEATURES = ("present", "speed", "distance", "sockets", "free_after", "interference")

    def __init__(self, scenario: str | Scenario = "topo-sim",
                 scenario_kwargs: dict[str, Any] | None = None, window: int = 8,
                 max_candidates: int | None = None, n_jobs: int | None = 64,
                 round_length: float | bool | None = None, every_event: bool = False,
                 invalid_action: str = "done", reward_scale: float = 3600.0,
                 max_steps: int | None = None, render_mode: str | None = None,
                 time_scale: float = SCALE, skip_forced: bool = False) -> None:
        sc = scenario_arg(scenario, scenario_kwargs)
        if max_candidates is None:
            max_candidates = min(64, _largest_list(sc))
        super().__init__(sc, None, window, max_candidates, n_jobs, round_length, every_event,
                         invalid_action, reward_scale, max_steps, render_mode, time_scale,
                         skip_forced)

    # ------------------------------------------------------------------ codec
    def slot_jobs(self) -> list[int]:
        """The first ``window`` waiting jobs in queue order."""
        return self.sim.queued()[: self.window].tolist()

    def _one_server(self, j: int) -> bool:
        """Whether some GPU server where job ``j`` runs holds its whole gang when empty."""
        return self.one_server(j, int(self.sim.jobs.workers[j]))

    def candidates(self, j: int) -> list[Decision]:
        """Class docstring: GPU subsets of one server, or default placements per type."""
        v = self.sim.view
        if not self._one_server(j):
            return default_starts(v, j)
        w = int(v.workers[j])
        ok = np.flatnonzero(holds_gang(v, j, w, v.free_gpus, v.free_cpus, v.free_mem))
        owner = self.sim.ns.gpu_owner
        out: list[Decision] = []
        for n in ok.tolist():
            free = np.flatnonzero(owner[n, : int(v.node_gpus[n])] < 0).tolist()
            for gpus in itertools.combinations(free, w):
                out.append(Start(j, int(v.node_device[n]), Placement.of([n] * w, gpus)))
                if len(out) == self.max_candidates:
                    return out
        return out

    def same(self, cand: Decision, decision: Decision) -> bool:
        """Same job and same (node, GPU) set; a Start without placement matches the
        default-placement candidate of its device type."""
        if not isinstance(decision, Start) or decision.job != cand.job:
            return False
        if decision.placement is None:
            dev = self.sim.device_index(decision.device)
            return not self._one_server(cand.job) and cand.device == dev
        pl = self.sim.copies(int(decision.job), decision.placement)
        return placement_key(pl) == placement_key(cand.placement)

    # --------------------------------------------------------------- features
    def job_features(self, j: int) -> Sequence[float]:
        """``JOB_FEATURES`` (class docstring)."""
        v = self.sim.view
        age, best, slack = self.time_features(j)
        return [1.0, age, best,
                v.workers[j] / max(1, int(v.node_gpus.max())), v.comm[j],
                v.min_utility[j], float(v.job_class[j]), slack]

    def candidate_features(self, j: int, cand: Decision) -> Sequence[float]:
        """``CAND_FEATURES`` (class docstring)."""
        v = self.sim.view
        nodes, gpus = np.asarray(cand.placement.nodes), np.asarray(cand.placement.gpus)
        speed = v.tput[j, cand.device] / max(float(v.tput[j].max()), 1e-12)
        n = int(nodes[0])
        if len(set(nodes.tolist())) > 1 or gpus[0] < 0:  # a default placement (several servers)
            return [1.0, speed, 1.0, 1.0, 0.0, 0.0]
        g_n = int(v.node_gpus[n])
        dist = v.node_dist[n, :g_n, :g_n]
        pairs = [dist[a, b] for a, b in itertools.combinations(gpus.tolist(), 2)]
        dmax = float(dist.max()) or 1.0
        sock = v.node_socket_of_gpu[n, :g_n]
        mine = set(sock[gpus].tolist())
        owner = self.sim.ns.gpu_owner[n, :g_n]
        whole = self.scenario.options.interference_domain == "node"
        near = {int(o) for h, o in enumerate(owner.tolist())
                if o >= 0 and (whole or int(sock[h]) in mine)}
        press = sum(float(v.press[k]) for k in near)
        inter = self.scenario.options.interference_coeff * float(v.sens[j]) * press
        return [1.0, speed, (float(np.mean(pairs)) / dmax) if pairs else 0.0,
                len(mine) / len(gpus), (v.free_gpus[n] - len(gpus)) / g_n, squash(inter, 1.0)]


def _largest_list(sc: Scenario) -> int:
    """The most candidates a job of ``sc`` can have: every W-subset of every GPU server,
    or one default placement per device type."""
    gpus = [(spec.gpus, spec.count) for spec in sc.cluster.nodes if spec.gpus]
    widths = np.unique(sc.workload.frame["workers"].to_numpy())
    most = len(sc.device_types)
    for w in widths.tolist():
        most = max(most, sum(comb(g, int(w)) * count for g, count in gpus))
    return max(1, most)
