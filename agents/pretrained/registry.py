"""Pretrained models shipped in the package, run like any baseline.

Each model is a model file in ``agents/pretrained/`` beside ``<name>.json``, its card:
the scenario family it was trained on, the cluster's device types, the env arguments,
how it was trained (command, steps, wall time, machine and its load) and its held-out
results (docs/agents.md). The card's ``algo`` says which kind of model it is
(:data:`MODEL_SUFFIX`):

* ``maskable_ppo`` (or ``ppo``): ``<name>.zip``, a Stable-Baselines3 model (policy
  weights only), run by :class:`PretrainedScheduler` (an
  :class:`~agents.common.adapter.AgentScheduler`);
* ``residual``: ``<name>.pt``, a gated residual policy over a baseline
  (:mod:`agents.residual`, loaded by :func:`agents.residual.network.load_residual`; the card's
  ``tau`` is the gate), run by :class:`PretrainedResidualScheduler`.

The name is the scenario family's::

    import agents, hetgym
    agents.pretrained_names()                 # ['fitgpp-lab', 'google-hybrid', 'hetero-small']
    sched = agents.load_pretrained("hetero-small")
    hetgym.simulate(hetgym.scenarios.get("hetero-small", n_jobs=64), sched, seed=0)

or ``python scripts/compare.py scheduler=pretrained pretrained.name=hetero-small``.

A model acts through ``HetCluster-v0``'s observation and action mask, whose sizes depend
on the cluster's device types: it runs on any scenario whose cluster has the device
types it was trained on (any jobs, any size), and both schedulers refuse another
cluster with a clear error (:class:`DeviceCheck`). Loading does not import torch until
a model is loaded.
"""

from __future__ import annotations

import json
import math
import os
import platform
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.common.adapter import AgentScheduler, SB3Policy, load_model
from agents.common.envtools import EnvConfig
from agents.residual.network import load_residual
from agents.residual.scheduler import ResidualScheduler

if TYPE_CHECKING:  # pragma: no cover
    from hetgym.sim.view import View

__all__ = ["MODEL_SUFFIX", "PRETRAINED_DIR", "DeviceCheck", "PretrainedResidualScheduler", "PretrainedScheduler",
           "card", "load_pretrained", "machine", "model_path", "pretrained_names", "ship", "ship_residual"]

#: Folder of the shipped models (package data).
PRETRAINED_DIR = Path(__file__).resolve().parent


#: Model file of each kind of model (a card's ``algo``).
MODEL_SUFFIX = {"maskable_ppo": ".zip", "ppo": ".zip", "residual": ".pt"}


def pretrained_names() -> list[str]:
    """Names of the shipped models (each a model file, ``.zip`` or ``.pt``, and a ``.json`` card)."""
    if not PRETRAINED_DIR.is_dir():
        return []
    suffixes = set(MODEL_SUFFIX.values())
    return sorted({p.stem for p in PRETRAINED_DIR.iterdir()
                   if p.suffix in suffixes and p.with_suffix(".json").is_file()})


def card(name: str) -> dict[str, Any]:
    """The card (``<name>.json``) of a shipped model."""
    names = pretrained_names()
    if name not in names:
        raise ValueError(f"no pretrained model {name!r}; shipped: {names}")
    return json.loads((PRETRAINED_DIR / f"{name}.json").read_text())


def model_path(name: str, c: dict[str, Any] | None = None) -> Path:
    """The model file of the shipped model ``name`` (its card's ``algo`` gives the suffix)."""
    c = card(name) if c is None else c
    algo = c["algo"]
    if algo not in MODEL_SUFFIX:
        raise ValueError(f"pretrained model {name!r}: unknown algo {algo!r}; expected one of {sorted(MODEL_SUFFIX)}")
    path = PRETRAINED_DIR / f"{name}{MODEL_SUFFIX[algo]}"
    if not path.is_file():
        raise FileNotFoundError(f"pretrained model {name!r} ({algo}) has no {path.name} beside its card")
    return path


