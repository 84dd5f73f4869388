"""The ANDREAS search's exact rejection of a row that no node can host any more
(``_fits_now_nb`` in :mod:`baselines.andreas.bind`: where no running job is re-planned,
a node the iteration has not touched still hosts what it hosted at the start) gives the
plain scan's plans, f_OBJ and draws bit for bit (``rg_search_nb(..., scan=True)``, which
does not take the shortcut), on fitgpp-lab decision points where many jobs fit at the
start and most of them no longer fit after the iteration's first placements."""

from __future__ import annotations

import numpy as np
import pytest

import hetgym
from baselines.andreas.schedulers import AndreasRG
from baselines.andreas.fit import rc_problem_nb
from baselines.andreas.kernel import rg_search_nb
from tests.baselines.andreas.test_andreas_kernel import NARGS, RefRG, fresh_out, recorded_calls
from tests.baselines.test_fast_paths import assert_same_schedule


def fitting_rows(args: list) -> int:
    """Rows of the call that some node can host at the start, where cores or memory can
    bind and no running job is re-planned (the calls that take the rejection); else 0."""
    (base, _w, _d, cls, g, _t, dl, dlen, cl, clen, _mj, cur, cur_g, node_cls, free, _open, _ft, _fc,
     node_rc0, cfg_rc, cur_rc, cs, cn) = args[:23]
    width = int(np.max(np.diff(cs)))
    _, rc_all, _fs, fit0 = rc_problem_nb(base, cls, g, dl, dlen, cl, clen, cur, cur_g, node_cls, free,
                                         node_rc0, cfg_rc, cur_rc, cs, cn, len(args[NARGS - 2]),
                                         (width + 63) // 64)
    return 0 if rc_all or (cur[base] >= 0).any() else int(fit0[base].sum())


@pytest.fixture(scope="module")
def crowded_calls() -> list[list]:
    """fitgpp-lab decision points (running jobs pinned, cores bind) with >= 15 jobs that
    fit some node at the start."""
    sc = hetgym.scenarios.get("fitgpp-lab", n_jobs=300, nodes=16)
    calls = recorded_calls(sc, AndreasRG(max_iter=5, parallel=False))
    return [c for c in calls if fitting_rows(c) >= 15]


@pytest.mark.parametrize("beta", [0.2, 1.0])
def test_rejection_matches_the_scan_where_many_jobs_fit(crowded_calls: list[list], beta: float) -> None:
    assert len(crowded_calls) >= 12
    rejected = improved = 0
    for args in crowded_calls:
        x = list(args)
        x[NARGS - 6] = beta  # beta
        x[NARGS - 4] = 100  # max_iter
        a, b, c = fresh_out(x), fresh_out(x), fresh_out(x)
        f = rg_search_nb(*a, False, True)
        assert rg_search_nb(*b, True, False) == f  # the reference scan, no pruning
        assert (a[-2] == b[-2]).all() and (a[-1] == b[-1]).all()
        assert rg_search_nb(*c, False, False) == f  # no pruning
        assert (a[-2] == c[-2]).all() and (a[-1] == c[-1]).all()
        # jobs that fit at the start and are postponed in the best plan: each was rejected
        # (by the shortcut, or in the scan by steps ii-v) after the plan's first placements
        rejected += fitting_rows(x) - int((a[-2] >= 0).sum())
        one = fresh_out(x)
        one[NARGS - 4] = 1
        improved += rg_search_nb(*one, False, True) != f
    assert rejected >= 150
    assert improved > 0  # the randomised iterations (the beta picks) won somewhere


def test_runs_match_the_scan_where_many_jobs_fit() -> None:
    """A whole run, job by job, with a large beta (randomised picks among many nodes)."""
    sc = hetgym.scenarios.get("fitgpp-lab", n_jobs=300, nodes=10)
    assert_same_schedule(sc, AndreasRG(max_iter=40, beta=0.9), RefRG(max_iter=40, beta=0.9))
