"""A policy that scores candidates: one network for every (job, device) or (job, placement).

The RLScheduler-kernel / Decima shape. Each action but the last of an env carries out one
candidate whose ``F`` features the env publishes at fixed places of its observation
(:func:`hetgym.envs.obs_candidates.candidate_table`). The policy

* embeds every candidate with one shared MLP, ``e_a = phi(x_a)`` (``F -> d -> d``);
* pools the embeddings of the present candidates (masked mean and max) and the env's
  global features into a context, ``ctx = rho([mean e, max e, globals])``;
* scores every candidate with one shared head, ``s_a = psi([e_a, ctx])``, and ``wait`` /
  ``done`` from the context alone, ``s_wait = omega(ctx)``; the value is ``v(ctx)``.

No weight depends on the number of candidates, so the same weights act on any window
size, queue length and cluster (:func:`transfer` rebuilds a policy for another env);
a candidate's score depends on the others only through the pooled context, so it does
not depend on padding (absent slots), and permuting the slots permutes the scores.
Absent candidates get a logit of ``-1e8`` (MaskablePPO masks the infeasible ones too;
plain PPO then never picks padding).

:class:`MaskableScoringPolicy` (sb3-contrib's MaskablePPO) and :class:`ScoringPolicy`
(plain PPO) are SB3 policy classes; :class:`agents.sb3.agent.AgentConfig` builds them with
``features="score"``. Both take ``table`` (a :class:`~hetgym.envs.obs_candidates.CandidateTable`
as :meth:`~hetgym.envs.obs_candidates.CandidateTable.to_dict`) and ``embed_dim``::

    from sb3_contrib import MaskablePPO
    from agents.sb3.scoring import MaskableScoringPolicy, policy_kwargs
    model = MaskablePPO(MaskableScoringPolicy, env, policy_kwargs=policy_kwargs(env))

Importing this module imports torch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.policies import ActorCriticPolicy
from torch import nn

from hetgym.envs.obs_candidates import CandidateTable, candidate_table

__all__ = ["CandidateScorer", "MaskableScoringPolicy", "ScoringPolicy", "policy_kwargs",
           "table_of", "transfer"]

#: Logit of an absent candidate (padding).
ABSENT = -1e8


def table_of(env: Any) -> CandidateTable:
    """The candidate table of ``env``: a gym env (wrapped or not) or an SB3 ``VecEnv``
    (its first copy's ``candidate_table`` attribute)."""
    from stable_baselines3.common.vec_env import VecEnv

    if isinstance(env, VecEnv):
        return env.get_attr("candidate_table")[0]
    return candidate_table(env)


def policy_kwargs(env: Any, embed_dim: int = 64) -> dict[str, Any]:
    """``policy_kwargs`` of a scoring policy for ``env`` (see :func:`table_of`)."""
    return {"table": table_of(env).to_dict(), "embed_dim": int(embed_dim)}


def _mlp(n_in: int, hidden: int, n_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(n_in, hidden), nn.ReLU(), nn.Linear(hidden, n_out))


class CandidateScorer(nn.Module):
    """The network of the module docstring, as SB3's ``mlp_extractor``: ``forward(obs)``
    gives ``(logits (B, A), context (B, d))``.

    Args:
        table: The env's candidate table (or its ``to_dict``).
        embed_dim: ``d``.
    """

    def __init__(self, table: CandidateTable | dict[str, Any], embed_dim: int = 64) -> None:
        super().__init__()
        t = table if isinstance(table, CandidateTable) else CandidateTable.from_dict(table)
        d = int(embed_dim)
        n_f, n_g = t.index.shape[1], len(t.context)
        self.latent_dim_pi = t.index.shape[0] + 1   # logits: the candidates, then wait
        self.latent_dim_vf = d
        self.obs_dim = int(t.obs_dim)
        # buffers, not parameters, and not saved: the weights are the same for any size
        self.register_buffer("index", torch.as_tensor(t.index, dtype=torch.long), persistent=False)
        self.register_buffer("present", torch.as_tensor(t.present, dtype=torch.long),
                             persistent=False)
        self.register_buffer("context", torch.as_tensor(t.context, dtype=torch.long),
                             persistent=False)
        self.phi = nn.Sequential(_mlp(n_f, d, d), nn.ReLU())
        self.rho = nn.Sequential(_mlp(2 * d + n_g, d, d), nn.ReLU())
        self.psi = _mlp(2 * d, d, 1)
        self.omega = _mlp(d, d, 1)
        for head in (self.psi, self.omega):  # small initial scores: a near-uniform policy
            nn.init.orthogonal_(head[-1].weight, gain=0.01)
            nn.init.zeros_(head[-1].bias)

    def embed(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Per-candidate embeddings (B, A-1, d), presence (B, A-1) and context (B, d)."""
        b = obs.shape[0]
        ext = torch.cat([obs, obs.new_zeros(b, 1), obs.new_ones(b, 1)], dim=1)
        x = ext[:, self.index]                               # (B, A-1, F)
        p = ext[:, self.present] > 0.5                       # (B, A-1, 2)
        here = p[..., 0] & p[..., 1]
        e = self.phi(x)
        w = here.unsqueeze(-1).to(e.dtype)
        n = w.sum(dim=1).clamp(min=1.0)
        mean = (e * w).sum(dim=1) / n
        mx = torch.where(here.unsqueeze(-1), e, torch.zeros_like(e)).amax(dim=1)
        ctx = self.rho(torch.cat([mean, mx, obs[:, self.context]], dim=1))
        return e, here, ctx

    def scores(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits (B, A) (absent candidates ``ABSENT``) and the context (B, d)."""
        e, here, ctx = self.embed(obs)
        c = ctx.unsqueeze(1).expand(-1, e.shape[1], -1)
        s = self.psi(torch.cat([e, c], dim=-1)).squeeze(-1)
        s = torch.where(here, s, torch.full_like(s, ABSENT))
        return torch.cat([s, self.omega(ctx)], dim=1), ctx

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.scores(features)

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        return self.scores(features)[0]

    def forward_critic(self, features: torch.Tensor) -> torch.Tensor:
        return self.embed(features)[2]


class _Scoring:
    """What both policy classes add to SB3's actor-critic: the :class:`CandidateScorer` as
    ``mlp_extractor`` and an identity action head (the scorer's logits are the actions')."""

    def __init__(self, *args: Any, table: dict[str, Any] | CandidateTable,
                 embed_dim: int = 64, **kwargs: Any) -> None:
        self._table = table
        self._embed_dim = int(embed_dim)
        kwargs.setdefault("ortho_init", False)
        super().__init__(*args, **kwargs)  # type: ignore[call-arg]

    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = CandidateScorer(self._table, self._embed_dim)
        n = self.action_space.n  # type: ignore[attr-defined]
        if self.mlp_extractor.latent_dim_pi != n:
            raise ValueError(f"scoring policy: the candidate table has "
                             f"{self.mlp_extractor.latent_dim_pi - 1} candidates + wait, the "
                             f"action space {n} actions (a table of another env?)")
        if self.mlp_extractor.obs_dim != int(np.prod(self.observation_space.shape)):  # type: ignore[attr-defined]
            raise ValueError(f"scoring policy: the candidate table is of a {self.mlp_extractor.obs_dim}-"
                             f"entry observation, the space has {self.observation_space.shape}")

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)  # type: ignore[misc]
        self.action_net = nn.Identity()
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1),
                                              **self.optimizer_kwargs)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()  # type: ignore[misc]
        t = self._table
        data.update(table=t.to_dict() if isinstance(t, CandidateTable) else t,
                    embed_dim=self._embed_dim)
        return data


class MaskableScoringPolicy(_Scoring, MaskableActorCriticPolicy):
    """Scoring policy for sb3-contrib's ``MaskablePPO`` (module docstring)."""


class ScoringPolicy(_Scoring, ActorCriticPolicy):
    """Scoring policy for stable-baselines3's ``PPO`` (module docstring)."""


def transfer(policy: Any, env: Any) -> Any:
    """A copy of a scoring ``policy`` (of a model, or the model itself) for ``env``: the
    same weights, with the candidate table, observation and action spaces of ``env``
    (another window, run window or cluster)."""
    policy = getattr(policy, "policy", policy)
    table = table_of(env)
    kw = policy._get_constructor_parameters()
    kw.update(observation_space=env.observation_space, action_space=env.action_space,
              table=table.to_dict())
    new = type(policy)(**kw)
    new.load_state_dict(policy.state_dict())
    return new.to(policy.device)
