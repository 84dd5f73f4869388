"""Named scenarios: ``hetgym.scenarios.names()`` and ``hetgym.scenarios.get(name, **overrides)``.

A scenario factory takes keyword overrides: any :class:`~hetgym.specs.SimOptions`
field (``restart_delay=30``), ``objective``, and its own workload parameters
(``n_jobs``, ``seed``, ...). Unknown overrides raise ``TypeError`` naming them.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from typing import Any, Callable

import numpy as np

from hetgym import validate
from hetgym.generators import SyntheticGenerator
from hetgym.specs import ClusterSpec, NodeSpec, Objective, Scenario, SimOptions
from hetgym.workload import Workload

__all__ = ["names", "get", "register", "default_cluster", "DEFAULT", "UnknownScenarioError"]

DEFAULT = "hetero-small"
_FACTORIES: dict[str, Callable[..., Scenario]] = {}
_OPTION_FIELDS = {f.name for f in dataclasses.fields(SimOptions)}


def register(name: str, factory: Callable[..., Scenario]) -> None:
    """Register a scenario factory under ``name``."""
    _FACTORIES[name] = factory


def names() -> list[str]:
    """Names of every registered scenario."""
    _load_presets()
    return list(_FACTORIES)


class UnknownScenarioError(KeyError, ValueError):
    """A scenario name that is not registered (a ``KeyError`` and a ``ValueError``)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def get(name: str = DEFAULT, **overrides: Any) -> Scenario:
    """Build scenario ``name`` with overrides (option fields, objective, factory parameters)."""
    _load_presets()
    if name not in _FACTORIES:
        raise UnknownScenarioError(f"unknown scenario {name!r}; known: {', '.join(_FACTORIES)}")
    if "n_jobs" in overrides and overrides["n_jobs"] is not None:
        overrides["n_jobs"] = validate.integer(overrides["n_jobs"], f"scenario {name!r}: n_jobs", lo=1)
    if "seed" in overrides and overrides["seed"] is not None:
        overrides["seed"] = validate.integer(overrides["seed"], f"scenario {name!r}: seed", lo=0)
    factory = _FACTORIES[name]
    opts = {k: overrides.pop(k) for k in list(overrides) if k in _OPTION_FIELDS}
    objective = overrides.pop("objective", None)
    params = inspect.signature(factory).parameters
    unknown = [k for k in overrides if k not in params]
    if unknown:
        raise TypeError(
            f"scenario {name!r}: unknown override(s) {unknown}; options: {sorted(_OPTION_FIELDS)}, "
            f"scenario parameters: {[p for p in params]}"
        )
    sc = factory(**overrides)
    want = overrides.get("n_jobs")
    if want is not None and len(sc.workload) < want:
        raise ValueError(f"scenario {name!r}: n_jobs={want} but its source has {len(sc.workload)} jobs; "
                         f"expected n_jobs <= {len(sc.workload)}")
    changes: dict[str, Any] = {"name": name}
    if opts:
        changes["options"] = dataclasses.replace(sc.options, **opts)
    if objective is not None:
        changes["objective"] = Objective.of(objective)
    return dataclasses.replace(sc, **changes)


def default_cluster() -> ClusterSpec:
    """The default small hybrid cluster: 2 CPU nodes and 2 nodes each of K80, P100, V100 x 4."""
    return ClusterSpec(nodes=[
        NodeSpec(name="cpu", count=2, gpu_type=None, gpus=0, cpus=32, mem_gb=256),
        NodeSpec(name="k80", count=2, gpu_type="K80", gpus=4, cpus=32, mem_gb=256, sockets=2),
        NodeSpec(name="p100", count=2, gpu_type="P100", gpus=4, cpus=32, mem_gb=256, sockets=2),
        NodeSpec(name="v100", count=2, gpu_type="V100", gpus=4, cpus=32, mem_gb=256, sockets=2),
    ])


