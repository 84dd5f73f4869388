"""Gavel ``.trace`` files (Philly-derived job traces of Gavel, MIT licence).

One job a line, tab-separated, no header. Three layouts are accepted:

* 7 fields (the shipped ``msr-philly-seed0`` files): job_type, command, num_steps_arg,
  needs_data_dir, total_steps, arrival_time, scale_factor;
* 9 fields (Gavel's ``parse_trace``): job_type, command, num_steps_arg, needs_data_dir,
  total_steps, scale_factor, priority_weight, SLO, arrival_time;
* 10 fields (newer Gavel): job_type, command, working_directory, num_steps_arg,
  needs_data_dir, total_steps, scale_factor, priority_weight, SLO, arrival_time.

Mapping: ``work = total_steps``, ``workers = scale_factor``, ``arrival = arrival_time``,
``weight = priority_weight`` (1 when absent), ``user`` = the file's stem (the Philly VC
id for the shipped files). Gavel's SLO is a multiple of the job's duration
(``deadline = arrival + SLO x duration``, Gavel ``scheduler.py``); here the duration is
``work / (workers x tput on slo_device)``; SLO <= 0 (Gavel writes -1) means no deadline.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from hetgym.sim.rules import scaled_rate
from hetgym.throughput import ThroughputModel
from hetgym.traces._common import (named_decode_errors,
    DEFAULT_CPUS,
    DEFAULT_MEM_GB,
    SpeedupSampler,
    check_on_bad,
    device_keys,
    drop_rows,
    finish,
    make_rng,
    model_or_default,
    parse_numbers,
)
from hetgym.traces.report import LoadReport

__all__ = ["load_gavel_trace", "load_gavel_traces", "read_gavel_trace", "packaged_gavel_dir"]

LAYOUTS: dict[int, tuple[str, ...]] = {
    7: ("job_type", "command", "num_steps_arg", "needs_data_dir", "total_steps",
        "arrival_time", "scale_factor"),
    9: ("job_type", "command", "num_steps_arg", "needs_data_dir", "total_steps",
        "scale_factor", "priority_weight", "SLO", "arrival_time"),
    10: ("job_type", "command", "working_directory", "num_steps_arg", "needs_data_dir",
         "total_steps", "scale_factor", "priority_weight", "SLO", "arrival_time"),
}


def packaged_gavel_dir() -> Path:
    """Folder of the 15 Gavel ``msr-philly-seed0`` traces shipped with hetgym."""
    return Path(str(resources.files("hetgym").joinpath("data/gavel/msr-philly-seed0")))


@named_decode_errors
def read_gavel_trace(path: str | Path) -> pd.DataFrame:
    """Read a ``.trace`` file into a raw table (strings), one row a job.

    Columns: the layout's names plus ``line`` (1-based line number). Missing
    ``priority_weight``/``SLO`` (7-field layout) are filled with ``"1"``/``"-1"``.

    Raises:
        ValueError: a line whose field count is not 7, 9 or 10, or a file mixing layouts.
    """
    path = Path(path)
    rows: list[list[str]] = []
    lines: list[int] = []
    width = None
    with path.open("r", encoding="utf-8-sig") as fh:
        for lineno, line in enumerate(fh, start=1):
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            fields = line.split("\t")
            n = len(fields)
            if n not in LAYOUTS:
                raise ValueError(
                    f"{path}: line {lineno}: {n} tab-separated fields; expected 7, 9 or 10 "
                    f"(Gavel .trace layouts: {', '.join(f'{k}: {list(v)}' for k, v in LAYOUTS.items())})"
                )
            if width is None:
                width = n
            elif n != width:
                raise ValueError(f"{path}: line {lineno}: {n} fields but earlier lines have {width}")
            rows.append(fields)
            lines.append(lineno)
    df = pd.DataFrame(rows, columns=list(LAYOUTS[width or 7]), dtype=object)
    if "priority_weight" not in df.columns:
        df["priority_weight"] = "1"
        df["SLO"] = "-1"
    df["line"] = lines
    return df


def _gavel_frame(
    path: Path,
    model: ThroughputModel,
    *,
    user: str | None,
    cpus: float,
    mem_gb: float,
    job_class: str,
    slo_device: str,
    on_bad: str,
) -> tuple[pd.DataFrame, LoadReport]:
    """Parse and filter one file; the table still has absolute arrivals and no throughputs."""
    raw = read_gavel_trace(path)
    report = LoadReport(source=str(path), rows_read=len(raw))
    rows = [f"line {n}" for n in raw["line"]]
    required = ("total_steps", "arrival_time", "scale_factor")
    nums = {}
    bad_any = np.zeros(len(raw), dtype=bool)
    for col, exp in (("total_steps", "an integer step count"), ("arrival_time", "seconds"),
                     ("scale_factor", "an integer number of GPUs"), ("priority_weight", "a number"),
                     ("SLO", "a number")):
        vals, blank, bad = parse_numbers(raw[col], path=path, column=col, rows=rows, on_bad=on_bad, expected=exp)
        if col in required:
            if on_bad == "raise" and blank.any():
                i = int(np.flatnonzero(blank)[0])
                raise ValueError(f"{path}: {rows[i]}: column {col!r} is empty; expected {exp}")
            bad = bad | blank
        else:
            bad = np.zeros_like(bad)  # optional: blank or bad -> default below
        report.drop(f"unparsable_{col}", int((bad & ~bad_any).sum()))
        bad_any |= bad
        nums[col] = vals
    df = pd.DataFrame({
        "job_type": raw["job_type"].astype(str).str.strip().to_numpy(),
        "work": nums["total_steps"],
        "arrival": nums["arrival_time"],
        "workers": nums["scale_factor"],
        "weight": np.nan_to_num(nums["priority_weight"], nan=1.0),
        "slo": np.nan_to_num(nums["SLO"], nan=-1.0),
        "trace_id": [f"{path.stem}:{n}" for n in raw["line"]],
    })
    df = df.loc[~bad_any]
    df = drop_rows(df, ~df["job_type"].isin(set(model.job_types)).to_numpy(), "unknown_job_type", report)
    df = drop_rows(df, ~(df["work"] > 0).to_numpy(), "nonpositive_work", report)
    w = df["workers"].to_numpy()
    df = drop_rows(df, ~((w >= 1) & (w == np.round(w))), "bad_scale_factor", report)
    a = df["arrival"].to_numpy()
    df = drop_rows(df, ~(np.isfinite(a) & (a >= 0)), "bad_arrival", report)
    df = df.copy()
    df["workers"] = df["workers"].astype(np.int64)
    df["user"] = user if user is not None else path.stem
    df["cpus"] = float(cpus)
    df["mem_gb"] = float(mem_gb)
    df["job_class"] = job_class
    slo = df.pop("slo").to_numpy()
    df["deadline"] = np.inf
    if (slo > 0).any():
        ref = np.asarray([model.gpu_throughput(jt, slo_device, int(k)) for jt, k in
                          zip(df["job_type"], df["workers"])])
        dur = df["work"].to_numpy() / scaled_rate(df["workers"].to_numpy(), ref, 1.0)
        df["deadline"] = np.where(slo > 0, df["arrival"].to_numpy() + slo * dur, np.inf)
    return df, report


def load_gavel_trace(
    path: str | Path,
    *,
    devices: Sequence[str] | None = None,
    throughput: ThroughputModel | None = None,
    user: str | None = None,
    cpus: float = DEFAULT_CPUS,
    mem_gb: float = DEFAULT_MEM_GB,
    job_class: str = "BE",
    slo_device: str = "v100",
    rng: np.random.Generator | None = None,
    seed: int | None = 0,
    cpu_speedup: SpeedupSampler | None = None,
    on_bad: str = "raise",
) -> tuple[pd.DataFrame, LoadReport]:
    """Load one Gavel ``.trace`` file as a canonical job table.

    Args:
        path: The ``.trace`` file.
        devices: Device keys to give a ``tput_<device>`` column (default k80, p100, v100).
        throughput: Throughput model (default Gavel's measurements).
        user: User of every job (default: the file's stem, i.e. the Philly VC id).
        cpus: CPU cores per worker (not in the trace).
        mem_gb: Memory per worker in GB (not in the trace).
        job_class: ``"BE"`` or ``"TE"`` for every job.
        slo_device: Device whose throughput defines the duration an SLO multiplies.
        rng: Random generator (only used for CPU speedups when ``cpu`` is a device).
        seed: Seed when ``rng`` is None.
        cpu_speedup: GPU/CPU speedup sampler (see :mod:`hetgym.throughput`).
        on_bad: ``"raise"`` (default) on an unparsable or empty required number, or
            ``"drop"`` the line (counted as ``unparsable_<column>``).

    Returns:
        ``(job table, report)``. Other drop reasons: ``unknown_job_type``,
        ``nonpositive_work``, ``bad_scale_factor``, ``bad_arrival``.

    Raises:
        ValueError: a line with a wrong field count, or (``on_bad="raise"``) a bad number;
            the message names the file, line and column.
    """
    check_on_bad(on_bad)
    path = Path(path)
    model = model_or_default(throughput)
    devs = device_keys(devices)
    df, report = _gavel_frame(path, model, user=user, cpus=cpus, mem_gb=mem_gb,
                              job_class=job_class, slo_device=slo_device, on_bad=on_bad)
    out = finish(df, source=str(path), report=report, devices=devs, throughput=model,
                 rng=make_rng(rng, seed), cpu_speedup=cpu_speedup)
    return out, report


def load_gavel_traces(
    folder: str | Path | None = None,
    *,
    pattern: str = "*.trace",
    devices: Sequence[str] | None = None,
    throughput: ThroughputModel | None = None,
    cpus: float = DEFAULT_CPUS,
    mem_gb: float = DEFAULT_MEM_GB,
    job_class: str = "BE",
    slo_device: str = "v100",
    rng: np.random.Generator | None = None,
    seed: int | None = 0,
    cpu_speedup: SpeedupSampler | None = None,
    on_bad: str = "raise",
) -> tuple[pd.DataFrame, LoadReport]:
    """Load every ``.trace`` file of a folder (default: the 15 shipped Philly VC traces).

    Each file's jobs keep their own arrival times (every VC trace starts near 0) and get
    the file's stem as ``user``; the union is sorted by arrival, rebased and renumbered.
    The 15 shipped files give 15,264 jobs.

    Args:
        folder: Folder of ``.trace`` files (default :func:`packaged_gavel_dir`).
        pattern: Glob pattern of the files.
        Others: as :func:`load_gavel_trace`.
    """
    check_on_bad(on_bad)
    folder = Path(folder) if folder is not None else packaged_gavel_dir()
    files = sorted(folder.glob(pattern))
    if not files:
        raise ValueError(f"{folder}: no file matches {pattern!r}")
    model = model_or_default(throughput)
    devs = device_keys(devices)
    report = LoadReport(source=str(folder))
    frames = []
    for f in files:
        df, rep = _gavel_frame(f, model, user=None, cpus=cpus, mem_gb=mem_gb,
                               job_class=job_class, slo_device=slo_device, on_bad=on_bad)
        rep.rows_kept = len(df)
        report.merge(rep)
        frames.append(df)
    both = pd.concat(frames, ignore_index=True)
    out = finish(both, source=str(folder), report=report, devices=devs, throughput=model,
                 rng=make_rng(rng, seed), cpu_speedup=cpu_speedup)
    return out, report
