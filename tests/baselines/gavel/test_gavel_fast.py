"""Gavel's faster paths give exactly the schedules of the code they replaced.

The compiled worker assignment (:func:`baselines.gavel.kernels.assign_nb` behind
:func:`baselines.gavel.place.assign_workers`) is checked call by call against the Python
walk it replaced (``tests/baselines/gavel/gavel_reference.py``): at every round of a run, both
get the same view and schedule and must return the same jobs in the same order, the same
types and the same nodes and GPUs (dtype included). Then whole runs are compared job by
job. A planted bug in the reference (the walk starting from the last node) must be
caught, so the comparison can fail.
"""

from __future__ import annotations

import numpy as np
import pytest

import baselines.gavel.schedulers as gavel_mod
import hetgym
from baselines.gavel import place as gavel_place
from baselines.gavel.schedulers import POLICIES, Gavel
from tests.baselines.gavel import gavel_reference as ref
from tests.baselines.test_fast_paths import workload
from tests.baselines.test_speed_paths import assert_same_results

# Slow (compiled Gavel paths against the Python reference, call by call): run with -m slow.
pytestmark = pytest.mark.slow


def same_plan(a: dict, b: dict) -> bool:
    """Same jobs in the same order, same types, same placements (values and dtypes)."""
    if list(a) != list(b):
        return False
    for j, (ka, pa) in a.items():
        kb, pb = b[j]
        if ka != kb or type(ka) is not type(kb):
            return False
        for x, y in ((pa.nodes, pb.nodes), (pa.gpus, pb.gpus)):
            if x.dtype != y.dtype or not np.array_equal(x, y):
                return False
    return True


def checked_run(sc, policy: str, reference, monkeypatch, **kw) -> tuple[hetgym.Result, list[bool]]:
    """Run Gavel with the compiled assignment, comparing each call with ``reference``."""
    record: list[bool] = []

    def both(view, scheduled, held):
        fast = gavel_place.assign_workers(view, scheduled, held)
        record.append(same_plan(fast, reference(view, scheduled, held)))
        return fast

    with monkeypatch.context() as m:
        m.setattr(gavel_mod, "assign_workers", both)
        res = hetgym.simulate(sc, Gavel(policy=policy, **kw))
    return res, record


def scenarios():
    yield "fitgpp-lab-256", hetgym.scenarios.get("fitgpp-lab", n_jobs=256)
    yield "hadar-sim", hetgym.scenarios.get("hadar-sim")
    yield "synthetic-hybrid", hetgym.scenarios.get("synthetic-hybrid")
    yield "hetero-small", hetgym.scenarios.get("hetero-small", n_jobs=80)
    for seed in range(3):  # grace periods, preemption limits, CPU nodes, cores and memory
        yield f"grace-cpu-{seed}", workload(seed, 120, 100.0, grace=True, cpu_nodes=True,
                                            halves=bool(seed % 2))


SCENARIOS = list(scenarios())


@pytest.mark.parametrize("policy", ["las", "fifo-perf", "makespan"])
@pytest.mark.parametrize("name,sc", SCENARIOS, ids=[n for n, _ in SCENARIOS])
def test_assignment_matches_reference_call_by_call(name, sc, policy, monkeypatch) -> None:
    _, record = checked_run(sc, policy, ref.assign_workers, monkeypatch)
    assert record and all(record), f"{sum(not r for r in record)} of {len(record)} calls differ"


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_every_policy_same_run_as_reference(policy, monkeypatch) -> None:
    """Whole runs, job by job, on fitgpp-lab (256 jobs) and a run with grace periods,
    against the Python assignment and the walk that skipped the jobs after a full type."""
    for sc in (hetgym.scenarios.get("fitgpp-lab", n_jobs=256),
               workload(5, 100, 80.0, grace=True, cpu_nodes=True)):
        fast = hetgym.simulate(sc, Gavel(policy=policy))
        with monkeypatch.context() as m:
            m.setattr(gavel_mod, "assign_workers", ref.assign_workers)
            m.setattr(Gavel, "_plan", ref.plan)
            assert_same_results(fast, hetgym.simulate(sc, Gavel(policy=policy)))


def test_absent_jobs_run_matches_reference(monkeypatch) -> None:
    sc = hetgym.scenarios.get("fitgpp-lab", n_jobs=256)
    _, record = checked_run(sc, "las-perf", ref.assign_workers, monkeypatch, absent_jobs="run")
    assert record and all(record)


