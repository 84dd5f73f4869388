"""Rows of the reproduction table (``docs/reproduction.md``) and its renderer.

Each paper family's study script (``scripts/*_study.py``) returns a list of :class:`Row`,
one per headline number or worked example of its paper: the paper's value with where it
is printed, ours, and how to judge the pair. ``scripts/reproduce.py`` collects the rows,
renders them with :func:`render` and writes the document with :func:`write_atomic`.

How a row is judged (``check``):

* ``"exact"``: a worked example; it holds when ours equals the expected value within
  ``tol`` (relative, and absolute for values near 0).
* ``"side"``: a comparison; it holds when ours lies on the same side of ``neutral`` as the
  paper's value (e.g. a speed-up above 1, a reduction above 0). For a claim the paper
  states without a number, ``paper`` is None and ``sense`` (``">"`` or ``"<"``) says on
  which side of ``neutral`` it lies.
* ``"at_most"``: a bound (e.g. decision time under 0.1 s); it holds when ours <= paper.
* ``"level"``: an absolute value whose size depends on assumed inputs; no direction,
  only the ratio.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from hetgym.io import write_atomic_bytes

__all__ = ["Row", "render", "seed_label", "summary", "write_atomic"]

CHECKS = ("exact", "side", "at_most", "level")


@dataclass(frozen=True)
class Row:
    """One paper number (or worked example) beside ours.

    Attributes:
        family: the paper family, e.g. ``"FitGpp"``.
        claim: what the number is, e.g. ``"TE p95 slowdown cut vs FIFO [%]"``.
        source: where the paper (or a hand computation from its equations) gives it, e.g.
            ``"Table 1 (sec. 4.2)"``.
        paper: the paper's value (None: a claim without a number, see ``sense``).
        ours: our measured value (None or NaN: not measured in this run).
        check: ``"exact"``, ``"side"``, ``"at_most"`` or ``"level"`` (module docstring).
        neutral: the value that separates the two directions (``check="side"``).
        sense: ``">"`` or ``"<"``: the paper's side of ``neutral`` when ``paper`` is None.
        tol: relative tolerance of ``check="exact"``.
        setting: what we ran, e.g. ``"fitgpp-lab, 2^16 jobs x 8"``.
        link: the doc (and anchor) that explains the gap, relative to ``docs/``.
        note: a short reason for the gap.
        example: True for a worked example, False for a headline number.
    """

    family: str
    claim: str
    source: str
    paper: float | None
    ours: float | None
    check: str = "side"
    neutral: float | None = None
    sense: str | None = None
    tol: float = 1e-6
    setting: str = ""
    link: str = ""
    note: str = ""
    example: bool = False

    def __post_init__(self) -> None:
        if self.check not in CHECKS:
            raise ValueError(f"Row {self.claim!r}: check must be one of {CHECKS}, got {self.check!r}")
        if self.check == "side":
            if self.neutral is None:
                raise ValueError(f"Row {self.claim!r}: check='side' needs neutral=")
            if self.paper is None and self.sense not in (">", "<"):
                raise ValueError(f"Row {self.claim!r}: a claim without a paper value needs sense='>' or '<'")
            if self.paper is not None and self.paper == self.neutral:
                raise ValueError(f"Row {self.claim!r}: the paper's value equals neutral; no direction")
        elif self.paper is None:
            raise ValueError(f"Row {self.claim!r}: check={self.check!r} needs the paper's value")

    @property
    def measured(self) -> bool:
        """Whether ours is a number."""
        return self.ours is not None and not math.isnan(self.ours)

    @property
    def ratio(self) -> float | None:
        """ours / paper (None when either is missing or the paper's value is 0)."""
        if not self.measured or self.paper is None or self.paper == 0:
            return None
        return float(self.ours) / self.paper  # type: ignore[arg-type]

    @property
    def holds(self) -> bool | None:
        """Whether the paper's direction (or value) holds for ours; None: not judged."""
        if not self.measured or self.check == "level":
            return None
        ours = float(self.ours)  # type: ignore[arg-type]
        if self.check == "exact":
            assert self.paper is not None
            return abs(ours - self.paper) <= self.tol * max(1.0, abs(self.paper))
        if self.check == "at_most":
            assert self.paper is not None
            return ours <= self.paper
        assert self.neutral is not None
        want = self.sense if self.paper is None else (">" if self.paper > self.neutral else "<")
        return ours > self.neutral if want == ">" else ours < self.neutral


def seed_label(seeds: list[int]) -> str:
    """``"seed 0"``, ``"seeds 0-2"`` or ``"seeds 0, 3"`` for a setting column."""
    if len(seeds) == 1:
        return f"seed {seeds[0]}"
    if list(seeds) == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"seeds {seeds[0]}-{seeds[-1]}"
    return "seeds " + ", ".join(map(str, seeds))


def _num(x: float | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    a = abs(x)
    if a == 0 or 0.01 <= a < 1e5:
        s = f"{x:.4g}" if a < 1000 else f"{x:,.0f}"
    else:
        s = f"{x:.3g}"
    return s


def _paper_cell(r: Row) -> str:
    if r.paper is None:
        return f"{r.sense} {_num(r.neutral)}"
    return ("≤ " if r.check == "at_most" else "") + _num(r.paper)


def _verdict(r: Row) -> str:
    h = r.holds
    if h is None:
        return "not measured" if not r.measured else "-"
    if r.check == "exact":
        return "exact" if h else "**differs**"
    return "yes" if h else "**no**"


def summary(rows: Iterable[Row]) -> dict[str, int]:
    """Counts: rows, judged rows, rows that hold (headline and worked examples apart)."""
    rows = list(rows)
    out = {"rows": len(rows)}
    for key, sel in (("headline", [r for r in rows if not r.example]),
                     ("examples", [r for r in rows if r.example])):
        judged = [r for r in sel if r.holds is not None]
        out[f"{key}"] = len(sel)
        out[f"{key}_judged"] = len(judged)
        out[f"{key}_hold"] = sum(bool(r.holds) for r in judged)
    return out


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(rows: Iterable[Row], title: str = "Reproduction table", preamble: str = "") -> str:
    """Markdown: a summary, then one table per family (headline rows first)."""
    rows = list(rows)
    s = summary(rows)
    lines = [f"# {title}", ""]
    if preamble:
        lines += [preamble.rstrip(), ""]
    lines += [(f"{s['rows']} rows. Headline numbers: the paper's direction holds in "
               f"**{s['headline_hold']} of {s['headline_judged']}** judged rows "
               f"({s['headline'] - s['headline_judged']} absolute levels not judged). "
               f"Worked examples: **{s['examples_hold']} of {s['examples_judged']}** exact."), ""]
    families = list(dict.fromkeys(r.family for r in rows))
    for fam in families:
        sel = sorted((r for r in rows if r.family == fam), key=lambda r: r.example)
        fs = summary(sel)
        lines += [f"## {fam}", "",
                  (f"Direction holds in {fs['headline_hold']} of {fs['headline_judged']} headline rows; "
                   f"{fs['examples_hold']} of {fs['examples_judged']} worked examples exact."), "",
                  "| | claim | source | paper | ours | ours / paper | holds | setting | why |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in sel:
            why = _escape(r.note)
            if r.link:
                ref = f"[{r.link.split('#')[0]}]({r.link})"
                why = f"{why} ({ref})" if why else ref
            lines.append("| " + " | ".join([
                "example" if r.example else "headline", _escape(r.claim), _escape(r.source),
                _paper_cell(r), _num(r.ours), _num(r.ratio), _verdict(r), _escape(r.setting), why,
            ]) + " |")
        lines.append("")
    return "\n".join(lines)


def write_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically (:func:`hetgym.io.write_atomic_bytes`)."""
    return write_atomic_bytes(text.encode("utf-8"), path)
