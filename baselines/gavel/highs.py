"""Gavel's LPs handed to HiGHS directly, as ``scipy.optimize.linprog`` would hand them.

``linprog(c, A_ub=A, b_ub=b, bounds=..., method="highs" | "highs-ipm")`` checks and
converts its inputs, stacks the constraint matrix in CSC form, fills a ``HighsLp``,
sets the solver options, runs HiGHS and then reads every column's basis status into
Python objects; on Gavel's LPs (thousands of columns, a few hundred solves per run)
the wrapping costs more than the solve. :func:`solve` takes the CSC arrays
:mod:`baselines.gavel.lp` builds directly and gives HiGHS the same model (costs,
bounds, ``-inf <= A x <= b``, matrix) with the same options (``presolve="on"``; the
interior-point ``solver="ipm"`` for ``highs-ipm``; no output; dual simplex strategy),
then applies ``linprog``'s acceptance test (HiGHS reports optimal and the point is
within ``sqrt(1e-9) * 10`` of the bounds and the rows). The answer is the same ``x``
bit for bit (``tests/baselines/gavel/test_gavel_fast.py`` checks the model HiGHS receives
and the answers against ``linprog``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["available", "solve"]

_TOL = float(np.sqrt(1e-9) * 10)  # linprog's _check_result tolerance for its default tol
_OPTIONS: dict[bool, object] = {}


_NAMES = ("HighsOptions", "HighsLp", "_Highs", "HighsStatus", "HighsModelStatus", "MatrixFormat",
          "HighsDebugLevel", "simplex_constants")
_AVAILABLE: list[bool] = []


def _core():
    """SciPy's HiGHS bindings (the module ``linprog`` itself calls)."""
    import scipy.optimize._highspy._core as core

    return core


def available() -> bool:
    """Whether this SciPy has the private HiGHS bindings :func:`solve` uses (SciPy 1.15 and
    later, checked on 1.17); where it has not, :mod:`baselines.gavel.lp` calls ``linprog``,
    which gives the same answers more slowly."""
    if not _AVAILABLE:
        try:
            core = _core()
            _AVAILABLE.append(all(hasattr(core, n) for n in _NAMES))
        except ImportError:
            _AVAILABLE.append(False)
    return _AVAILABLE[0]


def options(ipm: bool):
    """The ``HighsOptions`` ``linprog`` sets for ``method="highs-ipm"`` (``ipm``) or
    ``"highs"`` with its default arguments."""
    if ipm not in _OPTIONS:
        h = _core()
        o = h.HighsOptions()
        o.presolve = "on"
        if ipm:
            o.solver = "ipm"
        o.highs_debug_level = h.HighsDebugLevel.kHighsDebugLevelNone
        o.log_to_console = False
        o.output_flag = False
        o.simplex_strategy = h.simplex_constants.SimplexStrategy.kSimplexStrategyDual
        _OPTIONS[ipm] = o
    return _OPTIONS[ipm]


def solve(c: np.ndarray, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray,
          b_ub: np.ndarray, lb: np.ndarray, ub: np.ndarray, ipm: bool) -> np.ndarray | None:
    """``min c x`` s.t. ``A x <= b_ub``, ``lb <= x <= ub`` (``A`` in CSC parts, rows
    sorted in each column; infinite bounds as ``+-inf``). Returns ``x``, or None where
    ``linprog`` would report a status other than 0."""
    h = _core()
    numcol, numrow = c.size, b_ub.size
    lp = h.HighsLp()
    lp.num_col_ = numcol
    lp.num_row_ = numrow
    lp.a_matrix_.num_col_ = numcol
    lp.a_matrix_.num_row_ = numrow
    lp.a_matrix_.format_ = h.MatrixFormat.kColwise
    # lists: pybind11 copies a list into a std::vector much faster than a NumPy array
    lp.col_cost_ = c.tolist()
    lp.col_lower_ = lb.tolist()
    lp.col_upper_ = ub.tolist()
    lp.row_lower_ = [-np.inf] * numrow
    lp.row_upper_ = b_ub.tolist()
    lp.a_matrix_.start_ = indptr.tolist()
    lp.a_matrix_.index_ = indices.tolist()
    lp.a_matrix_.value_ = data.tolist()
    highs = h._Highs()
    err = h.HighsStatus.kError
    if highs.passOptions(options(ipm)) == err or highs.passModel(lp) == err or highs.run() == err:
        return None
    if highs.getModelStatus() != h.HighsModelStatus.kOptimal:
        return None
    sol = highs.getSolution()
    x = np.array(sol.col_value)
    slack = b_ub - sol.row_value
    fun = highs.getInfo().objective_function_value
    if np.isnan(x).any() or np.isnan(fun) or np.isnan(slack).any():
        return None
    if not np.all((x >= lb - _TOL) & (x <= ub + _TOL)) or (slack < -_TOL).any():
        return None
    return x
