"""The event-driven simulator: a Python facade over the Numba kernels.

One :class:`Simulator` holds the state of one run. It jumps from event to
event (arrival, completion, end of a grace period, round boundary; the end of
a restart delay needs no event since it only shifts the projected finish).
Events at the same instant are handled in the order completions, grace ends,
arrivals, round boundary, then the scheduler gets one decision point.

See DESIGN.md "Simulation semantics" for the meaning of each mechanism.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from hetgym.decisions import Decision, Placement, Preempt, SchedulingError, Start, Wait
from hetgym.sim import events as E
from hetgym.sim.codes import JobStatus, PlacementPolicy
from hetgym.sim.state import build_jobs, build_nodes, new_job_state, new_node_state
from hetgym.specs import Scenario

__all__ = ["Simulator", "InvariantError"]

QUEUED, RUNNING, GRACE, DONE = (int(JobStatus.QUEUED), int(JobStatus.RUNNING),
                                int(JobStatus.GRACE), int(JobStatus.DONE))


class InvariantError(AssertionError):
    """A simulation invariant (DESIGN.md) was violated: a bug, never user error."""


class Simulator:
    """State and mechanics of one simulated run.

    Args:
        scenario: The scenario to simulate.
        seed: Seed of the run's RNG (offered to schedulers as ``view.rng``).
        round_length: Decision points every ``round_length`` seconds besides events
            (``None``: events only).
        check_every_event: Check capacity invariants after every event (slow; tests).
        rows: Simulate only these rows of the workload (an episode window), arrivals
            rebased to start at 0.
    """

    def __init__(self, scenario: Scenario, seed: int = 0, round_length: float | None = None,
                 check_every_event: bool = False, rows: np.ndarray | None = None) -> None:
        self.scenario = scenario
        self.options = scenario.options
        self.devices: list[str] = scenario.device_types
        self.nodes = build_nodes(scenario)
        self.rows = None if rows is None else np.asarray(rows, dtype=np.int64)
        self.jobs = build_jobs(scenario, self.rows)
        self.js = new_job_state(self.jobs)
        self.ns = new_node_state(self.nodes)
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.policy = int(PlacementPolicy.of(self.options.placement))
        n = len(self.jobs.arrival)
        self.n_jobs = n
        self.queue = np.empty(n + 1, dtype=np.int64)
        self.running = np.empty(n + 1, dtype=np.int64)
        self.ctr = np.zeros(7, dtype=np.int64)  # see kernels: arrival ptr, queue, running, done, events, err, segments
        self.acc = np.zeros(4)  # now, energy J, active power W, next round
        self.round_length = round_length
        self.acc[E.ACC_ROUND] = round_length if round_length else math.inf
        self.check_every_event = check_every_event
        self.n_users = int(self.jobs.user.max()) + 1
        self.service = np.zeros(self.n_users)
        self.idle_power = float(self.nodes.idle_w.sum())
        self.busy = np.zeros(len(self.devices))  # busy GPUs / cores per device type
        self.busy_time = np.zeros(len(self.devices))
        self.decision_points = 0
        self.seg_i = np.zeros((2 * n + 16, 3), dtype=np.int64)  # job, device, first node per run
        self.seg_f = np.zeros((2 * n + 16, 2))  # start, end per run
        self.stalled = False
        self.last_done = np.empty(0, dtype=np.int64)
        self._wmax = self.js.worker_node.shape[1]
        self._buf_done = np.empty(n + 1, dtype=np.int64)
        self._buf_grace = np.empty(n + 1, dtype=np.int64)
        self._out_node = np.empty(self._wmax, dtype=np.int64)
        self._out_gpu = np.empty(self._wmax, dtype=np.int64)
        self._adm_job = np.empty(0, dtype=np.int64)
        self._adm_dev = self._adm_job
        self._adm_nodes = np.empty((0, self._wmax), dtype=np.int64)
        self._adm_gpus = self._adm_nodes
        jb, js, nd, ns = self.jobs, self.js, self.nodes, self.ns
        opts = self.options
        # argument tuples of the fused kernels (the arrays never change identity)
        self._step_args = (
            opts.horizon, float(round_length or 0.0), opts.checkpoint_interval,
            self.ctr, self.acc, self.queue, self.running, jb.arrival, js.status, js.remaining,
            js.rate, js.finish, js.grace_end, js.run_start, js.exec_time, js.end, js.resume_at,
            js.worker_node, js.worker_gpu, jb.workers, jb.cpus_need, jb.mem, jb.work, jb.user,
            self.service, nd.dev, ns.free_gpus, ns.free_cpus, ns.free_mem, ns.gpu_owner,
            self.idle_power, nd.gpu_w, nd.core_w, self.busy, self.busy_time, self._buf_done,
            self._buf_grace, js.device, self.seg_i, self.seg_f)
        self._release_args = (
            self.options.checkpoint_interval, self.ctr, self.acc, self.queue, self.running,
            js.status, js.remaining, js.rate, js.finish, js.grace_end, js.run_start, js.exec_time,
            js.resume_at, js.worker_node, js.worker_gpu, jb.workers, jb.cpus_need, jb.mem, jb.work,
            nd.dev, ns.free_gpus, ns.free_cpus, ns.free_mem, ns.gpu_owner, nd.gpu_w, nd.core_w,
            self.busy, js.device, self.seg_i, self.seg_f)
        self._start_args = (
            opts.restart_delay, opts.scaling_exponent, opts.topology_coeff, opts.network_distance,
            self.ctr, self.acc, self.queue, self.running, js.status, js.remaining, js.rate,
            js.finish, js.run_start, js.first_start, js.resume_at, js.n_restart, js.device,
            js.worker_node, js.worker_gpu, jb.tput, jb.cpus_need, jb.mem, jb.comm, nd.dev,
            nd.dev_is_cpu, nd.gpus, nd.dist, ns.free_gpus, ns.free_cpus, ns.free_mem,
            ns.gpu_owner, nd.gpu_w, nd.core_w, self.busy)
        from hetgym.sim.view import View

        self.view = View(self)

    # ------------------------------------------------------------- counters
    @property
    def now(self) -> float:
        """Current simulated time (s)."""
        return float(self.acc[E.ACC_NOW])

    @property
    def next_arrival(self) -> int:
        """Index of the next job to arrive (= number of jobs arrived)."""
        return int(self.ctr[E.CTR_ARR])

    @property
    def n_queue(self) -> int:
        """Number of waiting jobs."""
        return int(self.ctr[E.CTR_Q])

    @property
    def n_running(self) -> int:
        """Number of jobs holding resources."""
        return int(self.ctr[E.CTR_RUN])

    @property
    def n_done(self) -> int:
        """Number of completed jobs."""
        return int(self.ctr[E.CTR_DONE])

    @property
    def events(self) -> int:
        """Number of event instants processed."""
        return int(self.ctr[E.CTR_EV])

    @property
    def energy_j(self) -> float:
        """IT energy used so far (J)."""
        return float(self.acc[E.ACC_ENERGY])

    @property
    def active_power(self) -> float:
        """Current active power above idle (W)."""
        return float(self.acc[E.ACC_POWER])

    @property
    def finished(self) -> bool:
        """Whether every job has completed."""
        return self.ctr[E.CTR_DONE] == self.n_jobs

    # ------------------------------------------------------------------ time
    def next_event_time(self) -> float:
        """Time of the next event (``inf`` if none)."""
        js = self.js
        return float(E.next_event_nb(float(self.round_length or 0.0), self.ctr, self.acc,
                                     self.jobs.arrival, self.running, js.status, js.finish,
                                     js.grace_end))

    def advance(self) -> bool:
        """Jump to the next event time and process every event there.

        Returns False (and does nothing) if there is no further event or the
        next one lies past the horizon (then time moves to the horizon).
        """
        code, n_d, n_g = E.step_nb(*self._step_args)
        if code == -3:
            self.grow_segments()
            code, n_d, n_g = E.step_nb(*self._step_args)
        if code == 1 and not (n_d or n_g):
            self.last_done = self._buf_done[:0]
            if self.check_every_event:
                self.check_capacity()
            return True
        js, jb = self.js, self.jobs
        if code == -1:
            j = int(self.ctr[E.CTR_ERR])
            raise InvariantError(f"job {j} completes with {js.remaining[j]} of {jb.work[j]} "
                                 "iterations left")
        if code == -2:
            raise InvariantError(f"time went back from {self.now}")
        if code == 0:
            return False
        self.last_done = self._buf_done[:n_d]
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
            elif isinstance(d, Wait):
                continue
            else:
                raise SchedulingError(f"unknown decision {d!r}; expected Start, Preempt or Wait")

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

    _REASONS = {1: "a node index is out of range", 2: "a GPU index is out of range",
                3: "a GPU is busy or used twice", 4: "CPU cores exceeded",
                5: "memory exceeded", 6: "a CPU-node worker has a GPU index",
                8: "a worker is on a device type where the job's throughput is 0"}

    def start(self, job: int, device: str | int | None = None,
              placement: Placement | None = None) -> None:
        """Start a queued job on ``device`` (default placement) or on ``placement``."""
        job = int(job)
        if not 0 <= job < self.n_jobs:
            raise SchedulingError(f"Start: job index {job} out of range 0..{self.n_jobs - 1}")
        js, jb, nd = self.js, self.jobs, self.nodes
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
            code = E.place_start_nb(job, dev, self.policy, jb.workers, self._out_node,
                                    self._out_gpu, *self._start_args)
            if code == 9:
                raise SchedulingError(
                    f"Start: job {job} ({w} workers, {jb.cpus_need[job, dev]} cores, "
                    f"{jb.mem[job]} GB each) does not fit on free {self.devices[dev]} capacity"
                )
            if code:
                raise SchedulingError(f"Start: job {job} could not start: {self._REASONS[code]}")
            return
        if len(placement) != w:
            raise SchedulingError(f"Start: job {job} has {w} workers, placement has {len(placement)}")
        nodes, gpus = placement.nodes, placement.gpus
        if device is not None:
            dev = self.device_index(device)
            on = set(nd.dev[np.clip(nodes, 0, len(nd.dev) - 1)].tolist())
            if on != {dev}:
                raise SchedulingError(
                    f"Start: job {job} asks for {self.devices[dev]} but its placement is on "
                    f"{sorted(self.devices[d] for d in on)} (give device=None for a mixed allocation)")
        code = E.start_nb(job, w, nodes, gpus, *self._start_args)
        if code:
            raise SchedulingError(f"Start: placement of job {job} is invalid: {self._REASONS[code]}")

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
        js.n_preempt[job] += 1
        gp = float(self.jobs.grace[job])
        if gp > 0:
            js.status[job] = GRACE
            js.grace_end[job] = self.now + gp
        else:
            if self.ctr[E.CTR_SEG] + 1 > self.seg_i.shape[0]:
                self.grow_segments()
            E.release_nb(job, True, True, *self._release_args)

    def grow_segments(self) -> None:
        """Double the segment log (called when a kernel reports it full)."""
        k = self.seg_i.shape[0]
        need = max(2 * k, int(self.ctr[E.CTR_SEG]) + self.n_running + 16)
        seg_i = np.zeros((need, 3), dtype=np.int64)
        seg_f = np.zeros((need, 2))
        seg_i[:k] = self.seg_i
        seg_f[:k] = self.seg_f
        self.seg_i, self.seg_f = seg_i, seg_f
        self._step_args = self._step_args[:-2] + (seg_i, seg_f)
        self._release_args = self._release_args[:-2] + (seg_i, seg_f)

    @property
    def segments(self) -> list[tuple[int, float, float, int, int]]:
        """Finished runs as ``(job, start, end, device index, first node)``."""
        k = int(self.ctr[E.CTR_SEG])
        si, sf = self.seg_i[:k], self.seg_f[:k]
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
        for j in self.running[: self.n_running].tolist():
            w = int(jb.workers[j])
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
