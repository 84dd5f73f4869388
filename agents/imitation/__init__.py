"""Imitation: behaviour cloning from a baseline (:mod:`agents.imitation.bc`), a rollout teacher
over a base policy (:mod:`agents.imitation.rollout`) and DAgger distillation of it
(:mod:`agents.imitation.dagger`; ``scripts/dagger.py``)."""
