"""TOPO-AWARE family: the worked examples of docs/topo.md as exact
tests, and the parts' rules (Minsky node: GPUs 0, 1 on socket 0, 2, 3 on socket 1;
topology_coeff 0.125; interference kappa 0.3, domain socket)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

import baselines
import hetgym
from baselines.topo.schedulers import TopoAware, TopoBF, TopoFCFS
from baselines.topo.parts import MIN_COST, SubsetSearch, UtilityModel, level_cost
from hetgym import ClusterSpec, NodeSpec, Scenario, SimOptions, Workload
from hetgym.decisions import Placement, Start
from hetgym.specs import dgx1_topology, minsky_topology

MINSKY = ClusterSpec(nodes=[NodeSpec(name="minsky", gpu_type="P100", gpus=4, cpus=16,
                                     mem_gb=512, sockets=2, topology=minsky_topology())])
OPTS = SimOptions(restart_delay=0.0, topology_coeff=0.125, interference_coeff=0.3)


def _scenario(rows: list[dict], cluster: ClusterSpec = MINSKY, **opts) -> Scenario:
    base = {"user": "u", "job_class": "BE", "cpus": 0.0, "mem_gb": 0.0, "comm": 1.0,
            "min_utility": 0.0}
    wl = Workload.from_frame(pd.DataFrame([{**base, "job_id": i, **r}
                                           for i, r in enumerate(rows)]))
    return Scenario(cluster=cluster, workload=wl,
                    options=OPTS if not opts else SimOptions(**{**OPTS.__dict__, **opts}))


def _job(arrival: float, workers: int, work: float, **kw) -> dict:
    """A job with ideal run time ``work`` s (rate 1 at ideal placement)."""
    return {"arrival": arrival, "workers": workers, "work": work, "tput_p100": 1.0 / workers,
            **kw}


class Pinned:
    """Starts the jobs of ``pins`` on their GPUs of node 0 as they arrive, and hands the
    other decisions to ``inner``; records every GPU set started."""

    def __init__(self, inner, pins: dict[int, list[int]] | None = None) -> None:
        self.inner, self.pins, self.gpus = inner, pins or {}, {}

    def reset(self, view) -> None:
        self.inner.reset(view)

    def decide(self, view) -> list:
        q = view.queue.tolist()
        if any(j in self.pins for j in q):
            out = [Start(j, None, Placement.of([0] * len(self.pins[j]), self.pins[j]))
                   for j in q if j in self.pins]
        else:
            out = self.inner.decide(view)
        for d in out:
            self.gpus[d.job] = tuple(int(g) for g in d.placement.gpus)
        return out


def _run(sc: Scenario, sched, pins=None):
    p = Pinned(sched, pins)
    res = hetgym.simulate(sc, p, check_every_event=True)
    return res, p.gpus


# ------------------------------------------------------ topology factor
@pytest.mark.parametrize(("gpus", "end"), [([0, 1], 100.0), ([0, 2], 125.0)])
def test_t1_topology_factor(gpus, end) -> None:
    """Topology factor example: 2-GPU comm-1 job, ideal 100 s: 100 s packed, 125 s across
    sockets."""
    res, _ = _run(_scenario([_job(0.0, 2, 100.0)]), TopoFCFS(), pins={0: gpus})
    assert res.jobs["end"].iloc[0] == pytest.approx(end, rel=1e-12)


# ----------------------------------------------------------- FCFS vs BF
@pytest.mark.parametrize(("sched", "j1", "j2", "end2"),
                         [(TopoFCFS(), (0,), (1, 3), 125.0), (TopoBF(), (3,), (0, 1), 100.0)])
def test_t2_fcfs_vs_bf(sched, j1, j2, end2) -> None:
    """FCFS vs BF example: GPU 2 busy; J1 (1 GPU): FCFS GPU 0, BF GPU 3; J2 (2 GPUs): FCFS {1,
    3} (125 s), BF {0, 1} (100 s)."""
    sc = _scenario([_job(0.0, 1, 1000.0, comm=0.0), _job(1.0, 1, 1000.0, comm=0.0),
                    _job(2.0, 2, 100.0)])
    res, gpus = _run(sc, sched, pins={0: [2]})
    assert gpus[1] == j1 and gpus[2] == j2
    assert res.jobs["end"].iloc[2] - 2.0 == pytest.approx(end2, rel=1e-12)


# ------------------------------------------------ interference dynamics (engine)
def test_t3_interference_in_topo_scenario() -> None:
    """Interference dynamics example under a TOPO baseline: spread pairs placed by pins end at
    147.5 and 197.5."""
    sc = _scenario([_job(0.0, 2, 100.0), _job(50.0, 2, 100.0)])
    res, _ = _run(sc, TopoFCFS(), pins={0: [0, 2], 1: [1, 3]})
    assert res.jobs["end"].tolist() == pytest.approx([147.5, 197.5], rel=1e-12)


# --------------------------------------------------------- postponement
def test_t4_utility_values() -> None:
    """Postponement example: spread pair: n_cc = 1, n_I = MIN: U_job = 0.2 / 1.1 = 0.181818; a
    packed pair with no sensitive neighbour: 1.0."""
    m = UtilityModel()
    assert m.job_utility(1.0, MIN_COST) == pytest.approx(0.2 / 1.1, rel=1e-12)
    assert m.job_utility(1.0, MIN_COST) == pytest.approx(0.181818, abs=1e-6)
    assert m.job_utility(MIN_COST, MIN_COST) == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize(("postpone", "started"), [(True, False), (False, True)])
def test_t4_postponement(postpone: bool, started: bool) -> None:
    """Postponement example in a run: GPUs 0 and 2 busy with 1-GPU jobs; a 2-GPU comm-1 job with
    min utility 0.5 arriving at t=1 only has {1, 3}: TOPO-AWARE-P postpones it until a packed
    pair is free (t=50), TOPO-AWARE starts it at once (125 s for its ideal 100 s)."""
    sc = _scenario([_job(0.0, 1, 50.0, comm=0.0), _job(0.0, 1, 50.0, comm=0.0),
                    _job(1.0, 2, 100.0, min_utility=0.5)])
    sched = TopoAware(postpone=postpone)
    res, gpus = _run(sc, sched, pins={0: [0], 1: [2]})
    if started:
        assert gpus[2] == (1, 3)
        assert res.jobs["end"].iloc[2] == pytest.approx(126.0, rel=1e-12)
    else:
        assert [(t, j) for t, j, _ in sched.postponed] == [(1.0, 2)]
        assert sched.postponed[0][2] == pytest.approx(0.2 / 1.1, rel=1e-12)
        assert gpus[2] == (0, 1)  # at t=50 every GPU is free: the lowest packed pair
        assert res.jobs["start"].iloc[2] == 50.0
        assert res.jobs["end"].iloc[2] == pytest.approx(150.0, rel=1e-12)


# ---------------------------------------------------------- utility tie
def test_t5_system_utility_tie() -> None:
    """Utility tie example: empty node, 1-GPU job: every GPU has U_sys = 0.48254; the tie goes
    to GPU 0."""
    m = UtilityModel()
    u = m.system_utility(MIN_COST, MIN_COST, 0.75)
    assert u == pytest.approx(3 * 0.01 ** (1 / 3) / (2 * 0.01 ** (1 / 3) + 0.75 ** (1 / 3)),
                              rel=1e-12)
    assert u == pytest.approx(0.48254, abs=5e-6)
    sc = _scenario([_job(0.0, 1, 10.0, comm=0.0)])
    _, gpus = _run(sc, TopoAware())
    assert gpus[0] == (0,)


# ------------------------------------------------------------------ parts
def test_level_costs_and_bounds() -> None:
    """Level costs and normalisation (docs/topo.md, *Assumptions*): levels 1/2/3 cost 1/10/20;
    Minsky 2-GPU bounds (1, 20); DGX-1 2-GPU bounds (1, 20), 4-GPU (6 for the NVLink quad 0-3,
    worst 4 pairs across)."""
    assert [level_cost(x) for x in (1, 2, 3)] == [1.0, 10.0, 20.0]
    sc = _scenario([_job(0.0, 1, 1.0)], cluster=ClusterSpec(nodes=[
        NodeSpec(name="m", gpu_type="P100", gpus=4, sockets=2, topology=minsky_topology()),
        NodeSpec(name="d", gpu_type="P100", gpus=8, sockets=2, topology=dgx1_topology())]))
    view = hetgym.sim.engine.Simulator(sc).view
    s = SubsetSearch()
    assert s.bounds(view, 0, 2) == (1.0, 20.0)
    assert s.bounds(view, 1, 2) == (1.0, 20.0)
    assert s.bounds(view, 1, 4) == (6.0, 4 * 20.0 + 2 * 1.0)  # {0,1,4,5}: 4 cross + 0-1, 4-5


def test_interference_costs_steer_topo_aware() -> None:
    """A sensitive 2-GPU job avoids the socket of a running comm-heavy spread job when a
    quiet packed pair exists (n_I = 0.3 x 1 x 1 vs MIN)."""
    sc = _scenario([_job(0.0, 2, 1000.0), _job(1.0, 2, 100.0)],
                   cluster=ClusterSpec(nodes=[NodeSpec(name="minsky", count=2, gpu_type="P100",
                                                       gpus=4, sockets=2,
                                                       topology=minsky_topology())]))
    res, gpus = _run(sc, TopoAware(), pins={0: [0, 2]})
    # node 0 has only {1, 3} (spread, next to job 0 on both sockets); node 1 is empty
    assert gpus[1] == (0, 1)
    assert res.jobs["end"].iloc[1] == pytest.approx(101.0, rel=1e-12)


def test_fcfs_blocks_bf_skips() -> None:
    """FCFS stops at the first job that does not fit; BF starts a later one that fits."""
    sc = _scenario([_job(0.0, 3, 100.0), _job(1.0, 2, 100.0), _job(2.0, 1, 100.0)])
    fcfs, _ = _run(sc, TopoFCFS())
    bf, _ = _run(sc, TopoBF())
    assert fcfs.jobs["start"].iloc[2] == pytest.approx(fcfs.jobs["end"].iloc[0])
    assert bf.jobs["start"].iloc[2] == 2.0


def test_registered() -> None:
    for name in ("topo-aware", "topo-aware-p", "topo-fcfs", "topo-bf"):
        assert name in baselines.names()
    assert baselines.make("topo-aware-p").postpone is True
    assert math.isclose(baselines.make("topo-aware", kappa=0.5).search.kappa, 0.5)


# ------------------------------------------------------------ placement metrics
def test_placement_metrics_t2() -> None:
    """FCFS vs BF example under FCFS: J2 runs 125 s for its ideal 100 s: placement slowdown
    1.25, an SLO violation; the 1-GPU jobs have slowdown 1; jct_over_ideal averages jct / ideal."""
    sc = _scenario([_job(0.0, 1, 1000.0, comm=0.0), _job(1.0, 1, 1000.0, comm=0.0),
                    _job(2.0, 2, 100.0)])
    res, _ = _run(sc, TopoFCFS(), pins={0: [2]})
    assert res.jobs["placement_slowdown"].tolist() == pytest.approx([1.0, 1.0, 1.25])
    m = res.summary()
    assert m["avg_placement_slowdown"] == pytest.approx(3.25 / 3)
    assert m["max_placement_slowdown"] == pytest.approx(1.25)
    assert m["p95_placement_slowdown"] == pytest.approx(1.0 + 0.9 * 0.25)
    assert m["slo_violations"] == 1.0
    assert m["jct_over_ideal"] == pytest.approx((1.0 + 1.0 + 1.25) / 3)
    res2 = hetgym.simulate(sc.replace(options={"slo_slack": 1.3}), Pinned(TopoFCFS(), {0: [2]}))
    assert res2.summary()["slo_violations"] == 0.0


# ------------------------------------------------------------------ scenarios
@pytest.mark.parametrize(("name", "params"), [("topo-prototype", {}),
                                              ("topo-prototype", {"jobs": "authors"}),
                                              ("topo-sim", {"n_jobs": 30, "n_machines": 2})])
def test_env_runs_topo_scenarios(name: str, params: dict) -> None:
    """HetCluster-v0 passes Gymnasium's checker on the TOPO scenarios."""
    import gymnasium as gym
    from gymnasium.utils.env_checker import check_env

    sc = hetgym.scenarios.get(name, **params)
    env = gym.make("HetCluster-v0", scenario=sc, window=4)
    check_env(env.unwrapped, skip_render_check=True)


