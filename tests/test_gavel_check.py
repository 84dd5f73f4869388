"""scripts/gavel_check.py: the hetgym side runs on a small Gavel trace (Gavel itself is
optional and not installed in CI)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_gavel_check_runs_hetgym_side():
    p = subprocess.run([sys.executable, str(ROOT / "scripts" / "gavel_check.py"), "--jobs", "6",
                        "--scale", "2000", "--policies", "las-perf,fifo"],
                       capture_output=True, text=True, timeout=600, check=False)
    assert p.returncode == 0, p.stderr[-3000:]
    rows = [ln for ln in p.stdout.splitlines() if ln.startswith("| gavel-")]
    assert [r.split("|")[1].strip() for r in rows] == ["gavel-las-perf", "gavel-fifo"]
    assert all(float(r.split("|")[2]) > 0 for r in rows)
