"""The kernels' structref mirror of the state (hetgym/sim/mirror.py) shares its arrays."""

import numpy as np
import pandas as pd

import baselines
import hetgym
from hetgym import scenarios
from hetgym.sim import events as E
from hetgym.sim import engine
from hetgym.sim.engine import Simulator
from hetgym.sim.mirror import Mirror


def test_mirror_reads_and_writes_the_named_tuples_arrays():
    sim = Simulator(scenarios.get("toy-3jobs"))
    assert isinstance(sim.kernel_state, Mirror)
    first = float(sim.jobs.arrival[0])
    assert E.next_event_nb(sim.kP, sim.kS) == first
    sim.params.jobs.arrival[0] = first - 0.5  # written from Python, read by a kernel
    assert E.next_event_nb(sim.kP, sim.kS) == first - 0.5
    sim.params.jobs.arrival[0] = first
    assert sim.advance()  # written by a kernel, read from Python
    assert sim.now == first and sim.n_queue >= 1


def test_segment_log_growth_rebuilds_the_mirror(monkeypatch):
    """A run whose segment log starts with one row grows it again and again (step_nb and
    preempt_nb report it full, the simulator replaces the arrays and builds a new
    mirror): the same run as with the full-size log."""
    sc = scenarios.get("hetero-small")
    plain = hetgym.simulate(sc, baselines.make("srpt"))
    real = engine.new_state

    def tiny_log(params):
        st = real(params)
        run = st.run._replace(seg_i=np.zeros((1, 4), dtype=np.int64), seg_f=np.zeros((1, 2)))
        return st._replace(run=run)

    grown_calls = []
    real_grow = Simulator.grow_segments

    def grow(self):
        old = self.kS
        real_grow(self)
        assert self.kS is not old
        grown_calls.append(self.state.run.seg_i.shape[0])

    monkeypatch.setattr(engine, "new_state", tiny_log)
    monkeypatch.setattr(Simulator, "grow_segments", grow)
    grown = hetgym.simulate(sc, baselines.make("srpt"))
    assert len(grown_calls) >= 3
    assert grown.segments == plain.segments
    pd.testing.assert_frame_equal(grown.jobs, plain.jobs)
