"""Helpers shared by the trace loaders: parsing with clear errors, counted drops,
job-type draws and the final step that turns a trace table into a canonical job table."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from hetgym.devices import device_key, get_device
from hetgym.throughput import ThroughputModel
from hetgym.traces.report import LoadReport
from hetgym.workload import OPTIONAL_DEFAULTS, Workload

DEFAULT_DEVICES: tuple[str, ...] = ("k80", "p100", "v100")
DEFAULT_CPUS = 4.0  # cores per worker when a trace gives none (32-core, 8-GPU servers)
DEFAULT_MEM_GB = 16.0  # GB per worker when a trace gives none
OUTPUT_ORDER = ("job_id", "arrival", "user", "job_class", "workers", "work")
TAIL_ORDER = ("cpus", "mem_gb", "deadline", "weight", "grace_period", "comm", "forkable",
              "job_type", "trace_id")
ON_BAD = ("raise", "drop")
BLANK_WORDS = ("", "None", "null", "NULL", "NA", "nan", "NaN")

SpeedupSampler = Callable[[np.random.Generator, int], np.ndarray]
JobTypes = Sequence[str] | Mapping[str, float] | None


@functools.lru_cache(maxsize=1)
def named_decode_errors(read: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a reader whose first argument is a file path: a file that is not UTF-8 text
    raises ``ValueError`` naming the file, the byte offset and the expected encoding (a
    UTF-8 byte-order mark is accepted: the readers open files as ``utf-8-sig``)."""

    @functools.wraps(read)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        try:
            return read(*args, **kwargs)
        except UnicodeDecodeError as e:
            path = args[0] if args else kwargs.get("path", "packaged file")
            raise ValueError(f"{Path(str(path))}: byte {e.start} is not UTF-8 ({e.reason}); expected a UTF-8 "
                             "text file (re-encode it, e.g. iconv -f latin1 -t utf-8)") from None

    return wrapped


def _gavel_model() -> ThroughputModel:
    return ThroughputModel.gavel()


def model_or_default(throughput: ThroughputModel | None) -> ThroughputModel:
    """The given throughput model, or Gavel's (loaded once)."""
    return throughput if throughput is not None else _gavel_model()


def make_rng(rng: np.random.Generator | None, seed: int | None) -> np.random.Generator:
    """``rng`` if given, else ``default_rng(seed)``."""
    return rng if rng is not None else np.random.default_rng(seed)


def device_keys(devices: Sequence[str] | None, default: Sequence[str] = DEFAULT_DEVICES) -> list[str]:
    """Lower-case device keys, unique, in the order given (``None`` -> ``default``)."""
    out: list[str] = []
    for d in (default if devices is None else devices):
        k = device_key(d)
        if k not in out:
            out.append(k)
    if not out:
        raise ValueError("devices: need at least one device type (e.g. ['v100'])")
    return out


def gpu_key(name: str, what: str = "gpu_type") -> str:
    """Key of a GPU type; raises ``ValueError`` for unknown or non-GPU names."""
    try:
        dev = get_device(name)
    except KeyError as exc:
        raise ValueError(f"{what}: {exc.args[0]}") from None
    if not dev.is_gpu:
        raise ValueError(f"{what}: {name!r} is not a GPU type")
    return dev.key


def check_on_bad(on_bad: str) -> None:
    """Validate the ``on_bad`` argument."""
    if on_bad not in ON_BAD:
        raise ValueError(f"on_bad must be one of {ON_BAD}, got {on_bad!r}")


def require_columns(columns: Sequence[str], needed: Sequence[str], path: object, hint: str = "") -> None:
    """Raise ``ValueError`` naming the file and each missing column."""
    missing = [c for c in needed if c not in columns]
    if missing:
        raise ValueError(
            f"{path}: missing column(s) {missing}; expected at least {list(needed)}"
            + (f" ({hint})" if hint else "")
        )


def _is_blank(values: pd.Series) -> np.ndarray:
    """Missing cells: NaN/None, or strings such as ``""``, ``"None"``, ``"null"``, ``"NA"``."""
    s = values.astype("object")
    blank = s.isna().to_numpy()
    try:
        words = s.str.strip().isin(BLANK_WORDS).to_numpy(dtype=bool)
    except AttributeError:  # no string in the column
        return blank
    return blank | words


def parse_numbers(
    values: pd.Series,
    *,
    path: object,
    column: str,
    rows: Sequence[object],
    on_bad: str,
    report: LoadReport | None = None,
    expected: str = "a number",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Parse a column of numbers.

    Returns ``(values, blank, bad)``: float array (NaN where blank or bad), mask of
    blank cells (missing in the trace) and mask of cells that are present but not
    numbers. With ``on_bad="raise"`` a bad cell raises ``ValueError`` naming the
    file, row (``rows[i]``, e.g. ``"line 12"``) and column.
    """
    blank = _is_blank(values)
    nums = pd.to_numeric(values.astype("object").where(~blank, None), errors="coerce")
    out = nums.to_numpy(dtype=np.float64, na_value=np.nan)
    bad = np.isnan(out) & ~blank
    if bad.any() and on_bad == "raise":
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{path}: {rows[i]}: column {column!r} has {values.iloc[i]!r}; expected {expected}"
        )
    return out, blank, bad


def parse_times(
    values: pd.Series,
    *,
    fmt: str,
    path: object,
    column: str,
    rows: Sequence[object],
    on_bad: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Parse date-time strings (format ``fmt``) to seconds since the epoch (naive times).

    Returns ``(seconds, blank, bad)`` like :func:`parse_numbers`.
    """
    blank = _is_blank(values)
    strs = values.astype("object").where(~blank, None)
    ts = pd.to_datetime(strs, format=fmt, errors="coerce")
    ok = ts.notna().to_numpy()
    secs = np.full(len(values), np.nan)
    if ok.any():
        t = ts[ok]
        secs[ok] = (t - pd.Timestamp("1970-01-01")).dt.total_seconds().to_numpy()
    bad = ~ok & ~blank
    if bad.any() and on_bad == "raise":
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{path}: {rows[i]}: column {column!r} has {values.iloc[i]!r}; "
            f"expected a date-time like {pd.Timestamp('2017-10-07 01:11:39').strftime(fmt)!r} "
            f"(format {fmt!r})"
        )
    return secs, blank, bad


