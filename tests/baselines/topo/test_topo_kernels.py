"""TOPO-AWARE's compiled search (baselines/topo/kernels.py) against its Python definition
(``SubsetSearch.best_grouped``): the same candidate (node, GPUs, and the utilities' bits)
at every call, and the same runs, on topology scenarios with interference (socket and
node domains, Minsky and DGX-1 servers) and on fitgpp-lab (no interference)."""

from __future__ import annotations

import numpy as np
import pytest

import hetgym
from baselines.topo.schedulers import TopoAware
from baselines.topo.parts import SubsetSearch
from hetgym import ClusterSpec, Scenario, Workload
from hetgym.sim.engine import Simulator

# Slow (TOPO kernels against the Python reference): run with -m slow.
pytestmark = pytest.mark.slow


def _mixed(domain: str = "socket", kappa: float = 0.3) -> Scenario:
    """topo-sim's jobs, 20x faster arrivals, on 3 Minsky and 2 DGX-1 servers."""
    from hetgym.presets.topo import dgx1_node, minsky_node

    base = hetgym.scenarios.get("topo-sim", n_jobs=150, n_machines=3, seed=2)
    fr = base.workload.frame.assign(arrival=lambda f: f["arrival"] / 20,
                                    tput_v100=lambda f: f["tput_p100"])
    sc = Scenario(cluster=ClusterSpec(nodes=[minsky_node(count=3), dgx1_node(count=2)]),
                  workload=Workload.from_frame(fr), options=base.options)
    return sc.replace(options={"interference_domain": domain, "interference_coeff": kappa})


SCENARIOS = {
    "mixed-socket": lambda: _mixed("socket"),
    "mixed-node": lambda: _mixed("node"),
    "mixed-flat": lambda: _mixed("socket", 0.0),
    "topo-sim": lambda: hetgym.scenarios.get("topo-sim", n_jobs=120, n_machines=2, seed=5),
    "fitgpp-lab": lambda: hetgym.scenarios.get("fitgpp-lab", n_jobs=256),
}


class _Checked:
    """Wraps a search's ``best``: every call also asks ``best_grouped`` and records
    whether the two candidates are equal (utilities compared as floats, ==)."""

    def __init__(self, search: SubsetSearch) -> None:
        self.fast, self.search = search.best, search
        self.calls = self.found = 0
        self.diffs: list = []
        search.best = self

    def __call__(self, view, cap, j):
        a = self.fast(view, cap, j)
        b = self.search.best_grouped(view, cap, j)
        self.calls += 1
        self.found += a is not None
        if a != b:
            self.diffs.append((j, a, b))
        return a


@pytest.mark.parametrize("postpone", [False, True])
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_compiled_best_equals_python_at_every_call(name: str, postpone: bool) -> None:
    sched = TopoAware(postpone=postpone)
    chk = _Checked(sched.search)
    res = hetgym.simulate(SCENARIOS[name](), sched)
    assert chk.diffs == []
    assert chk.found > 0
    assert res.metrics["avg_wait"] > 0  # the cluster was busy: jobs waited


@pytest.mark.parametrize("postpone", [False, True])
@pytest.mark.parametrize("name", ["mixed-socket", "fitgpp-lab"])
def test_compiled_runs_equal_python_runs(name: str, postpone: bool) -> None:
    """Whole runs: the same segments, job rows and postponements."""
    runs = []
    for compiled in (True, False):
        sched = TopoAware(postpone=postpone)
        sched.search.compiled = compiled
        res = hetgym.simulate(SCENARIOS[name](), sched)
        runs.append((res.segments, res.jobs.drop(columns=["decision_time"], errors="ignore"),
                     sched.postponed))
    assert runs[0][0] == runs[1][0]
    assert runs[0][1].equals(runs[1][1])
    assert runs[0][2] == runs[1][2]


