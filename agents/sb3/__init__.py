"""Stable-Baselines3 training: the agent config and vectorised envs (:mod:`agents.sb3.agent`),
the policy networks (:mod:`agents.sb3.policies`, :mod:`agents.sb3.scoring`), the ``VecEnv``
over the batched env and its process pool (:mod:`agents.sb3.vecenv`, :mod:`agents.sb3.vecpool`),
the callbacks and the training run (:mod:`agents.sb3.callbacks`, :mod:`agents.sb3.training`;
``scripts/train.py``)."""
