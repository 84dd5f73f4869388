"""Per-candidate view of the observations of the four envs (what a scoring policy reads).

Every action of an env but the last (``wait`` / ``done``) carries out one *candidate*: a
(job, device type) start or a preemption in ``HetCluster-v0``, a (job, placement) start in
``HetClusterPlacement-v0``, a start, move or preemption of a job in
``HetClusterElastic-v0``, a worker of a job on one GPU, a preemption or a commit in
``HetClusterRounds-v0``. :func:`candidate_table` says, for each candidate, which entries
of the flat observation hold its features: the same ``F`` features, in the same order,
for every candidate of an env, whatever its window, queue length and cluster size. A
policy gathers them with one index (``obs_ext = [obs, 0, 1]``; ``obs_ext[index]`` is
``(A - 1, F)``), scores each candidate with one shared network and pools them into a
context (:mod:`agents.sb3.scoring`).

=====================  ========================================================
env                    features of one candidate (``names``)
=====================  ========================================================
HetCluster-v0          kind (start, preempt); the job's features but ``present``
                       (wait, best duration, workers, TE class, deadline slack);
                       the job's duration on the candidate's device type (and its
                       speed-up there with ``observation="scaled"``, else 0); the
                       device type's 5 features; the running job's remaining
                       time, workers, preemptions (a preemption; 0 for a start)
Placement-v0           the job slot's features but ``present``; the candidate's
                       features but ``present``
Elastic-v0             the job slot's features but ``present``; the candidate's
                       features but ``present``
Rounds-v0              kind (worker, preempt, commit); the job slot's base
                       features but ``present``; the GPU's features but
                       ``exists`` and the type one-hot (0 for preempt / commit);
                       the job's speed on the GPU's device type
=====================  ========================================================

A candidate is *present* when both entries of its ``present`` row are above 0.5 (a
filled slot, an existing candidate or GPU); padding (an empty slot, a missing candidate)
is absent. ``context`` lists the global features.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

__all__ = ["CandidateTable", "candidate_table"]


class CandidateTable(NamedTuple):
    """Where each candidate's features lie in an env's flat observation.

    Index ``D`` (the observation's length) stands for a constant 0, ``D + 1`` for a
    constant 1: gather from ``concatenate([obs, [0, 1]])``.
    """

    index: np.ndarray     # int64[A - 1, F], observation entries of each candidate's features
    present: np.ndarray   # int64[A - 1, 2], both entries > 0.5: the candidate exists
    context: np.ndarray   # int64[G], the global features
    names: tuple[str, ...]  # the F feature names
    obs_dim: int          # D

    def to_dict(self) -> dict[str, Any]:
        """Plain lists (what a saved policy keeps in its ``policy_kwargs``)."""
        return {"index": self.index.tolist(), "present": self.present.tolist(),
                "context": self.context.tolist(), "names": list(self.names),
                "obs_dim": int(self.obs_dim)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CandidateTable":
        """Inverse of :meth:`to_dict`."""
        return cls(np.asarray(d["index"], dtype=np.int64).reshape(-1, len(d["names"])),
                   np.asarray(d["present"], dtype=np.int64).reshape(-1, 2),
                   np.asarray(d["context"], dtype=np.int64), tuple(d["names"]), int(d["obs_dim"]))


def _by_slot(layout: list[Any], block: str) -> dict[int, dict[str, int]]:
    out: dict[int, dict[str, int]] = {}
    for f in layout:
        if f.block == block:
            out.setdefault(f.slot, {})[f.name] = f.index
    return out


def candidate_table(env: Any) -> CandidateTable:
    """The :class:`CandidateTable` of ``env`` (any of the four envs, wrapped or not)."""
    from hetgym.envs.decision_base import DecisionEnv
    from hetgym.envs.elastic import HetClusterElasticEnv
    from hetgym.envs.hetcluster import HetClusterEnv
    from hetgym.envs.placement import HetClusterPlacementEnv
    from hetgym.envs.rounds import HetClusterRoundsEnv

    u = getattr(env, "unwrapped", env)
    lay = list(u.obs_layout)
    if isinstance(u, HetClusterEnv):
        return _hetcluster(u, lay)
    if isinstance(u, HetClusterRoundsEnv):
        return _rounds(u, lay)
    if isinstance(u, (HetClusterPlacementEnv, HetClusterElasticEnv)) or isinstance(u, DecisionEnv):
        return _slot_candidates(u, lay)
    raise TypeError(f"candidate_table: {type(u).__name__} is none of the hetgym envs")


def _finish(rows: list[list[int]], present: list[list[int]], lay: list[Any],
            names: list[str]) -> CandidateTable:
    ctx = [f.index for f in lay if f.block == "global"]
    return CandidateTable(np.asarray(rows, dtype=np.int64).reshape(-1, len(names)),
                          np.asarray(present, dtype=np.int64).reshape(-1, 2),
                          np.asarray(ctx, dtype=np.int64), tuple(names), len(lay))


def _hetcluster(u: Any, lay: list[Any]) -> CandidateTable:
    zero, one = len(lay), len(lay) + 1
    jobs, devs, runs = _by_slot(lay, "job"), _by_slot(lay, "device"), _by_slot(lay, "running")
    job_f = ["wait", "best_duration", "workers", "te_class", "deadline_slack"]
    dev_f = [n for n in devs[0]] if devs else []
    run_f = ["remaining_time", "workers", "preemptions"]
    names = (["start", "preempt"] + [f"job_{n}" for n in job_f] + ["duration", "speedup"]
             + [f"device_{n}" for n in dev_f] + [f"running_{n}" for n in run_f])
    rows, present = [], []
    for k in range(u.window):
        j = jobs[k]
        for c, d in enumerate(u.devices):
            rows.append([one, zero] + [j[n] for n in job_f]
                        + [j[f"duration_{d}"], j.get(f"speedup_{d}", zero)]
                        + [devs[c][n] for n in dev_f] + [zero] * len(run_f))
            present.append([j["present"], one])
    for r in range(u.run_window):
        rr = runs[r]
        rows.append([zero, one] + [zero] * len(job_f) + [zero, zero] + [zero] * len(dev_f)
                    + [rr[n] for n in run_f])
        present.append([rr["present"], one])
    return _finish(rows, present, lay, names)


def _slot_candidates(u: Any, lay: list[Any]) -> CandidateTable:
    jobs, cands = _by_slot(lay, "job"), _by_slot(lay, "candidate")
    job_f = [n for n in u.JOB_FEATURES if n != "present"]
    cand_f = [n for n in u.CAND_FEATURES if n != "present"]
    names = [f"job_{n}" for n in job_f] + [f"cand_{n}" for n in cand_f]
    rows, present = [], []
    m = u.max_candidates
    for k in range(u.window):
        for i in range(m):
            c = cands[k * m + i]
            rows.append([jobs[k][n] for n in job_f] + [c[n] for n in cand_f])
            present.append([jobs[k]["present"], c["present"]])
    return _finish(rows, present, lay, names)


def _rounds(u: Any, lay: list[Any]) -> CandidateTable:
    zero, one = len(lay), len(lay) + 1
    jobs, gpus = _by_slot(lay, "job"), _by_slot(lay, "gpu")
    job_f = [n for n in u.JOB_BASE if n != "present"]
    gpu_f = [n for n in u.GPU_BASE if n != "exists"]
    names = (["worker", "preempt", "commit"] + [f"job_{n}" for n in job_f]
             + [f"gpu_{n}" for n in gpu_f] + ["speed"])
    node_dev = [spec.device for spec in u.scenario.cluster.nodes for _ in range(spec.count)]
    rows, present = [], []
    for k in range(u.window):
        j = jobs[k]
        base = [j[n] for n in job_f]
        for s in range(u.n_gpu_actions):
            g = gpus[s]
            dev = node_dev[s // u.G]
            rows.append([one, zero, zero] + base + [g[n] for n in gpu_f] + [j[f"speed_{dev}"]])
            present.append([j["present"], g["exists"]])
        for kind in ((zero, one, zero), (zero, zero, one)):
            rows.append(list(kind) + base + [zero] * len(gpu_f) + [zero])
            present.append([j["present"], one])
    return _finish(rows, present, lay, names)

