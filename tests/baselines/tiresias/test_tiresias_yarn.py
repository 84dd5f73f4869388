"""Tiresias (2D-LAS) and YARN-CS: the Tiresias-vs-YARN-CS example of docs/gavel.md, and the
AnyType part."""

from __future__ import annotations

import pytest

import baselines
import hetgym
from baselines.tiresias.schedulers import Tiresias
from baselines.common.unaware import AnyType
from baselines.tiresias.yarn import YarnCS
from tests.baselines.tiny import ends, scenario

TI1 = [(0.0, 4, {"v100": 1.0}, 4 * 2000.0), (1000.0, 2, {"v100": 1.0}, 2 * 500.0)]


def test_ti1_tiresias_demotes_and_preempts():
    """Tiresias vs YARN-CS example: J0 demoted at 900 (4 x 900 = 3600 GPU s), preempted at 1000
    for J1; J1 done 1500, J0 done 2500; avg JCT 1500."""
    res = hetgym.simulate(scenario(TI1, [("V100", 1, 4)]), Tiresias())
    assert ends(res) == pytest.approx([2500.0, 1500.0])
    assert res.summary()["avg_jct"] == pytest.approx(1500.0)


def test_ti1_tiresias_with_restart_delay():
    res = hetgym.simulate(scenario(TI1, [("V100", 1, 4)], restart_delay=10.0), Tiresias())
    assert ends(res) == pytest.approx([2510.0, 1500.0])
    assert res.summary()["avg_jct"] == pytest.approx(1505.0)


def test_ti1_yarn_cs_fifo():
    """Tiresias vs YARN-CS example: YARN-CS runs J0 0-2000, J1 2000-2500: avg JCT 1750."""
    res = hetgym.simulate(scenario(TI1, [("V100", 1, 4)]), YarnCS())
    assert ends(res) == pytest.approx([2000.0, 2500.0])
    assert res.summary()["avg_jct"] == pytest.approx(1750.0)


def test_tiresias_wakes_at_the_crossing_while_a_job_waits():
    """J0 (1 GPU) runs; J1 (1 GPU) waits on the single GPU; J0 crosses 3600 GPU s at
    3600 and J1 (Q0) takes the GPU exactly then."""
    rows = [(0.0, 1, {"v100": 1.0}, 5000.0), (10.0, 1, {"v100": 1.0}, 100.0)]
    res = hetgym.simulate(scenario(rows, [("V100", 1, 1)]), Tiresias())
    assert ends(res) == pytest.approx([5100.0, 3700.0])


def test_tiresias_more_queues_and_bad_thresholds():
    t = Tiresias.make(thresholds=[100, 1000])
    assert t.thresholds == (100.0, 1000.0)
    with pytest.raises(ValueError, match="increasing"):
        Tiresias(thresholds=(1000.0, 100.0))


def test_yarn_is_strict_fifo():
    """J1 (4 GPUs) blocks J2 (1 GPU) although a GPU is free."""
    rows = [(0.0, 3, {"v100": 1.0}, 300.0), (1.0, 4, {"v100": 1.0}, 400.0),
            (2.0, 1, {"v100": 1.0}, 10.0)]
    res = hetgym.simulate(scenario(rows, [("V100", 1, 4)]), YarnCS())
    assert ends(res) == pytest.approx([100.0, 200.0, 210.0])


def test_anytype_random_order_ignores_speed():
    """A job 10x faster on V100 than on K80 lands on either type, depending on the draw."""
    rows = [(0.0, 1, {"v100": 10.0, "k80": 1.0}, 100.0)]
    sc = scenario(rows, [("V100", 1, 1), ("K80", 1, 1)])
    seen = {float(hetgym.simulate(sc, YarnCS(), seed=s).jobs["end"][0]) for s in range(12)}
    assert seen == {10.0, 100.0}
    cl = {float(hetgym.simulate(sc, YarnCS(order="cluster"), seed=s).jobs["end"][0])
          for s in range(3)}
    assert len(cl) == 1  # cluster order: always the same type


def test_anytype_same_order_within_a_decision_point():
    from hetgym.sim.engine import Simulator

    rows = [(0.0, 1, {"v100": 1.0, "k80": 1.0}, 10.0)] * 2
    sim = Simulator(scenario(rows, [("V100", 1, 1), ("K80", 1, 1)]), seed=3)
    assert sim.advance()
    part = AnyType("random")
    assert part.candidates(sim.view, 0) == part.candidates(sim.view, 1)
    with pytest.raises(ValueError, match="random"):
        AnyType("fastest")


def test_registered():
    assert {"tiresias", "yarn-cs"} <= set(baselines.names())
    assert isinstance(baselines.make("tiresias", thresholds=[10.0]), Tiresias)
    assert isinstance(baselines.make("yarn-cs", order="cluster"), YarnCS)
