"""Train an SB3 agent on ``HetCluster-v0`` and judge it against baselines on held-out windows.

:func:`train` is what ``scripts/train.py`` calls with typed pieces built from
the Hydra config. It writes into ``out_dir``:

===========================  ===================================================
file                         what
===========================  ===================================================
``agent.json``               algorithm, env arguments, agent config, seeds
``checkpoints/*.zip``        periodic checkpoints (SB3 ``CheckpointCallback``)
``best_model.zip``           best on the validation windows (``HeldOutEval``)
``final_model.zip``          the model when training stopped
``eval.csv``                 learning curve: steps, wall clock, mean avg JCT
``progress.csv``, ``tb/``    SB3 logger (CSV; TensorBoard if installed)
``test_runs.csv``            per test window and scheduler, summary metrics
``comparison.md`` / ``.csv`` mean +- std over test windows (``hetgym.compare``)
``learning_curve.png``       validation avg JCT vs steps, baselines as lines
===========================  ===================================================

Validation windows (model selection) and test windows (the final table) come
from workloads other than the training one (different workload seeds), so
the table measures generalisation to unseen jobs.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from agents.imitation.bc import BCConfig
from agents.common.envtools import EnvConfig
from agents.sb3.agent import AgentConfig
from hetgym.specs import Scenario

__all__ = ["TrainConfig", "TrainResult", "train", "plot_learning_curve"]


@dataclass(frozen=True)
class TrainConfig:
    """How long and how to train, and how to evaluate.

    Attributes:
        total_timesteps: Environment steps (all envs together), at most.
        time_limit_s: Wall-clock budget of the whole run (BC + PPO; evaluation
            on the test windows comes after it).
        n_envs: Parallel env copies.
        n_procs: Worker processes of ``vec_env="batched_subproc"``.
        vec_env: ``dummy`` (one process), ``subproc`` (one process per env),
            ``batched`` (all envs in one compiled call; masked algorithms) or
            ``batched_subproc`` (``n_procs`` processes of batched envs).
        checkpoint_every: Checkpoint period in steps (0: off).
        eval_every: Validation period in steps.
        critic_warmup: Steps at the start of PPO during which only the critic
            learns (the actor is frozen); useful after behaviour cloning.
        val_windows: Validation windows per validation workload.
        val_workload_seeds: Workload seeds of the validation windows.
        test_windows: Test windows per test workload, for the final table (0: skip).
        test_workload_seeds: Workload seeds of the test windows.
        baselines: Baselines in the final table (and as lines on the learning curve).
        torch_threads: ``torch.set_num_threads``.
        tensorboard: Log to TensorBoard when it is installed.
        verbose: SB3 verbosity (the eval callback prints when >= 1).
        metric: Summary column that selects the best model (mean over validation
            windows, lower is better).
        constraint: Summary column whose validation mean must stay within
            ``1 + constraint_slack`` times ``constraint_baseline``'s (None: none).
        constraint_baseline: Baseline that sets the constraint's bound.
        constraint_slack: Relative slack of the bound.
    """

    total_timesteps: int = 500_000
    time_limit_s: float = 1800.0
    n_envs: int = 4
    vec_env: str = "dummy"
    n_procs: int = 2
    checkpoint_every: int = 50_000
    eval_every: int = 20_000
    critic_warmup: int = 0
    val_windows: int = 4
    val_workload_seeds: Sequence[int] = (1000, 1001, 1002, 1003)
    test_windows: int = 4
    test_workload_seeds: Sequence[int] = tuple(range(2000, 2008))
    baselines: Sequence[str] = ("fifo", "sjf")
    torch_threads: int = 1
    tensorboard: bool = True
    verbose: int = 1
    metric: str = "avg_jct"
    constraint: str | None = None
    constraint_baseline: str | None = None
    constraint_slack: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "baselines", tuple(self.baselines))
        object.__setattr__(self, "val_workload_seeds", tuple(int(x) for x in self.val_workload_seeds))
        object.__setattr__(self, "test_workload_seeds", tuple(int(x) for x in self.test_workload_seeds))


@dataclass
class TrainResult:
    """What :func:`train` produced.

    Attributes:
        out_dir: The run folder.
        timesteps: Environment steps of PPO.
        wall_s: Wall clock of training (BC + PPO).
        stopped_by_time: Whether the wall-clock limit ended training.
        eval_history: The learning curve (``eval.csv``).
        comparison: Aggregated test table (``hetgym.compare.aggregate``), or None.
        bc_stats: Behaviour-cloning statistics, or None.
    """

    out_dir: Path
    timesteps: int
    wall_s: float
    stopped_by_time: bool
    eval_history: pd.DataFrame
    comparison: pd.DataFrame | None = None
    bc_stats: dict[str, Any] | None = None
    files: dict[str, str] = field(default_factory=dict)


def train(scenario: Scenario, val_scenarios: Sequence[Scenario], test_scenarios: Sequence[Scenario],
          env_config: EnvConfig, agent: AgentConfig, cfg: TrainConfig, out_dir: str | Path,
          seed: int = 0, bc: BCConfig | None = None,
          meta: dict[str, Any] | None = None,
          val_set: Sequence[Scenario] | None = None,
          test_set: Sequence[Scenario] | None = None) -> TrainResult:
    """Train ``agent`` on windows of ``scenario``; validate and test on the others.

    Args:
        scenario: Workload the training episodes draw windows from.
        val_scenarios: Workloads of the validation windows (model selection, learning curve).
        test_scenarios: Workloads of the test windows (final comparison table).
        env_config: Env arguments (window, episode size, ...).
        agent: Algorithm and hyper-parameters.
        cfg: Budget and evaluation settings.
        out_dir: Run folder.
        seed: Seed of the model and of the env copies.
        bc: Behaviour-cloning pre-training (None or ``teacher=None``: off).
        meta: More entries for ``agent.json`` (``scripts/train.py`` stores its resolved config).
        val_set: Validation windows, used as they are (instead of windows of
            ``val_scenarios``; :func:`agents.evaluation.heldout.split`).
        test_set: Test windows, likewise.
    """
    import torch
    from stable_baselines3.common.callbacks import CallbackList, CheckpointCallback
    from stable_baselines3.common.logger import configure

    from agents.common.adapter import save_meta
    from agents.sb3.callbacks import CriticWarmup, HeldOutEval, WallClockLimit
    from agents.common.envtools import heldout_windows
    from agents.sb3.agent import make_vec_env

    if not agent.masked and env_config.invalid_action != "wait":
        raise ValueError(f"{agent.algo} ignores the action mask: use env.invalid_action=wait")
    t0 = time.monotonic()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(max(1, int(cfg.torch_threads)))
    save_meta(out, agent.algo, env_config, {
        "agent": agent.to_dict(), "train": asdict(cfg), "seed": seed,
        "scenario": scenario.name, "devices": list(scenario.cluster.device_types),
        "bc": asdict(bc) if bc else None, **(meta or {})})

    venv = make_vec_env(scenario, env_config, n_envs=cfg.n_envs, seed=seed,
                        vec_env=cfg.vec_env, masked=agent.masked, n_procs=cfg.n_procs)
    if agent.normalize_reward:
        from stable_baselines3.common.vec_env import VecNormalize

        venv = VecNormalize(venv, norm_obs=False, norm_reward=True, gamma=agent.gamma)
    formats = ["csv"]
    if cfg.verbose:
        formats.append("stdout")
    if cfg.tensorboard and _has_tensorboard():
        formats.append("tensorboard")
    model = agent.build(venv, seed=seed, verbose=0)
    model.set_logger(configure(str(out), formats))

    bc_stats = None
    if bc is not None and bc.teacher:
        from agents.imitation.bc import pretrain

        bc_stats = pretrain(model, scenario, env_config, bc, seed=seed)
        if cfg.verbose:
            print(f"[bc] {bc_stats}", flush=True)

    val = list(val_set) if val_set is not None else \
        [w for sc in val_scenarios for w in heldout_windows(sc, env_config, cfg.val_windows)]
    score = selection_score(val, cfg)
    if score.constraint is not None and cfg.verbose:
        print(f"[select] {score}", flush=True)
    evalcb = HeldOutEval(val, env_config, cfg.eval_every, out, t0=t0, verbose=cfg.verbose,
                         score=score)
    limit = WallClockLimit(cfg.time_limit_s, t0=t0)
    cbs: list[Any] = [evalcb, limit]
    if cfg.critic_warmup > 0:
        cbs.insert(0, CriticWarmup(cfg.critic_warmup))
    if cfg.checkpoint_every > 0:
        cbs.append(CheckpointCallback(max(1, cfg.checkpoint_every // cfg.n_envs),
                                      str(out / "checkpoints"), name_prefix="model"))
    model.learn(total_timesteps=cfg.total_timesteps, callback=CallbackList(cbs))
    model.save(str(out / "final_model.zip"))
    wall = time.monotonic() - t0
    venv.close()

    history = pd.DataFrame(evalcb.history)
    result = TrainResult(out_dir=out, timesteps=int(model.num_timesteps), wall_s=wall,
                         stopped_by_time=limit.stopped, eval_history=history, bc_stats=bc_stats)
    if cfg.test_windows > 0:
        result.comparison = test_table(out, test_scenarios, env_config, cfg, test_set)
    ref = {}
    if len(val) and cfg.baselines:
        from agents.evaluation.windows import evaluate_on_windows, mean_jct

        runs = evaluate_on_windows({b: b for b in cfg.baselines}, val)
        ref = {b: mean_jct(runs, b) for b in cfg.baselines}
    plot_learning_curve(history, ref, out / "learning_curve.png",
                        title=f"{agent.algo} on {scenario.name}: validation windows")
    return result


def selection_score(val: Sequence[Scenario], cfg: TrainConfig) -> Any:
    """The :class:`agents.evaluation.windows.Score` of ``cfg`` (the constraint's bound measured
    on the validation windows ``val`` with ``cfg.constraint_baseline``)."""
    from agents.evaluation.windows import Score, evaluate_on_windows

    if cfg.constraint is None:
        return Score(cfg.metric)
    if not cfg.constraint_baseline:
        raise ValueError("train.constraint needs train.constraint_baseline (the baseline whose "
                         "validation value bounds it)")
    runs = evaluate_on_windows({cfg.constraint_baseline: cfg.constraint_baseline}, val)
    limit = float(np.mean(runs[cfg.constraint])) * (1.0 + float(cfg.constraint_slack))
    return Score(cfg.metric, cfg.constraint, limit)


def test_table(out: Path, test_scenarios: Sequence[Scenario], env_config: EnvConfig,
               cfg: TrainConfig, test_set: Sequence[Scenario] | None = None) -> pd.DataFrame:
    """Best and final model vs the baselines on the test windows; writes the tables."""
    from agents.common.adapter import load_scheduler
    from agents.common.envtools import heldout_windows
    from agents.evaluation.windows import evaluate_on_windows
    from hetgym.compare import aggregate, format_table
    from hetgym.io import write_atomic_bytes, write_atomic_csv

    windows = list(test_set) if test_set is not None else \
        [w for sc in test_scenarios for w in heldout_windows(sc, env_config, cfg.test_windows)]
    scheds: dict[str, Any] = {b: b for b in cfg.baselines}
    for label, f in (("agent (best)", "best_model.zip"), ("agent (final)", "final_model.zip")):
        if (out / f).is_file():
            path = str(out / f)
            scheds[label] = lambda path=path: load_scheduler(path)
    runs = evaluate_on_windows(scheds, windows)
    write_atomic_csv(runs, out / "test_runs.csv")
    agg = aggregate(runs)
    write_atomic_csv(agg.reset_index(), out / "comparison.csv")
    names = sorted({sc.name for sc in test_scenarios})
    origin = (f"{cfg.test_windows} from each of the {', '.join(names)} workloads with seeds "
              f"{list(cfg.test_workload_seeds)}" if test_set is None else "the given test set")
    text = (f"{len(windows)} test windows of {env_config.n_jobs} jobs ({origin}); "
            f"mean ± std over windows (times in the unit of each column header)\n\n" + format_table(agg) + "\n")
    write_atomic_bytes(text.encode(), out / "comparison.md")
    return agg


def plot_learning_curve(history: pd.DataFrame, reference: dict[str, float], path: str | Path,
                        title: str = "") -> None:
    """Validation mean avg JCT vs wall clock, baselines as horizontal lines (PNG, Agg).

    The first point is the policy when PPO starts (after behaviour cloning, if any).
    """
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from hetgym.io import write_atomic_bytes

    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    if len(history):
        x = history["wall_s"].to_numpy() / 60.0
        ax.plot(x, history["avg_jct_finite"], marker="o", ms=3, label="agent (deterministic)")
        bad = history["unfinished_jobs"].to_numpy() > 0
        if bad.any():
            ax.scatter(x[bad], history["avg_jct_finite"].to_numpy()[bad], color="red", zorder=3,
                       label="agent left jobs unfinished")
        best = int(np.argmin(history["avg_jct"].to_numpy()))
        ax.scatter([x[best]], [history["avg_jct_finite"].iloc[best]], s=60, facecolors="none",
                   edgecolors="k", zorder=4, label="best model")
        steps = int(history["timesteps"].iloc[-1])
        title = f"{title} ({steps:,} PPO steps)" if title else f"{steps:,} PPO steps"
    for i, (name, v) in enumerate(reference.items()):
        if np.isfinite(v):
            ax.axhline(v, ls=("--", ":", "-.")[i % 3], lw=1.5, color=f"C{i + 1}", label=name)
    ax.set_xlabel("wall clock since start, BC included (min)")
    ax.set_ylabel("mean avg JCT, validation windows (s)")
    ax.set_ylim(bottom=0)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    write_atomic_bytes(buf.getvalue(), path)


def _has_tensorboard() -> bool:
    try:
        import tensorboard  # noqa: F401
    except ImportError:
        return False
    return True
