"""Pretrained models shipped in the package, run like any baseline.

Each model is ``agents/pretrained/<name>.zip`` (a Stable-Baselines3 model, policy
weights only) beside ``<name>.json``, its card: the scenario family it was trained on,
the cluster's device types, the env arguments, how it was trained (command, steps,
wall time, machine and its load) and its held-out results (docs/agents.md). The name is
the scenario family's::

    import agents, hetgym
    agents.pretrained_names()                 # ['fitgpp-lab', 'google-hybrid', 'hetero-small']
    sched = agents.load_pretrained("hetero-small")
    hetgym.simulate(hetgym.scenarios.get("hetero-small", n_jobs=64), sched, seed=0)

or ``python scripts/compare.py scheduler=pretrained pretrained.name=hetero-small``.

A model acts through ``HetCluster-v0``'s observation and action mask, whose sizes depend
on the cluster's device types: it runs on any scenario whose cluster has the device
types it was trained on (any jobs, any size), and :class:`PretrainedScheduler` refuses
another cluster with a clear error.
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.adapter import AgentScheduler, SB3Policy, load_model
from agents.envtools import EnvConfig

if TYPE_CHECKING:  # pragma: no cover
    from hetgym.sim.view import View

__all__ = ["PRETRAINED_DIR", "pretrained_names", "card", "load_pretrained", "PretrainedScheduler",
           "ship", "machine"]

#: Folder of the shipped models (package data).
PRETRAINED_DIR = Path(__file__).resolve().parent / "pretrained"


def pretrained_names() -> list[str]:
    """Names of the shipped models (each has a ``.zip`` and a ``.json`` card)."""
    if not PRETRAINED_DIR.is_dir():
        return []
    return sorted(p.stem for p in PRETRAINED_DIR.glob("*.zip") if p.with_suffix(".json").is_file())


def card(name: str) -> dict[str, Any]:
    """The card (``<name>.json``) of a shipped model."""
    names = pretrained_names()
    if name not in names:
        raise ValueError(f"no pretrained model {name!r}; shipped: {names}")
    return json.loads((PRETRAINED_DIR / f"{name}.json").read_text())


class PretrainedScheduler(AgentScheduler):
    """An :class:`~agents.adapter.AgentScheduler` that checks the cluster's device types.

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

    def reset(self, view: "View") -> None:
        """Check the device types, then bind an env to the simulator."""
        got = [str(d) for d in view.simulator.scenario.cluster.device_types]
        if got != self.devices:
            raise ValueError(f"pretrained model {self.name!r} acts on clusters with device types "
                             f"{self.devices} (its observation and action sizes); the scenario has {got}")
        super().reset(view)


def load_pretrained(name: str, deterministic: bool = True, device: str = "cpu") -> PretrainedScheduler:
    """The shipped model ``name`` as a scheduler for :func:`hetgym.simulate`.

    Args:
        name: One of :func:`pretrained_names`.
        deterministic: Greedy actions.
        device: Torch device.
    """
    if name is None:
        raise ValueError(f"scheduler=pretrained needs pretrained.name=<one of {pretrained_names()}>")
    c = card(name)
    model = load_model(PRETRAINED_DIR / f"{name}.zip", c["algo"], device=device)
    return PretrainedScheduler(SB3Policy(model, deterministic), EnvConfig.from_dict(c["env"]),
                               c["devices"], name=f"pretrained:{name}")


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
    (:data:`agents.heldout.FAMILIES`, without ``n_jobs`` and ``seed``) and an empty
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

    from agents.adapter import load_meta
    from agents.heldout import FAMILIES
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
