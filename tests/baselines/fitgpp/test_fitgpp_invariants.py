"""FitGpp family on a small ``fitgpp-lab``: capacity invariants after every event, limits."""

from __future__ import annotations

import numpy as np
import pytest

import baselines
import hetgym
from baselines.fitgpp.schedulers import ClassPriority, NodeLocalFIFO
from hetgym.sim.engine import Simulator


@pytest.fixture(scope="module")
def lab() -> hetgym.Scenario:
    # The paper's workload on 8 of its nodes (arrivals rescaled to the same offered
    # load): small enough for checks after every event, busy enough for preemptions.
    return hetgym.scenarios.get("fitgpp-lab", n_jobs=200, seed=0, nodes=8)


@pytest.mark.parametrize("name", ["fitgpp", "lrtp", "rand", "fifo", "fifo-node-local"])
def test_check_every_event(lab, name):
    sched = NodeLocalFIFO() if name == "fifo-node-local" else baselines.make(name)
    res = hetgym.simulate(lab, sched, seed=0, check_every_event=True)
    jobs = res.jobs
    assert not res.stalled
    assert res.summary()["unfinished_jobs"] == 0
    assert jobs["preemptions"].max() <= 1  # the scenario's P = 1
    assert (jobs.loc[jobs["job_class"] == "TE", "preemptions"] == 0).all()


def test_lab_scenario_is_the_papers_setup():
    lab = hetgym.scenarios.get("fitgpp-lab", n_jobs=300)
    sim = Simulator(lab)
    assert len(sim.nodes.dev) == 84
    assert set(sim.nodes.gpus.tolist()) == {8}
    assert set(sim.nodes.cpus.tolist()) == {32.0}
    assert set(sim.nodes.mem.tolist()) == {256.0}
    assert lab.options.max_preemptions == 1 and lab.options.restart_delay == 0.0
    te = lab.workload.frame["job_class"] == "TE"
    assert abs(te.mean() - 0.3) < 0.01
    small = hetgym.scenarios.get("fitgpp-lab", n_jobs=300, nodes=8, arrivals="open")
    assert small.cluster.num_nodes == 8
    big = hetgym.scenarios.get("fitgpp-lab", n_jobs=300, arrivals="open")
    span = big.workload.frame["arrival"].max() / small.workload.frame["arrival"].max()
    assert span == pytest.approx(8 / 84)  # same offered load on fewer nodes
    # controlled arrivals (the default): 300 jobs do not fill twice 84 nodes, so all
    # arrive at once; on 8 nodes they are spread out
    assert (lab.workload.frame["arrival"] == 0).all()
    ctl = hetgym.scenarios.get("fitgpp-lab", n_jobs=300, nodes=8)
    assert ctl.workload.frame["arrival"].max() > 0


def test_preemptions_happen_and_te_jobs_wait_less(lab):
    fit = hetgym.simulate(lab, baselines.make("fitgpp"), seed=0)
    fifo = hetgym.simulate(lab, NodeLocalFIFO(), seed=0)
    assert fit.summary()["preemptions"] >= 3
    assert fit.summary()["te_p95_slowdown"] < fifo.summary()["te_p95_slowdown"]


def test_same_seed_same_run(lab):
    a = hetgym.simulate(lab, baselines.make("rand"), seed=5).jobs
    b = hetgym.simulate(lab, baselines.make("rand"), seed=5).jobs
    np.testing.assert_array_equal(a["end"].to_numpy(), b["end"].to_numpy())
    np.testing.assert_array_equal(a["preemptions"].to_numpy(), b["preemptions"].to_numpy())


def test_class_priority_lazy_views_match_order(lab):
    sim = Simulator(lab)
    for _ in range(40):
        sim.advance()
    v = sim.view
    q = np.asarray(v.queue)
    part = ClassPriority()
    full = part.order(v, q)
    te = part.te_waiting(v)
    be = list(part.be_in_order(v))
    assert te + be == full.tolist()
    assert te and be
