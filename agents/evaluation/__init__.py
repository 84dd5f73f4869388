"""Evaluation: agents and baselines on the same windows and the model-selection score
(:mod:`agents.evaluation.windows`), and the train / validation / test splits per trace family
that share no jobs (:mod:`agents.evaluation.heldout`)."""
