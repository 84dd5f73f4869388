"""The rulebook (:mod:`hetgym.sim.rules`): each rule on a hand example, compiled and
plain-Python forms alike, and a source scan that fails when a rule is written out again
outside it."""

from __future__ import annotations

import io
import re
import tokenize
from collections import namedtuple
from pathlib import Path

import numpy as np
import pytest

from hetgym.sim import rules
from hetgym.sim.codes import DONE, FUTURE, GRACE, QUEUED, RUNNING
from hetgym.sim.state.jobs import best_durations

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("hetgym", "baselines", "agents")


# ------------------------------------------------------------------- hand examples
def test_tolerance():
    assert rules.EPS == 1e-9


@pytest.mark.parametrize("form", ["compiled", "python"])
def test_covers(form):
    covers = rules.covers_nb if form == "compiled" else rules.covers
    assert covers(4.0, 4.0)
    assert covers(4.0, 4.0 + 5e-10)  # within the tolerance
    assert not covers(4.0, 4.0 + 2e-9)
    assert covers(0.0, 0.0) and not covers(0.0, 1.0)


def test_covers_on_arrays():
    free = np.array([1.0, 2.0, 3.0])
    assert rules.covers(free, 2.0).tolist() == [False, True, True]
    assert rules.covers(free, np.array([1.0, 2.0 + 1e-6, 3.0 - 1.0])).tolist() == [True, False, True]


@pytest.mark.parametrize("form", ["compiled", "python"])
def test_slots(form):
    slots = rules.slots_nb if form == "compiled" else rules.slots
    assert slots(10.0, 3.0) == 3.0
    assert 0.3 / 0.1 < 3.0 and slots(0.3, 0.1) == 3.0  # rounding below 3, the tolerance lifts it
    assert slots(2.0, 4.0) == 0.0


def test_slots_on_arrays():
    assert rules.slots(np.array([10.0, 0.3, 7.9]), np.array([3.0, 0.1, 2.0])).tolist() == [3.0, 3.0, 3.0]


@pytest.mark.parametrize("form", ["compiled", "python"])
def test_kept_work(form):
    kept = rules.kept_work_nb if form == "compiled" else rules.kept_work
    assert kept(7.0, 2.0) == 6.0 and kept(1.5, 2.0) == 0.0
    assert kept(6.0 - 1e-12, 2.0) == 6.0  # a whole checkpoint short by rounding still counts
    assert kept(5e5 * (1 - 1e-10), 1.0) == 5e5  # relative: 5e-5 short of 500,000


@pytest.mark.parametrize("form", ["compiled", "python"])
def test_preemptibility(form):
    may = rules.may_preempt_nb if form == "compiled" else rules.may_preempt
    below = rules.below_limit_nb if form == "compiled" else rules.below_limit
    assert may(RUNNING, 0, -1) and may(RUNNING, 7, -1)  # no limit
    assert may(RUNNING, 1, 2) and not may(RUNNING, 2, 2)  # limit 2: twice is the last
    for st in (FUTURE, QUEUED, GRACE, DONE):  # only a running job, not one in its grace period
        assert not may(st, 0, -1)
    assert below(5, -1) and below(1, 2) and not below(2, 2) and not below(3, 2)


def test_preemptibility_on_arrays_and_limit_code():
    assert rules.below_limit(np.array([0, 1, 2, 3]), 2).tolist() == [True, True, False, False]
    assert rules.below_limit(np.array([0, 9]), -1) is True
    assert rules.limit_code(None) == -1 and rules.limit_code(3) == 3 and rules.limit_code(0) == 0


@pytest.mark.parametrize("form", ["compiled", "python"])
def test_scaled_rate(form):
    rate = rules.scaled_rate_nb if form == "compiled" else rules.scaled_rate
    assert rate(4, 2.0, 1.0) == 8.0  # linear: g x tput
    assert rate(4, 2.0, 0.5) == 4.0  # 4 x 2 x 4 ** -0.5
    assert rate(1, 3.0, 0.7) == 3.0  # one worker: its throughput, whatever the exponent
    assert rate(8, 1.0, 2.0) == 64.0


def test_scaled_rate_on_arrays():
    g = np.array([1.0, 4.0, 9.0])
    assert rules.scaled_rate(g[:, None], np.array([[2.0, 0.0]]), 0.5).tolist() == [
        [2.0, 0.0], [4.0, 0.0], [6.0, 0.0]]


