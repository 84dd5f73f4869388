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
from hetgym.sim import kernels as K
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
        self.now = 0.0
        self.queue = np.empty(n + 1, dtype=np.int64)
        self.n_queue = 0
        self.running = np.empty(n + 1, dtype=np.int64)
        self.n_running = 0
        self.next_arrival = 0
        self.n_done = 0
        self.round_length = round_length
        self.next_round = round_length if round_length else math.inf
        self.check_every_event = check_every_event
        self.n_users = int(self.jobs.user.max()) + 1
        self.service = np.zeros(self.n_users)
        self.idle_power = float(self.nodes.idle_w.sum())
        self.active_power = 0.0
        self.energy_j = 0.0
        self.busy = np.zeros(len(self.devices))  # busy GPUs / cores per device type
        self.busy_time = np.zeros(len(self.devices))
        self.events = 0
        self.decision_points = 0
        self.segments: list[tuple[int, float, float, int, int]] = []  # job, start, end, device, node
        self.stalled = False
        self.last_done = np.empty(0, dtype=np.int64)
        self._wmax = self.js.worker_node.shape[1]
        self._buf_done = np.empty(n + 1, dtype=np.int64)
        self._buf_grace = np.empty(n + 1, dtype=np.int64)
        self._out_node = np.empty(self._wmax, dtype=np.int64)
        self._out_gpu = np.empty(self._wmax, dtype=np.int64)
        from hetgym.sim.view import View

        self.view = View(self)

    # ------------------------------------------------------------------ time
    def next_event_time(self) -> float:
        """Time of the next event (``inf`` if none)."""
        t = self.jobs.arrival[self.next_arrival] if self.next_arrival < self.n_jobs else math.inf
        if self.n_running:
            tf, tg = K.next_times_nb(self.running, self.n_running, self.js.status,
                                     self.js.finish, self.js.grace_end)
            t = min(t, tf, tg)
        if self.round_length and (self.n_running or self.n_queue):
            t = min(t, self.next_round)
        return float(t)

    @property
    def finished(self) -> bool:
        """Whether every job has completed."""
        return self.n_done == self.n_jobs

    def advance(self) -> bool:
        """Jump to the next event time and process every event there.

        Returns False (and does nothing) if there is no further event or the
        next one lies past the horizon (then time moves to the horizon).
        """
        t = self.next_event_time()
        horizon = self.options.horizon
        if t == math.inf or t > horizon:
            if horizon < math.inf and t > horizon and horizon > self.now:
                self._advance_to(horizon)
            return False
        self._advance_to(t)
        nd, ng = (0, 0)
        if self.n_running:
            nd, ng = K.due_nb(self.running, self.n_running, self.js.status, self.js.finish,
                              self.js.grace_end, t, self._buf_done, self._buf_grace)
        self.last_done = self._buf_done[:nd]
        for j in self._buf_done[:nd].tolist():
            self._complete(j)
        for j in self._buf_grace[:ng].tolist():
            self._suspend(j, lose_progress=False)
        arr = self.jobs.arrival
        while self.next_arrival < self.n_jobs and arr[self.next_arrival] <= t:
            j = self.next_arrival
            self.js.status[j] = QUEUED
            self.queue[self.n_queue] = j
            self.n_queue += 1
            self.next_arrival += 1
        while self.next_round <= t:
            self.next_round += self.round_length  # type: ignore[operator]
        self.events += 1
        if self.check_every_event:
            self.check_capacity()
        return True

    def _advance_to(self, t: float) -> None:
        if t < self.now:
            raise InvariantError(f"time went back from {self.now} to {t}")
        dt = t - self.now
        if dt > 0:
            if self.n_running:
                js = self.js
                K.advance_nb(self.running, self.n_running, self.now, t, js.rate, js.resume_at,
                             js.remaining, self.jobs.workers, self.jobs.user, self.service)
            self.energy_j += (self.idle_power + self.active_power) * dt
            self.busy_time += self.busy * dt
        self.now = t

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

    def find_placement(self, job: int, dev: int) -> Placement | None:
        """Placement the default policy would choose now, or None if it does not fit."""
        jb, ns, nd = self.jobs, self.ns, self.nodes
        w = int(jb.workers[job])
        ok = K.place_nb(dev, bool(nd.dev_is_cpu[dev]), w, jb.cpus_need[job, dev], jb.mem[job],
                        self.policy, nd.dev, nd.gpus, nd.dist, ns.free_gpus, ns.free_cpus,
                        ns.free_mem, ns.gpu_owner, self._out_node, self._out_gpu)
        if not ok:
            return None
        return Placement(self._out_node[:w].copy(), self._out_gpu[:w].copy())

    def start(self, job: int, device: str | int | None = None,
              placement: Placement | None = None) -> None:
        """Start a queued job on ``device`` (default placement) or on ``placement``."""
        job = int(job)
        if not 0 <= job < self.n_jobs:
            raise SchedulingError(f"Start: job index {job} out of range 0..{self.n_jobs - 1}")
        if self.js.status[job] != QUEUED:
            raise SchedulingError(
                f"Start: job {job} (job_id={self.jobs.job_id[job]}) is "
                f"{JobStatus(self.js.status[job]).name}, not QUEUED"
            )
        jb, nd, ns = self.jobs, self.nodes, self.ns
        w = int(jb.workers[job])
        if placement is None:
            if device is None:
                raise SchedulingError(f"Start: job {job} needs a device or a placement")
            dev = self.device_index(device)
            if jb.tput[job, dev] <= 0:
                raise SchedulingError(f"Start: job {job} cannot run on {self.devices[dev]} (tput 0)")
            placement = self.find_placement(job, dev)
            if placement is None:
                raise SchedulingError(
                    f"Start: job {job} ({w} workers, {jb.cpus_need[job, dev]} cores, "
                    f"{jb.mem[job]} GB each) does not fit on free {self.devices[dev]} capacity"
                )
        else:
            if len(placement) != w:
                raise SchedulingError(f"Start: job {job} has {w} workers, placement has {len(placement)}")
            code = K.check_placement_nb(job, w, placement.nodes, placement.gpus, jb.cpus_need[job],
                                        jb.mem[job], nd.dev, nd.dev_is_cpu, nd.gpus, ns.free_gpus,
                                        ns.free_cpus, ns.free_mem, ns.gpu_owner)
            if code:
                reasons = {1: "a node index is out of range", 2: "a GPU index is out of range",
                           3: "a GPU is busy or used twice", 4: "CPU cores exceeded",
                           5: "memory exceeded", 6: "a CPU-node worker has a GPU index"}
                raise SchedulingError(f"Start: placement of job {job} is invalid: {reasons[code]}")
            devs = set(nd.dev[placement.nodes].tolist())
            if any(jb.tput[job, d] <= 0 for d in devs):
                raise SchedulingError(f"Start: job {job} placed on a device type where its tput is 0")
            dev = devs.pop() if len(devs) == 1 else -2
        self._allocate(job, dev, placement)

    def _allocate(self, job: int, dev: int, pl: Placement) -> None:
        jb, nd, ns, js = self.jobs, self.nodes, self.ns, self.js
        w = len(pl)
        K.alloc_nb(job, w, pl.nodes, pl.gpus, 1, jb.cpus_need[job], jb.mem[job], nd.dev,
                   ns.free_gpus, ns.free_cpus, ns.free_mem, ns.gpu_owner)
        js.worker_node[job, :w] = pl.nodes
        js.worker_gpu[job, :w] = pl.gpus
        opts = self.options
        rate = K.rate_nb(w, pl.nodes, pl.gpus, jb.tput[job], nd.dev, nd.dist, jb.comm[job],
                         opts.scaling_exponent, opts.topology_coeff, opts.network_distance)
        t = self.now
        restarted = not math.isnan(js.first_start[job])
        if restarted:
            js.n_restart[job] += 1
            js.resume_at[job] = t + opts.restart_delay
        else:
            js.first_start[job] = t
            js.resume_at[job] = t
        js.rate[job] = rate
        js.finish[job] = js.resume_at[job] + js.remaining[job] / rate
        js.run_start[job] = t
        js.device[job] = dev
        js.status[job] = RUNNING
        self.n_queue = K.remove_nb(self.queue, self.n_queue, job)
        self.running[self.n_running] = job
        self.n_running += 1
        self._power_and_busy(job, pl, +1)

    def _power_and_busy(self, job: int, pl: Placement, sign: int) -> None:
        nd, jb = self.nodes, self.jobs
        for n, g in zip(pl.nodes.tolist(), pl.gpus.tolist()):
            d = nd.dev[n]
            if g >= 0:
                self.active_power += sign * nd.gpu_w[n]
                self.busy[d] += sign
            else:
                cores = jb.cpus_need[job, d]
                self.active_power += sign * nd.core_w[n] * cores
                self.busy[d] += sign * cores

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
            self._suspend(job, lose_progress=True)

    def _release(self, job: int) -> None:
        jb, nd, ns, js = self.jobs, self.nodes, self.ns, self.js
        w = int(jb.workers[job])
        pl = Placement(js.worker_node[job, :w].copy(), js.worker_gpu[job, :w].copy())
        K.alloc_nb(job, w, pl.nodes, pl.gpus, -1, jb.cpus_need[job], jb.mem[job], nd.dev,
                   ns.free_gpus, ns.free_cpus, ns.free_mem, ns.gpu_owner)
        self._power_and_busy(job, pl, -1)
        self.segments.append((job, float(js.run_start[job]), self.now, int(js.device[job]),
                              int(pl.nodes[0])))
        js.exec_time[job] += self.now - js.run_start[job]
        js.rate[job] = 0.0
        js.finish[job] = math.inf
        js.grace_end[job] = math.inf
        self.n_running = K.remove_nb(self.running, self.n_running, job)

    def _suspend(self, job: int, lose_progress: bool) -> None:
        js = self.js
        ci = self.options.checkpoint_interval
        if lose_progress and ci > 0:
            progressed = max(0.0, self.now - js.resume_at[job])
            lost = math.fmod(progressed, ci) * js.rate[job]
            js.remaining[job] = min(self.jobs.work[job], js.remaining[job] + lost)
        self._release(job)
        js.status[job] = QUEUED
        self.n_queue = K.insert_front_nb(self.queue, self.n_queue, job)

    def _complete(self, job: int) -> None:
        js = self.js
        work = self.jobs.work[job]
        if abs(js.remaining[job]) > 1e-6 * max(1.0, work):
            raise InvariantError(
                f"job {job} completes with {js.remaining[job]} of {work} iterations left"
            )
        if js.status[job] == DONE:
            raise InvariantError(f"job {job} completed twice")
        js.remaining[job] = 0.0
        self._release(job)
        js.status[job] = DONE
        js.end[job] = self.now
        self.n_done += 1

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
