"""Microsoft Philly traces (msr-fiddle/philly-traces, CC BY 4.0).

:func:`load_philly` reads ``cluster_job_log`` (a JSON list of jobs; schema in the trace's
README): ``jobid``, ``user``, ``vc``, ``status`` (Pass/Killed/Failed),
``submitted_time`` ("YYYY-MM-DD HH:MM:SS", local time, naive) and ``attempts``, each
with ``start_time``, ``end_time`` and ``detail`` = [{``ip``, ``gpus``: [...]}].

* arrival = ``submitted_time``;
* workers = GPUs of the **first** attempt (sum of ``len(gpus)`` over its ``detail``);
* duration = last attempt's ``end_time`` - first attempt's ``start_time`` (gaps between
  attempts included), taken as the run time on ``gpu_type``;
* the trace names no model: job types are drawn (seeded) from the throughput model, and
  ``work = duration x per-worker tput(job type, gpu_type, workers) x workers``.

:func:`load_philly_derived` reads the Philly-derived CSV shipped with hetgym
(``vc, job_index_in_vc, arrival_time_s, num_gpus, duration_s``; recovered from Gavel's
msr-philly traces, see ``hetgym/data/traces/philly/SOURCE.md``).
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from hetgym.throughput import ThroughputModel
from hetgym.traces._common import (named_decode_errors,
    DEFAULT_CPUS,
    DEFAULT_MEM_GB,
    JobTypes,
    SpeedupSampler,
    check_on_bad,
    device_keys,
    draw_job_types,
    drop_rows,
    finish,
    gpu_key,
    make_rng,
    model_or_default,
    parse_numbers,
    parse_times,
    require_columns,
)
from hetgym.traces.report import LoadReport

__all__ = ["load_philly", "load_philly_derived", "packaged_philly_csv", "PHILLY_TIME_FORMAT"]

PHILLY_TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
JOB_KEYS = ("jobid", "user", "vc", "status", "submitted_time", "attempts")


def packaged_philly_csv() -> Path:
    """The Philly-derived per-VC job CSV shipped with hetgym (15,264 jobs)."""
    return Path(str(resources.files("hetgym").joinpath(
        "data/traces/philly/philly_vc_jobs_from_gavel_msr_traces.csv")))


@named_decode_errors
def _read_jobs(path: Path) -> list[Any]:
    with path.open("r", encoding="utf-8-sig") as fh:
        try:
            data = json.load(fh)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not valid JSON ({exc}); expected Philly's cluster_job_log "
                             f"(a JSON list of job objects)") from None
    if not isinstance(data, list):
        raise ValueError(f"{path}: top level is {type(data).__name__}; expected a JSON list of jobs")
    return data


def _flatten(path: Path, jobs: list[Any]) -> pd.DataFrame:
    """One row per job: ids, status, submit/start/end strings, GPUs of the first attempt."""
    recs = []
    for i, job in enumerate(jobs):
        where = f"job {i}"
        if not isinstance(job, dict):
            raise ValueError(f"{path}: {where}: is a {type(job).__name__}; expected a JSON object")
        missing = [k for k in JOB_KEYS if k not in job]
        if missing:
            raise ValueError(f"{path}: {where} (jobid={job.get('jobid', '?')}): missing key(s) {missing}; "
                             f"expected {list(JOB_KEYS)}")
        attempts = job["attempts"]
        if attempts is None:
            attempts = []
        if not isinstance(attempts, list):
            raise ValueError(f"{path}: {where} (jobid={job['jobid']}): 'attempts' is "
                             f"{type(attempts).__name__}; expected a list")
        gpus = 0
        start = end = None
        if attempts:
            first, last = attempts[0], attempts[-1]
            for a in (first, last):
                if not isinstance(a, dict) or "start_time" not in a or "end_time" not in a:
                    raise ValueError(f"{path}: {where} (jobid={job['jobid']}): an attempt lacks "
                                     f"'start_time'/'end_time'; expected {{start_time, end_time, detail}}")
            start, end = first["start_time"], last["end_time"]
            for d in first.get("detail") or []:
                g = d.get("gpus") if isinstance(d, dict) else None
                if not isinstance(g, list):
                    raise ValueError(f"{path}: {where} (jobid={job['jobid']}): attempt detail "
                                     f"{d!r}; expected {{ip, gpus: [...]}}")
                gpus += len(g)
        recs.append((str(job["jobid"]), job["user"], job["vc"], str(job["status"]),
                     job["submitted_time"], len(attempts), start, end, gpus))
    return pd.DataFrame.from_records(
        recs, columns=["jobid", "user", "vc", "status", "submitted", "n_attempts", "start", "end", "gpus"])


def load_philly(
    path: str | Path,
    *,
    statuses: Sequence[str] | None = ("Pass",),
    gpu_type: str = "v100",
    user_field: str = "user",
    devices: Sequence[str] | None = None,
    throughput: ThroughputModel | None = None,
    job_types: JobTypes = None,
    cpus: float = DEFAULT_CPUS,
    mem_gb: float = DEFAULT_MEM_GB,
    job_class: str = "BE",
    time_format: str = PHILLY_TIME_FORMAT,
    rng: np.random.Generator | None = None,
    seed: int | None = 0,
    cpu_speedup: SpeedupSampler | None = None,
    on_bad: str = "raise",
) -> tuple[pd.DataFrame, LoadReport]:
    """Load Philly's ``cluster_job_log`` as a canonical job table.

    Args:
        path: The ``cluster_job_log`` JSON file.
        statuses: Job statuses kept (``None`` keeps all); others are dropped as
            ``status=<status>``. The default keeps completed jobs only.
        gpu_type: GPU type the trace's run times are taken on (the trace has none per job;
            Gavel simulates Philly on V100s).
        user_field: ``"user"`` (hashed user id) or ``"vc"`` (virtual cluster).
        devices: Device keys with a ``tput_`` column (default k80, p100, v100).
        throughput: Throughput model (default Gavel's).
        job_types: Job types to draw from (list, ``{type: weight}``, or all of Gavel's).
        cpus: CPU cores per worker (not in the trace).
        mem_gb: Memory per worker in GB (not in the trace).
        job_class: ``"BE"`` or ``"TE"`` for every job.
        time_format: ``strptime`` format of the time strings.
        rng: Random generator (job types, CPU speedups); else ``default_rng(seed)``.
        seed: Seed when ``rng`` is None.
        cpu_speedup: GPU/CPU speedup sampler.
        on_bad: ``"raise"`` on a present but unparsable time, or ``"drop"`` it (counted).

    Returns:
        ``(job table, report)``. Drop reasons: ``status=<s>``, ``no_attempts``,
        ``missing_time`` (a None submit/start time, a logging error per the README),
        ``still_running`` (last ``end_time`` None), ``no_gpu``, ``negative_duration``,
        ``zero_duration``, ``unparsable_time``.

    Raises:
        ValueError: not JSON, a job without a required key, or (``on_bad="raise"``) a
            time that does not parse; naming the file, job index and key.
    """
    check_on_bad(on_bad)
    if user_field not in ("user", "vc"):
        raise ValueError(f"user_field must be 'user' or 'vc', got {user_field!r}")
    path = Path(path)
    model = model_or_default(throughput)
    devs = device_keys(devices)
    ref = gpu_key(gpu_type)
    gen = make_rng(rng, seed)
    df = _flatten(path, _read_jobs(path))
    report = LoadReport(source=str(path), rows_read=len(df))
    report.notes.append(f"durations taken on {ref}; workers = GPUs of the first attempt")
    if statuses is not None:
        keep = set(statuses)
        for st in sorted(set(df["status"]) - keep):
            df = drop_rows(df, (df["status"] == st).to_numpy(), f"status={st}", report)
    df = drop_rows(df, (df["n_attempts"] == 0).to_numpy(), "no_attempts", report)
    rows = [f"job {i} (jobid={j})" for i, j in zip(df.index, df["jobid"])]
    times = {}
    bad_any = np.zeros(len(df), dtype=bool)
    blank_any = np.zeros(len(df), dtype=bool)
    for col in ("submitted", "start", "end"):
        secs, blank, bad = parse_times(df[col], fmt=time_format, path=path,
                                       column={"submitted": "submitted_time", "start": "start_time",
                                               "end": "end_time"}[col], rows=rows, on_bad=on_bad)
        times[col] = secs
        bad_any |= bad
        if col != "end":
            blank_any |= blank
    still = _blank_mask(df["end"]) & ~blank_any & ~bad_any
    for mask, reason in ((bad_any, "unparsable_time"), (blank_any & ~bad_any, "missing_time"),
                         (still, "still_running")):
        report.drop(reason, int(mask.sum()))
    ok = ~(bad_any | blank_any | still)
    df = df.loc[ok].assign(arrival=times["submitted"][ok], duration=times["end"][ok] - times["start"][ok])
    df = drop_rows(df, (df["gpus"] <= 0).to_numpy(), "no_gpu", report)
    df = drop_rows(df, (df["duration"] < 0).to_numpy(), "negative_duration", report)
    df = drop_rows(df, (df["duration"] == 0).to_numpy(), "zero_duration", report)
    out = pd.DataFrame({
        "arrival": df["arrival"].to_numpy(),
        "user": df[user_field].astype(str).to_numpy(),
        "workers": df["gpus"].to_numpy(dtype=np.int64),
        "duration": df["duration"].to_numpy(),
        "cpus": float(cpus),
        "mem_gb": float(mem_gb),
        "job_class": job_class,
        "trace_id": df["jobid"].to_numpy(),
    })
    out["job_type"] = draw_job_types(gen, len(out), model, job_types)
    frame = finish(out, source=str(path), report=report, devices=devs, throughput=model, rng=gen,
                   cpu_speedup=cpu_speedup, duration_device=ref, unique_ids=True)
    return frame, report


def _blank_mask(values: pd.Series) -> np.ndarray:
    s = values.astype("object")
    return (s.isna() | s.map(lambda v: isinstance(v, str) and v.strip() in ("", "None", "null"))).to_numpy(bool)


@named_decode_errors
def load_philly_derived(
    path: str | Path | None = None,
    *,
    gpu_type: str = "v100",
    vcs: Sequence[str] | None = None,
    devices: Sequence[str] | None = None,
    throughput: ThroughputModel | None = None,
    job_types: JobTypes = None,
    cpus: float = DEFAULT_CPUS,
    mem_gb: float = DEFAULT_MEM_GB,
    job_class: str = "BE",
    rng: np.random.Generator | None = None,
    seed: int | None = 0,
    cpu_speedup: SpeedupSampler | None = None,
    on_bad: str = "raise",
) -> tuple[pd.DataFrame, LoadReport]:
    """Load a Philly-derived job CSV (``vc, arrival_time_s, num_gpus, duration_s``).

    The default file is the one shipped with hetgym (15,264 Philly jobs of 15 VCs,
    shortest 1,200 s, no status column). ``user`` = VC; arrivals of every VC start near 0.

    Args:
        path: CSV file (default :func:`packaged_philly_csv`).
        gpu_type: GPU type the durations are taken on.
        vcs: Keep only these VCs (others dropped as ``vc_not_selected``).
        Others: as :func:`load_philly`.

    Returns:
        ``(job table, report)``; drop reasons ``vc_not_selected``, ``no_gpu``,
        ``negative_duration``, ``zero_duration``, ``unparsable_<column>``.
    """
    check_on_bad(on_bad)
    path = Path(path) if path is not None else packaged_philly_csv()
    model = model_or_default(throughput)
    devs = device_keys(devices)
    ref = gpu_key(gpu_type)
    gen = make_rng(rng, seed)
    raw = pd.read_csv(path, encoding="utf-8-sig", dtype=str, keep_default_na=False)
    require_columns(list(raw.columns), ["vc", "arrival_time_s", "num_gpus", "duration_s"], path)
    report = LoadReport(source=str(path), rows_read=len(raw))
    rows = [f"line {i + 2}" for i in range(len(raw))]
    vals = {}
    bad_any = np.zeros(len(raw), dtype=bool)
    for col in ("arrival_time_s", "num_gpus", "duration_s"):
        v, blank, bad = parse_numbers(raw[col], path=path, column=col, rows=rows, on_bad=on_bad)
        if blank.any() and on_bad == "raise":
            i = int(np.flatnonzero(blank)[0])
            raise ValueError(f"{path}: {rows[i]}: column {col!r} is empty; expected a number")
        report.drop(f"unparsable_{col}", int(((bad | blank) & ~bad_any).sum()))
        bad_any |= bad | blank
        vals[col] = v
    df = pd.DataFrame({"vc": raw["vc"].to_numpy(), "arrival": vals["arrival_time_s"],
                       "gpus": vals["num_gpus"], "duration": vals["duration_s"],
                       "trace_id": [f"{v}:{i}" for v, i in zip(raw["vc"], raw.get("job_index_in_vc", raw.index))]})
    df = df.loc[~bad_any]
    if vcs is not None:
        df = drop_rows(df, ~df["vc"].isin(set(vcs)).to_numpy(), "vc_not_selected", report)
    df = drop_rows(df, ~(df["gpus"] >= 1).to_numpy(), "no_gpu", report)
    frac = (df["gpus"] != np.round(df["gpus"])).to_numpy()
    if frac.any() and on_bad == "raise":
        i = int(np.flatnonzero(frac)[0])
        raise ValueError(f"{path}: {rows[int(df.index[i])]}: column 'num_gpus' is {df['gpus'].iloc[i]}; "
                         "expected a whole number of GPUs (workers)")
    df = drop_rows(df, frac, "fractional_gpus", report)
    df = drop_rows(df, (df["duration"] < 0).to_numpy(), "negative_duration", report)
    df = drop_rows(df, (df["duration"] == 0).to_numpy(), "zero_duration", report)
    out = pd.DataFrame({
        "arrival": df["arrival"].to_numpy(), "user": df["vc"].astype(str).to_numpy(),
        "workers": df["gpus"].to_numpy().astype(np.int64), "duration": df["duration"].to_numpy(),
        "cpus": float(cpus), "mem_gb": float(mem_gb), "job_class": job_class,
        "trace_id": df["trace_id"].to_numpy(),
    })
    out["job_type"] = draw_job_types(gen, len(out), model, job_types)
    frame = finish(out, source=str(path), report=report, devices=devs, throughput=model, rng=gen,
                   cpu_speedup=cpu_speedup, duration_device=ref, unique_ids=True)
    return frame, report