class DeviceCheck:
    """Mixin for a scheduler that acts on clusters with the device types ``self.devices``
    only: ``reset`` refuses another cluster, then resets the scheduler it is mixed into."""

    name: str
    devices: list[str]

    def reset(self, view: View) -> None:
        """Check the cluster's device types, then the scheduler's own ``reset``."""
        got = [str(d) for d in view.devices]
        if got != self.devices:
            raise ValueError(f"pretrained model {self.name!r} acts on clusters with device types "
                             f"{self.devices} (its observation and action sizes); the scenario has {got}")
        super().reset(view)  # type: ignore[misc]


class PretrainedScheduler(DeviceCheck, AgentScheduler):
    """An :class:`~agents.common.adapter.AgentScheduler` that checks the cluster's device types.

    Args:
        policy: The model's policy.
        env_config: Its env arguments.
        devices: Device types of the cluster it was trained on.
        name: Label.
    """

    def __init__(self, policy: Any, env_config: EnvConfig, devices: list[str],
                 name: str = "pretrained") -> None:
        super().__init__(policy, env_config, name=name)
        self.devices = [str(d) for d in devices]


class PretrainedResidualScheduler(DeviceCheck, ResidualScheduler):
    """A :class:`~agents.residual.scheduler.ResidualScheduler` that checks the cluster's device types.

    Args:
        sched: The residual scheduler (:func:`agents.residual.network.load_residual`); its chooser,
            env arguments and base are taken over.
        devices: Device types of the cluster it was trained on.
    """

    def __init__(self, sched: ResidualScheduler, devices: list[str]) -> None:
        super().__init__(sched.chooser, sched.env_config, sched.cfg, name=sched.name)
        self.devices = [str(d) for d in devices]


def load_pretrained(name: str, deterministic: bool = True,
                    device: str = "cpu") -> PretrainedScheduler | PretrainedResidualScheduler:
    """The shipped model ``name`` as a scheduler for :func:`hetgym.simulate`.

    Args:
        name: One of :func:`pretrained_names`.
        deterministic: Greedy actions (SB3 models; a residual policy is always greedy).
        device: Torch device (SB3 models; a residual policy runs on the CPU).
    """
    if name is None:
        raise ValueError(f"scheduler=pretrained needs pretrained.name=<one of {pretrained_names()}>")
    c = card(name)
    path = model_path(name, c)
    label = f"pretrained:{name}"
    if c["algo"] == "residual":
        return PretrainedResidualScheduler(load_residual(path, tau=float(c["tau"]), name=label), c["devices"])
    model = load_model(path, c["algo"], device=device)
    return PretrainedScheduler(SB3Policy(model, deterministic), EnvConfig.from_dict(c["env"]),
                               c["devices"], name=label)


