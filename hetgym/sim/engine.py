"""The event-driven simulator: a Python facade over the Numba kernels.

One :class:`Simulator` holds the state of one run. It jumps from event to
event (arrival, completion, end of a grace period, round boundary; the end of
a restart delay needs no event since it only shifts the projected finish).
Events at the same instant are handled in the order completions, grace ends,
arrivals, round boundary, then the scheduler gets one decision point.

See docs/semantics.md for the meaning of each mechanism.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hetgym._internals.dispatch import Binder
from hetgym.sim.codes import STEP_LOG_FULL, STEP_NONE, STEP_TIME_BACK, STEP_WORK_LEFT, JobStatus
from hetgym.sim.engine_decisions import SimulatorDecisions
from hetgym.sim.events.release import preempt_nb
from hetgym.sim.events.start import move_nb, place_start_nb, start_nb
from hetgym.sim.events.step import next_event_nb, step_nb
from hetgym.sim.kernels.queue import queue_compact_nb
from hetgym.sim.rules import EPS
from hetgym.sim.state.build import build_params, min_units, new_state, refill
from hetgym.sim.state.jobs import build_jobs
from hetgym.sim.state.layout import (
    ACC_ENERGY,
    ACC_NOW,
    ACC_POWER,
    ACC_ROUND,
    ACC_WAKE,
    CTR_ARR,
    CTR_DONE,
    CTR_ERR,
    CTR_EV,
    CTR_Q,
    CTR_QHEAD,
    CTR_RUN,
    CTR_SEG,
    JobArrays,
    Params,
    State,
)
from hetgym.sim.state.mirror import mirror
from hetgym.sim.state.nodes import node_names
from hetgym.specs import Scenario

__all__ = ["InvariantError", "Simulator"]

QUEUED, RUNNING, GRACE, DONE = (int(JobStatus.QUEUED), int(JobStatus.RUNNING),
                                int(JobStatus.GRACE), int(JobStatus.DONE))


class InvariantError(AssertionError):
    """A simulation invariant (docs/semantics.md) was violated: a bug, never user error."""


class Simulator(SimulatorDecisions):
    """State and mechanics of one simulated run.

    The state is two typed NamedTuples (:mod:`hetgym.sim.state`): ``params``
    (static) and ``state`` (dynamic); the kernels of :mod:`hetgym.sim.events` take
    their structref mirror ``kP``, ``kS`` (:mod:`hetgym.sim.state.mirror`, the same arrays)
    whole. ``jobs``/``nodes`` and ``js``/``ns`` are the NamedTuples' job and node parts.

    Args:
        scenario: The scenario to simulate.
        seed: Seed of the run's RNG (offered to schedulers as ``view.rng``).
        round_length: Decision points every ``round_length`` seconds besides events
            (``None``: events only).
        check_every_event: Check capacity invariants after every event (slow; tests).
        rows: Simulate only these rows of the workload (an episode window, cut by
            :func:`hetgym.sim.state.jobs.cut_window`).
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
        """Build the kernels' structref mirror of the state (:mod:`hetgym.sim.state.mirror`) and
        forget the kernels' entry points (again after an array of the state is replaced);
        each is resolved for the mirror's types on first use, so a run compiles only what
        it calls."""
        self.kernel_state = mirror(self.params, self.state)
        self.kP, self.kS = self.kernel_state.P, self.kernel_state.S
        self._binder = Binder(self.kP, self.kS)
        self._entries: dict[str, Any] = {}

    def replace_state(self, state: State) -> None:
        """Make ``state`` this simulator's dynamic state and rebind the kernels to its
        arrays: the way to swap in a state whose arrays were replaced (a wider per-worker
        table, a longer segment log). ``state`` must belong to this simulator's
        ``params`` (same jobs and nodes); its arrays are used as they are, not copied."""
        if (state.job.status.shape != self.state.job.status.shape
                or state.node.free_gpus.shape != self.state.node.free_gpus.shape):
            raise ValueError("replace_state: the state's job or node arrays do not match this "
                             f"simulator's ({state.job.status.shape[0]} jobs, "
                             f"{state.node.free_gpus.shape[0]} nodes; expected "
                             f"{self.state.job.status.shape[0]} and {self.state.node.free_gpus.shape[0]})")
        self.state = state
        self.js, self.ns = state.job, state.node
        self._bind()

    def replace_arrivals(self, jobs: JobArrays) -> None:
        """Give the jobs that have not arrived yet (slots ``next_arrival`` to ``n_jobs - 1``)
        the arrays ``jobs`` (one row per slot, in slot order): every field but ``job_id``
        (the slots keep their ids), ``remaining`` set to the new ``work``, and the least a
        worker takes of each device type (``params.min_unit``) lowered to cover them. The
        per-worker arrays are widened (and the kernels rebound, as by
        :meth:`replace_state`) when a job has more workers than they hold. For a copy of a
        run whose future is replaced (a sampled future); call before the copy's view is
        made. Raises ValueError for a ``jobs`` of another length, a forkable job where the
        arrays hold one copy per job (on a cluster of more than one GPU), or a user beyond
        the run's."""
        m, n_jobs = self.next_arrival, self.n_jobs
        n = n_jobs - m
        if len(jobs.arrival) != n:
            raise ValueError(f"replace_arrivals: jobs has {len(jobs.arrival)} rows, the run has "
                             f"{n} jobs that have not arrived")
        if n <= 0:
            return
        opts = self.params.opts
        wmax = int(jobs.max_workers.max())
        if (wmax * opts.max_copies > self.js.worker_node.shape[1]
                or wmax > len(self.state.run.out_node)):
            self._widen(wmax)
        if opts.max_copies == 1 and bool(jobs.forkable.any()) and int(np.count_nonzero(self.nodes.gpus)) > 1:
            raise ValueError("replace_arrivals: a forkable job in a run whose arrays hold one "
                             "copy per job")
        jb = self.jobs
        for f in JobArrays._fields:
            if f != "job_id":
                getattr(jb, f)[m:] = getattr(jobs, f)
        if int(jb.user[m:].max()) >= len(self.state.run.service):
            raise ValueError("replace_arrivals: a job's user is not a user of the run")
        self.js.remaining[m:] = jb.work[m:]
        unit = self.params.min_unit
        np.minimum(unit, min_units(JobArrays(*(a[m:] for a in jb)), self.nodes.dev_is_cpu), out=unit)

    def _widen(self, wmax: int) -> None:
        """Widen the per-worker arrays to ``wmax`` workers per job (times the copies per
        job) and the kernels' placement outputs to ``wmax``, and rebind the kernels."""
        st = self.state
        js, run = st.job, st.run
        slots = wmax * self.params.opts.max_copies
        pad = slots - js.worker_node.shape[1]
        if pad > 0:
            fill = np.full((js.worker_node.shape[0], pad), -1, dtype=np.int64)
            js = js._replace(worker_node=np.ascontiguousarray(np.hstack([js.worker_node, fill])),
                             worker_gpu=np.ascontiguousarray(np.hstack([js.worker_gpu, fill])))
        if wmax > len(run.out_node):
            run = run._replace(out_node=np.zeros(wmax, dtype=np.int64),
                               out_gpu=np.zeros(wmax, dtype=np.int64))
        self.replace_state(st._replace(job=js, run=run))

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
            kernel, lead = {"step_nb": (step_nb, ()), "start_nb": (start_nb, placed + (0,)),
                            "move_nb": (move_nb, placed), "place_start_nb": (place_start_nb, (0, 0)),
                            "preempt_nb": (preempt_nb, (0,))}[name]
            e = self._entries[name] = self._binder.entry(kernel, *lead)
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
    def next_timed(self) -> float:
        """The next round boundary or wake-up, whichever comes first (``inf`` if none)."""
        acc = self.state.run.acc
        return min(float(acc[ACC_ROUND]), float(acc[ACC_WAKE]))

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
        queue_compact_nb(self.kernel_state.run, self.js.qpos)
        h = int(run.ctr[CTR_QHEAD])
        return run.queue[h: h + int(run.ctr[CTR_Q])]

    def running_jobs(self) -> np.ndarray:
        """Jobs holding resources, in start order (a view, valid until the simulator moves on)."""
        return self.state.run.running[: self.n_running]

    # ------------------------------------------------------------------ time
    def next_event_time(self) -> float:
        """Time of the next event (``inf`` if none)."""
        return float(next_event_nb(self.kP, self.kS))

    def advance(self) -> bool:
        """Jump to the next event time and process every event there.

        Returns False (and does nothing) if there is no further event or the
        next one lies past the horizon (then time moves to the horizon).
        """
        code, n_d, _n_g = self._kernel("step_nb")(self.kP, self.kS)
        if code == STEP_LOG_FULL:
            self.grow_segments()
            code, n_d, _n_g = self._kernel("step_nb")(self.kP, self.kS)
        if code == STEP_WORK_LEFT:
            j = int(self.ctr[CTR_ERR])
            raise InvariantError(f"job {j} completes with {self.js.remaining[j]} of "
                                 f"{self.jobs.work[j]} iterations left")
        if code == STEP_TIME_BACK:
            raise InvariantError(f"time went back from {self.now}")
        if code == STEP_NONE:
            return False
        self.last_done = self.state.run.out_done[:n_d]
        if self.check_every_event:
            self.check_capacity()
        return True

    def grow_segments(self) -> None:
        """Double the segment log (called when a kernel reports it full)."""
        run = self.state.run
        k = run.seg_i.shape[0]
        need = max(2 * k, int(run.ctr[CTR_SEG]) + self.n_running + 16)
        seg_i = np.zeros((need, run.seg_i.shape[1]), dtype=np.int64)
        seg_f = np.zeros((need, 2))
        seg_i[:k] = run.seg_i
        seg_f[:k] = run.seg_f
        self.replace_state(self.state._replace(run=run._replace(seg_i=seg_i, seg_f=seg_f)))

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
        for what, free, total in (("GPUs", ns.free_gpus, nd.gpus), ("CPU cores", ns.free_cpus, nd.cpus),
                                  ("memory", ns.free_mem, nd.mem)):
            if (free < -tol).any() or (free > total + tol).any():
                n = int(np.flatnonzero((free < -tol) | (free > total + tol))[0])
                raise InvariantError(f"over-allocation of {what} on node {n} at t={self.now}: "
                                     f"{free[n]} free of {total[n]}")
        used_g = np.zeros_like(ns.free_gpus)
        used_c = np.zeros_like(ns.free_cpus)
        used_m = np.zeros_like(ns.free_mem)
        own_cpus = self.scenario.workload.frame["cpus"].to_numpy(dtype=np.float64)
        if self.rows is not None:
            own_cpus = own_cpus[self.rows]
        for j in self.running_jobs().tolist():
            w = int(js.nworkers[j])
            for n, g in zip(js.worker_node[j, :w].tolist(), js.worker_gpu[j, :w].tolist()):
                used_c[n] += jb.cpus_need[j, nd.dev[n]]
                used_m[n] += jb.mem[j]
                if g >= 0:
                    used_g[n] += 1
                    if ns.gpu_owner[n, g] != j:
                        raise InvariantError(f"GPU {n}:{g} of job {j} owned by {ns.gpu_owner[n, g]}")
                elif not jb.cpus_need[j, nd.dev[n]] > 0 and own_cpus[j] > 0:
                    # whatever the options say a CPU slot is, a job that needs cores holds some
                    raise InvariantError(f"job {j} (cpus={own_cpus[j]}) has a worker on CPU node {n} "
                                         f"holding {jb.cpus_need[j, nd.dev[n]]} cores at t={self.now}")
        if not np.array_equal(used_g + ns.free_gpus, nd.gpus):
            raise InvariantError(f"GPU books do not balance at t={self.now}")
        if not np.allclose(used_c + ns.free_cpus, nd.cpus, atol=tol):
            raise InvariantError(f"CPU books do not balance at t={self.now}")
        if not np.allclose(used_m + ns.free_mem, nd.mem, atol=tol * max(1.0, float(nd.mem.max(initial=1.0)))):
            raise InvariantError(f"memory books do not balance at t={self.now}")

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
        if (js.end[done] < js.first_start[done] - EPS).any():
            raise InvariantError("a job ended before it started")
        if (js.first_start[done] < self.jobs.arrival[done] - EPS).any():
            raise InvariantError("a job started before it arrived")

    @property
    def energy_kwh(self) -> float:
        """Energy used so far (kWh), IT power only (PUE applied in the cost)."""
        return self.energy_j / 3.6e6
