"""Code compares job states and counters by name, not by number (no raw
``status == 3``, ``ctr[6]``, ``acc[2]`` where named constants exist)."""

import re
from pathlib import Path

from tests.source_scan import code_hits

ROOT = Path(__file__).resolve().parents[1]

#: a job status compared with a literal, or a counter / accumulator read at a literal index
RAW = [re.compile(r"\bstatus\w*(\[[^\]]*\])*\s*(==|!=|<=|>=|<|>)\s*\d"),
       re.compile(r"\b\d\s*(==|!=|<=|>=|<|>)\s*\w*status\b"),
       re.compile(r"\b(ctr|acc)\[\s*\d+\s*\]")]


def _raw(code: str) -> bool:
    if "res.status" in code:  # scipy's OptimizeResult.status, not a job's
        return False
    return any(p.search(code) for p in RAW)


def _raw_compares(root: Path) -> list[str]:
    return code_hits(root, ("hetgym", "baselines", "agents"), _raw)


def test_no_raw_status_or_counter_numbers():
    assert _raw_compares(ROOT) == []


def test_the_check_finds_raw_numbers(tmp_path):
    pkg = tmp_path / "hetgym"
    pkg.mkdir()
    (pkg / "k.py").write_text("if status[j] == 3:\n    pass\nx = run.ctr[6] + S.acc[2]\n"
                              "ok = status[j] == GRACE  # status == 3 in a comment\n")
    for other in ("baselines", "agents"):
        (tmp_path / other).mkdir()
    hits = _raw_compares(tmp_path)
    assert [h.split(":")[1] for h in hits] == ["1", "3"]
