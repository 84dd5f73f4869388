"""The kernels' structref mirror of the state (hetgym/sim/state/mirror.py) shares its arrays."""

import numpy as np
import pandas as pd

import baselines
import hetgym
from hetgym import scenarios
from hetgym.sim import engine
from hetgym.sim.engine import Simulator
from hetgym.sim.events.step import next_event_nb, step_nb
from hetgym.sim.state.mirror import Mirror


def test_mirror_reads_and_writes_the_named_tuples_arrays():
    sim = Simulator(scenarios.get("toy-3jobs"))
    assert isinstance(sim.kernel_state, Mirror)
    first = float(sim.jobs.arrival[0])
    assert next_event_nb(sim.kP, sim.kS) == first
    sim.params.jobs.arrival[0] = first - 0.5  # written from Python, read by a kernel
    assert next_event_nb(sim.kP, sim.kS) == first - 0.5
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


def _finish(sim):
    f = baselines.make("fifo")
    sim.apply(f.decide(sim.view))
    while sim.advance():
        sim.apply(f.decide(sim.view))
    return sim.now, sim.n_done, sim.segments


def test_simulator_and_env_copy_and_pickle_rebuild_the_mirror():
    """Copies get their own arrays and a mirror over them, and continue as the original."""
    import copy
    import pickle

    import gymnasium as gym

    sim = Simulator(scenarios.get("hetero-small"))
    sim.advance()
    copies = [copy.deepcopy(sim), pickle.loads(pickle.dumps(sim))]
    for c in copies:
        assert c.state.run.ctr is not sim.state.run.ctr and c.kS is not sim.kS
    ends = [_finish(c) for c in copies]
    assert ends[0] == ends[1] == _finish(sim)

    env = gym.make("HetCluster-v0").unwrapped
    env.reset(seed=0)
    for _ in range(5):
        env.step(int(np.flatnonzero(env.action_masks())[0]))
    twins = [copy.deepcopy(env), pickle.loads(pickle.dumps(env))]

    def steps(e):
        out = []
        for _ in range(30):
            obs, r, term, trunc, _ = e.step(int(np.flatnonzero(e.action_masks())[-1]))
            out.append((float(r), obs.tobytes()))
            if term or trunc:
                break
        return out

    got = [steps(t) for t in twins]
    assert got[0] == got[1] == steps(env)


def _has_plain_signature(dispatcher) -> bool:
    return any(type(t).__name__ == "PlainParamsKType" for sig in dispatcher.signatures for t in sig)


def test_runs_without_interference_compile_no_interference_kernel():
    """A run with interference off gets a ``PlainParamsK`` (the kernels compiled for it
    leave the interference chain out, hetgym/sim/kernels/interference.py); a run with it on gets
    a ``ParamsK``, and both give the engine's rates."""
    from hetgym.sim.kernels import interference as I
    from hetgym.sim.state.mirror import ParamsK, PlainParamsK

    sc = scenarios.get("hetero-small")
    assert sc.options.interference_coeff == 0 and not sc.options.interference_table
    sim = Simulator(sc)
    assert isinstance(sim.kP, PlainParamsK)
    res = hetgym.simulate(sc, baselines.make("srpt"))  # starts, completions, preemptions
    assert res.metrics["unfinished_jobs"] == 0
    for d in (I.refresh_rates_nb, I.interference_factor_nb, I._interfered_rate_full_nb):
        assert not _has_plain_signature(d), d.__name__
    on = Simulator(sc.replace(options={"interference_coeff": 0.3}))
    assert isinstance(on.kP, ParamsK) and not isinstance(on.kP, PlainParamsK)


