"""A gated residual policy: a baseline's own run, left only where a model is confident.

:class:`ResidualScheduler` is a :mod:`hetgym` scheduler. At each decision point of
:func:`hetgym.simulate` it asks the *base* scheduler (``baselines.make(base)``, AlloX
for ``hetero-small``, FitGpp for ``fitgpp-lab``) for its decisions, and, through a ``HetCluster-v0`` bound to the
simulator (:func:`agents.common.envtools.bind`, as :class:`agents.common.adapter.AgentScheduler`
does), builds the observation, the policy mask and a few *deviations*
(:func:`candidates`): "wait" (skip the base's decisions at this instant), per
device type the feasible window job with the shortest duration there and the oldest
one, and optionally (``preempt``) the preemption of the running job with the longest
remaining time. A *chooser* picks a deviation or none (-1): with none, ``decide`` returns
the base's decisions, so the run is the base's own; a start or preemption is carried out
on the simulator at once and the loop asks again at the same instant; "wait" returns ``[]``.

The *value* of a run (:meth:`ResidualConfig.value`, lower is better) is its ``metric``
(``avg_jct`` for ``hetero-small``), plus, for a family with a constraint (``fitgpp-lab``:
TE p95 slowdown, BE median slowdown bounded by FitGpp's), ``penalty`` times the excess of
the ``constraint`` column over its value in the *base's own run of the window* (the
bound, measured once per window when the scheduler is reset, :attr:`ResidualScheduler.bound`).
Bounding every window by the base's own figure keeps the mean over windows within the
base's mean, which is how ``agents.evaluation.heldout``'s families are scored (the selection score
:class:`agents.evaluation.windows.Score` is infinite when the constraint's mean exceeds the base's).

Unlike :class:`agents.imitation.rollout.SchedulerActor` (the base acting *in the env*: its first
start the action space can express, else wait), the base here is the baseline exactly
as :func:`hetgym.simulate` runs it: with a chooser that never deviates
(``tau = inf``) the run *is* the baseline's (a test checks it). The in-env AlloX
is far from that on crowded windows: AlloX's matching picks short jobs anywhere in the
queue, the env's action space only shows the 16 oldest, and when none of AlloX's
starts is in that window the in-env actor waits with machines idle (hetero-small test
window 17: it waits at 67 of 168 steps while 18-34 jobs queue).

When the chooser deviates, the base's decisions of that call are dropped and the base is
asked again; a base whose ``decide`` draws random numbers (FitGpp's fallback victim when
no BE job is eligible, ``view.rng``) has then drawn once more than in its own run, so the
teacher's value of the base is that of its run from this state with that draw made (only
after a deviation; with ``tau = inf`` the run is exactly the base's, tested).

Two choosers:

* :class:`RolloutChooser` (the teacher, and the data): the value of each deviation is
  the metric of the run that takes it and then follows the base to the end
  (:func:`deviation_value`, on a copy of the simulator), the base's value
  :func:`base_value` the same without the deviation; it records, per state, the
  observation, the mask, the base's starts in action space (:func:`base_vector`) and
  each candidate's relative advantage ``(V_base - Q) / V_base`` (NaN for actions that
  are no candidate), and acts on the best candidate if it beats the base (one step of
  policy iteration over the base's own run, never worse than the base on a window).
* :class:`ModelChooser`: a network (:class:`AdvantageNet`) predicts the relative
  advantage of every action from the observation and the base's starts; the best
  candidate is taken when its prediction exceeds ``tau`` (in percent of the base's
  metric), else the base acts.

:func:`generate` runs the teacher on windows (``workers`` processes), :func:`fit` trains
the network, :func:`save` / :func:`load_residual` store it (those three and the network live
in :mod:`agents.residual.network`, re-exported here) (``torch.save``, a few hundred
kB). ``scripts/residual.py`` (config ``conf/experiment/residual_hetero_small.yaml``)
does the whole run; docs/agents.md has its results.

This module is where the policy is imported from; its parts live in (and are re-exported
from) :mod:`agents.residual.deviations` (:class:`ResidualConfig`, :func:`base_vector`,
:func:`candidates`), :mod:`agents.residual.rollouts` (:func:`copy_sim`, :func:`base_value`,
:func:`deviation_value`), :mod:`agents.residual.scheduler` (:class:`ResidualScheduler`),
:mod:`agents.residual.teacher` (:class:`RolloutChooser`, :func:`generate`) and
:mod:`agents.residual.network` (the network).
"""

from __future__ import annotations

from agents.residual.deviations import (
    ResidualConfig,
    base_vector,
    candidates,
    longest_remaining_preemption,
)
from agents.residual.network import (  # the network, its training, saving, loading (re-exported)
    AdvantageNet,
    FitConfig,
    ModelChooser,
    fit,
    load_residual,
    save,
)
from agents.residual.rollouts import base_summary, base_value, copy_sim, deviation_value
from agents.residual.scheduler import ResidualScheduler
from agents.residual.teacher import RECORD_KEYS, RolloutChooser, generate

__all__ = [
    "RECORD_KEYS",
    "AdvantageNet",
    "FitConfig",
    "ModelChooser",
    "ResidualConfig",
    "ResidualScheduler",
    "RolloutChooser",
    "base_summary",
    "base_value",
    "base_vector",
    "candidates",
    "copy_sim",
    "deviation_value",
    "fit",
    "generate",
    "load_residual",
    "longest_remaining_preemption",
    "save",
]
