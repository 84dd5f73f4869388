"""Per-job arrays (:class:`~hetgym.sim.state.layout.JobArrays`) of a workload, episode windows of
them, the interference table, and the one best-duration rule
(:mod:`hetgym.sim.state` describes the whole)."""

from __future__ import annotations

import numpy as np

from hetgym.sim.rules import scaled_rate
from hetgym.sim.state.layout import JobArrays
from hetgym.sim.state.nodes import build_nodes, gang_fits
from hetgym.specs import Scenario


def build_jobs(scenario: Scenario, rows: np.ndarray | None = None) -> JobArrays:
    """Job arrays in workload order (sorted by arrival, then job_id).

    With ``rows`` (sorted row indices of the workload), only those jobs, cut by
    :func:`cut_window` (arrivals and deadlines shifted so the first job arrives at 0).
    """
    full = _build_jobs(scenario)
    return full if rows is None else cut_window(full, rows)


def cut_window(jobs: JobArrays, rows: np.ndarray) -> JobArrays:
    """The jobs at ``rows`` as an episode window: arrivals and deadlines move together so
    that the first job arrives at 0 (the array form of ``hetgym.traces.windows.rebase``)."""
    rows = np.asarray(rows, dtype=np.int64)
    out = JobArrays(*(a[rows] for a in jobs))
    t0 = out.arrival[0] if len(rows) else 0.0
    return out._replace(arrival=out.arrival - t0, deadline=out.deadline - t0)


_CACHE: dict[int, tuple[Scenario, JobArrays]] = {}


def _build_jobs(scenario: Scenario) -> JobArrays:
    key = id(scenario)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is scenario:
        return hit[1]
    jobs = _build_jobs_uncached(scenario)
    if len(_CACHE) > 8:
        _CACHE.clear()
    _CACHE[key] = (scenario, jobs)
    return jobs


def _build_jobs_uncached(scenario: Scenario) -> JobArrays:
    wl = scenario.workload
    fr = wl.frame
    devices = scenario.device_types
    tput = wl.tput_matrix(devices)
    cpus = fr["cpus"].to_numpy(dtype=np.float64)
    cpus_need = np.repeat(cpus[:, None], len(devices), axis=1)
    if scenario.options.cpu_slot_cores is not None and "cpu" in devices:
        cpus_need[:, devices.index("cpu")] = float(scenario.options.cpu_slot_cores)
    grace = fr["grace_period"].to_numpy(dtype=np.float64)
    if scenario.options.grace_period is not None:
        grace = np.full(len(fr), float(scenario.options.grace_period))
    workers = fr["workers"].to_numpy(dtype=np.int64)
    least = fr["min_workers"].to_numpy(dtype=np.int64) if "min_workers" in fr.columns else workers
    most = fr["max_workers"].to_numpy(dtype=np.int64) if "max_workers" in fr.columns else workers
    exp = np.full(len(fr), float(scenario.options.scaling_exponent))
    if "scaling_exponent" in fr.columns:
        own = fr["scaling_exponent"].to_numpy(dtype=np.float64)
        exp = np.where(np.isnan(own), exp, own)
    mem = fr["mem_gb"].to_numpy(dtype=np.float64)
    comm = fr["comm"].to_numpy(dtype=np.float64)
    sens = np.where(workers >= 2, comm, 0.0)
    bw = fr["bw"].to_numpy(dtype=np.float64)
    jobs = JobArrays(
        job_id=fr["job_id"].to_numpy(dtype=np.int64),
        arrival=fr["arrival"].to_numpy(dtype=np.float64),
        user=wl.user_ids(),
        job_class=(fr["job_class"] == "TE").to_numpy().astype(np.int64),
        workers=workers,
        work=fr["work"].to_numpy(dtype=np.float64),
        tput=np.ascontiguousarray(tput),
        cpus_need=np.ascontiguousarray(cpus_need),
        mem=mem,
        deadline=fr["deadline"].to_numpy(dtype=np.float64),
        weight=fr["weight"].to_numpy(dtype=np.float64),
        grace=grace,
        comm=comm,
        forkable=fr["forkable"].to_numpy(dtype=np.bool_),
        holdable=gang_fits(least, cpus_need, mem, build_nodes(scenario)),
        min_workers=least,
        max_workers=most,
        scale_exp=exp,
        sens=sens,
        press=np.where(np.isnan(bw), sens, bw),
        itype=np.searchsorted(job_types(scenario), fr["job_type"].to_numpy()).astype(np.int64),
        min_utility=fr["min_utility"].to_numpy(dtype=np.float64),
    )
    # owned, writable, C-contiguous copies: one Numba type for whole workloads and windows
    # (pandas hands out read-only views, which Numba types apart and compiles again)
    return JobArrays(*(np.array(a, copy=True, order="C") for a in jobs))


def job_types(scenario: Scenario) -> np.ndarray:
    """Sorted distinct ``job_type`` names of the workload and of the interference table
    (``JobArrays.itype`` indexes it)."""
    names = set(scenario.workload.frame["job_type"].astype(str))
    for (a, b), _ in scenario.options.interference_table or ():
        names.update((a, b))
    return np.array(sorted(names), dtype=object)


_ITAB_CACHE: dict[int, tuple[Scenario, np.ndarray]] = {}


def interference_matrix(scenario: Scenario) -> np.ndarray:
    """``float64[T, T]`` slowdown of a type-a job next to a type-b job (1 where not given);
    cached per scenario object (every run and every env reset asks for it)."""
    hit = _ITAB_CACHE.get(id(scenario))
    if hit is not None and hit[0] is scenario:
        return hit[1]
    if len(_ITAB_CACHE) > 8:
        _ITAB_CACHE.clear()
    tab = _interference_matrix(scenario)
    _ITAB_CACHE[id(scenario)] = (scenario, tab)
    return tab


def _interference_matrix(scenario: Scenario) -> np.ndarray:
    names = job_types(scenario)
    tab = np.ones((max(1, len(names)), max(1, len(names))))
    for (a, b), v in scenario.options.interference_table or ():
        tab[np.searchsorted(names, a), np.searchsorted(names, b)] = v
    return tab


def best_durations(jobs: JobArrays, amount: np.ndarray | None = None,
                   scaling_exponent: float = 1.0) -> np.ndarray:
    """float64[J]: each job's run time on its fastest device type that can hold its gang.

    ``amount / (W x tput x W^(e-1))`` minimised over the types where ``tput > 0``
    and the gang fits (:func:`gang_fits`); ``amount`` defaults to the whole work and
    ``e`` to 1 (linear scaling: the reference of slowdown and progress metrics).
    The scalar form is :func:`hetgym.sim.rules.best_duration`.
    """
    amount = jobs.work if amount is None else amount
    w = jobs.workers.astype(np.float64)
    ok = (jobs.tput > 0) & jobs.holdable
    with np.errstate(divide="ignore", invalid="ignore"):
        d = amount[:, None] / scaled_rate(w[:, None], jobs.tput, scaling_exponent)
    return np.min(np.where(ok, d, np.inf), axis=1)
