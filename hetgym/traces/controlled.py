"""Arrival times that keep the load in the system at a target under FIFO (a closed loop).

FitGpp's paper (sec. 4.2) submits jobs "at such a rate that the cluster load (the ratio
of the total resource demand relative to the capacity) would be kept at 2.0 if they
were scheduled by FIFO". :func:`controlled_arrivals` reads this as a controlled load:
the jobs keep their order, and each is submitted at the first instant at which, with
the earlier jobs scheduled by strict FIFO with one node per job, the demand of the
jobs in the system (running or waiting) is below ``load`` times the capacity. The
demand of a job is its dominant share (the largest of its GPU, CPU and memory
shares of the cluster, as in :func:`hetgym.traces.windows.offered_load` with
``resources="dominant"``). The arrival times found this way then serve every
scheduler, so each meets the same submissions.

The FIFO used here is the engine's, driven by a small strict-FIFO rule: jobs in
arrival order, each on its fastest device type where the engine's ``pack`` placement
puts its whole gang on one node (multi-node only for a gang no node could ever
hold); nothing behind a job that does not fit starts. That is the rule of
``baselines.fitgpp.schedulers.NodeLocalFIFO`` (the study's FIFO), written again here so that
``hetgym`` does not import ``baselines``; a test checks that the two agree.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from hetgym.decisions import Start
from hetgym.sim.codes import DONE
from hetgym.sim.engine import Simulator
from hetgym.sim.state.nodes import node_slots
from hetgym.specs import Scenario, SimOptions
from hetgym.workload import Workload

__all__ = ["controlled_arrivals", "dominant_shares"]


def dominant_shares(df: pd.DataFrame, scenario: Scenario) -> np.ndarray:
    """float64[J]: each job's dominant share of the cluster (GPU, CPU and memory shares)."""
    cl = scenario.cluster
    w = df["workers"].to_numpy(dtype=np.float64)
    cpus = sum(n.count * n.cpus for n in cl.nodes)
    mem = sum(n.count * n.mem_gb for n in cl.nodes)
    gpus = sum(n.count * n.gpus for n in cl.nodes)
    shares = [w * df["cpus"].to_numpy(dtype=np.float64) / cpus if cpus else 0 * w,
              w * df["mem_gb"].to_numpy(dtype=np.float64) / mem if mem else 0 * w]
    if gpus:
        shares.append(w / gpus)
    return np.max(np.stack(shares), axis=0)


def _one_node_fifo(sim: Simulator) -> list[Start]:
    """Strict FIFO in arrival order, fastest device type first, the whole gang on one node
    where a node of the type could hold it (module docstring)."""
    view = sim.view
    cap = view.capacity()
    out: list[Start] = []
    jb = sim.jobs
    for j in view.queue.tolist():
        placed = None
        for dev in np.argsort(-jb.tput[j], kind="stable").tolist():
            if jb.tput[j, dev] <= 0:
                break
            trial = cap.copy()
            pl = trial.place(j, dev)  # the engine's pack kernel: best-fit single node first
            if pl is None:
                continue
            if len(set(pl.nodes.tolist())) > 1 and _one_node_possible(sim, j, dev):
                continue
            placed, cap = Start(j, int(dev), pl), trial
            break
        if placed is None:
            break
        out.append(placed)
    return out


def _one_node_possible(sim: Simulator, job: int, dev: int) -> bool:
    """Whether some node of type ``dev``, all free, holds the whole gang of ``job``."""
    nd, jb = sim.nodes, sim.jobs
    w = int(jb.workers[job])
    need, mem = jb.cpus_need[job:job + 1], jb.mem[job:job + 1]
    return any(node_slots(int(n), need, mem, nd)[0] >= w for n in np.flatnonzero(nd.dev == dev))


def controlled_arrivals(df: pd.DataFrame, scenario: Scenario, load: float) -> np.ndarray:
    """Arrival times (s, from 0) keeping the FIFO demand in the system at ``load`` (module
    docstring), for the jobs of ``df`` in its row order, on ``scenario``'s cluster.

    ``df`` is a job table (``Workload`` columns); its own arrivals are ignored.
    Returns float64[len(df)], non-decreasing.
    """
    if not load > 0:
        raise ValueError(f"controlled_arrivals: load must be > 0, got {load!r}")
    n = len(df)
    if n == 0:
        return np.zeros(0)
    share = dominant_shares(df, scenario)
    tmp = df.copy()
    tmp["arrival"] = np.arange(n, dtype=np.float64)  # keeps the row order through sorting
    tmp["job_id"] = np.arange(n)
    sc = Scenario(cluster=scenario.cluster, workload=Workload.from_frame(tmp, source="controlled"),
                  options=SimOptions(horizon=float("inf"), restart_delay=0.0), name="controlled")
    sim = Simulator(sc)
    arrival = sim.params.jobs.arrival  # this private scenario's own copy: set as jobs are submitted
    arrival[:] = np.inf
    out = np.empty(n)
    in_system = 0.0
    nxt = 0
    while True:
        now = sim.now
        while nxt < n and in_system < load - 1e-12:
            arrival[nxt] = out[nxt] = now
            in_system += share[nxt]
            nxt += 1
        if not sim.advance():
            break
        if len(sim.last_done):
            in_system -= float(share[sim.last_done].sum())
        if sim.n_queue:
            sim.apply(_one_node_fifo(sim))
    if int((sim.js.status == DONE).sum()) != n:
        raise RuntimeError(f"controlled_arrivals: only {nxt} of {n} jobs could be submitted "
                           "(a job that fits on no node?)")
    return out