@pytest.mark.parametrize("form", ["compiled", "python"])
def test_duration(form):
    dur = rules.duration_nb if form == "compiled" else rules.duration
    assert dur(100.0, 4, 2.0, 1.0) == 12.5
    assert dur(16.0, 4, 2.0, 0.5) == 4.0
    assert dur(16.0, 4, 0.0, 1.0) == np.inf and dur(16.0, 4, -1.0, 0.5) == np.inf


Jobs = namedtuple("Jobs", "tput holdable workers work")


def _jobs():
    # job 0: fastest on type 1, which cannot hold its gang -> type 2; job 1: only type 0
    return Jobs(tput=np.array([[1.0, 4.0, 2.0], [3.0, 0.0, 0.0]]),
                holdable=np.array([[True, False, True], [True, True, True]]),
                workers=np.array([2, 1]), work=np.array([10.0, 6.0]))


def test_best_duration():
    jobs = _jobs()
    assert rules.best_duration_nb(10.0, 0, jobs, 1.0) == 2.5  # 10 / (2 x 2)
    assert rules.best_duration_nb(6.0, 1, jobs, 1.0) == 2.0
    assert rules.best_duration_nb(8.0, 0, jobs, 0.5) == 8.0 / (2 * 2.0 * 2 ** -0.5)
    assert best_durations(jobs).tolist() == [2.5, 2.0]  # the array form agrees
    assert best_durations(jobs, np.array([8.0, 6.0]), 0.5).tolist() == [
        rules.best_duration_nb(8.0, 0, jobs, 0.5), rules.best_duration_nb(6.0, 1, jobs, 0.5)]


def test_compiled_and_python_forms_agree_bit_for_bit():
    rng = np.random.default_rng(0)
    for _ in range(200):
        free, need = rng.uniform(0, 64, 2)
        g, t, e, a = int(rng.integers(1, 17)), rng.uniform(0.1, 5), rng.uniform(0.5, 1.2), rng.uniform(1, 1e6)
        assert rules.covers_nb(free, need) == rules.covers(free, need)
        assert rules.slots_nb(free, need) == rules.slots(free, need)
        assert rules.scaled_rate_nb(g, t, e) == rules.scaled_rate(g, t, e)
        assert rules.duration_nb(a, g, t, e) == rules.duration(a, g, t, e)


# ------------------------------------------------------------------- restatement scan
#: Literal 1e-9 tolerances of another meaning, allowed by the name they are assigned to.
OTHER_TOLERANCES = {
    "rel_tol": "relative tolerance of a comparison of two rollouts' results",
    "_TOL": "SciPy linprog's feasibility tolerance (HiGHS check)",
    "REL_TOL": "ANDREAS's branch-and-bound pruning margin, relative to the bound",
}

_ASSIGNED = re.compile(r"^\s*(\w+)\s*(?::[^=]*)?=")
_PLUS_EPS = r"(\+\s*\w*EPS\b|\b\w*EPS\s*\+)"
_RESTATEMENTS: dict[str, re.Pattern] = {
    "a fit test (use rules.covers / rules.slots)": re.compile(
        rf"{_PLUS_EPS}(?=.*(<|>))|(<|>|\bfloor\b).*{_PLUS_EPS}"),
    "the preemption limit (use rules.below_limit / may_preempt)": re.compile(
        r"n_preempt\b[^=<>]*(<(?!=)|>=)\s*[\w.(]*\b(limit|max_pre)"),
    "the scaling law (use rules.scaled_rate)": re.compile(r"\*\*\s*\(\s*[\w.\[\]]+\s*-\s*1(\.0)?\s*\)"),
    "the preemption limit code (use rules.limit_code)": re.compile(
        r"-1 if [\w.]*(limit|max_pre)\w* is None else int\("),
}


def _code_lines(text: str, short_strings: bool = False) -> dict[int, str]:
    """Line number -> the code of that line: comments and strings (docstrings too)
    blanked out, everything else where it was written. With ``short_strings`` the
    one-quote strings (column names such as ``df["workers"]``) stay."""
    lines = text.splitlines(keepends=True)
    chars = [list(line) for line in lines]
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type not in (tokenize.COMMENT, tokenize.STRING):
            continue
        if short_strings and tok.type == tokenize.STRING and tok.string.lstrip("rbufRBUF")[:3] not in ('"""', "'''"):
            continue
        (r0, c0), (r1, c1) = tok.start, tok.end
        for r in range(r0, r1 + 1):
            lo = c0 if r == r0 else 0
            hi = c1 if r == r1 else len(chars[r - 1])
            chars[r - 1][lo:hi] = " " * (hi - lo)
    return {no: "".join(c) for no, c in enumerate(chars, 1)}