def test_planted_bug_is_caught(monkeypatch) -> None:
    """The reference walk starting from the last node of the type is told apart."""
    real_first = ref._Free.first

    def last_node_first(self, job, dev, w):
        nodes = self._nodes.get(dev)
        if nodes is None:
            real_first(self, job, dev, 0)  # fills the cache of the type's nodes
            nodes = self._nodes[dev]
        self._nodes[dev] = sorted(nodes, reverse=True)
        return real_first(self, job, dev, w)

    with monkeypatch.context() as m:
        m.setattr(ref._Free, "first", last_node_first)
        _, record = checked_run(hetgym.scenarios.get("fitgpp-lab", n_jobs=256), "las",
                                ref.assign_workers, monkeypatch)
    assert not all(record)


def test_a_job_on_two_types_is_refused() -> None:
    sc = hetgym.scenarios.get("hetero-small", n_jobs=8)
    from hetgym.sim.engine import Simulator

    view = Simulator(sc).view
    with pytest.raises(ValueError, match=r"more than one type \(jobs \[1\]"):
        gavel_place.assign_workers(view, {0: [1], 1: [1]}, np.zeros(0, dtype=np.int64))


# ---------------------------------------------------------------- LPs
# baselines.gavel.lp builds its constraint matrices in CSC form and hands them to HiGHS
# through baselines.gavel.highs; the reference stacks them with scipy.sparse and calls
# linprog. HiGHS must receive the same options and model, bit for bit, and answer the same.

def recorder(monkeypatch) -> list:
    """Record the options, model and answer of every HiGHS solve (SciPy's or ours)."""
    from scipy.optimize._highspy import _core as core

    log: list = []

    class Recording(core._Highs):
        def passOptions(self, o):
            log.append(("options", {a: str(getattr(o, a)) for a in dir(o) if not a.startswith("_")}))
            return super().passOptions(o)

        def passModel(self, lp):
            a = lp.a_matrix_
            log.append(("model", (lp.num_col_, lp.num_row_, int(a.format_)),
                        [lp.col_cost_, lp.col_lower_, lp.col_upper_, lp.row_lower_,
                         lp.row_upper_, a.start_, a.index_, a.value_]))
            return super().passModel(lp)

        def run(self):
            status = super().run()
            log.append(("run", (int(status), int(self.getModelStatus())),
                        [self.getSolution().col_value]))
            return status

    monkeypatch.setattr(core, "_Highs", Recording)
    return log


def bits(x) -> bytes:
    """The float64 bits of ``x`` (0.0 and -0.0 differ)."""
    return np.asarray(x, dtype=np.float64).tobytes()


def same_log(a: list, b: list) -> bool:
    if len(a) != len(b):
        return False
    for ea, eb in zip(a, b):
        if ea[0] != eb[0] or ea[1] != eb[1]:
            return False
        if ea[0] != "options" and [bits(x) for x in ea[2]] != [bits(x) for x in eb[2]]:
            return False
    return True


def lp_cases(seed: int):
    """Small LP inputs with zeros in ``T`` (jobs that cannot run on a type), mixed gangs."""
    rng = np.random.default_rng(seed)
    m, k = int(rng.integers(1, 30)), int(rng.integers(1, 4))
    T = rng.choice([0.0, 0.5, 1.0, 1.5, 3.0], (m, k)) * rng.uniform(0.5, 2.0, (m, 1))
    sf = rng.choice([1.0, 2.0, 4.0, 8.0], m)
    n = rng.choice([2.0, 4.0, 8.0, 16.0], k)
    rem = rng.uniform(100.0, 5000.0, m) * (rng.random(m) < 0.9)
    return T, sf, n, rem, rng


def lp_calls(lp):
    """Every LP entry point of :mod:`baselines.gavel.lp` on :func:`lp_cases`, through module
    ``lp`` (whose ``las``, ``max_throughput``, ``_feasible`` may be the reference's)."""
    from baselines.gavel import lp as gavel_lp

    def calls(T, sf, n, rem, rng, solution):
        w = rng.choice([1.0, 2.0], len(sf))
        need = rng.uniform(0.0, 0.3, len(sf)) * T.sum(axis=1)
        yield lp.max_throughput(T, sf, n, solution=solution)
        yield lp.las(T, sf, n, w, solution=solution)
        yield lp.las(gavel_lp.agnostic(T), sf, n, solution=solution)
        live = T.sum(axis=1) > 0
        x = lp._feasible(T[live], sf[live], n, need[live], solution)
        yield np.zeros(1) if x is None else x
        yield gavel_lp.min_makespan(T, sf, n, rem, solution=solution)
        tiso = gavel_lp.isolated_throughput(T, sf, n)
        yield gavel_lp.finish_time_fairness(T, sf, n, rem, rng.uniform(0.0, 900.0, len(sf)),
                                            rng.uniform(0.0, 300.0, len(sf)), tiso,
                                            solution=solution)
    return calls


