"""Gavel's FIFO allocation (``scheduler/policies/fifo.py::FIFOPolicy``), pure function.

The allocation is one-hot: each job of the FIFO queue is given one GPU type (X_jk = 1)
while that type has room for its gang; the round mechanism then runs the jobs with
X_jk = 1 (jobs with priority 0 are never run under a FIFO policy).

Two rules are offered (docs/gavel.md):

* ``defects=False`` (hetgym's default, **the intended rule**): jobs in arrival order;
  a job already allocated keeps its type (``mode="base"``; in ``"perf"`` mode the
  allocation is rebuilt from scratch); each queued job takes a type with at least
  ``sf_j`` free GPUs, uniformly at random among them (``"base"``) or the one where it is
  fastest (``"perf"``, first in name order on ties); strict FIFO: the walk stops at
  the first job that fits nowhere.
* ``defects=True`` (``mode="base"`` only; reproduces Gavel's code as written):
  (1) the random draw picks an index but the job is given the type held in a stale
  variable (the alphabetically last type of the cluster, as Gavel's loop over
  ``available_workers`` leaves it), that type's free count may go negative, and the
  type removed from the list when a count hits 0 is the randomly drawn one;
  (2) when an allocated job has completed, the head of the queue replaces it on its
  type if it fits in the GPUs counted free *so far* in the walk over allocated jobs
  (jobs later in that walk still hold theirs), and a head that does not fit is dropped
  from this computation's queue. Gavel's ``perf`` mode has neither defect.

Types are handled in name order (Gavel's ``cluster_spec`` and ``available_worker_types``
are sorted by name).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["fifo_allocation"]


def fifo_allocation(prev: dict[int, int], jobs: Sequence[int], T: np.ndarray, sf: np.ndarray,
                    n: np.ndarray, names: Sequence[str], mode: str, rng: np.random.Generator,
                    defects: bool = False) -> dict[int, int]:
    """One FIFO allocation: ``{job: type index}``.

    Args:
        prev: The previous allocation (``{job: type}``; jobs no longer in ``jobs`` have
            completed).
        jobs: Active jobs in arrival order (row ``i`` of ``T``/``sf`` is ``jobs[i]``).
        T: ``(len(jobs), K)`` throughputs (0 where the job cannot run).
        sf: Gang size of each job.
        n: GPUs per type.
        names: Type names (ties and walks follow name order).
        mode: ``"base"`` (random type) or ``"perf"`` (fastest type, rebuilt each time).
        rng: Random generator for the base mode's draw.
        defects: Reproduce Gavel's base-mode defects (see the module docstring).
    """
    if mode not in ("base", "perf"):
        raise ValueError(f"Gavel FIFO: mode must be 'base' or 'perf', got {mode!r}")
    row = {int(j): i for i, j in enumerate(jobs)}
    order = sorted(range(len(n)), key=lambda k: names[k])  # name order
    avail = {k: int(n[k]) for k in order}
    alloc = {} if mode == "perf" else {int(j): int(k) for j, k in prev.items()}
    queue = [j for j in sorted(row) if j not in alloc]
    if defects and mode == "base":
        return _gavel_as_written(alloc, queue, row, sf, avail, order, rng)
    for j in list(alloc):  # a completed job frees its type; the others keep theirs
        if j not in row:
            del alloc[j]
        else:
            avail[alloc[j]] -= int(sf[row[j]])
    for j in queue:
        w = int(sf[row[j]])
        fit = [k for k in order if avail[k] >= w and T[row[j], k] > 0]
        if not fit:
            break  # strict FIFO
        if mode == "base":
            k = fit[int(rng.integers(len(fit)))]
        else:
            k = max(fit, key=lambda kk: (T[row[j], kk], -order.index(kk)))
        alloc[j] = k
        avail[k] -= w
    return alloc


def _gavel_as_written(alloc: dict[int, int], queue: list[int], row: dict[int, int],
                      sf: np.ndarray, avail: dict[int, int], order: list[int],
                      rng: np.random.Generator) -> dict[int, int]:
    """Gavel's base-mode FIFO step by step, defects included (module docstring)."""
    for j in sorted(alloc):
        k = alloc[j]
        if j not in row:  # completed: the head of the queue may take its place
            if queue:
                head = queue.pop(0)
                if int(sf[row[head]]) <= avail[k]:
                    alloc[head] = k
                    avail[k] -= int(sf[row[head]])
            del alloc[j]
        else:
            avail[k] -= int(sf[row[j]])
    stale = order[-1]  # the loop variable left by Gavel's scan of available_workers
    types = [k for k in order if avail[k] > 0]
    while queue and types:
        j = queue.pop(0)
        w = int(sf[row[j]])
        fit_idx = [i for i, k in enumerate(types) if avail[k] >= w]
        if not fit_idx:
            break
        drawn = int(rng.integers(len(fit_idx)))
        alloc[j] = stale
        avail[stale] -= w
        if avail[stale] == 0:
            types.pop(fit_idx[drawn])
    return alloc
