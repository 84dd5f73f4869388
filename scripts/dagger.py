"""DAgger with a rollout teacher (``agents.imitation.dagger``), from a config in ``conf/experiment/``.

The config (``dagger_*.yaml``) names the family (its split, :mod:`agents.evaluation.heldout`), the
model to start from (a shipped model name or a ``.zip``), and the
:class:`agents.imitation.dagger.DaggerConfig` settings; ``key=value`` arguments override them::

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 nice -n 10 python scripts/dagger.py \
        conf/experiment/dagger_hetero_small.yaml out_dir=outputs/dagger/hetero_small
    python scripts/dagger.py conf/experiment/dagger_hetero_small.yaml dagger.iterations=0 \
        dagger.episodes=2 out_dir=/tmp/dagger_smoke        # a quick check

The run folder gets ``best_model.zip`` (best on the validation windows), ``final_model.zip``,
``agent.json``, ``eval.csv`` and ``dagger.json``; ``agents.pretrained.registry.ship`` copies a model
into the package.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def experiment_config(args: list[str], doc: str | None) -> Any:
    """``args[0]`` (a YAML config) merged with the ``key=value`` overrides after it, torch
    set to one thread; None (after printing ``doc``) when no config file is given."""
    import torch
    from omegaconf import OmegaConf

    if not args or "=" in args[0]:
        print(doc)
        return None
    torch.set_num_threads(1)
    return OmegaConf.merge(OmegaConf.load(args[0]), OmegaConf.from_dotlist(args[1:]))


def main(argv: Sequence[str] | None = None) -> int:
    """Load the config, run :func:`agents.imitation.dagger.dagger`, print the summary."""
    from omegaconf import OmegaConf

    from agents.common.adapter import load_model
    from agents.imitation.dagger import DaggerConfig, dagger
    from agents.common.envtools import EnvConfig
    from agents.evaluation.heldout import FAMILY_METRIC, split
    from agents.pretrained.registry import card, model_path

    args = list(sys.argv[1:] if argv is None else argv)
    cfg = experiment_config(args, __doc__)
    if cfg is None:
        return 2
    init = str(cfg.init)
    if init.endswith(".zip"):
        from agents.common.adapter import load_meta

        meta = load_meta(init)
        path, algo, env = init, meta["algo"], meta["env"]
    else:
        c = card(init)
        path, algo, env = model_path(init, c), c["algo"], c["env"]
    if algo != "maskable_ppo":
        raise ValueError(f"dagger needs a maskable_ppo model, {init} is {algo}")
    model = load_model(path, algo)
    env_config = EnvConfig.from_dict(env)
    sp = split(str(cfg.family), window_jobs=int(env_config.n_jobs or 64))
    dcfg = DaggerConfig(**OmegaConf.to_container(cfg.dagger, resolve=True))
    t0 = time.time()
    out = dagger(model, sp.train, sp.val, env_config, dcfg, cfg.out_dir,
                 metric=FAMILY_METRIC[str(cfg.family)][0],
                 meta={"config": OmegaConf.to_container(cfg, resolve=True),
                       "command": "python scripts/dagger.py " + " ".join(args)})
    print(f"done in {time.time() - t0:.0f} s; best validation score {out['best_score']:.4g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
