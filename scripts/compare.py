"""One evaluation run (Hydra): simulate one scheduler on one scenario with one seed.

Writes into the run's Hydra output folder, atomically:

* ``metrics.json``: scheduler label, scenario, seed, the summary metrics of
  :meth:`hetgym.Result.summary`, wall clock, device capacities, and the resolved
  run config (used to decide whether a later call may skip the run);
* ``jobs.parquet``: the per-job table (:func:`hetgym.metrics.job_table`);
* ``segments.parquet``: the runs of jobs ``(job, start, end, device, node)``
  (``save_segments=true``), for Gantt charts and utilisation plots.

A run whose ``metrics.json`` and ``jobs.parquet`` already exist with the same
run config is skipped, so an interrupted sweep resumes where it stopped
(``overwrite=true`` recomputes). Usage (config: ``conf/compare.yaml``)::

    python scripts/compare.py scheduler=sjf seed=1
    python scripts/compare.py -m scheduler=fifo,sjf,srpt seed=0,1,2
    python scripts/compare.py -m hydra/launcher=joblib hydra.launcher.n_jobs=2 scheduler=fifo,sjf seed=0,1
    python scripts/compare.py scheduler=agent agent.checkpoint=outputs/train/<run>/best_model.zip
    python scripts/report.py outputs/sweeps/default
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

log = logging.getLogger("compare")

CONF_DIR = str(Path(__file__).resolve().parents[1] / "conf")


def run_config(cfg: DictConfig) -> dict[str, Any]:
    """The part of the config that determines a run's result (resolved, plain)."""
    keys = ["scenario", "scheduler", "seed"]
    out = {k: OmegaConf.to_container(cfg[k], resolve=True) if OmegaConf.is_config(cfg[k])
           else cfg[k] for k in keys}
    return out


def is_done(out_dir: Path, rc: dict[str, Any]) -> bool:
    """Whether ``out_dir`` holds this run's results (same run config)."""
    m, j = out_dir / "metrics.json", out_dir / "jobs.parquet"
    if not (m.is_file() and j.is_file()):
        return False
    try:
        old = json.loads(m.read_text())
    except (OSError, json.JSONDecodeError):
        return False
    return old.get("run_config") == json.loads(json.dumps(rc, default=str))


def slots_per_device(scenario: Any) -> dict[str, float]:
    """Workers each device type can hold at once (GPUs, or CPU slots), for utilisation plots."""
    out: dict[str, float] = {}
    slot = scenario.options.cpu_slot_cores
    for d in scenario.device_types:
        if d == "cpu":
            nodes = [n for n in scenario.cluster.nodes if n.gpu_type is None]
            if slot:
                out[d] = float(sum(n.count * (n.cpus // slot) for n in nodes))
            else:
                cpus = scenario.workload.frame["cpus"].median()
                out[d] = float(sum(n.count * int(n.cpus // max(cpus, 1e-9)) for n in nodes))
        else:
            out[d] = float(scenario.cluster.capacity(d))
    return out


def check_seed(seed: Any) -> int:
    """The run seed, which must be a non-negative integer (``ValueError`` saying so)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0 (e.g. seed=0), got {seed!r}")
    return seed


def run(cfg: DictConfig, out_dir: Path, label: str) -> dict[str, Any]:
    """Simulate the configured run and write its files into ``out_dir``."""
    import pandas as pd

    import hetgym
    from hetgym.io import write_atomic_json, write_atomic_parquet

    rc = run_config(cfg)
    if not cfg.overwrite and is_done(out_dir, rc):
        log.info("skip %s: results exist in %s", label, out_dir)
        return json.loads((out_dir / "metrics.json").read_text())
    scenario = instantiate(cfg.scenario)
    scheduler = instantiate(cfg.scheduler)
    t0 = time.perf_counter()
    res = hetgym.simulate(scenario, scheduler, seed=int(cfg.seed))
    wall = time.perf_counter() - t0
    if cfg.save_segments:
        seg = pd.DataFrame(res.segments, columns=["job", "start", "end", "device", "node"])
        write_atomic_parquet(seg, out_dir / "segments.parquet")
    write_atomic_parquet(res.jobs, out_dir / "jobs.parquet")
    record = {
        "scheduler": label,
        "scenario": scenario.name,
        "seed": int(cfg.seed),
        "metrics": res.summary(),
        "wall_s": wall,
        "stalled": bool(res.stalled),
        "devices": list(res.devices),
        "slots": slots_per_device(scenario),
        "n_nodes": int(scenario.cluster.num_nodes),
        "run_config": rc,
        "overrides": list(HydraConfig.get().overrides.task) if HydraConfig.initialized() else [],
    }
    write_atomic_json(record, out_dir / "metrics.json")  # last: its presence marks the run done
    m = record["metrics"]
    log.info("%s on %s seed %d: avg_jct=%.1f s, makespan=%.1f s, unfinished=%d (%.1f s)",
             label, scenario.name, int(cfg.seed), m["avg_jct"], m["makespan"],
             int(m["unfinished_jobs"]), wall)
    return record


@hydra.main(config_path=CONF_DIR, config_name="compare", version_base="1.3")
def main(cfg: DictConfig) -> float:
    """Hydra entry point; returns the run's average JCT (for sweepers)."""
    check_seed(cfg.seed)  # before the scenario (whose workload seed it is) is built
    hc = HydraConfig.get()
    out_dir = Path(hc.runtime.output_dir)
    choice = hc.runtime.choices.get("scheduler")
    if choice == "pretrained" and not cfg.label:
        label = f"pretrained:{cfg.pretrained.name}"
    else:
        label = cfg.label or choice or str(cfg.scheduler.get("name"))
    record = run(cfg, out_dir, str(label))
    return float(record["metrics"]["avg_jct"])


if __name__ == "__main__":
    main()
