"""Read-only view of the simulator's state, as schedulers see it.

Arrays returned by a :class:`View` are read-only views valid until the
simulator moves on; copy what you keep. :meth:`View.capacity` gives a scratch
copy of the free resources on which a scheduler can try placements (with the
simulator's own placement kernel) before proposing them. :attr:`View.kernel` (a
:class:`KernelView`) is the published interface of a scheduler's compiled fast path: the
records the simulator's kernels take, to read, and the simulator's one way of carrying
out decisions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from hetgym._internals.dispatch import entry
from hetgym.decisions import Decision, Placement, Start
from hetgym.sim.codes import GRACE, RUNNING
from hetgym.sim.events.start import admit_nb
from hetgym.sim.kernels.fit import fits_nb, total_slots_nb
from hetgym.sim.kernels.interference import interfered_rate_nb
from hetgym.sim.kernels.place import alloc_jobs_nb, alloc_nb, place_nb
from hetgym.sim.rules import EPS, duration_nb, scaled_rate
from hetgym.sim.state.layout import NodeState

if TYPE_CHECKING:  # pragma: no cover
    from hetgym.sim.engine import Simulator
    from hetgym.specs import Scenario

__all__ = ["View", "CapacityModel", "KernelView"]


def _ro(a: np.ndarray) -> np.ndarray:
    v = a.view()
    v.flags.writeable = False
    return v


def _copy_state(ns: NodeState) -> NodeState:
    return NodeState(*(a.copy() for a in ns))


def _kernel_parts(sim: Simulator) -> tuple:
    """``(jobs, nodes, js)`` of the simulator's kernel mirror (:mod:`hetgym.sim.state.mirror`)."""
    k = sim.kernel_state
    return k.jobs, k.nodes, k.js


class CapacityModel:
    """Scratch copy of free node resources for trying placements.

    ``place`` uses the simulator's placement kernel and takes the resources
    from this copy only, so that a scheduler can plan several starts at one
    decision point and pass the placements in :class:`~hetgym.decisions.Start`.
    ``ns`` is the copy (a :class:`~hetgym.sim.state.layout.NodeState`, with the per-type
    summary ``free_dev`` that makes :meth:`fits` O(1) when a type is full).
    """

    def __init__(self, sim: "Simulator", policy: int | None = None) -> None:
        self._sim = sim
        self.ns = _copy_state(sim.ns)
        self.policy = sim.policy if policy is None else int(policy)
        self._scr = sim.state.run.scr_i

    free_gpus = property(lambda self: self.ns.free_gpus, doc="int64[N] free GPUs per node")
    free_cpus = property(lambda self: self.ns.free_cpus, doc="float64[N] free cores per node")
    free_mem = property(lambda self: self.ns.free_mem, doc="float64[N] free memory per node")
    gpu_owner = property(lambda self: self.ns.gpu_owner, doc="int64[N, G] job per GPU, -1 free")
    free_dev = property(lambda self: self.ns.free_dev,
                        doc="float64[C] free GPUs (cores for cpu) per device type")

    def slots(self, job: int, dev: int) -> int:
        """How many workers of ``job`` fit on free ``dev`` capacity."""
        jb = self._sim.jobs
        return int(total_slots_nb(dev, jb.cpus_need[job, dev], jb.mem[job],
                                    self._sim.kernel_state.nodes, self.ns))

    def fits(self, job: int, dev: int) -> bool:
        """Whether the whole gang of ``job`` fits on ``dev`` now (and it can run there)."""
        jb = self._sim.jobs
        return bool(jb.tput[job, dev] > 0 and fits_nb(dev, jb.workers[job], jb.cpus_need[job, dev],
                                                        jb.mem[job], self._sim.kernel_state.nodes,
                                                        self.ns))

    def place(self, job: int, dev: int) -> Placement | None:
        """Find a placement on ``dev``, take it from this copy and return it (or None)."""
        sim = self._sim
        jb = sim.jobs
        if jb.tput[job, dev] <= 0:
            return None
        w = int(jb.workers[job])
        out_n = np.empty(w, dtype=np.int64)
        out_g = np.empty(w, dtype=np.int64)
        ok = place_nb(dev, w, jb.cpus_need[job, dev], jb.mem[job], self.policy,
                        sim.kernel_state.nodes, self.ns, self._scr, out_n, out_g)
        if not ok:
            return None
        self.take(job, out_n, out_g)
        return Placement(out_n, out_g)

    def take(self, job: int, nodes: np.ndarray, gpus: np.ndarray) -> None:
        """Take a placement's resources from this copy."""
        jb = self._sim.jobs
        alloc_nb(job, len(nodes), np.asarray(nodes, dtype=np.int64),
                   np.asarray(gpus, dtype=np.int64), 1, jb.cpus_need[job], jb.mem[job],
                   self._sim.kernel_state.nodes, self.ns)

    def give(self, job: int) -> None:
        """Give back (in this copy) the resources that running ``job`` holds."""
        sim = self._sim
        w = int(sim.js.nworkers[job])
        alloc_nb(job, w, sim.js.worker_node[job, :w], sim.js.worker_gpu[job, :w], -1,
                   sim.jobs.cpus_need[job], sim.jobs.mem[job], sim.kernel_state.nodes, self.ns)

    def give_many(self, jobs: np.ndarray) -> None:
        """:meth:`give` for every running job in ``jobs``, in order (one kernel call)."""
        sim = self._sim
        alloc_jobs_nb(np.ascontiguousarray(jobs, dtype=np.int64), -1, *_kernel_parts(sim), self.ns)

    def take_many(self, jobs: np.ndarray) -> None:
        """Take in this copy what the running ``jobs`` hold now (their current placements)."""
        sim = self._sim
        alloc_jobs_nb(np.ascontiguousarray(jobs, dtype=np.int64), 1, *_kernel_parts(sim), self.ns)

    def copy(self) -> "CapacityModel":
        """An independent copy of this scratch state."""
        out = CapacityModel.__new__(CapacityModel)
        out._sim, out.policy, out._scr = self._sim, self.policy, self._scr
        out.ns = _copy_state(self.ns)
        return out