def logged_answers(monkeypatch, reference: bool, seed: int, solution: str):
    from baselines.gavel import lp as gavel_lp

    with monkeypatch.context() as m:
        log = recorder(m)
        if reference:
            m.setattr(gavel_lp, "_feasible", ref._feasible)  # min_makespan and FTF call it
        out = [bits(x) for x in lp_calls(ref if reference else gavel_lp)(*lp_cases(seed), solution)]
    return log, out


@pytest.mark.parametrize("solution", ["interior", "vertex"])
def test_highs_gets_the_model_and_options_linprog_gives_it(solution, monkeypatch) -> None:
    for seed in range(12):
        new_log, new = logged_answers(monkeypatch, False, seed, solution)
        old_log, old = logged_answers(monkeypatch, True, seed, solution)
        assert new_log and same_log(new_log, old_log), f"seed {seed}"
        assert new == old, f"seed {seed}"


def test_planted_lp_bug_is_caught(monkeypatch) -> None:
    """HiGHS given presolve off (or an LP without the gang sizes) is told apart."""
    from baselines.gavel import highs as gavel_highs, lp as gavel_lp

    old_log, old = logged_answers(monkeypatch, True, 3, "interior")
    with monkeypatch.context() as m:
        off = gavel_highs.options(True)
        off_copy = type(off)()
        for a in dir(off):
            if not a.startswith("_"):
                setattr(off_copy, a, getattr(off, a))
        off_copy.presolve = "off"
        m.setattr(gavel_highs, "options", lambda ipm: off_copy)
        new_log, _ = logged_answers(m, False, 3, "interior")
    assert not same_log(new_log, old_log)
    real_csc = gavel_lp._csc
    with monkeypatch.context() as m:
        m.setattr(gavel_lp, "_csc", lambda sf, *a: real_csc(np.ones_like(sf), *a))
        new_log, new = logged_answers(m, False, 3, "interior")
    assert not same_log(new_log, old_log) and new != old


LP_POLICIES = ["las", "las-perf", "ftf", "ftf-perf", "makespan", "maxtput"]


def allocations_and_run(sc, policy: str, solution: str, monkeypatch, reference: bool):
    """A run and the allocation ``X`` of every recompute (reference: the old LPs)."""
    from baselines.gavel import lp as gavel_lp

    xs: list[bytes] = []
    real = Gavel._compute

    def compute(self, view, t):
        real(self, view, t)
        xs.append(bits(self._X))

    with monkeypatch.context() as m:
        m.setattr(Gavel, "_compute", compute)
        if reference:
            m.setattr(gavel_lp, "_feasible", ref._feasible)
            m.setattr(gavel_lp, "las", ref.las)
            m.setattr(gavel_lp, "max_throughput", ref.max_throughput)
        res = hetgym.simulate(sc, Gavel(policy=policy, lp_solution=solution))
    return xs, res


@pytest.mark.parametrize("solution", ["interior", "vertex"])
@pytest.mark.parametrize("policy", LP_POLICIES)
def test_lp_policies_same_allocations_as_linprog(policy, solution, monkeypatch) -> None:
    for sc in (hetgym.scenarios.get("fitgpp-lab", n_jobs=256),
               hetgym.scenarios.get("hetero-small", n_jobs=60)):
        xs, fast = allocations_and_run(sc, policy, solution, monkeypatch, False)
        xs_ref, slow = allocations_and_run(sc, policy, solution, monkeypatch, True)
        assert xs and xs == xs_ref
        assert_same_results(fast, slow)


@pytest.mark.parametrize("policy", ["makespan", "las"])
def test_linprog_fallback_gives_the_same_allocations(policy, monkeypatch) -> None:
    """Where SciPy lacks the private HiGHS bindings (``gavel_highs.available()`` False),
    the LPs go through ``linprog``: the same allocations and run."""
    from baselines.gavel import highs as gavel_highs

    sc = hetgym.scenarios.get("fitgpp-lab", n_jobs=128)
    xs, fast = allocations_and_run(sc, policy, "vertex", monkeypatch, False)
    with monkeypatch.context() as m:
        m.setattr(gavel_highs, "available", lambda: False)
        m.setattr(gavel_highs, "solve", None)  # must not be called
        xs_lp, slow = allocations_and_run(sc, policy, "vertex", monkeypatch, False)
    assert xs and xs == xs_lp
    assert_same_results(fast, slow)
