"""Numba's first use in a process, without importing SciPy's linear algebra.

Numba's first compile or cache load (its CPU target's ``refresh``) imports
``numba.np.arraymath``, whose module body probes for BLAS by importing
``scipy.linalg.cython_blas``. That imports all of ``scipy.linalg`` and, through SciPy's
array-API layer, ``numpy.f2py`` and more: about a quarter of the CPU time of a warm
300-job FIFO run (BENCHMARKS.md, start-up), for a probe whose answer only selects how
Numba compiles the inner products of ``np.correlate`` / ``np.convolve``. No kernel of
hetgym uses BLAS.

:func:`load_registries` imports ``numba.np.arraymath`` once with that import answered
"not installed" (a ``None`` entry in ``sys.modules``, Python's documented way), then
sets the probe's flag to what the probe would have found: ``True`` when SciPy ships
``cython_blas``. Code compiled later in the process therefore compiles as usual; an
implementation that calls BLAS imports SciPy itself when it is compiled (Numba's
``ensure_blas``). Nothing is done when ``numba.np.arraymath`` or ``scipy.linalg`` is
already imported.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys

__all__ = ["load_registries"]

_PROBE = "scipy.linalg.cython_blas"


def _scipy_has_cython_blas() -> bool:
    """Whether the installed SciPy has ``linalg/cython_blas`` (found, not imported)."""
    try:
        import scipy  # already imported by Numba's own version check
    except ImportError:
        return False
    dirs = [os.path.join(p, "linalg") for p in getattr(scipy, "__path__", [])]
    return importlib.machinery.PathFinder.find_spec("cython_blas", dirs) is not None


def load_registries() -> None:
    """Import ``numba.np.arraymath`` without its SciPy import (module docstring); call
    before the first compiled call of the process. Idempotent and cheap once done."""
    if "numba.np.arraymath" in sys.modules or "scipy.linalg" in sys.modules or _PROBE in sys.modules:
        return
    sys.modules[_PROBE] = None  # type: ignore[assignment]  # "import scipy.linalg.cython_blas" fails at once
    try:
        from numba.np import arraymath
    finally:
        if sys.modules.get(_PROBE, False) is None:
            del sys.modules[_PROBE]
    if getattr(arraymath, "_HAVE_BLAS", None) is False and _scipy_has_cython_blas():
        arraymath._HAVE_BLAS = True