#: Names of a gang's worker count and of a per-worker throughput (in a denominator, their
#: product is a rate that :func:`rules.scaled_rate` defines).
_WORKER_NAMES = frozenset({"w", "g", "W", "workers", "n_workers", "nworkers", "gang"})
_TPUT_NAMES = re.compile(r"tput|throughput|best|slow|fast|speed|^ref$|^t$")


def _divides_by_gang_rate(code: str) -> bool:
    """Whether ``code`` divides by a parenthesised product (``* `` at its top level) of a
    worker count and a per-worker throughput: ``work / (workers * best)``."""
    for m in re.finditer(r"/\s*\(", code):
        depth, i, top_star = 1, m.end(), False
        while i < len(code) and depth:
            depth += {"(": 1, ")": -1}.get(code[i], 0)
            if depth == 1 and code[i] == "*" and "*" not in (code[i - 1], code[i + 1:i + 2]):
                top_star = True  # a product, not a power
            i += 1
        names = set(re.findall(r"[A-Za-z_]\w*", code[m.end():i]))
        if top_star and names & _WORKER_NAMES and any(_TPUT_NAMES.search(n) for n in names):
            return True
    return False


def _value(number: str) -> float | None:
    """A NUMBER token's float value (None for an integer in another base)."""
    try:
        return float(number.replace("_", "").rstrip("jJ"))
    except ValueError:
        return None


def restatements(root: Path, folders=FOLDERS) -> list[str]:
    """``"path:line: what"`` for every rule of :mod:`hetgym.sim.rules` written out again
    in the ``*.py`` files under ``root / folder`` (the rules module itself excepted)."""
    hits = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if rel == "hetgym/sim/rules.py":
                continue
            text = path.read_text()
            for tok in tokenize.generate_tokens(io.StringIO(text).readline):
                if tok.type == tokenize.NUMBER and _value(tok.string) == 1e-9:
                    m = _ASSIGNED.match(tok.line)
                    if not (m and m.group(1) in OTHER_TOLERANCES):
                        hits.append(f"{rel}:{tok.start[0]}: a literal 1e-9 (use rules.EPS)")
            for no, code in _code_lines(text).items():
                hits += [f"{rel}:{no}: {what}" for what, rx in _RESTATEMENTS.items() if rx.search(code)]
            for no, code in _code_lines(text, short_strings=True).items():
                if _divides_by_gang_rate(code):
                    hits.append(f"{rel}:{no}: a duration as work / (workers x throughput) "
                                "(use rules.scaled_rate / rules.duration)")
    return hits


def test_no_rule_is_restated_outside_the_rulebook():
    hits = restatements(ROOT)
    assert not hits, "rules written out again (call hetgym.sim.rules instead):\n" + "\n".join(hits)


def test_the_scan_finds_each_restatement(tmp_path):
    pkg = tmp_path / "baselines"
    pkg.mkdir()
    (pkg / "bad.py").write_text(
        '"""Docstrings may say 1e-9 and free + EPS >= need."""\n'
        "x = free + 1e-9 >= need\n"
        "_EPS = 1e-9\n"
        "ok = need <= cap.free_cpus[n] + EPS\n"
        "r = g * t * g ** (e - 1.0)\n"
        "p = js.n_preempt[j] < limit\n"
        "c = -1 if o.max_preemptions is None else int(o.max_preemptions)\n"
        "rel_tol: float = 1e-9  # allowed by name\n"
        "fine = c < best - EPS  # a comparison margin, not a fit test\n"
        'd = df["work"].to_numpy() / (df["workers"].to_numpy() * best)\n'
        "t = work[j] / (float(workers[j]) * np.max(tput[j]))\n"
        "u = work / (tput[j] * w)\n"
        "ok = work / scaled_rate(w, tput, 1.0) + x / (a * b) + y / (w ** 2)\n")
    hits = restatements(tmp_path, ("baselines",))
    assert [h.split(":")[1] for h in hits] == ["2", "3", "4", "5", "6", "7", "10", "11", "12"]