class KernelView:
    """The simulator's records as its kernels take them, for schedulers' compiled fast paths.

    A fast path (a scheduler's Numba kernel, or its ``decide_and_apply``, see
    :class:`hetgym.decisions.Cadence`) passes these objects to compiled code that reads
    them: the same arrays as the simulator's, not copies (a copy would cost a decision
    point what the fast path saves, and a read-only array is another Numba type), so
    they are read-only by contract, valid until the simulator moves on. A fast path
    writes only its own arrays (copies, scratch such as :attr:`scratch`, outputs) and
    acts on the simulator through :meth:`apply` / :meth:`apply_plan`, the simulator's
    own checks and kernels. ``View.kernel`` gives the view's one instance.

    Attributes (read on each access, so they follow a simulator that rebinds its state):
        params: :class:`~hetgym.sim.state.layout.Params`, the static arrays (``jobs``, ``nodes``,
            ``opts``).
        state: :class:`~hetgym.sim.state.layout.State`, the dynamic arrays (``job``, ``node``,
            ``run``).
        jobs, nodes: ``params.jobs`` / ``params.nodes``.
        node_state: ``state.node``, the free capacity now
            (:class:`~hetgym.sim.state.layout.NodeState`).
        mirror: The kernels' structref mirror of ``params`` and ``state``
            (:class:`hetgym.sim.state.mirror.Mirror`: ``P``, ``S``, ``nodes``, ``ns``, ``run``,
            ``jobs``, ``js``), for kernels of :mod:`hetgym.sim.fastpath` that take them.
        P, S: ``mirror.P`` / ``mirror.S``.
        scratch: int64 scratch of the placement kernels (``state.run.scr_i``; written by
            every placement call, never read across calls).
        policy: The scenario's placement policy code
            (:class:`~hetgym.sim.codes.PlacementPolicy`).
        run_slots: Length of the running-job list (at most this many jobs run at once).
    """

    __slots__ = ("_sim",)

    def __init__(self, sim: "Simulator") -> None:
        self._sim = sim

    params = property(lambda self: self._sim.params)
    state = property(lambda self: self._sim.state)
    jobs = property(lambda self: self._sim.jobs)
    nodes = property(lambda self: self._sim.nodes)
    node_state = property(lambda self: self._sim.ns)
    mirror = property(lambda self: self._sim.kernel_state)
    P = property(lambda self: self._sim.kP)
    S = property(lambda self: self._sim.kS)
    scratch = property(lambda self: self._sim.state.run.scr_i)
    policy = property(lambda self: int(self._sim.policy))
    run_slots = property(lambda self: len(self._sim.state.run.running))

    def apply(self, decisions: Sequence[Decision]) -> None:
        """Carry out ``decisions`` in order (:meth:`Simulator.apply
        <hetgym.sim.engine.Simulator.apply>`): what a fast path does with the decisions that
        ``decide`` would return."""
        self._sim.apply(decisions)

    def apply_plan(self, pre: np.ndarray, n_pre: int, jobs: np.ndarray, devs: np.ndarray,
                   nodes: np.ndarray, gpus: np.ndarray, n_st: int) -> None:
        """:meth:`apply` of ``Preempt(pre[i])`` for ``i < n_pre``, then the starts ``(jobs[k],
        devs[k], nodes[k, :W], gpus[k, :W])`` for ``k < n_st``, given as arrays
        (:meth:`Simulator.apply_plan <hetgym.sim.engine.Simulator.apply_plan>`: one compiled
        call, the same checks and errors)."""
        self._sim.apply_plan(pre, n_pre, jobs, devs, nodes, gpus, n_st)