def drop_rows(df: pd.DataFrame, mask: np.ndarray, reason: str, report: LoadReport) -> pd.DataFrame:
    """Drop rows where ``mask`` is true, counting them under ``reason``."""
    mask = np.asarray(mask, dtype=bool)
    if mask.any():
        report.drop(reason, int(mask.sum()))
        return df.loc[~mask]
    return df


def draw_job_types(
    rng: np.random.Generator, n: int, throughput: ThroughputModel, job_types: JobTypes = None
) -> np.ndarray:
    """Draw ``n`` job types: uniform over Gavel's types, a given list, or a ``{type: weight}`` map."""
    if job_types is None:
        names, p = throughput.job_types, None
    elif isinstance(job_types, Mapping):
        names = list(job_types)
        w = np.asarray([float(job_types[k]) for k in names])
        if (w < 0).any() or w.sum() <= 0:
            raise ValueError(f"job_types weights must be >= 0 with a positive sum, got {dict(job_types)}")
        p = w / w.sum()
    else:
        names, p = list(job_types), None
    known = set(throughput.job_types)
    unknown = [t for t in names if t not in known]
    if unknown or not names:
        raise ValueError(f"job_types: unknown {unknown}; known: {sorted(known)}")
    idx = rng.choice(len(names), size=n, p=p)
    return np.asarray(names, dtype=object)[idx]


def finish(
    df: pd.DataFrame,
    *,
    source: str,
    report: LoadReport,
    devices: Sequence[str],
    throughput: ThroughputModel,
    rng: np.random.Generator,
    cpu_speedup: SpeedupSampler | None = None,
    duration_device: str | None = None,
    unique_ids: bool = False,
) -> pd.DataFrame:
    """Turn a trace table into a validated canonical job table.

    ``df`` needs ``arrival`` (absolute s), ``user``, ``workers``, ``job_type``, ``cpus``,
    ``mem_gb``, ``trace_id`` and either ``work`` or ``duration`` (s on
    ``duration_device``; then ``work = duration x per-worker tput there x workers``, so the
    job runs exactly ``duration`` on that device type). Arrivals (and deadlines) are
    rebased so the first job arrives at 0; rows are sorted by (arrival, file order) and
    numbered ``job_id = 0..n-1``.

    With ``unique_ids`` (traces whose rows are jobs), a ``trace_id`` seen twice is an error.

    Raises:
        ValueError: no job left, a repeated ``trace_id`` (``unique_ids``), or the table
            fails :meth:`Workload.from_frame`.
    """
    if unique_ids and "trace_id" in df.columns:
        dup = df["trace_id"].astype(str).duplicated(keep=False).to_numpy()
        if dup.any():
            first = df["trace_id"].astype(str).to_numpy()[dup][0]
            n = int((df["trace_id"].astype(str) == first).sum())
            raise ValueError(f"{source}: job id {first!r} appears {n} times; expected each job once "
                             f"({int(dup.sum())} rows share an id)")
    report.rows_kept = len(df)
    if len(df) == 0:
        raise ValueError(f"{source}: no job left after filtering ({report})")
    out = df.reset_index(drop=True).copy()
    out["_order"] = np.arange(len(out))
    out = out.sort_values(["arrival", "_order"], kind="stable").drop(columns="_order")
    out = out.reset_index(drop=True)
    t0 = float(out["arrival"].min())
    out["arrival"] = out["arrival"].astype(np.float64) - t0
    if "deadline" in out.columns:
        out["deadline"] = out["deadline"].astype(np.float64) - t0
    devs = list(devices)
    need = list(devs)
    ref = None
    if "duration" in out.columns:
        if duration_device is None:
            raise ValueError(f"{source}: durations given but no duration_device")
        ref = device_key(duration_device)
        if ref not in need:
            need.append(ref)
    out["workers"] = out["workers"].astype(np.int64)
    out = throughput.attach(out, need, rng=rng, cpu_speedup=cpu_speedup)
    if ref is not None:
        out["work"] = out["duration"].to_numpy(np.float64) * out[f"tput_{ref}"].to_numpy() * out["workers"].to_numpy()
        out = out.drop(columns=["duration"] + ([f"tput_{ref}"] if ref not in devs else []))
    out["job_id"] = np.arange(len(out), dtype=np.int64)
    if "job_class" not in out.columns:
        out["job_class"] = "BE"
    for col, default in OPTIONAL_DEFAULTS.items():
        if col not in out.columns:
            out[col] = default
    tputs = [f"tput_{d}" for d in devs]
    tail = [c for c in TAIL_ORDER if c in out.columns]
    rest = [c for c in out.columns if c not in OUTPUT_ORDER and c not in tputs and c not in tail]
    out = out[list(OUTPUT_ORDER) + tputs + tail + rest]
    wl = Workload.from_frame(out, source=source)
    report.check()
    return wl.frame
