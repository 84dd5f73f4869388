"""The event-driven simulator: a Python facade over the Numba kernels.

One :class:`Simulator` holds the state of one run. It jumps from event to
event (arrival, completion, end of a grace period, round boundary; the end of
a restart delay needs no event since it only shifts the projected finish).
Events at the same instant are handled in the order completions, grace ends,
arrivals, round boundary, then the scheduler gets one decision point.

See docs/semantics.md for the meaning of each mechanism.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from hetgym.decisions import (
    Decision,
    Move,
    Placement,
    Preempt,
    SchedulingError,
    Start,
    Wait,
)
from hetgym.sim import events as E
from hetgym.sim import kernels as K
from hetgym.sim.codes import JobStatus
from hetgym.sim.dispatch import Binder
from hetgym.sim.mirror import mirror
from hetgym.sim.state import (
    ACC_ENERGY,
    ACC_NOW,
    ACC_POWER,
    ACC_WAKE,
    CTR_ARR,
    CTR_DONE,
    CTR_ERR,
    CTR_EV,
    CTR_Q,
    CTR_QHEAD,
    CTR_RUN,
    CTR_SEG,
    Params,
    State,
    build_jobs,
    build_params,
    new_state,
    node_names,
    refill,
)
from hetgym.specs import Scenario

__all__ = ["InvariantError", "Simulator"]

QUEUED, RUNNING, GRACE, DONE = (int(JobStatus.QUEUED), int(JobStatus.RUNNING),
                                int(JobStatus.GRACE), int(JobStatus.DONE))


class InvariantError(AssertionError):
    """A simulation invariant (docs/semantics.md) was violated: a bug, never user error."""


class Simulator:
    """State and mechanics of one simulated run.

    The state is two typed NamedTuples (:mod:`hetgym.sim.state`): ``params``
    (static) and ``state`` (dynamic); the kernels of :mod:`hetgym.sim.events` take
    their structref mirror ``kP``, ``kS`` (:mod:`hetgym.sim.mirror`, the same arrays)
    whole. ``jobs``/``nodes`` and ``js``/``ns`` are the NamedTuples' job and node parts.

    Args:
        scenario: The scenario to simulate.
        seed: Seed of the run's RNG (offered to schedulers as ``view.rng``).
        round_length: Decision points every ``round_length`` seconds besides events
            (``None``: events only).
        check_every_event: Check capacity invariants after every event (slow; tests).
        rows: Simulate only these rows of the workload (an episode window, cut by
            :func:`hetgym.sim.state.cut_window`).
    """

    def __init__(self, scenario: Scenario, seed: int = 0, round_length: float | None = None,
                 check_every_event: bool = False, rows: np.ndarray | None = None) -> None:
        self.scenario = scenario
        self.options = scenario.options
        self.devices: list[str] = scenario.device_types
        self.rows = None if rows is None else np.asarray(rows, dtype=np.int64)
        self.round_length = round_length
        self.params: Params = build_params(scenario, build_jobs(scenario, self.rows), round_length)
        self.state: State = new_state(self.params)
        if self.rows is not None:  # per-user service of a window, indexed by workload-wide user ids
            users = int(scenario.workload.user_ids().max()) + 1
            if users > len(self.state.run.service):
                run = self.state.run._replace(service=np.zeros(users))
                self.state = self.state._replace(run=run)
        self.jobs, self.nodes = self.params.jobs, self.params.nodes
        self.js, self.ns = self.state.job, self.state.node
        self.node_names = node_names(scenario)
        self._rng: np.random.Generator | None = None  # made on first use (see rng)
        self.seed = seed
        self.policy = self.params.opts.policy
        self.n_jobs = len(self.jobs.arrival)
        self.check_every_event = check_every_event
        self.decision_points = 0
        self.stalled = False
        self.last_done = np.empty(0, dtype=np.int64)
        self._bind()
        from hetgym.sim.view import View

        self.view = View(self)

    def reset_window(self, rows: np.ndarray | None, seed: int) -> bool:
        """Start again, in place, on another window of the same size (``rows``) with a new
        seed: the arrays the kernels and the view hold are refilled, not replaced, so the
        same run follows as from ``Simulator(scenario, seed, rows=rows)``. Returns False,
        changing nothing, when the window does not fit the arrays (more workers per job or
        more users than they were sized for): make a new simulator then."""
        rows = None if rows is None else np.asarray(rows, dtype=np.int64)
        if (rows is None) != (self.rows is None) or (rows is not None and len(rows) != self.n_jobs):
            return False
        params = build_params(self.scenario, build_jobs(self.scenario, rows), self.round_length)
        fresh = new_state(params)
        if not refill((self.params, self.state), (params, fresh)):
            return False
        self.begin_window(rows, seed, self.view.__class__)
        return True

    def begin_window(self, rows: np.ndarray | None, seed: int, view_cls: Any) -> None:
        """Set the simulator's own attributes for a new window whose arrays were just
        refilled (by :meth:`reset_window`, or the batched env's compiled reset): rows, run
        seed and generator, counters, and a new view ``view_cls(self)``."""
        self.rows = rows
        self._rng = None
        self.seed = seed
        self.decision_points = 0
        self.stalled = False
        self.last_done = np.empty(0, dtype=np.int64)
        self.view = view_cls(self)

    @property
    def rng(self) -> np.random.Generator:
        """The run's generator, ``np.random.default_rng(seed)``, made on first use (a new
        window of the batched env does not pay for one that its kernels never draw from)."""
        if self._rng is None:
            self._rng = np.random.default_rng(self.seed)
        return self._rng

    @rng.setter
    def rng(self, value: np.random.Generator) -> None:
        self._rng = value

    def _bind(self) -> None:
        """Build the kernels' structref mirror of the state (:mod:`hetgym.sim.mirror`) and
        forget the kernels' entry points (again after an array of the state is replaced);
        each is resolved for the mirror's types on first use, so a run compiles only what
        it calls."""
        self.kernel_state = mirror(self.params, self.state)
        self.kP, self.kS = self.kernel_state.P, self.kernel_state.S
        self._binder = Binder(self.kP, self.kS)
        self._entries: dict[str, Any] = {}

    _UNPICKLED = ("kernel_state", "kP", "kS", "_binder", "_entries")

    def __getstate__(self) -> dict[str, Any]:
        """Pickling and ``copy.deepcopy``: the structref mirror and the bound kernels are left
        out (they hold compiled-code references) and rebuilt over the copied arrays."""
        return {k: v for k, v in self.__dict__.items() if k not in self._UNPICKLED}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._bind()

    def _kernel(self, name: str) -> Any:
        """Entry point of a fused kernel of :mod:`hetgym.sim.events` for this state."""
        e = self._entries.get(name)
        if e is None:
            run = self.state.run
            placed = (0, 1, run.out_node, run.out_gpu)
            lead = {"step_nb": (), "start_nb": placed + (0,), "move_nb": placed,
                    "place_start_nb": (0, 0), "preempt_nb": (0,)}[name]
            e = self._entries[name] = self._binder.entry(getattr(E, name), *lead)
        return e

    # ------------------------------------------------------------- counters
    @property
    def ctr(self) -> np.ndarray:
        """Counters (``hetgym.sim.state.CTR_*``)."""
        return self.state.run.ctr

    @property
    def acc(self) -> np.ndarray:
        """Accumulators (``hetgym.sim.state.ACC_*``)."""
        return self.state.run.acc

    @property
    def service(self) -> np.ndarray:
        """Per-user worker-seconds held so far."""
        return self.state.run.service

    @property
    def busy_time(self) -> np.ndarray:
        """Per device type: busy GPUs (cores for ``cpu``) integrated over time."""
        return self.state.run.busy_time

    @property
    def now(self) -> float:
        """Current simulated time (s)."""
        return float(self.state.run.acc[ACC_NOW])

    @property
    def next_arrival(self) -> int:
        """Index of the next job to arrive (= number of jobs arrived)."""
        return int(self.state.run.ctr[CTR_ARR])

    @property
    def n_queue(self) -> int:
        """Number of waiting jobs."""
        return int(self.state.run.ctr[CTR_Q])

    @property
    def n_running(self) -> int:
        """Number of jobs holding resources."""
        return int(self.state.run.ctr[CTR_RUN])

    @property
    def n_done(self) -> int:
        """Number of completed jobs."""
        return int(self.state.run.ctr[CTR_DONE])

    @property
    def events(self) -> int:
        """Number of event instants processed."""
        return int(self.state.run.ctr[CTR_EV])

    @property
    def energy_j(self) -> float:
        """IT energy used so far (J)."""
        return float(self.state.run.acc[ACC_ENERGY])

    @property
    def active_power(self) -> float:
        """Current active power above idle (W)."""
        return float(self.state.run.acc[ACC_POWER])

    @property
    def finished(self) -> bool:
        """Whether every job has completed."""
        return self.state.run.ctr[CTR_DONE] == self.n_jobs

    def queued(self) -> np.ndarray:
        """The waiting jobs in queue order (a view into the queue buffer, valid until the
        simulator moves on): arrival order, suspended jobs at the head."""
        run = self.state.run
        K.queue_compact_nb(self.kernel_state.run, self.js.qpos)
        h = int(run.ctr[CTR_QHEAD])
        return run.queue[h: h + int(run.ctr[CTR_Q])]

    def running_jobs(self) -> np.ndarray:
        """Jobs holding resources, in start order (a view, valid until the simulator moves on)."""
        return self.state.run.running[: self.n_running]

    # ------------------------------------------------------------------ time
    def next_event_time(self) -> float:
        """Time of the next event (``inf`` if none)."""
        return float(E.next_event_nb(self.kP, self.kS))

    def advance(self) -> bool:
        """Jump to the next event time and process every event there.

        Returns False (and does nothing) if there is no further event or the
        next one lies past the horizon (then time moves to the horizon).
        """
        code, n_d, _n_g = self._kernel("step_nb")(self.kP, self.kS)
        if code == E.STEP_LOG_FULL:
            self.grow_segments()
            code, n_d, _n_g = self._kernel("step_nb")(self.kP, self.kS)
        if code == E.STEP_WORK_LEFT:
            j = int(self.ctr[CTR_ERR])
            raise InvariantError(f"job {j} completes with {self.js.remaining[j]} of "
                                 f"{self.jobs.work[j]} iterations left")
        if code == E.STEP_TIME_BACK:
            raise InvariantError(f"time went back from {self.now}")
        if code == E.STEP_NONE:
            return False
        self.last_done = self.state.run.out_done[:n_d]
        if self.check_every_event:
            self.check_capacity()
        return True

    # ------------------------------------------------------------- decisions
    def apply(self, decisions: Sequence[Decision]) -> None:
        """Carry out decisions in order; raises :class:`SchedulingError` on an invalid one."""
        for d in decisions:
            if isinstance(d, Start):
                self.start(d.job, d.device, d.placement)
            elif isinstance(d, Preempt):
                self.preempt(d.job)
            elif isinstance(d, Move):
                self.move(d.job, d.placement, d.device)
            elif isinstance(d, Wait):
                continue
            else:
                raise SchedulingError(
                    f"unknown decision {d!r}; expected Start, Preempt, Move or Wait")

    def apply_plan(self, pre: np.ndarray, n_pre: int, jobs: np.ndarray, devs: np.ndarray,
                   nodes: np.ndarray, gpus: np.ndarray, n_st: int) -> None:
        """``apply`` of ``Preempt(pre[i])`` for ``i < n_pre``, then ``Start(jobs[k], devs[k],
        Placement(nodes[k, :W], gpus[k, :W]))`` for ``k < n_st`` (``W`` the job's gang size),
        in one compiled call (:func:`hetgym.sim.batch.apply_plan_nb`: the same kernels, the
        same order, the same checks; a refused decision raises the same error as ``apply``).
        Arrays: int64, C-contiguous, ``nodes``/``gpus`` of shape ``(>= n_st, >= W)``."""
        from hetgym.sim.batch import PLAN_OK, apply_plan_nb

        arr = np.ascontiguousarray
        i64 = np.int64
        pre, jobs, devs = arr(pre, dtype=i64), arr(jobs, dtype=i64), arr(devs, dtype=i64)
        nodes, gpus = arr(nodes, dtype=i64), arr(gpus, dtype=i64)
        limit = self.options.max_preemptions
        limit = -1 if limit is None else int(limit)
        if self.ctr[CTR_SEG] + n_pre > self.state.run.seg_i.shape[0]:
            self.grow_segments()
        p0 = s0 = 0
        while True:
            e = self._entries.get("apply_plan_nb")
            if e is None:
                e = self._entries["apply_plan_nb"] = self._binder.entry(
                    apply_plan_nb, pre, 0, 0, jobs, devs, nodes, gpus, 0)
            code, i = e(pre[p0:], n_pre - p0, limit, jobs[s0:], devs[s0:], nodes[s0:],
                        gpus[s0:], n_st - s0, self.kP, self.kS)
            if code == PLAN_OK:
                return
            if i < n_pre - p0:  # refused (or the log is full): apply() would say why
                self.preempt(int(pre[p0 + i]))
                p0 += i + 1
                continue
            k = s0 + i - (n_pre - p0)
            p0 = n_pre
            w = int(self.jobs.workers[jobs[k]])
            self.start(int(jobs[k]), int(devs[k]), Placement(nodes[k, :w], gpus[k, :w]))
            s0 = k + 1

    def device_index(self, device: str | int | None) -> int:
        """Index of a device key or index in this scenario's device types."""
        if isinstance(device, (int, np.integer)):
            if not 0 <= int(device) < len(self.devices):
                raise SchedulingError(f"device index {device} out of range 0..{len(self.devices) - 1}")
            return int(device)
        key = str(device).lower()
        if key not in self.devices:
            raise SchedulingError(f"device {device!r} not in this scenario's {self.devices}")
        return self.devices.index(key)

    _REASONS: ClassVar[dict[int, str]] = {1: "a node index is out of range", 2: "a GPU index is out of range",
                3: "a GPU is busy or used twice", 4: "CPU cores exceeded",
                5: "memory exceeded", 6: "a CPU-node worker has a GPU index",
                8: "a worker is on a device type where the job's throughput is 0"}

    def copies(self, job: int, placement: Any, what: str = "Start") -> Placement | None:
        """Resolve a placement or a list of copy placements (forking, M4) into one flat
        :class:`Placement` (copy c at workers ``[c W, (c + 1) W)``), checking the copy rules:
        each copy a full gang, copies on pairwise distinct nodes, >1 copy only for a
        ``forkable`` job and at most ``max_copies``."""
        if placement is None or isinstance(placement, Placement):
            return placement
        parts = list(placement)
        if not parts:
            raise SchedulingError(f"{what}: job {job} got an empty list of copy placements")
        if len(parts) == 1:
            return parts[0]
        jb = self.jobs
        w = int(jb.workers[job])
        if not jb.forkable[job]:
            raise SchedulingError(f"{what}: job {job} (job_id={jb.job_id[job]}) is not forkable "
                                  f"but was given {len(parts)} copies")
        if jb.min_workers[job] != jb.max_workers[job]:
            raise SchedulingError(f"{what}: job {job} is elastic (min_workers != max_workers); "
                                  "only a fixed gang can be forked")
        limit = int(self.params.opts.max_copies)
        if len(parts) > limit:
            raise SchedulingError(f"{what}: job {job} was given {len(parts)} copies; "
                                  f"max_copies is {limit}")
        seen: set[int] = set()
        for c, p in enumerate(parts):
            if len(p) != w:
                raise SchedulingError(f"{what}: copy {c} of job {job} has {len(p)} workers, "
                                      f"the job has {w}")
            on = set(np.asarray(p.nodes).tolist())
            if on & seen:
                raise SchedulingError(f"{what}: copies of job {job} share node(s) "
                                      f"{sorted(on & seen)}; each copy needs its own nodes")
            seen |= on
        return Placement(np.concatenate([np.asarray(p.nodes, dtype=np.int64) for p in parts]),
                         np.concatenate([np.asarray(p.gpus, dtype=np.int64) for p in parts]))

    def _placement_arrays(self, what: str, job: int, device: str | int | None,
                          placement: Placement | Sequence[Placement], check_device: bool = True
                          ) -> tuple[int, np.ndarray, np.ndarray]:
        """Check an explicit placement's shape (one worker per entry of the job's gang, all on
        ``device`` if given) and return ``(W, nodes, gpus)`` as the kernels take them. A list
        of placements is a forkable job's copies (:meth:`copies`); W is then the gang size
        times the number of copies."""
        jb = self.jobs
        w = int(jb.workers[job])
        lo, hi = int(jb.min_workers[job]), int(jb.max_workers[job])
        if not isinstance(placement, Placement):
            parts = list(placement)
            placement = self.copies(job, parts, what)
            if len(parts) > 1:
                lo = hi = w = len(placement)  # copies checked by copies(): W x copies
        if lo == hi == w and len(placement) != w:
            raise SchedulingError(f"{what}: job {job} has {w} workers, placement has {len(placement)}")
        if not lo <= len(placement) <= hi:
            raise SchedulingError(f"{what}: job {job} takes {lo} to {hi} workers (min_workers, "
                                  f"max_workers), placement has {len(placement)}")
        w = len(placement)
        nodes = np.ascontiguousarray(placement.nodes, dtype=np.int64)
        gpus = np.ascontiguousarray(placement.gpus, dtype=np.int64)
        if device is not None and check_device:
            self._check_device(what, job, self.device_index(device), nodes)
        return w, nodes, gpus

    def _check_device(self, what: str, job: int, dev: int, nodes: np.ndarray) -> None:
        """Raise if a placement whose nodes are all in range is not all on device type ``dev``
        (:func:`~hetgym.sim.events.start_nb` makes the same test for ``Start``)."""
        nd = self.nodes
        inside = len(nodes) == 0 or (nodes.min() >= 0 and nodes.max() < len(nd.dev))
        if inside and not (nd.dev[nodes] == dev).all():
            on = set(nd.dev[nodes].tolist())
            raise SchedulingError(
                f"{what}: job {job} asks for {self.devices[dev]} but its placement is on "
                f"{sorted(self.devices[d] for d in on)} (give device=None for a mixed allocation)")

    def start(self, job: int, device: str | int | None = None,
              placement: Placement | Sequence[Placement] | None = None) -> None:
        """Start a queued job on ``device`` (default placement) or on ``placement``
        (a list of placements = copies of a forkable job, M4)."""
        job = int(job)
        if not 0 <= job < self.n_jobs:
            raise SchedulingError(f"Start: job index {job} out of range 0..{self.n_jobs - 1}")
        js, jb = self.js, self.jobs
        if js.status[job] != QUEUED:
            raise SchedulingError(
                f"Start: job {job} (job_id={jb.job_id[job]}) is "
                f"{JobStatus(js.status[job]).name}, not QUEUED"
            )
        w = int(jb.workers[job])
        if placement is None:
            if device is None:
                raise SchedulingError(f"Start: job {job} needs a device or a placement")
            dev = self.device_index(device)
            if jb.tput[job, dev] <= 0:
                raise SchedulingError(f"Start: job {job} cannot run on {self.devices[dev]} (tput 0)")
            code = self._kernel("place_start_nb")(job, dev, self.kP, self.kS)
            if code == E.START_NO_ROOM:
                raise SchedulingError(
                    f"Start: job {job} ({w} workers, {jb.cpus_need[job, dev]} cores, "
                    f"{jb.mem[job]} GB each) does not fit on free {self.devices[dev]} capacity"
                )
            if code:
                raise SchedulingError(f"Start: job {job} could not start: {self._REASONS[code]}")
            return
        w, nodes, gpus = self._placement_arrays("Start", job, device, placement, False)
        want = -1 if device is None else self.device_index(device)
        code = self._kernel("start_nb")(job, w, nodes, gpus, want, self.kP, self.kS)
        if code == E.START_WRONG_DEVICE:
            self._check_device("Start", job, want, nodes)
        if code:
            raise SchedulingError(f"Start: placement of job {job} is invalid: {self._REASONS[code]}")

    def move(self, job: int, placement: Placement | Sequence[Placement],
             device: str | int | None = None) -> None:
        """Re-allocate a running job (or one in its grace period) to ``placement`` at once
        (see :class:`~hetgym.decisions.Move`; a list of placements = copies, M4)."""
        job = int(job)
        js = self.js
        if not 0 <= job < self.n_jobs or js.status[job] not in (RUNNING, GRACE):
            st = JobStatus(js.status[job]).name if 0 <= job < self.n_jobs else "out of range"
            raise SchedulingError(f"Move: job {job} is {st}, not RUNNING")
        if not isinstance(placement, (Placement, list, tuple)):
            raise SchedulingError(f"Move: job {job} needs a Placement or a list of them, "
                                  f"got {placement!r}")
        w, nodes, gpus = self._placement_arrays("Move", job, device, placement)
        if self.ctr[CTR_SEG] + 1 > self.state.run.seg_i.shape[0]:
            self.grow_segments()
        code = self._kernel("move_nb")(job, w, nodes, gpus, self.kP, self.kS)
        if code:
            raise SchedulingError(f"Move: placement of job {job} is invalid: {self._REASONS[code]}")

    def set_wakeup(self, t: float | None) -> None:
        """Ask for a decision point at time ``t`` (``None``: none). A wake-up is an event
        instant at which nothing but time changes; it is forgotten once reached."""
        if t is None:
            self.acc[ACC_WAKE] = np.inf
            return
        t = float(t)
        if not t > self.now:
            raise SchedulingError(
                f"next_wakeup returned {t!r} at t={self.now!r}; expected a time later than now "
                "or None")
        self.acc[ACC_WAKE] = t

    def preempt(self, job: int) -> None:
        """Preempt a running job: grace period first, or suspend at once if it is 0."""
        job = int(job)
        js = self.js
        if not 0 <= job < self.n_jobs or js.status[job] != RUNNING:
            st = JobStatus(js.status[job]).name if 0 <= job < self.n_jobs else "out of range"
            raise SchedulingError(f"Preempt: job {job} is {st}, not RUNNING")
        limit = self.options.max_preemptions
        if limit is not None and js.n_preempt[job] >= limit:
            raise SchedulingError(
                f"Preempt: job {job} was already preempted {js.n_preempt[job]} times (limit {limit})"
            )
        if self._kernel("preempt_nb")(job, self.kP, self.kS) == E.STEP_LOG_FULL:
            self.grow_segments()
            self._kernel("preempt_nb")(job, self.kP, self.kS)

    def grow_segments(self) -> None:
        """Double the segment log (called when a kernel reports it full)."""
        run = self.state.run
        k = run.seg_i.shape[0]
        need = max(2 * k, int(run.ctr[CTR_SEG]) + self.n_running + 16)
        seg_i = np.zeros((need, run.seg_i.shape[1]), dtype=np.int64)
        seg_f = np.zeros((need, 2))
        seg_i[:k] = run.seg_i
        seg_f[:k] = run.seg_f
        self.state = self.state._replace(run=run._replace(seg_i=seg_i, seg_f=seg_f))
        self._bind()

    @property
    def segment_gpus(self) -> np.ndarray:
        """int64[S]: GPUs held (all copies) by each finished run, in :attr:`segments` order."""
        run = self.state.run
        return run.seg_i[: int(run.ctr[CTR_SEG]), 3].copy()

    @property
    def segments(self) -> list[tuple[int, float, float, int, int]]:
        """Finished runs as ``(job, start, end, device index, first node)``."""
        run = self.state.run
        k = int(run.ctr[CTR_SEG])
        si, sf = run.seg_i[:k], run.seg_f[:k]
        return list(zip(si[:, 0].tolist(), sf[:, 0].tolist(), sf[:, 1].tolist(),
                        si[:, 1].tolist(), si[:, 2].tolist()))

    # ------------------------------------------------------------ invariants
    def check_capacity(self) -> None:
        """No resource over-allocated and the books balance (raises InvariantError)."""
        ns, nd, jb, js = self.ns, self.nodes, self.jobs, self.js
        tol = 1e-6
        if (ns.free_gpus < 0).any() or (ns.free_cpus < -tol).any() or (ns.free_mem < -tol).any():
            raise InvariantError(f"over-allocation at t={self.now}")
        used_g = np.zeros_like(ns.free_gpus)
        used_c = np.zeros_like(ns.free_cpus)
        for j in self.running_jobs().tolist():
            w = int(js.nworkers[j])
            for n, g in zip(js.worker_node[j, :w].tolist(), js.worker_gpu[j, :w].tolist()):
                used_c[n] += jb.cpus_need[j, nd.dev[n]]
                if g >= 0:
                    used_g[n] += 1
                    if ns.gpu_owner[n, g] != j:
                        raise InvariantError(f"GPU {n}:{g} of job {j} owned by {ns.gpu_owner[n, g]}")
        if not np.array_equal(used_g + ns.free_gpus, nd.gpus):
            raise InvariantError(f"GPU books do not balance at t={self.now}")
        if not np.allclose(used_c + ns.free_cpus, nd.cpus, atol=tol):
            raise InvariantError(f"CPU books do not balance at t={self.now}")

    def check_final(self) -> None:
        """End-of-run invariants: every job done exactly once, work conserved, all free."""
        self.check_capacity()
        js = self.js
        done = js.status == DONE
        if int(done.sum()) != self.n_done:
            raise InvariantError("done counter disagrees with job states")
        if self.finished:
            if self.n_running or self.n_queue:
                raise InvariantError("jobs left running or queued after all completed")
            if not np.array_equal(self.ns.free_gpus, self.nodes.gpus):
                raise InvariantError("GPUs not all free at the end")
        if (js.end[done] < js.first_start[done] - 1e-9).any():
            raise InvariantError("a job ended before it started")
        if (js.first_start[done] < self.jobs.arrival[done] - 1e-9).any():
            raise InvariantError("a job started before it arrived")

    @property
    def energy_kwh(self) -> float:
        """Energy used so far (kWh), IT power only (PUE applied in the cost)."""
        return self.energy_j / 3.6e6