class View:
    """What a scheduler may read. Attributes mirror the simulator's arrays.

    Static job arrays (index = job index in workload order): ``arrival``,
    ``user``, ``job_class`` (0 BE, 1 TE), ``workers``, ``work``, ``tput``
    (J x C), ``cpus_need`` (J x C), ``mem``, ``deadline``, ``weight``,
    ``grace``, ``comm``, ``forkable``, ``job_id``, ``holdable`` (J x C). Dynamic:
    ``status``, ``remaining``, ``rate``, ``n_preempt``, ``n_restart``, ``device``,
    ``first_start``, ``worker_node``, ``worker_gpu``, ``exec_time``, ``nworkers`` (gang size
    of the current/last run, all copies; elastic jobs: ``min_workers``/``max_workers``,
    ``scale_exp``), ``n_copies`` (copies of the current/last run of a forked job, copy c
    in worker slots ``[c W, (c + 1) W)``; 1 otherwise). Nodes:
    ``node_device``, ``node_gpus``, ``node_cpus``, ``node_mem``, ``node_idle_w`` and
    ``node_gpu_w`` (power model, W), ``node_dist`` (GPU distance matrices, 0-padded),
    ``node_socket_of_gpu`` (-1 padded), ``free_gpus``,
    ``free_cpus``, ``free_mem``, and ``free_dev`` (per device type: free GPUs, or
    free cores for ``cpu``).
    """

    def __init__(self, sim: "Simulator") -> None:
        self._sim = sim
        self._pref: np.ndarray | None = None
        self._admit = None
        self._kernel: KernelView | None = None
        jb, js, nd, ns = sim.jobs, sim.js, sim.nodes, sim.ns
        self.devices: list[str] = list(sim.devices)
        self.options = sim.options
        self.rng: np.random.Generator = sim.rng
        for name in jb._fields:
            setattr(self, name, _ro(getattr(jb, name)))
        for name in ("status", "remaining", "rate", "n_preempt", "n_restart", "device",
                     "first_start", "worker_node", "worker_gpu", "exec_time", "run_start",
                     "nworkers", "n_copies"):
            setattr(self, name, _ro(getattr(js, name)))
        self.node_device = _ro(nd.dev)
        self.node_gpus = _ro(nd.gpus)
        self.node_cpus = _ro(nd.cpus)
        self.node_mem = _ro(nd.mem)
        self.node_idle_w = _ro(nd.idle_w)
        self.node_gpu_w = _ro(nd.gpu_w)
        self.node_dist = _ro(nd.dist)
        self.dev_is_cpu = _ro(nd.dev_is_cpu)
        self.free_gpus = _ro(ns.free_gpus)
        self.free_cpus = _ro(ns.free_cpus)
        self.free_mem = _ro(ns.free_mem)
        self.free_dev = _ro(ns.free_dev)
        self.node_socket_of_gpu = _ro(nd.socket)
        self.node_sockets = _ro(nd.sockets)
        self.restart_delay = float(sim.params.opts.restart_delay)
        self._type_ids: np.ndarray | None = None
        w = sim.js.worker_node.shape[1]
        self._adm = (np.empty(0, np.int64), np.empty(0, np.int64), np.empty((0, w), np.int64),
                     np.empty((0, w), np.int64))

    @property
    def now(self) -> float:
        """Current simulated time (s)."""
        return self._sim.now

    @property
    def job_type_id(self) -> np.ndarray:
        """int64[J]: dense ids of the workload's ``job_type`` column (first appearance order)."""
        if self._type_ids is None:
            _, first, inv = np.unique(self._sim.jobs.itype, return_index=True, return_inverse=True)
            rank = np.empty(len(first), dtype=np.int64)
            rank[np.argsort(first, kind="stable")] = np.arange(len(first))
            self._type_ids = _ro(rank[inv].astype(np.int64))
        return self._type_ids

    def attained_service(self, job: int | None = None) -> float | np.ndarray:
        """Worker-seconds (GPU-seconds on GPUs) held so far, the current run included: for
        one ``job`` a float, else float64[J] (Tiresias' ``executed_time x num_gpu``)."""
        s = self._sim
        js = s.js
        if job is not None:
            out = js.attained[job]
            if js.status[job] == RUNNING or js.status[job] == GRACE:
                out = out + (s.now - np.nan_to_num(js.run_start[job])) * js.nworkers[job]
            return float(out)
        # the held time added to the live jobs only (the others' attained as it is)
        live = np.flatnonzero((js.status == RUNNING) | (js.status == GRACE))
        out = js.attained.copy()
        out[live] += (s.now - np.nan_to_num(js.run_start[live])) * js.nworkers[live]
        return out

    @property
    def at_round_boundary(self) -> bool:
        """Whether now is a round boundary (a multiple of the round length, within 1e-9 of a
        round); False when the scheduler has no rounds."""
        L = self._sim.params.opts.round_len
        if L <= 0:
            return False
        k = round(self.now / L)
        return abs(self.now - k * L) <= EPS * L

    @property
    def round_index(self) -> int:
        """Index of the round under way (``floor(now / L)``, boundaries within 1e-9 of a round
        count as the new round); -1 when the scheduler has no rounds."""
        L = self._sim.params.opts.round_len
        if L <= 0:
            return -1
        k = round(self.now / L)
        return int(k) if abs(self.now - k * L) <= EPS * L else int(self.now // L)

    def jobs_on_node(self, node: int) -> np.ndarray:
        """Jobs holding at least one worker on ``node`` (in start order)."""
        s = self._sim
        run = s.running_jobs()
        if len(run) == 0:
            return run
        w = s.js.nworkers[run]
        wn = s.js.worker_node[run]
        mask = (wn == int(node)) & (np.arange(wn.shape[1])[None, :] < w[:, None])
        return run[mask.any(axis=1)]

    def rate_of(self, job: int, placement: Placement | Sequence[Placement]) -> float:
        """Iterations/s that ``job`` would make on ``placement`` (the engine's own rate
        function: slowest worker, scaling, topology, and interference with the jobs
        holding GPUs now, the job itself left out); 0 if a worker's throughput is 0.
        A list of placements = copies of a forked job: the sum of their rates
        (docs/semantics.md, *Forking*)."""
        if not isinstance(placement, Placement):
            return float(sum(self.rate_of(job, p) for p in placement))
        s = self._sim
        n = np.ascontiguousarray(placement.nodes, dtype=np.int64)
        g = np.ascontiguousarray(placement.gpus, dtype=np.int64)
        if len(n) == 0 or len(g) != len(n):
            raise ValueError(f"rate_of: job {job} needs a placement with one (node, GPU) per "
                             f"worker, got {len(n)} nodes and {len(g)} GPUs")
        nd = s.nodes
        if n.min() < 0 or n.max() >= len(nd.dev) or (g >= nd.gpus[n]).any() or (g < -1).any():
            raise ValueError(f"rate_of: placement of job {job} names a node or GPU out of range")
        return float(interfered_rate_nb(int(job), len(n), n, g, s.kP, s.kernel_state.ns))

    @property
    def pref(self) -> np.ndarray:
        """``(J, C)`` device indices per job, fastest first, -1 padded where it cannot run."""
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
        n = len(order)
        if n == 0:
            return []
        cap = cap if cap is not None else CapacityModel(s)
        pref = self.pref if pref is None else pref
        order = np.ascontiguousarray(order, dtype=np.int64)
        if self._adm[0].shape[0] < n:
            w = self._adm[2].shape[1]
            m = max(n, 2 * self._adm[0].shape[0])
            self._adm = (np.empty(m, np.int64), np.empty(m, np.int64), np.empty((m, w), np.int64),
                         np.empty((m, w), np.int64))
        a_job, a_dev, a_nodes, a_gpus = self._adm
        args = (order, pref, bool(blocking), int(cap.policy), s.kP, cap.ns, s.state.run.scr_i,
                a_job, a_dev, a_nodes, a_gpus)
        if pref is self._pref and type(cap) is CapacityModel:
            # the common case: every argument has the types of the first call (order is an
            # int64 C array, cap.ns copies of the node state), so its entry point is reused
            if self._admit is None:
                self._admit = entry(admit_nb, *args)
            k = self._admit(*args)
        else:
            k = entry(admit_nb, *args)(*args)
        out = []
        workers = s.jobs.workers
        for i in range(k):
            j = int(a_job[i])
            w = int(workers[j])
            out.append(Start(j, int(a_dev[i]), Placement(a_nodes[i, :w].copy(), a_gpus[i, :w].copy())))
        return out

    @property
    def kernel(self) -> KernelView:
        """The records the simulator's kernels take and its way of carrying out decisions,
        for a scheduler's compiled fast path (:class:`KernelView`; read-only by contract)."""
        k = self._kernel
        if k is None:
            k = self._kernel = KernelView(self._sim)
        return k

    @property
    def scenario(self) -> "Scenario":
        """The scenario simulated."""
        return self._sim.scenario

    @property
    def n_queue(self) -> int:
        """Number of jobs waiting in the simulator (``len(queue)`` of this class, without
        building the array)."""
        return int(self._sim.n_queue)

    @property
    def simulator(self) -> "Simulator":
        """The simulator behind this view, for the code of :mod:`hetgym` that drives it
        (:meth:`HetClusterEnv.attach_view
        <hetgym.envs.hetcluster.HetClusterEnv.attach_view>`). Schedulers act through
        decisions, and their fast paths through :attr:`kernel`."""
        return self._sim

    @property
    def n_jobs(self) -> int:
        """Number of jobs in the workload."""
        return self._sim.n_jobs

    @property
    def queue(self) -> np.ndarray:
        """Waiting jobs in queue order (arrival order; preempted jobs at the head)."""
        return _ro(self._sim.queued())

    @property
    def running(self) -> np.ndarray:
        """Jobs holding resources (running or in a grace period), in start order."""
        return _ro(self._sim.running_jobs())

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
        return int(self._sim.js.status[job]) == GRACE

    def capacity(self, policy: int | None = None) -> CapacityModel:
        """A scratch copy of free resources (see :class:`CapacityModel`)."""
        return CapacityModel(self._sim, policy)

    def duration(self, job: int, dev: int, g: int | None = None) -> float:
        """Estimated run time of ``job`` from scratch on device ``dev`` (inf if it cannot run
        there: throughput 0, or no node set of that type can hold its gang, see ``holdable``).

        ``g``: gang size (elastic jobs, ``min_workers..max_workers``; default ``workers``),
        at the job's own scaling exponent (``g * tput * g ** (e_j - 1)``)."""
        jb = self._sim.jobs
        if not jb.holdable[job, dev]:
            return float("inf")
        if g is None:
            return float(duration_nb(jb.work[job], jb.workers[job], jb.tput[job, dev],
                                       jb.scale_exp[job]))
        if not jb.min_workers[job] <= g <= jb.max_workers[job]:
            raise ValueError(f"duration: job {job} takes {jb.min_workers[job]} to "
                             f"{jb.max_workers[job]} workers, got g={g}")
        return float(duration_nb(jb.work[job], int(g), jb.tput[job, dev], jb.scale_exp[job]))

    def durations(self, jobs: np.ndarray, remaining: bool = False) -> np.ndarray:
        """``(len(jobs), C)`` estimated durations (of all work, or what remains); inf where
        the job cannot run (see ``holdable``)."""
        s = self._sim
        jb = s.jobs
        w = jb.workers[jobs].astype(np.float64)
        work = s.js.remaining[jobs] if remaining else jb.work[jobs]
        with np.errstate(divide="ignore"):
            d = work[:, None] / scaled_rate(w[:, None], jb.tput[jobs], jb.scale_exp[jobs][:, None])
        return np.where((jb.tput[jobs] > 0) & jb.holdable[jobs], d, np.inf)
