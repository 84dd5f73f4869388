"""Read-only view of the simulator's state, as schedulers see it.

Arrays returned by a :class:`View` are read-only views valid until the
simulator moves on; copy what you keep. :meth:`View.capacity` gives a scratch
copy of the free resources on which a scheduler can try placements (with the
simulator's own placement kernel) before proposing them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from hetgym.decisions import Placement, Start
from hetgym.sim import events as E
from hetgym.sim import kernels as K

if TYPE_CHECKING:  # pragma: no cover
    from hetgym.sim.engine import Simulator

__all__ = ["View", "CapacityModel"]


def _ro(a: np.ndarray) -> np.ndarray:
    v = a.view()
    v.flags.writeable = False
    return v


class CapacityModel:
    """Scratch copy of free node resources for trying placements.

    ``place`` uses the simulator's placement kernel and takes the resources
    from this copy only, so that a scheduler can plan several starts at one
    decision point and pass the placements in :class:`~hetgym.decisions.Start`.
    """

    def __init__(self, sim: "Simulator", policy: int | None = None) -> None:
        self._sim = sim
        ns = sim.ns
        self.free_gpus = ns.free_gpus.copy()
        self.free_cpus = ns.free_cpus.copy()
        self.free_mem = ns.free_mem.copy()
        self.gpu_owner = ns.gpu_owner.copy()
        self.policy = sim.policy if policy is None else int(policy)

    def slots(self, job: int, dev: int) -> int:
        """How many workers of ``job`` fit on free ``dev`` capacity."""
        sim = self._sim
        jb, nd = sim.jobs, sim.nodes
        return int(K.total_slots_nb(dev, bool(nd.dev_is_cpu[dev]), jb.cpus_need[job, dev],
                                    jb.mem[job], nd.dev, self.free_gpus, self.free_cpus,
                                    self.free_mem))

    def fits(self, job: int, dev: int) -> bool:
        """Whether the whole gang of ``job`` fits on ``dev`` now (and it can run there)."""
        sim = self._sim
        return sim.jobs.tput[job, dev] > 0 and self.slots(job, dev) >= sim.jobs.workers[job]

    def place(self, job: int, dev: int) -> Placement | None:
        """Find a placement on ``dev``, take it from this copy and return it (or None)."""
        sim = self._sim
        jb, nd = sim.jobs, sim.nodes
        if jb.tput[job, dev] <= 0:
            return None
        w = int(jb.workers[job])
        out_n = np.empty(w, dtype=np.int64)
        out_g = np.empty(w, dtype=np.int64)
        ok = K.place_nb(dev, bool(nd.dev_is_cpu[dev]), w, jb.cpus_need[job, dev], jb.mem[job],
                        self.policy, nd.dev, nd.gpus, nd.dist, self.free_gpus, self.free_cpus,
                        self.free_mem, self.gpu_owner, out_n, out_g)
        if not ok:
            return None
        self.take(job, out_n, out_g)
        return Placement(out_n, out_g)

    def take(self, job: int, nodes: np.ndarray, gpus: np.ndarray) -> None:
        """Take a placement's resources from this copy."""
        sim = self._sim
        K.alloc_nb(job, len(nodes), nodes, gpus, 1, sim.jobs.cpus_need[job], sim.jobs.mem[job],
                   sim.nodes.dev, self.free_gpus, self.free_cpus, self.free_mem, self.gpu_owner)

    def give(self, job: int) -> None:
        """Give back (in this copy) the resources that running ``job`` holds."""
        sim = self._sim
        w = int(sim.jobs.workers[job])
        K.alloc_nb(job, w, sim.js.worker_node[job, :w], sim.js.worker_gpu[job, :w], -1,
                   sim.jobs.cpus_need[job], sim.jobs.mem[job], sim.nodes.dev, self.free_gpus,
                   self.free_cpus, self.free_mem, self.gpu_owner)