def test_prototype_scenario_data() -> None:
    """topo-prototype: Table 1 jobs timed from the profile (work = packed solo time, comm
    from the pack/spread ratio: AlexNet bs1 0.99517, bs4 0.92025, GoogLeNet bs4 0.08310)."""
    fr = hetgym.scenarios.get("topo-prototype").workload.frame
    assert fr["workers"].tolist() == [1, 1, 1, 2, 2, 2]
    assert fr["work"].tolist() == pytest.approx([69.165, 251.195, 69.165, 152.285, 127.415,
                                                 127.415])
    assert fr["comm"].tolist() == pytest.approx([0.995173, 0.083099, 0.995173, 0.920248,
                                                 0.995173, 0.995173], abs=1e-6)
    assert fr["min_utility"].tolist() == [0.3, 0.3, 0.3, 0.5, 0.5, 0.5]
    assert fr["arrival"].iloc[0] == pytest.approx(0.513093165250245)
    # the topology factor reproduces the profile's spread time exactly (assumption *times from
    # the profile*)
    res, _ = _run(hetgym.scenarios.get("topo-prototype").replace(
        workload=Workload.from_frame(fr.iloc[[4]])), TopoFCFS(), pins={0: [0, 2]})
    assert res.jobs["exec_time"].iloc[0] == pytest.approx(159.115, rel=1e-9)