def _hetero_small(n_jobs: int = 512, seed: int = 0, load: float = 0.8) -> Scenario:
    """Default: the small hybrid cluster with a window of jobs from the shipped
    Philly-derived Gavel traces (when the trace loaders are installed; see
    :func:`hetgym.traces.defaults.philly_window`: CPU configurations by the AlloX rule,
    even windows, disjoint across seeds), else a synthetic Philly-like workload.
    ``load``: offered load on speed-weighted capacity (default 0.8)."""
    cluster = default_cluster()
    options = SimOptions(cpu_slot_cores=8)
    try:
        from hetgym.traces.defaults import philly_window
    except ModuleNotFoundError:
        philly_window = None
    if philly_window is not None:
        df = philly_window(cluster, n_jobs=n_jobs, seed=seed, load=load)
    else:
        gen = SyntheticGenerator(devices=cluster.device_types, rate=load / 90.0,
                                 workers={1: 0.75, 2: 0.15, 4: 0.1}, cpus=4.0, mem_gb=16.0)
        df = gen.generate(n_jobs, seed=seed)
    return Scenario(cluster=cluster, workload=Workload.from_frame(df), options=options)


def _synthetic(n_jobs: int = 1000, seed: int = 0, rate: float = 1 / 120.0, nodes: int = 16,
               gpus_per_node: int = 8, duration: str = "lognormal",
               mean_duration: float = 1800.0) -> Scenario:
    """A larger hybrid cluster (CPU + K80/P100/V100 in equal parts) with synthetic jobs."""
    per = max(1, nodes // 4)
    cluster = ClusterSpec(nodes=[
        NodeSpec(name="cpu", count=per, gpu_type=None, gpus=0, cpus=64, mem_gb=512),
        *[NodeSpec(name=t.lower(), count=per, gpu_type=t, gpus=gpus_per_node, cpus=64,
                   mem_gb=512, sockets=2) for t in ("K80", "P100", "V100")],
    ])
    gen = SyntheticGenerator(devices=cluster.device_types, rate=rate, duration=duration,
                             mean_duration=mean_duration,
                             workers={1: 0.7, 2: 0.15, 4: 0.1, 8: 0.05})
    df = gen.generate(n_jobs, seed=seed)
    return Scenario(cluster=cluster, workload=Workload.from_frame(df),
                    options=SimOptions(cpu_slot_cores=8))


def _toy() -> Scenario:
    """Hand-checkable toy: 1 V100 + 1 CPU slot, three jobs at time 0 (AlloX's 3-job
    example: durations (GPU, CPU) = (3, 4), (4, 6), (5, 10) s). Optimal total JCT = 17."""
    import pandas as pd

    cluster = ClusterSpec(nodes=[
        NodeSpec(name="gpu", count=1, gpu_type="V100", gpus=1, cpus=1, mem_gb=16),
        NodeSpec(name="cpu", count=1, gpu_type=None, gpus=0, cpus=1, mem_gb=16),
    ])
    gpu = np.array([3.0, 4.0, 5.0])
    cpu = np.array([4.0, 6.0, 10.0])
    df = pd.DataFrame({
        "job_id": [1, 2, 3], "arrival": 0.0, "user": [0, 1, 0], "job_class": "BE",
        "workers": 1, "work": 60.0, "tput_v100": 60.0 / gpu, "tput_cpu": 60.0 / cpu,
        "cpus": 1.0, "mem_gb": 1.0,
    })
    return Scenario(cluster=cluster, workload=Workload.from_frame(df),
                    options=SimOptions(restart_delay=0.0))


register(DEFAULT, _hetero_small)
register("synthetic-hybrid", _synthetic)
register("toy-3jobs", _toy)

_PRESET_MODULES = ("hetgym.presets.traces", "hetgym.presets.allox", "hetgym.presets.fitgpp",
                   "hetgym.presets.andreas", "hetgym.presets.topo", "hetgym.presets.hadar")
_loaded = False


def _load_presets() -> None:
    """Import the modules that register more scenarios (trace presets, paper presets).

    Only ``hetgym`` modules: scenarios are data, schedulers (``baselines``) use them.
    """
    global _loaded
    if _loaded:
        return
    _loaded = True
    for mod in _PRESET_MODULES:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name != mod:
                raise