class View:
    """What a scheduler may read. Attributes mirror the simulator's arrays.

    Static job arrays (index = job index in workload order): ``arrival``,
    ``user``, ``job_class`` (0 BE, 1 TE), ``workers``, ``work``, ``tput``
    (J x C), ``cpus_need`` (J x C), ``mem``, ``deadline``, ``weight``,
    ``grace``, ``comm``, ``forkable``, ``job_id``. Dynamic: ``status``,
    ``remaining``, ``rate``, ``n_preempt``, ``device``, ``first_start``,
    ``worker_node``, ``worker_gpu``. Nodes: ``node_device``, ``node_gpus``,
    ``node_cpus``, ``node_mem``, ``free_gpus``, ``free_cpus``, ``free_mem``.
    """

    def __init__(self, sim: "Simulator") -> None:
        self._sim = sim
        self._pref: np.ndarray | None = None
        self._holdable: np.ndarray | None = None
        jb, js, nd, ns = sim.jobs, sim.js, sim.nodes, sim.ns
        self.devices: list[str] = list(sim.devices)
        self.options = sim.options
        self.rng: np.random.Generator = sim.rng
        for name in jb._fields:
            setattr(self, name, _ro(getattr(jb, name)))
        for name in ("status", "remaining", "rate", "n_preempt", "n_restart", "device",
                     "first_start", "worker_node", "worker_gpu", "exec_time"):
            setattr(self, name, _ro(getattr(js, name)))
        self.node_device = _ro(nd.dev)
        self.node_gpus = _ro(nd.gpus)
        self.node_cpus = _ro(nd.cpus)
        self.node_mem = _ro(nd.mem)
        self.dev_is_cpu = _ro(nd.dev_is_cpu)
        self.free_gpus = _ro(ns.free_gpus)
        self.free_cpus = _ro(ns.free_cpus)
        self.free_mem = _ro(ns.free_mem)

    @property
    def now(self) -> float:
        """Current simulated time (s)."""
        return float(self._sim.acc[0])

    @property
    def pref(self) -> np.ndarray:
        """``(J, C)`` device indices per job, fastest first, -1 padded where tput is 0."""
        if self._pref is None:
            t = np.where(self.holdable, self._sim.jobs.tput, 0.0)
            order = np.argsort(-t, axis=1, kind="stable")
            ok = np.take_along_axis(t, order, axis=1) > 0
            self._pref = _ro(np.where(ok, order, -1).astype(np.int64))
        return self._pref

    def admit(self, order: np.ndarray, blocking: bool, pref: np.ndarray | None = None,
              cap: CapacityModel | None = None) -> list[Start]:
        """Greedy admission (Numba) of ``order`` on free capacity; see ``admit_nb``.

        Each job takes the first device type of its ``pref`` row (default
        :attr:`pref`, fastest first) with room. Resources are taken from
        ``cap`` (default: a fresh scratch copy). Returns the starts with placements.
        """
        s = self._sim
        cap = cap if cap is not None else CapacityModel(s)
        pref = self.pref if pref is None else pref
        order = np.ascontiguousarray(order, dtype=np.int64)
        n = len(order)
        if n == 0:
            return []
        if s._adm_job.shape[0] < n:
            s._adm_job = np.empty(n, dtype=np.int64)
            s._adm_dev = np.empty(n, dtype=np.int64)
            s._adm_nodes = np.empty((n, s._wmax), dtype=np.int64)
            s._adm_gpus = np.empty((n, s._wmax), dtype=np.int64)
        jb, nd = s.jobs, s.nodes
        k = E.admit_nb(order, pref, blocking, cap.policy, jb.workers, jb.cpus_need, jb.mem, nd.dev,
                       nd.dev_is_cpu, nd.gpus, nd.dist, cap.free_gpus, cap.free_cpus, cap.free_mem,
                       cap.gpu_owner, s._adm_job, s._adm_dev, s._adm_nodes, s._adm_gpus)
        out = []
        for i in range(k):
            j = int(s._adm_job[i])
            w = int(jb.workers[j])
            out.append(Start(j, int(s._adm_dev[i]),
                             Placement(s._adm_nodes[i, :w].copy(), s._adm_gpus[i, :w].copy())))
        return out

    @property
    def n_jobs(self) -> int:
        """Number of jobs in the workload."""
        return self._sim.n_jobs

    @property
    def queue(self) -> np.ndarray:
        """Waiting jobs in queue order (arrival order; preempted jobs at the head)."""
        s = self._sim
        return _ro(s.queue[: s.ctr[1]])

    @property
    def running(self) -> np.ndarray:
        """Jobs holding resources (running or in a grace period), in start order."""
        s = self._sim
        return _ro(s.running[: s.n_running])

    @property
    def user_service(self) -> np.ndarray:
        """Per-user attained service so far (worker-seconds held)."""
        return _ro(self._sim.service)

    @property
    def max_preemptions(self) -> int | None:
        """Per-job preemption limit of the scenario."""
        return self.options.max_preemptions

    def expected_finish(self, job: int) -> float:
        """Projected completion time of a running job (restart delay included; inf if not running)."""
        return float(self._sim.js.finish[job])

    def in_grace(self, job: int) -> bool:
        """Whether ``job`` was preempted and is in its grace period."""
        return int(self._sim.js.status[job]) == 3

    def capacity(self, policy: int | None = None) -> CapacityModel:
        """A scratch copy of free resources (see :class:`CapacityModel`)."""
        return CapacityModel(self._sim, policy)

    @property
    def holdable(self) -> np.ndarray:
        """``(J, C)`` bool: the nodes of each device type, all free, could hold the job's gang.

        A job with throughput on a type that can never hold it (too many workers,
        or a worker too big for any node) cannot run there: :meth:`duration` and
        :meth:`durations` give ``inf`` for it.
        """
        if self._holdable is None:
            s = self._sim
            jb, nd = s.jobs, s.nodes
            tot = np.zeros(jb.tput.shape, dtype=np.int64)
            big = 1 << 30
            for n in range(len(nd.dev)):
                d = int(nd.dev[n])
                per = np.full(len(jb.workers), big, dtype=np.int64)
                if not nd.dev_is_cpu[d]:
                    per[:] = nd.gpus[n]
                c = jb.cpus_need[:, d]
                with np.errstate(divide="ignore", invalid="ignore"):
                    per = np.where(c > 0, np.minimum(per, np.floor(nd.cpus[n] / np.where(c > 0, c, 1.0) + 1e-9)), per)
                    per = np.where(jb.mem > 0, np.minimum(per, np.floor(nd.mem[n] / np.where(jb.mem > 0, jb.mem, 1.0) + 1e-9)), per)
                tot[:, d] += per.astype(np.int64)
            self._holdable = _ro(tot >= jb.workers[:, None])
        return self._holdable

    def duration(self, job: int, dev: int) -> float:
        """Estimated run time of ``job`` from scratch on device ``dev`` (inf if it cannot run
        there: throughput 0, or no node set of that type can hold its gang)."""
        s = self._sim
        t = s.jobs.tput[job, dev]
        if t <= 0 or not self.holdable[job, dev]:
            return float("inf")
        w = s.jobs.workers[job]
        return float(s.jobs.work[job] / (w * t * w ** (s.options.scaling_exponent - 1.0)))

    def durations(self, jobs: np.ndarray, remaining: bool = False) -> np.ndarray:
        """``(len(jobs), C)`` estimated durations (of all work, or what remains); inf where
        the job cannot run (see :attr:`holdable`)."""
        s = self._sim
        jb = s.jobs
        w = jb.workers[jobs].astype(np.float64)
        eff = w ** (s.options.scaling_exponent - 1.0)
        work = s.js.remaining[jobs] if remaining else jb.work[jobs]
        with np.errstate(divide="ignore"):
            d = work[:, None] / (w[:, None] * jb.tput[jobs] * eff[:, None])
        return np.where((jb.tput[jobs] > 0) & self.holdable[jobs], d, np.inf)
