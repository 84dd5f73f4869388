"""A process pool for the study scripts that is safe after compiled parallel code ran.

Numba's parallel kernels (e.g. ANDREAS RG's threaded search) start an OpenMP thread pool in
the process; GNU OpenMP then aborts any child made by ``fork()`` ("fork() called from a
process already using GNU OpenMP, this is unsafe"), which kills a ``fork`` pool's workers
when ``scripts/reproduce.py`` runs one study after another in one process. The workers
here are started with ``spawn``: fresh interpreters that import what the tasks need
(through the parent's ``sys.path``) and load the compiled kernels from Numba's cache.
"""

from __future__ import annotations

import multiprocessing as mp
from concurrent.futures import ProcessPoolExecutor


def process_pool(workers: int) -> ProcessPoolExecutor:
    """A ``ProcessPoolExecutor`` of ``workers`` spawned processes (module docstring)."""
    return ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"))
