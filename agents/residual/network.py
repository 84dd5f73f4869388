"""The network of the gated residual policy (:mod:`agents.residual`): the advantage net,
its training, the model chooser, and saving / loading a trained policy.

:func:`fit` trains :func:`AdvantageNet` on the records of :func:`agents.residual.teacher.generate`
(the relative advantage of each candidate deviation over the base, in percent);
:class:`ModelChooser` deviates where the prediction exceeds ``tau``; :func:`save` /
:func:`load_residual` store the weights with what rebuilds the
:class:`agents.residual.scheduler.ResidualScheduler` (``torch.save``, a few hundred kB). torch is
imported only when a network is built, trained or loaded. Every name here is also
available from :mod:`agents.residual`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from agents.common.envtools import EnvConfig

if TYPE_CHECKING:  # pragma: no cover
    from agents.residual.deviations import ResidualConfig
    from agents.residual.scheduler import ResidualScheduler

__all__ = ["AdvantageNet", "FitConfig", "ModelChooser", "fit", "load_residual", "save"]



def AdvantageNet(n_obs: int, n_act: int, hidden: Sequence[int] = (256, 256)) -> Any:
    """MLP ``[obs, base] -> predicted relative advantage (percent) of every action``."""
    from torch import nn

    layers: list[Any] = []
    n = n_obs + n_act
    for h in hidden:
        layers += [nn.Linear(n, int(h)), nn.ReLU()]
        n = int(h)
    layers.append(nn.Linear(n, n_act))
    return nn.Sequential(*layers)


@dataclass(frozen=True)
class FitConfig:
    """Training of :func:`AdvantageNet` (Huber loss on the candidates' advantages in percent).

    Attributes:
        hidden: Hidden layer sizes.
        epochs: Passes over the data.
        batch_size: Minibatch size.
        learning_rate: Adam step size.
        weight_decay: Adam weight decay.
        clip: Targets clipped to ``[-clip, clip]`` percent.
        clip_low: Lower clip of the targets instead of ``-clip`` (None: ``-clip``): how much a
            deviation loses matters less to the gate than whether it gains.
        pos_weight: Weight in the loss of the targets above 0 (the rare gains).
        seed: Initialisation and minibatch order.
        head: ``"regress"`` (Huber loss on the advantage in percent, the net predicts it) or
            ``"classify"`` (logistic loss on "the deviation gains more than ``gain_min``
            percent", the gains weighted by ``pos_weight`` x their (clipped) gain in percent:
            the net predicts a logit, and the gate's ``tau`` is a logit threshold).
        gain_min: The classifier's positive class: advantage above this many percent.
    """

    hidden: tuple[int, ...] = (256, 256)
    epochs: int = 40
    batch_size: int = 256
    learning_rate: float = 1e-3
    weight_decay: float = 1e-5
    clip: float = 2.0
    clip_low: float | None = None
    pos_weight: float = 1.0
    seed: int = 0
    head: str = "regress"
    gain_min: float = 1.0

    def __post_init__(self) -> None:
        if self.head not in ("regress", "classify"):
            raise ValueError(f"FitConfig.head: 'regress' or 'classify', not {self.head!r}")

    def targets(self, adv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Targets and loss weights (0 where no candidate) of relative advantages ``adv``."""
        y = np.clip(100.0 * adv, *self.bounds)
        known = np.isfinite(y)
        if self.head == "classify":
            pos = known & (y > self.gain_min)
            w = np.where(pos, self.pos_weight * np.maximum(np.nan_to_num(y), 1.0), known * 1.0)
            return pos.astype(np.float32), w.astype(np.float32)
        w = np.where(known, np.where(y > 0, self.pos_weight, 1.0), 0.0)
        return np.nan_to_num(y).astype(np.float32), w.astype(np.float32)

    @property
    def bounds(self) -> tuple[float, float]:
        """The targets' clip range in percent."""
        return (-self.clip if self.clip_low is None else self.clip_low), self.clip


def _inputs(obs: np.ndarray, base: np.ndarray) -> np.ndarray:
    return np.concatenate([obs, base], axis=-1).astype(np.float32)


def fit(data: dict[str, np.ndarray], cfg: FitConfig, val: dict[str, np.ndarray] | None = None,
        log: Any = print) -> tuple[Any, dict[str, float]]:
    """Train an :func:`AdvantageNet` on records of :func:`generate`; the net and statistics
    (final loss; on ``val`` records if given, else the training ones: the loss, and how
    often the best predicted candidate is the best one)."""
    import torch

    torch.manual_seed(cfg.seed)
    x = torch.as_tensor(_inputs(data["obs"], data["base"]))
    y_np, w_np = cfg.targets(data["adv"])
    wts = torch.as_tensor(w_np)
    y = torch.as_tensor(y_np)
    net = AdvantageNet(data["obs"].shape[1], data["adv"].shape[1], cfg.hidden)
    opt = torch.optim.Adam(net.parameters(), lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    rng = np.random.default_rng(cfg.seed)
    n = len(x)
    loss_f = (torch.nn.BCEWithLogitsLoss(reduction="none") if cfg.head == "classify"
              else torch.nn.HuberLoss(reduction="none", delta=1.0))
    losses = []
    for ep in range(cfg.epochs):
        perm = rng.permutation(n)
        tot = 0.0
        for s in range(0, n, cfg.batch_size):
            idx = torch.as_tensor(perm[s: s + cfg.batch_size])
            k = wts[idx]
            loss = (loss_f(net(x[idx]), y[idx]) * k).sum() / (k > 0).sum().clamp(min=1)
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += float(loss.detach()) * len(idx)
        losses.append(tot / max(n, 1))
        if ep % 10 == 9 or ep == cfg.epochs - 1:
            log(f"[residual] fit epoch {ep + 1}: loss {losses[-1]:.4f}")
    net.eval()
    stats = {"train_loss": losses[-1] if losses else float("nan"), "samples": int(n)}
    stats.update(_agreement(net, val if val is not None else data, cfg.bounds, "val" if val is not None else "train"))
    return net, stats


def _agreement(net: Any, data: dict[str, np.ndarray], bounds: tuple[float, float], tag: str) -> dict[str, float]:
    """Loss and decision agreement of ``net`` on records ``data``."""
    import torch

    if not len(data["obs"]):
        return {}
    with torch.no_grad():
        pred = net(torch.as_tensor(_inputs(data["obs"], data["base"]))).numpy()
    y = np.clip(100.0 * data["adv"], *bounds)
    known = np.isfinite(y)
    pk = np.where(known, pred, -np.inf)
    yk = np.where(known, y, -np.inf)
    best_pred = pk.argmax(1)
    has = known.any(1)
    gain = yk.max(1)
    worth = has & (gain > 0)
    return {f"{tag}_mae": float(np.abs(pred - np.nan_to_num(y))[known].mean()),
            f"{tag}_states_with_gain": float(worth.mean()),
            f"{tag}_best_found": float((best_pred == yk.argmax(1))[worth].mean()) if worth.any() else float("nan"),
            f"{tag}_corr": float(np.corrcoef(pred[known], y[known])[0, 1]) if known.sum() > 2 else float("nan")}


class ModelChooser:
    """Deviate to the candidate with the highest predicted advantage when it exceeds ``tau``
    (percent of the base's metric); ``tau = inf`` never deviates."""

    def __init__(self, net: Any, tau: float = math.inf) -> None:
        self.net = net
        self.tau = float(tau)

    def __repr__(self) -> str:
        return f"ModelChooser(tau={self.tau})"

    def __call__(self, sched: ResidualScheduler, obs: np.ndarray, mask: np.ndarray, base: np.ndarray,
                 cand: list[int]) -> int:
        if self.tau == math.inf or not cand:
            return -1
        import torch

        with torch.no_grad():
            p = self.net(torch.as_tensor(_inputs(obs, base)[None]))[0].numpy()
        i = int(np.argmax(p[cand]))
        return cand[i] if p[cand[i]] > self.tau else -1


def save(path: str | Path, net: Any, env_config: EnvConfig, cfg: ResidualConfig, fit_cfg: FitConfig,
         tau: float, n_obs: int, n_act: int, extra: dict[str, Any] | None = None) -> Path:
    """``torch.save`` of the net's weights and what rebuilds the scheduler (a zip file),
    written atomically (:func:`hetgym.io.write_atomic_bytes`)."""
    import io

    import torch

    from hetgym.io import write_atomic_bytes

    buf = io.BytesIO()
    torch.save({"state_dict": net.state_dict(), "env": env_config.to_dict(), "residual": asdict(cfg),
                "fit": asdict(fit_cfg), "tau": float(tau), "n_obs": int(n_obs), "n_act": int(n_act),
                **(extra or {})}, buf)
    return write_atomic_bytes(buf.getvalue(), path)


def load_residual(path: str | Path, tau: float | None = None, name: str = "residual") -> ResidualScheduler:
    """The scheduler saved by :func:`save` (its ``tau`` unless given).

    The file is read with ``torch.load(weights_only=True)`` (:func:`agents.common.safe_load.load_torch`):
    a file holding anything but tensors, dicts, lists and numbers is refused with
    :class:`agents.common.safe_load.UnsafeModelError`.
    """
    from agents.residual.deviations import ResidualConfig
    from agents.residual.scheduler import ResidualScheduler
    from agents.common.safe_load import load_torch

    d = load_torch(path)
    net = AdvantageNet(d["n_obs"], d["n_act"], tuple(d["fit"]["hidden"]))
    net.load_state_dict(d["state_dict"])
    net.eval()
    return ResidualScheduler(ModelChooser(net, d["tau"] if tau is None else tau),
                             EnvConfig.from_dict(d["env"]), ResidualConfig(**d["residual"]), name=name)