def test_structref_symbol_names_are_short_and_tell_layouts_apart():
    """A mirror type's part of compiled symbol names is its class name and a digest of its
    fields (not the type's whole string, kilobytes long): distinct for distinct layouts."""
    import dataclasses

    from numba import typeof

    sc = scenarios.get("toy-3jobs")
    plain = Simulator(sc)  # no interference: a PlainParamsK
    full = Simulator(dataclasses.replace(
        sc, options=dataclasses.replace(sc.options, interference_coeff=0.3)))  # a ParamsK
    assert type(typeof(plain.kP)) is not type(typeof(full.kP))
    names = {}
    for sim in (plain, full):
        for obj in (sim.kP, sim.kS, sim.kernel_state.run, sim.kernel_state.jobs):
            t = typeof(obj)
            base, args = t.mangling_args
            assert len(base) < 64 and args == ()
            assert base.startswith(type(t).__name__)
            names.setdefault(base, set()).add(str(t))
    assert all(len(v) == 1 for v in names.values())  # one digest, one layout
    assert len(names) == 5  # the two params types, state, run state, job arrays


def test_mirror_owns_its_arrays_and_outlives_its_simulator():
    """The structrefs own their arrays (kernels read them lent, without reference counts):
    a mirror held only in compiled containers, its simulator, proxies and NamedTuples gone,
    still reads and writes the same arrays; once the last holder goes, nothing is left."""
    import gc
    import sys

    from numba.core.runtime import _nrt_python, rtsys
    from numba.typed import List

    from hetgym.sim.state.mirror import mirror

    mirror(*_toy_state())  # Numba's runtime started (it resets the counters when it starts)
    stats_on = _nrt_python.memsys_stats_enabled()
    _nrt_python.memsys_enable_stats()
    gc.collect()
    base = rtsys.get_allocation_stats()
    sim = Simulator(scenarios.get("toy-3jobs"))
    arrival, ctr = sim.params.jobs.arrival, sim.state.run.ctr
    before = sys.getrefcount(arrival)
    m = mirror(sim.params, sim.state)
    assert sys.getrefcount(arrival) == before + 1  # the structref's own reference
    held = List([m.P]), List([m.S])  # compiled containers; proxies made anew on reads
    del sim, m
    gc.collect()
    first = float(arrival[0])
    assert next_event_nb(held[0][0], held[1][0]) == first
    arrival[0] = first - 1.0  # written from Python, read by a kernel through the list
    assert next_event_nb(held[0][0], held[1][0]) == first - 1.0
    arrival[0] = first
    code, _, _ = step_nb(held[0][0], held[1][0])
    assert code >= 0 and ctr[engine.CTR_ARR] >= 1  # the kernel wrote the state's own array
    del held
    gc.collect()
    assert sys.getrefcount(arrival) == before - 2  # the simulator's two references gone too
    end = rtsys.get_allocation_stats()
    if not stats_on:
        _nrt_python.memsys_disable_stats()
    assert end.mi_alloc - end.mi_free == base.mi_alloc - base.mi_free  # no meminfo left


def _toy_state():
    sim = Simulator(scenarios.get("toy-3jobs"))
    return sim.params, sim.state



def test_replace_state_rebinds_the_kernels_and_refuses_a_foreign_state():
    """``Simulator.replace_state`` swaps in a state with new arrays (here a copy of every
    array): the kernels then write those arrays, not the old ones; a state of another size
    is refused with the sizes named."""
    import copy

    import pytest

    sc = scenarios.get("hetero-small", n_jobs=64)
    sim = Simulator(sc)
    old = sim.state
    new = copy.deepcopy(old)
    old_kS = sim.kS
    sim.replace_state(new)
    assert sim.state is new and sim.js is new.job and sim.ns is new.node and sim.kS is not old_kS
    before = old.run.ctr.copy()
    assert sim.advance()
    assert sim.n_queue >= 1 and new.run.ctr.tolist() != before.tolist()
    assert old.run.ctr.tolist() == before.tolist()  # the old arrays are not written any more
    other = Simulator(scenarios.get("hetero-small", n_jobs=32))
    with pytest.raises(ValueError, match="replace_state.*32 jobs.*expected 64"):
        sim.replace_state(other.state)
