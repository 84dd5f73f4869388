"""A slow, obviously correct pure-Python reference simulator.

It follows the documented rules of docs/semantics.md and the
docstrings of :mod:`hetgym.sim.engine` / :mod:`hetgym.sim.kernels`, but shares
no code with them: state is plain Python objects, lists and dicts; nothing
here imports the Numba kernels or the engine. When a scheduler is asked is the one
decision-point driver's (:mod:`hetgym.driver`, pure Python, checked on its own in
tests/test_driver.py), which drives this simulator as it drives the engine. The test-suite runs the fast
simulator (``hetgym.simulate``) and this one on the same scenarios and
schedulers and checks that they agree job by job.

Rules implemented (one instant ``t``):

1. progress, energy, busy time and per-user service are integrated from the
   previous instant to ``t`` (a job progresses only after its restart delay);
2. completions (jobs whose projected finish is ``<= t``), in running order;
3. ends of grace periods (``<= t``), in running order: the job is suspended
   with its progress kept and goes to the HEAD of the queue;
4. arrivals (``<= t``) join the tail of the queue in workload order;
5. round boundaries ``<= t`` are passed (a round boundary is an event only
   while some job waits or holds resources);
6. the scheduler gets ONE decision point; its decisions are applied in order.
   An instant at which no job waits is not a decision point, unless the
   scheduler sets ``call_when_queue_empty = True`` or asks for rounds
   (``round_length``), as :func:`hetgym.simulate` documents. With rounds, a
   round boundary at which nothing runs, no job is left to arrive and the
   scheduler decides nothing ends the run (``stalled``): every later round
   would see the same state.

A preemption with grace period ``GP > 0`` keeps the job running for ``GP``
seconds; with ``GP = 0`` the job is suspended at once, goes to the head of
the queue and loses ``fmod(progress time since resume, interval) * rate``
iterations when a checkpoint interval is set. Every start after the first
pays the restart delay. Rate = W x min per-worker throughput x
W ** (exponent - 1) x topology factor x interference factor; with interference on,
every running job holding a GPU on a node touched by a start, a release or a move gets
its rate recomputed and its finish moved to max(now, resume_at) + remaining / rate.

Elastic jobs (``min_workers``/``max_workers``): an explicit placement of g workers with
min <= g <= max is valid; W above is then g, and the exponent is the job's own
``scaling_exponent`` (default the scenario's). With ``idle_power="busy_nodes"`` a node
draws its idle power only while it hosts a worker; energy is kept per node as well.
With ``checkpoint_unit="work"`` a GP=0 preemption keeps the completed work rounded
down to a multiple of ``checkpoint_interval`` iterations.

Public entry point: :func:`simulate`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from hetgym.decisions import Move, Placement, Preempt, SchedulingError, Start, Wait, cadence_of
from hetgym.driver import ask_wakeup, drive

__all__ = ["simulate", "RefResult", "RefSim", "RefView", "RefCapacity", "place", "slots_on_node"]

FUTURE, QUEUED, RUNNING, GRACE, DONE = 0, 1, 2, 3, 4
POLICIES = {"pack": 0, "spread": 1, "topology": 2}
EPS = 1e-9
UNBOUNDED = 1 << 20  # workers per node of a job that needs neither GPU, cores nor memory


# --------------------------------------------------------------------------- data
@dataclass
class RNode:
    """One node (static part and its free resources)."""

    name: str
    device: int  # index into the scenario's device types
    is_cpu: bool
    gpus: int
    cpus: float
    mem: float
    dist: list  # list[list[float]] gpus x gpus
    idle_w: float
    gpu_w: float
    core_w: float
    socket: list = field(default_factory=list)  # CPU socket of each GPU
    sockets: int = 1
    free_gpus: int = 0
    free_cpus: float = 0.0
    free_mem: float = 0.0
    owner: list = field(default_factory=list)  # job holding each GPU, -1 free


@dataclass
class RJob:
    """One job (static part and its life cycle)."""

    index: int
    job_id: int
    arrival: float
    user: int
    job_class: int
    workers: int
    work: float
    tput: list  # per device index
    cpus_need: list  # per device index
    mem: float
    grace: float
    comm: float
    deadline: float
    weight: float
    forkable: bool
    min_workers: int = 1
    max_workers: int = 1
    exponent: float = 1.0
    job_type: str = ""
    sens: float = 0.0  # interference sensitivity
    press: float = 0.0  # interference pressure
    min_utility: float = 0.0
    status: int = FUTURE
    remaining: float = 0.0
    rate: float = 0.0
    resume_at: float = 0.0
    finish: float = math.inf
    grace_end: float = math.inf
    run_start: float = math.nan
    first_start: float = math.nan
    end: float = math.nan
    exec_time: float = 0.0
    attained: float = 0.0  # worker-seconds held in finished runs
    n_preempt: int = 0
    n_restart: int = 0
    device: int = -1  # -1 never ran, -2 mixed
    alloc: list = field(default_factory=list)  # [(node, gpu or -1)] of the current run
    copies: int = 1  # copies of the current/last run (forking); alloc holds them in order
    gpu_seconds: float = 0.0  # GPUs held x time, every copy counted


# ---------------------------------------------------------------------- placement
def slots_on_node(is_cpu: bool, need_cpus: float, need_mem: float, free_gpus: int,
                  free_cpus: float, free_mem: float) -> int:
    """Workers (1 GPU unless on a CPU node, ``need_cpus`` cores, ``need_mem`` GB) that fit."""
    limits = []
    if not is_cpu:
        limits.append(int(free_gpus))
    if need_cpus > 0:
        limits.append(int(math.floor(free_cpus / need_cpus + EPS)))
    if need_mem > 0:
        limits.append(int(math.floor(free_mem / need_mem + EPS)))
    return min(limits) if limits else UNBOUNDED


def _choose_gpus(k: int, free: list[int], dist: list, topology: bool) -> list[int]:
    """k GPUs out of the free ones (ascending ids): lowest ids, or greedy min pairwise distance.

    Topology rule: each free GPU in turn seeds a greedy selection that adds the
    GPU with the smallest summed distance to those already chosen (lowest id on
    ties); the seed giving the smallest total wins (lowest seed on ties).
    """
    if not topology or k <= 1:
        return free[:k]
    best_cost, best = math.inf, None
    for seed in free:
        chosen = [seed]
        cost = 0.0
        while len(chosen) < k:
            pick, pick_cost = None, math.inf
            for g in free:
                if g in chosen:
                    continue
                c = sum(dist[q][g] for q in chosen)
                if pick is None or c < pick_cost - EPS:
                    pick, pick_cost = g, c
            chosen.append(pick)
            cost += pick_cost
        if best is None or cost < best_cost - EPS:
            best_cost, best = cost, chosen
    return sorted(best)


def place(nodes: list[RNode], dev: int, workers: int, need_cpus: float, need_mem: float,
          policy: int, free_gpus, free_cpus, free_mem, owner) -> list[tuple[int, int]] | None:
    """Placement of ``workers`` workers on nodes of device ``dev`` or None.

    pack (0) / topology (2): the single node holding all workers with the fewest
    spare slots (lowest index on ties); else nodes by spare slots descending
    (lowest index on ties), each filled as far as it goes. spread (1): the same
    node order, one worker per node per pass (round robin). Workers are listed by
    node index; GPUs are the lowest free ids, or for topology the greedy choice.
    ``owner[n][g]`` is the job holding GPU g of node n (-1 free).
    """
    slots = {}
    for n, node in enumerate(nodes):
        if node.device == dev:
            slots[n] = slots_on_node(node.is_cpu, need_cpus, need_mem, free_gpus[n],
                                     free_cpus[n], free_mem[n])
    if sum(slots.values()) < workers:
        return None
    take = {n: 0 for n in slots}
    by_room = sorted((n for n in slots if slots[n] > 0), key=lambda n: (-slots[n], n))
    if policy in (0, 2):
        single = [n for n in slots if slots[n] >= workers]
        if single:
            take[min(single, key=lambda n: (slots[n], n))] = workers
        else:
            left = workers
            for n in by_room:
                t = min(left, slots[n])
                take[n] = t
                left -= t
                if left == 0:
                    break
    else:
        left = workers
        while left > 0:
            for n in by_room:
                if left == 0:
                    break
                if take[n] < slots[n]:
                    take[n] += 1
                    left -= 1
    out: list[tuple[int, int]] = []
    for n in sorted(take):
        k = take[n]
        if k == 0:
            continue
        if nodes[n].is_cpu:
            out.extend((n, -1) for _ in range(k))
        else:
            free = [g for g in range(nodes[n].gpus) if owner[n][g] < 0]
            for g in _choose_gpus(k, free, nodes[n].dist, policy == 2):
                out.append((n, g))
    return out


def job_rate(job: RJob, alloc: list[tuple[int, int]], nodes: list[RNode], exponent: float,
             coeff: float, network_distance: float) -> float:
    """W x slowest worker's throughput x W**(e-1) x topology factor (W = len(alloc), e = the
    job's own exponent; ``exponent``, the scenario's, is its default)."""
    w = len(alloc)
    slowest = min(job.tput[nodes[n].device] for n, _ in alloc)
    rate = w * slowest
    if job.exponent != 1.0:
        rate *= w ** (job.exponent - 1.0)
    if w > 1 and job.comm > 0 and coeff > 0:
        total = 0.0
        for a in range(w):
            for b in range(a + 1, w):
                (na, ga), (nb, gb) = alloc[a], alloc[b]
                if na != nb:
                    total += network_distance
                elif ga >= 0 and gb >= 0:
                    total += nodes[na].dist[ga][gb]
                else:
                    total += 1.0
        mean = total / (w * (w - 1) / 2.0)
        if mean > 1.0:
            rate /= 1.0 + coeff * job.comm * (mean - 1.0)
    return rate


def interference(sim: RefSim, j: int, alloc: list[tuple[int, int]]) -> float:
    """Interference factor of job j on ``alloc`` next to the other jobs holding GPUs that
    share a socket (or a node) with one of its GPUs, each neighbour counted once."""
    opts = sim.options
    job = sim.jobs[j]
    table = dict(opts.interference_table or ())
    if not table and (opts.interference_coeff <= 0 or job.sens <= 0):
        return 1.0
    near: set[int] = set()
    for n, g in alloc:
        if g < 0:
            continue
        node = sim.nodes[n]
        for h, k in enumerate(node.owner):
            if k >= 0 and k != j and (opts.interference_domain == "node"
                                      or node.socket[h] == node.socket[g]):
                near.add(k)
    if table:
        return 1.0 / (1.0 + sum(table.get((job.job_type, sim.jobs[k].job_type), 1.0) - 1.0
                                for k in near))
    return 1.0 / (1.0 + opts.interference_coeff * job.sens * sum(sim.jobs[k].press for k in near))


def _spec_sockets(spec: Any) -> list[int]:
    """Socket of each GPU: the spec's ``gpu_socket``, else the even split."""
    if spec.gpu_socket is not None:
        return [int(x) for x in spec.gpu_socket]
    return _even_sockets(int(spec.gpus), int(spec.sockets))


