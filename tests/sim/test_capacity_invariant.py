"""Nothing runs on capacity that is not there: a CPU slot option that would let jobs
share cores is refused, and the capacity invariant catches an over-allocation even when
the options were forced past validation."""

from __future__ import annotations

import math

import pytest

import baselines
import hetgym
from hetgym.sim.engine import InvariantError
from hetgym.sim.state.jobs import _CACHE
from hetgym.specs import NodeSpec, SimOptions
from tests.sim.test_mechanisms import make

CPU8 = NodeSpec(name="c", gpu_type=None, gpus=0, cpus=8, mem_gb=1024)
JOBS = [dict(tput_cpu=1.0, cpus=2.0, work=100.0 + i) for i in range(30)]


@pytest.mark.parametrize("cores", [0, -4, 2.5, math.nan, True, "4"])
def test_cpu_slot_cores_refused(cores):
    with pytest.raises((ValueError, TypeError), match=r"SimOptions\.cpu_slot_cores.*(integer|>= 1)"):
        SimOptions(cpu_slot_cores=cores)


def test_cpu_slot_cores_integral_float_accepted():
    assert SimOptions(cpu_slot_cores=4.0).cpu_slot_cores == 4


def test_two_core_jobs_fill_an_eight_core_node_four_at_a_time():
    res = hetgym.simulate(make([CPU8], JOBS), baselines.make("fifo"), check_every_event=True)
    jobs = res.jobs.sort_values("start")
    starts = jobs["start"].to_numpy()
    assert (starts[:4] == 0).all() and (starts[4:] > 0).all()
    assert res.summary()["unfinished_jobs"] == 0


@pytest.mark.parametrize("cores", [0, -4])
def test_invariant_catches_forced_bad_slot(cores):
    """Options forced past validation (``object.__setattr__``): the run must not go on
    with 30 jobs on 8 cores; the capacity invariant names the over-allocation."""
    sc = make([CPU8], JOBS, cpu_slot_cores=4)
    object.__setattr__(sc.options, "cpu_slot_cores", cores)
    _CACHE.clear()  # the job arrays of the scenario as it was built
    with pytest.raises(InvariantError, match="over-allocation|holding"):
        hetgym.simulate(sc, baselines.make("fifo"), check_every_event=True)
