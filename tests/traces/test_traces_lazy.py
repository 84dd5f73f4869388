"""``hetgym.traces`` loads its loaders on first use: one loader imports only what it needs."""

import subprocess
import sys

from hetgym import traces


def test_every_public_name_resolves():
    for name in traces.__all__:
        assert getattr(traces, name) is not None
    assert set(traces.__all__) <= set(dir(traces))


def test_the_gavel_loader_leaves_the_other_loaders_unloaded():
    code = ("import sys, hetgym.traces.gavel; "
            "print(' '.join(sorted(m for m in sys.modules if m.startswith(('hetgym.traces', 'pyarrow.parquet')))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert "hetgym.traces.gavel" in out
    for other in ("hetgym.traces.google", "hetgym.traces.cache", "hetgym.traces.lab", "pyarrow.parquet"):
        assert other not in out