def _even_sockets(gpus: int, sockets: int) -> list[int]:
    """GPUs split evenly over the sockets, in order (e.g. 4 GPUs, 2 sockets: 0, 0, 1, 1)."""
    per = max(1, math.ceil(gpus / max(1, sockets)))
    return [g // per for g in range(gpus)]


# -------------------------------------------------------------------- simulator
class RefSim:
    """State of one reference run."""

    def __init__(self, scenario: Any, seed: int = 0, round_length: float | None = None) -> None:
        self.scenario = scenario
        self.options = opts = scenario.options
        self.devices: list[str] = list(scenario.device_types)
        self.policy = POLICIES[opts.placement]
        self.nodes: list[RNode] = []
        for spec in scenario.cluster.nodes:
            for i in range(spec.count):
                idle, gw, cw = spec.power_w()
                dist = [[float(x) for x in row] for row in spec.distance_matrix()] if spec.gpus else []
                self.nodes.append(RNode(
                    name=f"{spec.name}-{i}", device=self.devices.index(spec.device),
                    is_cpu=spec.gpu_type is None, gpus=int(spec.gpus), cpus=float(spec.cpus),
                    mem=float(spec.mem_gb), dist=dist, idle_w=idle, gpu_w=gw, core_w=cw,
                    socket=_spec_sockets(spec),
                    sockets=max(1, int(spec.sockets)),
                    free_gpus=int(spec.gpus), free_cpus=float(spec.cpus), free_mem=float(spec.mem_gb),
                    owner=[-1] * int(spec.gpus)))
        fr = scenario.workload.frame
        users: dict[Any, int] = {}
        self.jobs: list[RJob] = []
        for i, row in enumerate(fr.to_dict("records")):
            users.setdefault(row["user"], len(users))
            cores = float(row["cpus"])
            need = [float(opts.cpu_slot_cores) if d == "cpu" and opts.cpu_slot_cores is not None
                    else cores for d in self.devices]
            grace = float(row["grace_period"]) if opts.grace_period is None else float(opts.grace_period)
            self.jobs.append(RJob(
                index=i, job_id=int(row["job_id"]), arrival=float(row["arrival"]),
                user=users[row["user"]], job_class=1 if row["job_class"] == "TE" else 0,
                workers=int(row["workers"]), work=float(row["work"]),
                tput=[float(row[f"tput_{d}"]) for d in self.devices], cpus_need=need,
                mem=float(row["mem_gb"]), grace=grace, comm=float(row["comm"]),
                deadline=float(row["deadline"]), weight=float(row["weight"]),
                forkable=bool(row["forkable"]), remaining=float(row["work"]),
                min_workers=_int_or(row.get("min_workers"), int(row["workers"])),
                max_workers=_int_or(row.get("max_workers"), int(row["workers"])),
                exponent=_float_or(row.get("scaling_exponent"), float(opts.scaling_exponent)),
                job_type=str(row["job_type"]), min_utility=float(row["min_utility"])))
            job = self.jobs[-1]
            job.sens = job.comm if job.workers >= 2 else 0.0
            job.press = job.sens if math.isnan(float(row["bw"])) else float(row["bw"])
        self.n_users = len(users)
        self.service = [0.0] * self.n_users
        self.now = 0.0
        self.queue: list[int] = []
        self.running: list[int] = []
        self.next_arrival = 0
        self.round_length = round_length
        self.next_round = round_length if round_length else math.inf
        self.wakeup = math.inf  # the scheduler's next wake-up
        self.rng = np.random.default_rng(seed)
        self.energy_j = 0.0
        self.busy_nodes = opts.idle_power == "busy_nodes"
        self.node_energy = [0.0] * len(self.nodes)
        self.node_busy = [0.0] * len(self.nodes)
        self.busy_time = {d: 0.0 for d in self.devices}
        self.events = 0
        self.decision_points = 0
        self.segments: list[tuple[int, float, float, int]] = []
        self.segment_gpus: list[int] = []
        self.fork_sync = (opts.restart_delay if opts.fork_sync_delay is None
                          else opts.fork_sync_delay)
        if opts.max_copies is not None:
            self.max_copies = int(opts.max_copies)
        elif any(j.forkable for j in self.jobs):
            self.max_copies = max(1, sum(1 for n in self.nodes if n.gpus > 0))
        else:
            self.max_copies = 1
        self.view = RefView(self)

    # ---------------------------------------------------------------- events
    def _holding(self) -> list[RJob]:
        return [self.jobs[j] for j in self.running]

    def next_event_time(self) -> float:
        times = [math.inf]
        if self.next_arrival < len(self.jobs):
            times.append(self.jobs[self.next_arrival].arrival)
        for job in self._holding():
            times.append(job.finish)
            if job.status == GRACE:
                times.append(job.grace_end)
        if self.running or self.queue:
            if self.round_length:
                times.append(self.next_round)
            times.append(self.wakeup)
        return min(times)

    def _power_and_busy(self) -> tuple[float, dict[str, float]]:
        power = sum(n.idle_w for n in self.nodes) if not self.busy_nodes else 0.0
        busy = {d: 0.0 for d in self.devices}
        for job in self._holding():
            for n, g in job.alloc:
                node = self.nodes[n]
                if g >= 0:
                    power += node.gpu_w
                    busy[self.devices[node.device]] += 1
                else:
                    cores = job.cpus_need[node.device]
                    power += node.core_w * cores
                    busy[self.devices[node.device]] += cores
        if self.busy_nodes:
            power += sum(self.nodes[n].idle_w for n in self._hosting())
        return power, busy

    def _hosting(self) -> set[int]:
        """Nodes with at least one worker now."""
        return {n for job in self._holding() for n, _ in job.alloc}

    def _node_power(self) -> list[float]:
        """Each node's power now (W): idle (always, or while hosting) + its busy units."""
        hosting = self._hosting()
        out = [n.idle_w if (not self.busy_nodes or k in hosting) else 0.0
               for k, n in enumerate(self.nodes)]
        for job in self._holding():
            for n, g in job.alloc:
                node = self.nodes[n]
                out[n] += node.gpu_w if g >= 0 else node.core_w * job.cpus_need[node.device]
        return out

    def _move_time_to(self, t: float) -> None:
        assert t >= self.now, f"time went back from {self.now} to {t}"
        dt = t - self.now
        if dt > 0:
            busy_nodes = set()
            for job in self._holding():
                since = max(self.now, job.resume_at)
                if t > since:
                    job.remaining -= job.rate * (t - since)
                self.service[job.user] += len(job.alloc) * dt
                job.gpu_seconds += sum(1 for _, g in job.alloc if g >= 0) * dt
            for k, p in enumerate(self._node_power()):
                self.node_energy[k] += p * dt
            for k in self._hosting():
                self.node_busy[k] += dt
            power, busy = self._power_and_busy()
            self.energy_j += power * dt
            for d, b in busy.items():
                self.busy_time[d] += b * dt
        self.now = t

    # the members hetgym.driver.DecisionPoints reads
    @property
    def n_queue(self) -> int:
        """Waiting jobs."""
        return len(self.queue)

    @property
    def n_running(self) -> int:
        """Jobs holding resources."""
        return len(self.running)

    @property
    def n_jobs(self) -> int:
        """Jobs of the run."""
        return len(self.jobs)

    @property
    def next_timed(self) -> float:
        """The next round boundary or wake-up, whichever comes first."""
        return min(self.next_round, self.wakeup)

    def set_wakeup(self, t: float | None) -> None:
        """The scheduler's next wake-up (``None``: none); it must lie after now."""
        if t is not None and not t > self.now:
            raise SchedulingError(f"next_wakeup returned {t} at t={self.now}")
        self.wakeup = math.inf if t is None else float(t)

    def step(self) -> bool:
        """Process the next instant; False when the run is over."""
        t = self.next_event_time()
        horizon = self.options.horizon
        if t == math.inf or t > horizon:
            # move to the horizon only if an event lies beyond it (an unreached horizon
            # changes nothing; test_mechanisms.py::test_unreached_horizon_...)
            if t < math.inf and t > horizon and horizon > self.now:
                self._move_time_to(horizon)
            return False
        self._move_time_to(t)
        done = [j for j in self.running if self.jobs[j].finish <= t]
        ending = [j for j in self.running if j not in done
                  and self.jobs[j].status == GRACE and self.jobs[j].grace_end <= t]
        for j in done:
            self._complete(j)
        for j in ending:
            self._suspend(j, lose_progress=False)
        while self.next_arrival < len(self.jobs) and self.jobs[self.next_arrival].arrival <= t:
            job = self.jobs[self.next_arrival]
            job.status = QUEUED
            self.queue.append(job.index)
            self.next_arrival += 1
        if self.next_round <= t and self.fork_sync > 0:
            # round boundary: a job holding >= 2 copies pauses for the consolidation
            for j in self.running:
                job = self.jobs[j]
                if job.copies >= 2 and job.resume_at < t + self.fork_sync:
                    job.resume_at = t + self.fork_sync
                    job.finish = job.resume_at + job.remaining / job.rate
        while self.next_round <= t:
            self.next_round += self.round_length
        if self.wakeup <= t:
            self.wakeup = math.inf
        self.events += 1
        return True

    # ------------------------------------------------------------- decisions
    def apply(self, decisions: list) -> None:
        for d in decisions:
            if isinstance(d, Start):
                self.start(d.job, d.device, d.placement)
            elif isinstance(d, Preempt):
                self.preempt(d.job)
            elif isinstance(d, Move):
                self.move(d.job, d.placement)
            elif isinstance(d, Wait):
                pass
            else:
                raise SchedulingError(f"unknown decision {d!r}")

    def device_index(self, device: Any) -> int:
        if isinstance(device, (int, np.integer)) and not isinstance(device, bool):
            if not 0 <= int(device) < len(self.devices):
                raise SchedulingError(f"device index {device} out of range")
            return int(device)
        key = str(device).lower()
        if key not in self.devices:
            raise SchedulingError(f"device {device!r} not in {self.devices}")
        return self.devices.index(key)

    def start(self, j: int, device: Any = None, placement: Placement | None = None) -> None:
        j = int(j)
        if not 0 <= j < len(self.jobs):
            raise SchedulingError(f"Start: job {j} out of range")
        job = self.jobs[j]
        if job.status != QUEUED:
            raise SchedulingError(f"Start: job {j} is not QUEUED (status {job.status})")
        nodes = self.nodes
        if placement is None:
            if device is None:
                raise SchedulingError(f"Start: job {j} needs a device or a placement")
            dev = self.device_index(device)
            if job.tput[dev] <= 0:
                raise SchedulingError(f"Start: job {j} cannot run on {self.devices[dev]}")
            alloc = place(nodes, dev, job.workers, job.cpus_need[dev], job.mem, self.policy,
                          [n.free_gpus for n in nodes], [n.free_cpus for n in nodes],
                          [n.free_mem for n in nodes], [n.owner for n in nodes])
            if alloc is None:
                raise SchedulingError(f"Start: job {j} does not fit on {self.devices[dev]}")
        else:
            parts = [placement] if isinstance(placement, Placement) else list(placement)
            alloc = self._check_parts(job, parts)
            devs = {nodes[n].device for n, _ in alloc}
            dev = devs.pop() if len(devs) == 1 else -2
        delay = self.fork_sync if len(alloc) > job.max_workers else 0.0
        if math.isnan(job.first_start):
            job.first_start = self.now
            job.resume_at = self.now + delay
        else:
            job.n_restart += 1
            job.resume_at = self.now + max(self.options.restart_delay, delay)
        self.queue.remove(j)
        self._take(j, alloc, dev)

    def _take(self, j: int, alloc: list[tuple[int, int]], dev: int) -> None:
        """Take the resources of ``alloc`` (copies in order) and run job ``j`` on them
        (resume_at already set); the rate is the sum of the copies' rates."""
        job = self.jobs[j]
        nodes = self.nodes
        self._book(job, alloc, +1)
        job.alloc = alloc
        # more workers than the largest gang: copies of a (fixed-gang) forkable job
        job.copies = len(alloc) // job.workers if len(alloc) > job.max_workers else 1
        job.rate = self._pooled_rate(j, alloc, job.copies)
        job.finish = job.resume_at + job.remaining / job.rate
        job.run_start = self.now
        job.device = dev
        job.status = RUNNING
        self.running.append(j)
        self._refresh(alloc)

    def _rate(self, j: int, alloc: list[tuple[int, int]]) -> float:
        """Rate of job j on ``alloc`` next to the jobs holding GPUs now."""
        base = job_rate(self.jobs[j], alloc, self.nodes, self.options.scaling_exponent,
                        self.options.topology_coeff, self.options.network_distance)
        return base * interference(self, j, alloc)

    def _pooled_rate(self, j: int, alloc: list[tuple[int, int]], copies: int) -> float:
        """Sum of the rates of ``copies`` equal slices of ``alloc`` (forking)."""
        w = len(alloc) // copies
        return sum(self._rate(j, alloc[c * w:(c + 1) * w]) for c in range(copies))

    def _refresh(self, alloc: list[tuple[int, int]]) -> None:
        """New rates and finishes of the running jobs holding a GPU on the touched nodes."""
        opts = self.options
        if opts.interference_coeff <= 0 and not opts.interference_table:
            return
        touched = {n for n, _ in alloc}
        for k in self.running:
            job = self.jobs[k]
            if any(n in touched and g >= 0 for n, g in job.alloc):
                job.rate = self._pooled_rate(k, job.alloc, job.copies)
                job.finish = max(self.now, job.resume_at) + job.remaining / job.rate

    def move(self, j: int, placement: Any) -> None:
        """Re-allocate a running job (or one in its grace period): see ``hetgym.decisions.Move``."""
        j = int(j)
        if not 0 <= j < len(self.jobs) or self.jobs[j].status not in (RUNNING, GRACE):
            raise SchedulingError(f"Move: job {j} is not RUNNING")
        job = self.jobs[j]
        parts = [placement] if isinstance(placement, Placement) else list(placement)
        alloc = [(int(n), int(g)) for p in parts for n, g in zip(p.nodes, p.gpus)]
        if sorted(alloc) == sorted(job.alloc):
            job.status = RUNNING
            job.grace_end = math.inf
            return
        self._book(job, job.alloc, -1)  # check against the free resources plus the job's own
        try:
            self._check_parts(job, parts)
        finally:
            self._book(job, job.alloc, +1)  # taken back; the move below releases them for good
        self._lose_since_checkpoint(job)
        self._release(j)
        job.n_restart += 1
        delay = self.fork_sync if len(alloc) > job.max_workers else 0.0
        job.resume_at = self.now + max(self.options.restart_delay, delay)
        devs = {self.nodes[n].device for n, _ in alloc}
        self._take(j, alloc, devs.pop() if len(devs) == 1 else -2)

    def _check_parts(self, job: RJob, parts: list) -> list[tuple[int, int]]:
        """Check a placement or a list of copies against the free resources; returns the
        workers of all copies in order."""
        self._check_copies(job, parts)
        alloc: list[tuple[int, int]] = []
        for p in parts:
            part = list(zip([int(x) for x in p.nodes], [int(x) for x in p.gpus]))
            self._check_explicit(job, alloc + part, len(part) if len(parts) > 1 else None)
            alloc += part
        return alloc

    def _check_copies(self, job: RJob, parts: list) -> None:
        """Copies (forking): >1 only for a forkable job, at most max_copies, each a full
        gang, no node shared between two copies."""
        if not parts:
            raise SchedulingError(f"Start: job {job.index} got an empty list of copies")
        if len(parts) == 1:
            return
        if not job.forkable:
            raise SchedulingError(f"Start: job {job.index} is not forkable")
        if len(parts) > self.max_copies:
            raise SchedulingError(f"Start: job {job.index}: more than max_copies copies")
        seen: set = set()
        for p in parts:
            if len(p) != job.workers:
                raise SchedulingError(f"Start: a copy of job {job.index} is not a full gang")
            on = {int(n) for n in p.nodes}
            if on & seen:
                raise SchedulingError(f"Start: copies of job {job.index} share a node")
            seen |= on

    def _check_explicit(self, job: RJob, alloc: list[tuple[int, int]],
                        gang: int | None = None) -> None:
        """Check a placement; with ``gang`` (copies), ``alloc`` is the copies so far plus
        one copy of ``gang`` workers, all checked together against free resources."""
        if gang is None and not job.min_workers <= len(alloc) <= job.max_workers:
            raise SchedulingError(f"Start: job {job.index} takes {job.min_workers}.."
                                  f"{job.max_workers} workers, placement has {len(alloc)}")
        need_c: dict[int, float] = {}
        need_m: dict[int, float] = {}
        seen = set()
        for n, g in alloc:
            if not 0 <= n < len(self.nodes):
                raise SchedulingError("Start: a node index is out of range")
            node = self.nodes[n]
            if node.is_cpu:
                if g >= 0:
                    raise SchedulingError("Start: a CPU-node worker has a GPU index")
            else:
                if not 0 <= g < node.gpus:
                    raise SchedulingError("Start: a GPU index is out of range")
                if node.owner[g] >= 0 or (n, g) in seen:
                    raise SchedulingError("Start: a GPU is busy or used twice")
                seen.add((n, g))
            if job.tput[node.device] <= 0:
                raise SchedulingError("Start: placed on a device type where its tput is 0")
            need_c[n] = need_c.get(n, 0.0) + job.cpus_need[node.device]
            need_m[n] = need_m.get(n, 0.0) + job.mem
        for n in need_c:
            if need_c[n] > self.nodes[n].free_cpus + EPS:
                raise SchedulingError("Start: CPU cores exceeded")
            if need_m[n] > self.nodes[n].free_mem + EPS:
                raise SchedulingError("Start: memory exceeded")

    def preempt(self, j: int) -> None:
        j = int(j)
        if not 0 <= j < len(self.jobs) or self.jobs[j].status != RUNNING:
            raise SchedulingError(f"Preempt: job {j} is not RUNNING")
        job = self.jobs[j]
        limit = self.options.max_preemptions
        if limit is not None and job.n_preempt >= limit:
            raise SchedulingError(f"Preempt: job {j} was already preempted {job.n_preempt} times "
                                  f"(limit {limit})")
        job.n_preempt += 1
        if job.grace > 0:
            job.status = GRACE
            job.grace_end = self.now + job.grace
        else:
            self._suspend(j, lose_progress=True)

    def _book(self, job: RJob, alloc: list[tuple[int, int]], sign: int) -> None:
        """Take (sign +1) or give back (-1) the resources of ``alloc`` for ``job``."""
        for n, g in alloc:
            node = self.nodes[n]
            node.free_cpus -= sign * job.cpus_need[node.device]
            node.free_mem -= sign * job.mem
            if g >= 0:
                node.free_gpus -= sign
                node.owner[g] = job.index if sign > 0 else -1

    def _release(self, j: int) -> None:
        job = self.jobs[j]
        self._book(job, job.alloc, -1)
        self.segments.append((j, job.run_start, self.now, job.device))
        self.segment_gpus.append(sum(1 for _, g in job.alloc if g >= 0))
        job.exec_time += self.now - job.run_start
        job.attained += len(job.alloc) * (self.now - job.run_start)
        job.rate = 0.0
        job.finish = math.inf
        job.grace_end = math.inf
        self.running.remove(j)
        self._refresh(job.alloc)

    def _lose_since_checkpoint(self, job: RJob) -> None:
        interval = self.options.checkpoint_interval
        if interval > 0 and self.options.checkpoint_unit == "work":
            done = job.work - job.remaining
            snapshots = math.floor(done / interval + 1e-9 * max(1.0, done / interval))
            job.remaining = max(job.remaining, job.work - snapshots * interval)
        elif interval > 0:
            progressed = max(0.0, self.now - job.resume_at)
            lost = math.fmod(progressed, interval) * job.rate
            job.remaining = min(job.work, job.remaining + lost)

    def _suspend(self, j: int, lose_progress: bool) -> None:
        job = self.jobs[j]
        if lose_progress:
            self._lose_since_checkpoint(job)
        self._release(j)
        job.status = QUEUED
        self.queue.insert(0, j)

    def _complete(self, j: int) -> None:
        job = self.jobs[j]
        assert abs(job.remaining) <= 1e-6 * max(1.0, job.work), (j, job.remaining)
        assert job.status != DONE
        job.remaining = 0.0
        self._release(j)
        job.status = DONE
        job.end = self.now

    def check(self) -> None:
        """Capacity books balance (reference-side sanity)."""
        for n, node in enumerate(self.nodes):
            held = [(j, g) for j in self.running for (m, g) in self.jobs[j].alloc if m == n]
            cores = sum(self.jobs[j].cpus_need[node.device] for j, _ in held)
            assert abs(node.cpus - cores - node.free_cpus) < 1e-6
            assert node.free_cpus > -1e-6 and node.free_mem > -1e-6
            assert node.free_gpus == node.gpus - sum(1 for _, g in held if g >= 0) >= 0


def _int_or(v: Any, default: int) -> int:
    return default if v is None or (isinstance(v, float) and math.isnan(v)) else int(v)


def _float_or(v: Any, default: float) -> float:
    return default if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


# ------------------------------------------------------------------------- view
class RefCapacity:
    """Scratch copy of free resources (same methods as the fast CapacityModel)."""

    def __init__(self, sim: RefSim, policy: int | None = None) -> None:
        self._sim = sim
        nodes = sim.nodes
        g = max([1] + [n.gpus for n in nodes])
        self.free_gpus = np.array([n.free_gpus for n in nodes], dtype=np.int64)
        self.free_cpus = np.array([n.free_cpus for n in nodes], dtype=np.float64)
        self.free_mem = np.array([n.free_mem for n in nodes], dtype=np.float64)
        self.gpu_owner = np.full((len(nodes), g), -1, dtype=np.int64)
        for k, n in enumerate(nodes):
            self.gpu_owner[k, : n.gpus] = n.owner
        self.policy = sim.policy if policy is None else int(policy)

    def slots(self, job: int, dev: int) -> int:
        jb = self._sim.jobs[job]
        return sum(slots_on_node(n.is_cpu, jb.cpus_need[dev], jb.mem, self.free_gpus[k],
                                 self.free_cpus[k], self.free_mem[k])
                   for k, n in enumerate(self._sim.nodes) if n.device == dev)

    def fits(self, job: int, dev: int) -> bool:
        jb = self._sim.jobs[job]
        return jb.tput[dev] > 0 and self.slots(job, dev) >= jb.workers

    def place(self, job: int, dev: int) -> Placement | None:
        jb = self._sim.jobs[job]
        if jb.tput[dev] <= 0:
            return None
        alloc = place(self._sim.nodes, dev, jb.workers, jb.cpus_need[dev], jb.mem, self.policy,
                      self.free_gpus, self.free_cpus, self.free_mem, self.gpu_owner)
        if alloc is None:
            return None
        nodes = np.array([n for n, _ in alloc], dtype=np.int64)
        gpus = np.array([g for _, g in alloc], dtype=np.int64)
        self.take(job, nodes, gpus)
        return Placement(nodes, gpus)

    def _move(self, job: int, alloc, sign: int) -> None:
        sim = self._sim
        jb = sim.jobs[job]
        for n, g in alloc:
            n, g = int(n), int(g)
            d = sim.nodes[n].device
            self.free_cpus[n] -= sign * jb.cpus_need[d]
            self.free_mem[n] -= sign * jb.mem
            if g >= 0:
                self.free_gpus[n] -= sign
                self.gpu_owner[n, g] = job if sign > 0 else -1

    def take(self, job: int, nodes, gpus) -> None:
        self._move(job, list(zip(list(nodes), list(gpus))), +1)

    def give(self, job: int) -> None:
        self._move(job, self._sim.jobs[job].alloc, -1)

    def free_per_device(self) -> np.ndarray:
        sim = self._sim
        out = np.zeros(len(sim.devices))
        for k, n in enumerate(sim.nodes):
            out[n.device] += self.free_cpus[k] if n.is_cpu else self.free_gpus[k]
        return out

    free_dev = property(free_per_device)

    def copy(self) -> "RefCapacity":
        out = RefCapacity.__new__(RefCapacity)
        out._sim, out.policy = self._sim, self.policy
        for name in ("free_gpus", "free_cpus", "free_mem", "gpu_owner"):
            setattr(out, name, getattr(self, name).copy())
        return out


def _ro(values: Any, dtype: Any) -> np.ndarray:
    a = np.array(values, dtype=dtype)
    a.flags.writeable = False
    return a


class RefView:
    """What a scheduler may read: the attributes of :class:`hetgym.sim.view.View`."""

    def __init__(self, sim: RefSim) -> None:
        self._sim = sim
        jobs = sim.jobs
        self.devices = list(sim.devices)
        self.options = sim.options
        self.rng = sim.rng
        self.job_id = _ro([j.job_id for j in jobs], np.int64)
        self.arrival = _ro([j.arrival for j in jobs], np.float64)
        self.user = _ro([j.user for j in jobs], np.int64)
        self.job_class = _ro([j.job_class for j in jobs], np.int64)
        self.workers = _ro([j.workers for j in jobs], np.int64)
        self.work = _ro([j.work for j in jobs], np.float64)
        self.tput = _ro([j.tput for j in jobs], np.float64)
        self.cpus_need = _ro([j.cpus_need for j in jobs], np.float64)
        self.mem = _ro([j.mem for j in jobs], np.float64)
        self.deadline = _ro([j.deadline for j in jobs], np.float64)
        self.weight = _ro([j.weight for j in jobs], np.float64)
        self.grace = _ro([j.grace for j in jobs], np.float64)
        self.comm = _ro([j.comm for j in jobs], np.float64)
        self.forkable = _ro([j.forkable for j in jobs], np.bool_)
        self.min_workers = _ro([j.min_workers for j in jobs], np.int64)
        self.max_workers = _ro([j.max_workers for j in jobs], np.int64)
        self.scale_exp = _ro([j.exponent for j in jobs], np.float64)
        self.sens = _ro([j.sens for j in jobs], np.float64)
        self.press = _ro([j.press for j in jobs], np.float64)
        self.min_utility = _ro([j.min_utility for j in jobs], np.float64)
        g = max([1] + [n.gpus for n in sim.nodes])
        dist = np.zeros((len(sim.nodes), g, g))
        for k, n in enumerate(sim.nodes):
            if n.gpus:
                dist[k, :n.gpus, :n.gpus] = n.dist
        self.node_dist = _ro(dist, np.float64)
        self.node_device = _ro([n.device for n in sim.nodes], np.int64)
        self.node_gpus = _ro([n.gpus for n in sim.nodes], np.int64)
        self.node_cpus = _ro([n.cpus for n in sim.nodes], np.float64)
        self.node_mem = _ro([n.mem for n in sim.nodes], np.float64)
        self.node_idle_w = _ro([n.idle_w for n in sim.nodes], np.float64)
        self.node_gpu_w = _ro([n.gpu_w for n in sim.nodes], np.float64)
        self.dev_is_cpu = _ro([d == "cpu" for d in sim.devices], np.bool_)
        self._wmax = max(j.max_workers for j in jobs) * sim.max_copies

    # dynamic job state
    def _jobs(self, attr: str, dtype: Any) -> np.ndarray:
        return _ro([getattr(j, attr) for j in self._sim.jobs], dtype)

    status = property(lambda self: self._jobs("status", np.int64))
    remaining = property(lambda self: self._jobs("remaining", np.float64))
    rate = property(lambda self: self._jobs("rate", np.float64))
    n_preempt = property(lambda self: self._jobs("n_preempt", np.int64))
    n_restart = property(lambda self: self._jobs("n_restart", np.int64))
    device = property(lambda self: self._jobs("device", np.int64))
    first_start = property(lambda self: self._jobs("first_start", np.float64))
    exec_time = property(lambda self: self._jobs("exec_time", np.float64))
    n_copies = property(lambda self: self._jobs("copies", np.int64))
    nworkers = property(lambda self: _ro([len(j.alloc) if j.alloc else 0 for j in self._sim.jobs],
                                         np.int64))
    run_start = property(lambda self: self._jobs("run_start", np.float64))

    def attained_service(self, job: int | None = None) -> Any:
        """Worker-seconds held, the current run included."""
        sim = self._sim
        out = [j.attained + (len(j.alloc) * (sim.now - j.run_start)
                             if j.status in (RUNNING, GRACE) else 0.0) for j in sim.jobs]
        return float(out[int(job)]) if job is not None else _ro(out, np.float64)

    @property
    def restart_delay(self) -> float:
        return float(self.options.restart_delay)

    @property
    def at_round_boundary(self) -> bool:
        L = self._sim.round_length
        if not L:
            return False
        return abs(self.now - round(self.now / L) * L) <= 1e-9 * L

    @property
    def round_index(self) -> int:
        L = self._sim.round_length
        if not L:
            return -1
        return int(round(self.now / L)) if self.at_round_boundary else int(self.now // L)

    def jobs_on_node(self, node: int) -> np.ndarray:
        sim = self._sim
        return _ro([j for j in sim.running if any(n == node for n, _ in sim.jobs[j].alloc)],
                   np.int64)

    def rate_of(self, job: int, placement: Any) -> float:
        sim = self._sim
        parts = [placement] if isinstance(placement, Placement) else list(placement)
        return sum(sim._rate(int(job), list(zip([int(x) for x in p.nodes], [int(x) for x in p.gpus])))
                   for p in parts)

    @property
    def node_socket_of_gpu(self) -> np.ndarray:
        nodes = self._sim.nodes
        g = max(1, max(n.gpus for n in nodes))
        return _ro([n.socket + [-1] * (g - n.gpus) for n in nodes], np.int64)

    @property
    def node_sockets(self) -> np.ndarray:
        return _ro([n.sockets for n in self._sim.nodes], np.int64)

    def _workers_table(self, which: int) -> np.ndarray:
        out = [[-1] * self._wmax for _ in self._sim.jobs]
        for k, job in enumerate(self._sim.jobs):
            for i, pair in enumerate(job.alloc):
                out[k][i] = pair[which]
        return _ro(out, np.int64)

    @property
    def worker_node(self) -> np.ndarray:
        return self._workers_table(0)

    @property
    def worker_gpu(self) -> np.ndarray:
        return self._workers_table(1)

    # nodes
    free_gpus = property(lambda self: _ro([n.free_gpus for n in self._sim.nodes], np.int64))
    free_cpus = property(lambda self: _ro([n.free_cpus for n in self._sim.nodes], np.float64))
    free_mem = property(lambda self: _ro([n.free_mem for n in self._sim.nodes], np.float64))

    @property
    def now(self) -> float:
        return self._sim.now

    @property
    def n_jobs(self) -> int:
        return len(self._sim.jobs)

    @property
    def queue(self) -> np.ndarray:
        return _ro(self._sim.queue, np.int64)

    @property
    def running(self) -> np.ndarray:
        return _ro(self._sim.running, np.int64)

    @property
    def user_service(self) -> np.ndarray:
        return _ro(self._sim.service, np.float64)

    @property
    def max_preemptions(self) -> int | None:
        return self.options.max_preemptions

    def in_grace(self, job: int) -> bool:
        return self._sim.jobs[int(job)].status == GRACE

    def expected_finish(self, job: int) -> float:
        """Projected completion of a running job (restart delay included); inf otherwise."""
        return float(self._sim.jobs[int(job)].finish)

    def capacity(self, policy: int | None = None) -> RefCapacity:
        return RefCapacity(self._sim, policy)

    @property
    def holdable(self) -> np.ndarray:
        if getattr(self, "_holdable", None) is None:
            sim = self._sim
            self._holdable = _ro([[_can_hold(self, j, c) for c in range(len(sim.devices))]
                                  for j in range(len(sim.jobs))], np.bool_)
        return self._holdable

    @property
    def free_dev(self) -> np.ndarray:
        return RefCapacity(self._sim).free_per_device()

    def any_room(self) -> bool:
        return True

    def duration(self, job: int, dev: int, g: int | None = None) -> float:
        jb = self._sim.jobs[int(job)]
        t = jb.tput[dev]
        if t <= 0 or not _can_hold(self, int(job), dev):
            return math.inf
        w = jb.workers if g is None else int(g)
        return float(jb.work / (w * t * w ** (jb.exponent - 1.0)))

    def durations(self, jobs: Any, remaining: bool = False) -> np.ndarray:
        out = np.empty((len(jobs), len(self.devices)))
        for r, j in enumerate(np.asarray(jobs, dtype=np.int64).tolist()):
            jb = self._sim.jobs[j]
            work = jb.remaining if remaining else jb.work
            w = float(jb.workers)
            eff = w ** (jb.exponent - 1.0)
            for c, t in enumerate(jb.tput):
                ok = t > 0 and _can_hold(self, j, c)
                out[r, c] = work / (w * t * eff) if ok else math.inf
        return out


def _can_hold(view: Any, job: int, dev: int) -> bool:
    """The nodes of type ``dev``, all free, could hold the job's gang (written apart from
    ``hetgym.sim.state.nodes.gang_fits`` on purpose: this is the independent reference)."""
    sim = view._sim
    jb = sim.jobs[int(job)]
    total = 0
    for n in sim.nodes:
        if n.device != dev:
            continue
        total += slots_on_node(n.is_cpu, jb.cpus_need[dev], jb.mem, n.gpus, n.cpus, n.mem)
    return total >= jb.min_workers


# ----------------------------------------------------------------------- runner
@dataclass
class RefResult:
    """Outcome of a reference run.

    Attributes:
        jobs: One row per job in workload order: job_id, arrival, start (first
            start), end (NaN if unfinished), device (key, ``"mixed"`` or ``"-"``),
            preemptions, restarts, exec_time, finished.
        energy_kwh: IT energy over [0, end of run].
        busy_time: Busy GPU-seconds (core-seconds for cpu) per device key.
        now: Time at the end of the run.
        decision_points: Number of ``decide`` calls.
        service: Per-user worker-seconds held.
        segments: ``(job, start, end, device index)`` of each finished run.
        stalled: Jobs were left unfinished with no event that could start them
            (before the horizon).
    """

    jobs: pd.DataFrame
    energy_kwh: float
    busy_time: dict[str, float]
    now: float
    decision_points: int
    events: int
    service: list[float]
    segments: list[tuple[int, float, float, int]]
    stalled: bool = False
    segment_gpus: list[int] = field(default_factory=list)
    node_energy: list[float] = field(default_factory=list)
    node_busy: list[float] = field(default_factory=list)


def simulate(scenario: Any, scheduler: Any, seed: int = 0, check: bool = True) -> RefResult:
    """Run ``scheduler`` on ``scenario`` in the reference simulator."""
    cadence = cadence_of(scheduler)
    sim = RefSim(scenario, seed=seed, round_length=cadence.rounds(scenario.options.round_length))
    scheduler.reset(sim.view)
    ask_wakeup(sim, sim.view, scheduler, cadence)

    def advance() -> bool:
        moved = sim.step()
        if moved and check:
            sim.check()
        return moved

    drive(sim, sim.view, scheduler, cadence, advance=advance,
          after_point=sim.check if check else None, fast_path=False)
    names = {i: d for i, d in enumerate(sim.devices)}
    names[-1], names[-2] = "-", "mixed"
    jobs = pd.DataFrame({
        "job_id": [j.job_id for j in sim.jobs],
        "arrival": [j.arrival for j in sim.jobs],
        "start": [j.first_start for j in sim.jobs],
        "end": [j.end if j.status == DONE else math.nan for j in sim.jobs],
        "device": [names[j.device] for j in sim.jobs],
        "preemptions": [j.n_preempt for j in sim.jobs],
        "restarts": [j.n_restart for j in sim.jobs],
        "exec_time": [j.exec_time + (sim.now - j.run_start if j.status in (RUNNING, GRACE) else 0.0)
                      for j in sim.jobs],
        "finished": [j.status == DONE for j in sim.jobs],
        "gpu_seconds": [j.gpu_seconds for j in sim.jobs],
    })
    return RefResult(jobs=jobs, energy_kwh=sim.energy_j / 3.6e6, busy_time=dict(sim.busy_time),
                     now=sim.now, decision_points=sim.decision_points, events=sim.events,
                     service=list(sim.service), segments=list(sim.segments),
                     segment_gpus=list(sim.segment_gpus), node_busy=list(sim.node_busy),
                     node_energy=list(sim.node_energy),
                     stalled=not all(j.status == DONE for j in sim.jobs)
                     and sim.now < sim.options.horizon)
