"""Parquet cache of parsed traces.

``cached_load(load_philly, "cluster_job_log", statuses=("Pass",))`` runs the loader
once and stores its job table as Parquet (pyarrow), with the :class:`LoadReport` in the
file's metadata; later calls with the same inputs read the Parquet file instead.

The key hashes the loader's name, every input file's absolute path, size and
modification time (all files below a folder argument), and the loader's parameters
(numbers, strings, sequences, mappings, numpy generators by their state, throughput
models by their measurements, functions by their code, defaults and closure values).
A parameter that cannot be fingerprinted reliably raises ``TypeError`` rather than
risk a stale hit. Files are written atomically: a temporary file in the cache folder,
then ``os.replace``.

Cache folder: ``cache_dir`` if given, else ``.hetgym-cache/`` next to the first input,
or ``$HETGYM_CACHE`` / ``~/.cache/hetgym/traces`` when that folder is not writable.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from hetgym.throughput import ThroughputModel
from hetgym.traces.report import LoadReport

__all__ = ["cached_load", "cache_key", "cache_path", "clear_cache"]

CACHE_VERSION = 1
META_KEY = b"hetgym.load_report"


def _fingerprint(obj: Any, depth: int = 0) -> Any:
    """A JSON-able, deterministic description of ``obj``."""
    if depth > 20:
        raise TypeError("cache: parameter nesting too deep to fingerprint")
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    if isinstance(obj, float):
        return repr(obj)
    if isinstance(obj, (np.integer, np.floating, np.bool_)):
        return _fingerprint(obj.item(), depth + 1)
    if isinstance(obj, np.ndarray):
        return ["ndarray", str(obj.dtype), list(obj.shape), hashlib.sha256(obj.tobytes()).hexdigest()]
    if isinstance(obj, Path):
        return ["path", str(obj)]
    if isinstance(obj, (list, tuple)):
        return [type(obj).__name__, [_fingerprint(x, depth + 1) for x in obj]]
    if isinstance(obj, (set, frozenset)):
        return ["set", sorted(json.dumps(_fingerprint(x, depth + 1), sort_keys=True) for x in obj)]
    if isinstance(obj, Mapping):
        return ["map", sorted((str(k), _fingerprint(v, depth + 1)) for k, v in obj.items())]
    if isinstance(obj, np.random.Generator):
        return ["rng", _fingerprint(obj.bit_generator.state, depth + 1)]
    if isinstance(obj, ThroughputModel):
        items = sorted((d, str(k), repr(v)) for d, t in obj.measured.items() for k, v in t.items())
        return ["tput", hashlib.sha256(repr(items).encode()).hexdigest()]
    if inspect.isfunction(obj):
        code = obj.__code__
        cells = [c.cell_contents for c in (obj.__closure__ or ())]
        return ["fn", obj.__module__, obj.__qualname__,
                hashlib.sha256(code.co_code + repr(code.co_consts).encode()).hexdigest(),
                _fingerprint(list(obj.__defaults__ or ()), depth + 1), _fingerprint(cells, depth + 1)]
    if hasattr(obj, "__dataclass_fields__"):
        return ["dc", type(obj).__qualname__,
                _fingerprint({k: getattr(obj, k) for k in obj.__dataclass_fields__}, depth + 1)]
    raise TypeError(f"cache: cannot fingerprint a parameter of type {type(obj).__name__}; "
                    f"pass plain values or call the loader without the cache")


def _input_files(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            files.extend(sorted(f for f in p.rglob("*") if f.is_file() and ".hetgym-cache" not in f.parts))
        elif p.exists():
            files.append(p)
        else:
            raise FileNotFoundError(f"cache: input {p} does not exist")
    return files


def cache_key(loader: Callable[..., Any], paths: list[str | Path], params: Mapping[str, Any]) -> str:
    """Hex digest identifying one load: loader, input files (path, size, mtime), parameters."""
    files = _input_files([Path(p).resolve() for p in paths])
    desc = {
        "version": CACHE_VERSION,
        "loader": f"{loader.__module__}.{loader.__qualname__}",
        "inputs": [[str(Path(p).resolve()) for p in paths]],
        "files": [[str(f), f.stat().st_size, f.stat().st_mtime_ns] for f in files],
        "params": _fingerprint(dict(params)),
    }
    return hashlib.sha256(json.dumps(desc, sort_keys=True).encode()).hexdigest()


def _writable_dir(d: Path) -> bool:
    try:
        d.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=d, prefix=".probe-", delete=True)
        probe.close()
        return True
    except OSError:
        return False


def cache_path(loader: Callable[..., Any], paths: list[str | Path], params: Mapping[str, Any],
               cache_dir: str | Path | None = None) -> Path:
    """Where the cache file of this load lives (the folder is created)."""
    key = cache_key(loader, paths, params)
    first = Path(paths[0]).resolve()
    stem = first.name.split(".")[0] or "trace"
    if cache_dir is not None:
        d = Path(cache_dir)
        if not _writable_dir(d):
            raise OSError(f"cache: cannot write to cache_dir {d}")
    else:
        d = (first if first.is_dir() else first.parent) / ".hetgym-cache"
        if not _writable_dir(d):
            d = Path(os.environ.get("HETGYM_CACHE", Path.home() / ".cache" / "hetgym" / "traces"))
            if not _writable_dir(d):
                raise OSError(f"cache: no writable cache folder (tried next to {first} and {d})")
    return d / f"{stem}-{loader.__name__}-{key[:20]}.parquet"


def _write(df: pd.DataFrame, report: LoadReport, path: Path) -> None:
    table = pa.Table.from_pandas(df, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[META_KEY] = json.dumps(report.to_dict()).encode()
    table = table.replace_schema_metadata(meta)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _read(path: Path) -> tuple[pd.DataFrame, LoadReport]:
    table = pq.read_table(path)
    meta = table.schema.metadata or {}
    if META_KEY not in meta:
        raise ValueError(f"cache: {path} has no load report; not a hetgym cache file")
    report = LoadReport.from_dict(json.loads(meta[META_KEY].decode()))
    return table.to_pandas(), report


def cached_load(
    loader: Callable[..., tuple[pd.DataFrame, LoadReport]],
    *paths: str | Path,
    cache_dir: str | Path | None = None,
    refresh: bool = False,
    **params: Any,
) -> tuple[pd.DataFrame, LoadReport]:
    """``loader(*paths, **params)``, read from / written to the Parquet cache.

    Args:
        loader: A trace loader returning ``(frame, LoadReport)``.
        *paths: The loader's positional file/folder arguments (all part of the key).
        cache_dir: Cache folder (default next to the first input, see module doc).
        refresh: Ignore an existing entry and rewrite it.
        **params: Keyword arguments of the loader (part of the key).

    Returns:
        The loader's ``(frame, report)``; ``report.notes`` says whether it came from cache.
    """
    if not paths:
        raise ValueError("cached_load: give the loader's input path(s)")
    target = cache_path(loader, list(paths), params, cache_dir)
    if target.exists() and not refresh:
        try:
            df, report = _read(target)
            report.notes.append(f"read from cache {target}")
            return df, report
        except (OSError, ValueError, pa.ArrowException):
            pass  # unreadable entry: rebuild it below
    df, report = loader(*paths, **params)
    _write(df, report, target)
    return df, report


def clear_cache(folder: str | Path) -> int:
    """Delete hetgym cache files (``*.parquet`` in a ``.hetgym-cache`` folder or in ``folder``).

    Returns the number of files removed.
    """
    folder = Path(folder)
    d = folder / ".hetgym-cache" if (folder / ".hetgym-cache").is_dir() else folder
    n = 0
    for f in d.glob("*.parquet"):
        try:  # only files that carry a hetgym load report
            if META_KEY not in (pq.read_schema(f).metadata or {}):
                continue
        except (OSError, pa.ArrowException):
            continue
        f.unlink()
        n += 1
    return n