def test_sim_scenario_generator() -> None:
    """topo-sim: the authors' generator's ranges; the authors' own 100 jobs; 3-GPU jobs get
    comm 0 and keep their type's pressure (assumption *3-GPU jobs*)."""
    fr = hetgym.scenarios.get("topo-sim", n_jobs=400, n_machines=5, seed=1).workload.frame
    assert set(fr["workers"]) <= {1, 2, 3} and fr["min_utility"].between(0.30, 0.52).all()
    gaps = fr["arrival"].diff().dropna()
    assert (gaps == gaps.round()).all() and 8 < gaps.mean() < 12
    three = fr[fr["workers"] == 3]
    assert len(three) and (three["comm"] == 0).all() and (three["bw"] > 0).any()
    auth = hetgym.scenarios.get("topo-sim", authors=True).workload.frame
    assert len(auth) == 100 and auth["arrival"].iloc[0] == 7.0
    with pytest.raises(ValueError, match="100 jobs"):
        hetgym.scenarios.get("topo-sim", authors=True, n_jobs=101)


@pytest.mark.parametrize("postpone", [False, True])
def test_grouped_search_equals_naive(postpone: bool) -> None:
    """SubsetSearch.best (one node per look-alike group) decides exactly as best_naive
    (every node) on a busy mixed cluster of Minsky and DGX-1 servers."""
    from hetgym.presets.topo import dgx1_node, minsky_node

    base = hetgym.scenarios.get("topo-sim", n_jobs=150, n_machines=3, seed=2)
    fr = base.workload.frame.assign(arrival=lambda f: f["arrival"] / 4,
                                    tput_v100=lambda f: f["tput_p100"])
    sc = Scenario(cluster=ClusterSpec(nodes=[minsky_node(count=3), dgx1_node(count=2)]),
                  workload=Workload.from_frame(fr), options=base.options)
    runs = []
    for naive in (False, True):
        sched = TopoAware(postpone=postpone)
        if naive:
            sched.search.best = sched.search.best_naive
        res, gpus = _run(sc, sched)
        runs.append((res.jobs["end"].tolist(), gpus, res.metrics["avg_wait"], res.segments))
    assert runs[0][3] == runs[1][3]  # (job, start, end, device, node) of every run
    assert runs[0][1] == runs[1][1]
    assert runs[0][0] == runs[1][0]
    assert runs[0][2] > 0  # jobs did wait: the cluster was busy


def test_study_prototype_numbers() -> None:
    """scripts/topo_study.py's prototype table: the numbers docs/topo.md reports."""
    import sys

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[3] / "scripts"))
    try:
        import topo_study
    finally:
        sys.path.pop(0)
    text = topo_study.prototype_table("authors")
    rows = {line.split(" | ")[0].strip("| "): line.split(" | ") for line in text.splitlines()[2:]}
    assert [rows[k][1] for k in ("FCFS", "BF", "TOPO-AWARE", "TOPO-AWARE-P")] == \
        ["460.7", "460.7", "460.7", "391.6"]
    pinned = next(v for k, v in rows.items() if k.startswith("TOPO-AWARE-P, jobs 1, 2"))
    assert pinned[1] == "349.4"
    assert "1.00 {0, 1} @124.5" in rows["TOPO-AWARE-P"][8]  # job 3 waits for a packed pair
    doc = (__import__("pathlib").Path(__file__).resolve().parents[3] / "docs" / "topo.md")
    assert text in doc.read_text()