def test_compiled_path_is_taken() -> None:
    """The kernels run (not the fall-back) on both kinds of scenario, flat or not."""
    for name, flat in (("mixed-socket", False), ("fitgpp-lab", True)):
        sim = Simulator(SCENARIOS[name]())
        s = SubsetSearch()
        t = s._run_tables(sim.view)
        assert t is not None and t.flat is flat


def test_kernel_bounds_equal_python_bounds() -> None:
    """(t_min, t_max) per node and gang size: bounds_nb's table = SubsetSearch.bounds."""
    sim = Simulator(_mixed())
    view, s = sim.view, SubsetSearch()
    t = s._run_tables(view)
    for n in range(len(view.node_gpus)):
        for w in range(2, int(view.node_gpus[n]) + 1):
            assert (t.lo[n, w], t.hi[n, w]) == s.bounds(view, n, w)


def test_interference_tables_match_evaluate() -> None:
    """Every candidate of a busy node: the table entry of its socket set is what
    evaluate's interference gives for its GPUs."""
    import itertools

    sim = Simulator(_mixed())
    view, s = sim.view, SubsetSearch()
    cap = view.capacity()
    # two running neighbours on DGX-1 node 3, on both sockets
    cap.take(0, np.array([3, 3]), np.array([0, 5]))
    cap.take(1, np.array([3]), np.array([2]))
    j = 4
    nodes = np.array([3], dtype=np.int64)
    t = s._run_tables(view)
    n_int, n_sys = s._interference_tables(view, cap, j, nodes, t.n_masks)
    owner = cap.gpu_owner[3]
    sock = view.node_socket_of_gpu[3]
    free = [g for g in range(8) if owner[g] < 0]
    for w in (1, 2, 3):
        for gpus in itertools.combinations(free, w):
            mine = {int(sock[g]) for g in gpus}
            mask = sum(1 << x for x in mine)
            assert (n_int[0, mask], n_sys[0, mask]) == s.interference(view, owner, j, 3, mine)


def _two_minsky(domain: str) -> Simulator:
    """Two Minsky servers (GPUs 0, 1 on socket 0; 2, 3 on socket 1), kappa 0.3; jobs
    0-2 loud (press 1, sens 1), 3-4 quiet (0, 0), 5 the 2-GPU sensitive job to place."""
    import pandas as pd

    from hetgym.presets.topo import minsky_node

    rows = [{"job_id": i, "arrival": 0.0, "user": "u", "job_class": "BE", "workers": 2,
             "work": 100.0, "tput_p100": 1.0, "cpus": 0.0, "mem_gb": 0.0, "comm": c, "bw": c}
            for i, c in enumerate([1.0, 1.0, 1.0, 0.0, 0.0, 1.0])]
    sc = Scenario(cluster=ClusterSpec(nodes=[minsky_node(count=2)]),
                  workload=Workload.from_frame(pd.DataFrame(rows)))
    sc = sc.replace(options={"interference_coeff": 0.3, "interference_domain": domain})
    return Simulator(sc)


@pytest.mark.parametrize(("domain", "owners"), [
    ("socket", {0: [0, 1], 1: [3, 4]}),  # node 1's neighbours are quiet
    ("node", {0: [0, 1], 1: [2, 2]}),    # node 1's two GPUs have ONE loud owner
])
def test_lookalike_groups_tell_neighbours_apart(domain: str, owners: dict) -> None:
    """Two nodes with the same free GPUs (1 and 3) whose neighbours differ only in what
    the grouping looks at (their press/sens; which GPUs share an owner): node 1 is the
    better one, so a grouping that merged the two would pick node 0."""
    view = _two_minsky(domain).view
    cap = view.capacity()
    for n, jobs in owners.items():
        for g, k in zip((0, 2), jobs):
            cap.take(k, np.array([n]), np.array([g]))
    s = SubsetSearch()
    c = s.best(view, cap, 5)
    assert c == s.best_grouped(view, cap, 5) == s.best_naive(view, cap, 5)
    assert (c.node, c.gpus) == (1, (1, 3))
