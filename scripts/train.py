"""Train an SB3 agent (MaskablePPO or PPO) on ``HetCluster-v0`` (Hydra; ``conf/train.yaml``).

The config is turned into typed pieces (``agents.common.envtools.EnvConfig``,
``agents.sb3.agent.AgentConfig``, ``agents.sb3.training.TrainConfig``, ``agents.imitation.bc.BCConfig``)
and handed to :func:`agents.sb3.training.train`, which writes checkpoints, the
learning curve and the comparison table into the run folder (see its docstring)::

    python scripts/train.py                                 # defaults (30 min budget)
    python scripts/train.py experiment=train_default        # the run in docs/agents.md
    python scripts/train.py agent=ppo train.time_limit_s=300
    python scripts/compare.py scheduler=agent agent.checkpoint=<run>/best_model.zip
"""

from __future__ import annotations

import inspect
import logging
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

log = logging.getLogger("train")

CONF_DIR = str(Path(__file__).resolve().parents[1] / "conf")


def build_scenario(scenario_cfg: DictConfig, workload_seed: int) -> Any:
    """Instantiate the scenario with ``seed=workload_seed`` when its factory takes a seed."""
    from hetgym import scenarios

    name = scenario_cfg.get("name")
    scenarios.names()
    factory = scenarios._FACTORIES.get(name)  # noqa: SLF001
    takes_seed = factory is not None and "seed" in inspect.signature(factory).parameters
    if takes_seed:
        return instantiate(scenario_cfg, seed=int(workload_seed))
    log.warning("scenario %s has no workload seed: validation and test windows come from "
                "the training workload", name)
    return instantiate(scenario_cfg)


@hydra.main(config_path=CONF_DIR, config_name="train", version_base="1.3")
def main(cfg: DictConfig) -> float:
    """Hydra entry point; returns the best validation score (mean avg JCT by default)."""
    from agents.sb3.training import train

    out_dir = Path(cfg.out_dir) if cfg.out_dir else Path(HydraConfig.get().runtime.output_dir)
    env_config = instantiate(cfg.env, _convert_="all")
    agent = instantiate(cfg.agent, _convert_="all")
    tcfg = instantiate(cfg.train, _convert_="all")
    bc = instantiate(cfg.bc, _convert_="all")
    val_set = test_set = None
    if cfg.get("split") and cfg.split.get("family"):
        from agents.evaluation.heldout import split

        sp = split(cfg.split.family, window_jobs=int(cfg.split.window_jobs),
                   n_val=int(cfg.split.n_val), n_test=int(cfg.split.n_test))
        log.info("split %s", sp.describe())
        scenario, val, test, val_set, test_set = sp.train, [], [], sp.val, sp.test
    else:
        scenario = build_scenario(cfg.scenario, cfg.workload_seed)
        val = [build_scenario(cfg.scenario, s) for s in tcfg.val_workload_seeds]
        test = [build_scenario(cfg.scenario, s) for s in tcfg.test_workload_seeds]
    log.info("training %s on %s (workload seed %d), out %s\n%s", agent.algo, scenario.name,
             cfg.workload_seed, out_dir, OmegaConf.to_yaml(cfg))
    meta = {"config": OmegaConf.to_container(cfg, resolve=True),
            "overrides": list(HydraConfig.get().overrides.task)}
    res = train(scenario, val, test, env_config, agent, tcfg, out_dir, seed=int(cfg.seed), bc=bc,
                meta=meta, val_set=val_set, test_set=test_set)
    log.info("done: %d steps in %.0f s (stopped by time: %s)", res.timesteps, res.wall_s,
             res.stopped_by_time)
    if res.comparison is not None:
        log.info("test windows:\n%s", (out_dir / "comparison.md").read_text())
    h = res.eval_history
    return float(h["score"].min()) if len(h) else float("nan")


if __name__ == "__main__":
    main()
