"""Atomic writes of results (a crash never leaves a half-written file)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["write_atomic_bytes", "write_atomic_json", "write_atomic_csv", "write_atomic_figure",
           "write_atomic_parquet"]


def write_atomic_bytes(data: bytes, path: str | os.PathLike) -> Path:
    """Write ``data`` to a temporary file beside ``path``, then rename it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; results are meant to be shared
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def write_atomic_json(obj: Any, path: str | os.PathLike) -> Path:
    """JSON (indented, NaN kept as null-free floats per json module) written atomically."""
    return write_atomic_bytes(json.dumps(obj, indent=2, default=float).encode(), path)


def write_atomic_csv(df: pd.DataFrame, path: str | os.PathLike) -> Path:
    """CSV written atomically."""
    return write_atomic_bytes(df.to_csv(index=False).encode(), path)


def write_atomic_parquet(df: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Parquet (pyarrow) written atomically."""
    import io

    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return write_atomic_bytes(buf.getvalue(), path)


def write_atomic_figure(fig: Any, path: str | os.PathLike, dpi: float | None = None) -> Path:
    """A matplotlib figure written atomically (format from the suffix, PNG if none), then closed."""
    import io

    import matplotlib.pyplot as plt

    path = Path(path)
    buf = io.BytesIO()
    fig.savefig(buf, format=path.suffix.lstrip(".") or "png", dpi=dpi)
    plt.close(fig)
    return write_atomic_bytes(buf.getvalue(), path)