def machine() -> dict[str, Any]:
    """The machine a run is measured on: platform, CPU count, load averages."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    return {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(), "loadavg_1_5_15": [round(x, 2) for x in load]}


def ship(run_dir: str | Path, name: str, command: str, steps: int, wall_s: float,
         machine_info: dict[str, Any], model_file: str = "best_model.zip",
         dest: str | Path | None = None) -> Path:
    """Copy a training run's model into the package as ``<name>.zip`` with its card.

    The card gathers ``agent.json`` of the run (algorithm, env, agent, training and
    behaviour-cloning settings, the command's overrides), the validation point of the
    selected model (``eval.csv``), how the run was made (``command``, PPO ``steps``,
    ``wall_s``, ``machine_info``), the family's scenario arguments
    (:data:`agents.evaluation.heldout.FAMILIES`, without ``n_jobs`` and ``seed``) and an empty
    ``heldout`` entry that ``scripts/eval_agents.py --update-cards`` fills.

    Args:
        run_dir: Folder written by ``scripts/train.py``.
        name: Model name (the scenario family).
        command: The training command.
        steps: PPO steps of the run.
        wall_s: Wall clock of the run (behaviour cloning included).
        machine_info: The machine and its load (:func:`machine`, plus what was measured).
        model_file: Which model of the run.
        dest: Target folder (default :data:`PRETRAINED_DIR`).
    """
    import pandas as pd

    from agents.common.adapter import load_meta
    from agents.evaluation.heldout import FAMILIES
    from hetgym.io import write_atomic_json

    run = Path(run_dir)
    meta = load_meta(run / model_file)
    model = load_model(run / model_file, meta["algo"])
    out = Path(dest) if dest is not None else PRETRAINED_DIR
    out.mkdir(parents=True, exist_ok=True)
    model.save(str(out / f"{name}.zip"))
    curve = pd.read_csv(run / "eval.csv") if (run / "eval.csv").is_file() else None
    best = None
    if curve is not None and len(curve):
        col = "score" if "score" in curve else "avg_jct"
        best = {k: float(v) for k, v in curve.iloc[int(curve[col].idxmin())].items()}
    kwargs = {k: v for k, v in FAMILIES.get(name, {}).items() if k not in ("n_jobs", "seed")}
    c = {"name": name, "scenario": meta.get("scenario"), "scenario_kwargs": kwargs,
         "devices": meta["devices"], "algo": meta["algo"], "env": meta["env"],
         "command": command, "steps": int(steps), "wall_s": float(wall_s), "machine": machine_info,
         "selected": best, "agent": meta.get("agent"), "train": meta.get("train"),
         "bc": meta.get("bc"), "overrides": meta.get("overrides"), "heldout": {}}
    write_atomic_json(c, out / f"{name}.json")
    return out / f"{name}.zip"


def _plain(x: Any) -> Any:
    """``x`` with non-finite floats as strings (``"inf"``), so that the card is strict JSON."""
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return x


def ship_residual(model_file: str | Path, name: str, command: str, wall_s: float,
                  machine_info: dict[str, Any], extra: dict[str, Any] | None = None,
                  dest: str | Path | None = None) -> Path:
    """Copy a residual policy (``residual.pt`` of ``scripts/residual.py``) into the package
    as ``<name>.pt`` with its card.

    The card (``algo: "residual"``) takes from the model file its env arguments, ``tau``,
    the base and deviations (``residual``), the network's training settings (``fit``) and
    statistics (``fit_stats``; ``steps`` is the number of teacher states it was fitted
    on), the validation mean per tau (``validation``) and the command's config; the
    cluster's device types are those of the family's base workload
    (:func:`agents.evaluation.heldout.base_workload`); ``heldout`` is left empty for
    ``scripts/eval_agents.py --update-cards``.

    Args:
        model_file: File written by :func:`agents.residual.network.save`.
        name: Model name (the scenario family).
        command: The command that made it.
        wall_s: Wall clock of the run that made it (data, fit and choice of tau).
        machine_info: The machine and its load.
        extra: More card entries (the data stage's numbers, notes).
        dest: Target folder (default :data:`PRETRAINED_DIR`).
    """
    import shutil

    from agents.evaluation.heldout import FAMILIES, base_workload
    from agents.common.safe_load import load_torch
    from hetgym.io import write_atomic_json

    d = load_torch(model_file)
    family = str(d.get("family", name))
    out = Path(dest) if dest is not None else PRETRAINED_DIR
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(model_file, out / f"{name}.pt")
    kwargs = {k: v for k, v in FAMILIES.get(family, {}).items() if k not in ("n_jobs", "seed")}
    devices = [str(x) for x in base_workload(family).cluster.device_types]
    stats = d.get("fit_stats", {})
    c = {"name": name, "scenario": family, "scenario_kwargs": kwargs, "devices": devices,
         "algo": "residual", "env": d["env"], "tau": d["tau"], "residual": d["residual"],
         "command": command, "steps": int(stats.get("samples", 0)), "steps_are": "teacher states the network was fitted on",
         "wall_s": float(wall_s), "machine": machine_info, "fit": d["fit"], "fit_stats": stats,
         "validation": d.get("validation"), "config": d.get("config"), **(extra or {}), "heldout": {}}
    write_atomic_json(_plain(c), out / f"{name}.json")
    return out / f"{name}.pt"
