"""Policy networks for ``HetCluster-v0``: a permutation-equivariant set encoder.

:class:`SetEncoder` is an SB3 features extractor (``policy_kwargs=dict(
features_extractor_class=SetEncoder, features_extractor_kwargs=dict(window=K,
n_dev=C, run_window=R))``) that reads the observation by its published layout
(:func:`hetgym.envs.features.layout`) instead of as a flat vector:

* every job slot goes through one shared MLP (the same weights for each of the K
  slots), then one layer of multi-head self-attention across the present jobs
  (absent slots are masked out of the attention and zeroed), so that each job's
  embedding sees the others (Decima-like);
* every device type and every running slot likewise through a shared MLP each;
* the job, device and running embeddings are pooled (masked mean and max for jobs,
  mean for the others) into a context vector.

The features are the per-slot job embeddings in slot order (so the action head can
still tell slot k's start actions apart), the device and running embeddings, the
pooled context and the global features. Permuting the job slots permutes the job
embeddings the same way and leaves the pooled context unchanged (a test checks it);
the action head on top (SB3's ``net_arch``) is a plain MLP, so the whole policy is
equivariant only in its encoder, not in its output layer.

Importing this module imports torch.
"""

from __future__ import annotations

import gymnasium as gym
import torch
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from hetgym.envs.features import layout

__all__ = ["SetEncoder"]


def _mlp(n_in: int, n_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(n_in, n_out), nn.ReLU(), nn.Linear(n_out, n_out), nn.ReLU())


class SetEncoder(BaseFeaturesExtractor):
    """Shared per-slot encoders with attention and pooling (module docstring).

    Args:
        observation_space: The env's ``Box`` observation space.
        window: K, job slots (the env's ``window``).
        n_dev: C, device types.
        run_window: R, running slots (0 without preemption).
        embed_dim: Width of every slot embedding.
        heads: Attention heads (must divide ``embed_dim``).
    """

    def __init__(self, observation_space: gym.spaces.Box, window: int, n_dev: int,
                 run_window: int = 0, embed_dim: int = 32, heads: int = 4) -> None:
        lay = layout(window, n_dev, run_window)
        if len(lay) != observation_space.shape[0]:
            raise ValueError(f"SetEncoder: layout of window={window}, n_dev={n_dev}, "
                             f"run_window={run_window} has {len(lay)} entries, the observation "
                             f"{observation_space.shape[0]}")
        k, c, r, d = int(window), int(n_dev), int(run_window), int(embed_dim)
        self.k, self.c, self.r, self.d = k, c, r, d
        self.job_f = sum(1 for f in lay if f.block == "job") // k
        self.dev_f = sum(1 for f in lay if f.block == "device") // max(c, 1)
        self.run_f = sum(1 for f in lay if f.block == "running") // r if r else 0
        self.glob_f = sum(1 for f in lay if f.block == "global")
        feat = k * d + c * d + r * d + (3 * d if r else 2 * d) + d + self.glob_f
        super().__init__(observation_space, features_dim=feat)
        self.job = _mlp(self.job_f, d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.norm = nn.LayerNorm(d)
        self.dev = _mlp(self.dev_f, d)
        self.run = _mlp(self.run_f, d) if r else None

    def split(self, obs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """The observation's blocks: jobs (B, K, F), devices (B, C, 3), running (B, R, 4),
        global (B, 4)."""
        b = obs.shape[0]
        a = self.k * self.job_f
        jobs = obs[:, :a].reshape(b, self.k, self.job_f)
        dv = obs[:, a:a + self.c * self.dev_f].reshape(b, self.c, self.dev_f)
        a += self.c * self.dev_f
        run = obs[:, a:a + self.r * self.run_f].reshape(b, self.r, self.run_f)
        a += self.r * self.run_f
        return jobs, dv, run, obs[:, a:]

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        jobs, dv, run, glob = self.split(obs)
        present = jobs[:, :, 0] > 0.5                      # (B, K); feature 0 is "present"
        h = self.job(jobs)                                 # (B, K, d)
        none = ~present.any(dim=1)                          # all slots empty: attend to all
        pad = ~present & ~none[:, None]
        att, _ = self.attn(h, h, h, key_padding_mask=pad, need_weights=False)
        h = self.norm(h + att) * present[:, :, None]
        n = present.sum(dim=1, keepdim=True).clamp(min=1)
        mean = h.sum(dim=1) / n
        mx = torch.where(present[:, :, None], h, torch.full_like(h, -1e4)).amax(dim=1)
        mx = torch.where(none[:, None], torch.zeros_like(mx), mx)
        e_dev = self.dev(dv)                               # (B, C, d)
        parts = [h.flatten(1), e_dev.flatten(1), mean, mx, e_dev.mean(dim=1)]
        if self.run is not None:
            e_run = self.run(run) * (run[:, :, :1] > 0.5)
            parts += [e_run.flatten(1), e_run.mean(dim=1)]
        parts.append(glob)
        return torch.cat(parts, dim=1)
