"""Alibaba PAI GPU trace 2020 (alibaba/clusterdata ``cluster-trace-gpu-v2020``, CC BY 4.0).

Reads ``pai_job_table.csv`` and ``pai_task_table.csv`` (no header; column names from the
trace's ``.header`` files, repeated in :data:`JOB_COLUMNS` / :data:`TASK_COLUMNS`; a
first line equal to those names is skipped). Times are seconds (shifted by a constant).

Rules (a job = one ``job_name``; its tasks = task-table rows with that name):

* arrival = the job's ``start_time`` (its submission time, per the README);
* duration = latest task ``end_time`` - earliest task ``start_time`` (launch), taken as
  the run time on the job's GPU type;
* GPUs: ``plan_gpu`` is a percentage of one GPU. Hetgym gives whole devices to workers,
  so each instance of a task with ``plan_gpu > 0`` needs ``ceil(plan_gpu / 100)`` GPUs
  (a 50 % share takes one GPU, 200 % two) and
  ``workers = sum over GPU tasks of inst_num x ceil(plan_gpu / 100)``;
* cpus / mem_gb per worker = the job's total ``inst_num x plan_cpu / 100`` cores and
  ``inst_num x plan_mem`` GB (all tasks, parameter servers included) / workers;
* GPU type: that of the job's GPU task with the most GPUs. ``V100`` and ``V100M32`` ->
  v100, ``P100`` -> p100, ``T4`` -> t4; ``MISC`` (older K40m/K80/M60) -> ``misc_as``
  (default k80; ``None`` drops them as ``gpu_type=MISC``); an empty or unknown type on
  a GPU task is dropped as ``unknown_gpu_type``;
* job types are drawn (seeded) from the throughput model (the trace names none).
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from hetgym.devices import get_device
from hetgym.throughput import ThroughputModel
from hetgym.traces._common import (named_decode_errors,
    DEFAULT_CPUS, DEFAULT_MEM_GB, JobTypes, SpeedupSampler, check_on_bad, device_keys,
    draw_job_types, drop_rows, finish, make_rng, model_or_default, parse_numbers,
)
from hetgym.traces.report import LoadReport

__all__ = ["load_pai", "JOB_COLUMNS", "TASK_COLUMNS", "PAI_GPU_TYPES"]

JOB_COLUMNS = ("job_name", "inst_id", "user", "status", "start_time", "end_time")
TASK_COLUMNS = ("job_name", "task_name", "inst_num", "status", "start_time", "end_time",
                "plan_cpu", "plan_mem", "plan_gpu", "gpu_type")
PAI_GPU_TYPES: dict[str, str] = {"V100": "v100", "V100M32": "v100", "P100": "p100", "T4": "t4"}
DEFAULT_PAI_DEVICES = ("k80", "p100", "v100", "t4")


@named_decode_errors
def _read(path: Path, columns: Sequence[str]) -> pd.DataFrame:
    raw = pd.read_csv(path, encoding="utf-8-sig", header=None, dtype=str, keep_default_na=False)
    if raw.shape[1] != len(columns):
        raise ValueError(f"{path}: {raw.shape[1]} columns; expected {len(columns)} (no header): "
                         f"{list(columns)}")
    raw.columns = list(columns)
    raw["_line"] = np.arange(len(raw)) + 1
    if len(raw) and list(raw.iloc[0, : len(columns)]) == list(columns):
        raw = raw.iloc[1:]
    return raw.reset_index(drop=True)


def _numbers(raw: pd.DataFrame, cols: Sequence[str], path: Path, on_bad: str) -> dict[str, np.ndarray]:
    rows = [f"line {n}" for n in raw["_line"]]
    return {c: parse_numbers(raw[c], path=path, column=c, rows=rows, on_bad=on_bad)[0] for c in cols}


def load_pai(
    job_table: str | Path,
    task_table: str | Path,
    *,
    statuses: Sequence[str] | None = ("Terminated",),
    misc_as: str | None = "k80",
    gpu_types: Mapping[str, str] | None = None,
    devices: Sequence[str] | None = None,
    throughput: ThroughputModel | None = None,
    job_types: JobTypes = None,
    job_class: str = "BE",
    rng: np.random.Generator | None = None,
    seed: int | None = 0,
    cpu_speedup: SpeedupSampler | None = None,
    on_bad: str = "raise",
) -> tuple[pd.DataFrame, LoadReport]:
    """Load the PAI job and task tables as a canonical job table (rules in the module doc).

    Args:
        job_table: ``pai_job_table.csv``.
        task_table: ``pai_task_table.csv``.
        statuses: Job statuses kept (``Terminated`` = successful); ``None`` keeps all.
        misc_as: Device the ``MISC`` GPU type maps to, or ``None`` to drop those jobs.
        gpu_types: Extra or replacement ``{trace gpu_type: device key}`` entries.
        devices: Device keys with a ``tput_`` column (default k80, p100, v100, t4).
        throughput: Throughput model (default Gavel's).
        job_types: Job types to draw from.
        job_class: ``"BE"`` or ``"TE"``.
        rng: Random generator; else ``default_rng(seed)``.
        seed: Seed when ``rng`` is None.
        cpu_speedup: GPU/CPU speedup sampler.
        on_bad: ``"raise"`` on an unparsable number, or ``"drop"`` (counted).

    Returns:
        ``(job table, report)``. Drop reasons: ``status=<s>``, ``missing_time``,
        ``unparsable_time``, ``no_tasks``, ``no_gpu``, ``gpu_type=MISC``,
        ``unknown_gpu_type``, ``negative_duration``, ``zero_duration``.

    Raises:
        ValueError: a table with the wrong number of columns, or an unparsable number;
            naming file, line and column.
    """
    check_on_bad(on_bad)
    jpath, tpath = Path(job_table), Path(task_table)
    model = model_or_default(throughput)
    devs = device_keys(devices, DEFAULT_PAI_DEVICES)
    gen = make_rng(rng, seed)
    mapping = dict(PAI_GPU_TYPES)
    if gpu_types:
        mapping.update({k: get_device(v).key for k, v in gpu_types.items()})
    if misc_as is not None:
        mapping["MISC"] = get_device(misc_as).key

    jobs = _read(jpath, JOB_COLUMNS)
    report = LoadReport(source=str(jpath), rows_read=len(jobs))
    report.notes.append("workers = sum of inst_num x ceil(plan_gpu/100) over GPU tasks")
    if statuses is not None:
        for st in sorted(set(jobs["status"]) - set(statuses)):
            jobs = drop_rows(jobs, (jobs["status"] == st).to_numpy(), f"status={st}", report)
    rows = [f"line {n}" for n in jobs["_line"]]
    arr, blank, bad = parse_numbers(jobs["start_time"], path=jpath, column="start_time", rows=rows,
                                    on_bad=on_bad, expected="seconds")
    jobs = jobs.assign(arrival=arr)
    report.drop("unparsable_time", int(bad.sum()))
    report.drop("missing_time", int(blank.sum()))
    jobs = jobs.loc[~(bad | blank)]

    tasks = _read(tpath, TASK_COLUMNS)
    num = _numbers(tasks, ("inst_num", "start_time", "end_time", "plan_cpu", "plan_mem", "plan_gpu"),
                   tpath, on_bad)
    t = pd.DataFrame({"job_name": tasks["job_name"].to_numpy(),
                      "gpu_type": tasks["gpu_type"].str.strip().to_numpy()} | num)
    t["inst_num"] = t["inst_num"].fillna(1.0)
    gpus_each = np.ceil(np.nan_to_num(t["plan_gpu"].to_numpy(), nan=0.0) / 100.0)
    t["gpus"] = t["inst_num"] * gpus_each
    t["cores"] = t["inst_num"] * np.nan_to_num(t["plan_cpu"].to_numpy(), nan=0.0) / 100.0
    t["mem"] = t["inst_num"] * np.nan_to_num(t["plan_mem"].to_numpy(), nan=0.0)
    t["blank_time"] = t["start_time"].isna() | t["end_time"].isna()
    t = t.loc[t["job_name"].isin(set(jobs["job_name"]))]
    g = t.groupby("job_name")
    agg = pd.DataFrame({"start": g["start_time"].min(), "end": g["end_time"].max(),
                        "gpus": g["gpus"].sum(), "cores": g["cores"].sum(), "mem": g["mem"].sum(),
                        "any_blank_time": g["blank_time"].any()})
    main = t.loc[t["gpus"] > 0].sort_values("gpus", ascending=False, kind="stable").groupby("job_name").head(1)
    agg["gpu_type"] = main.set_index("job_name")["gpu_type"]
    df = jobs.join(agg, on="job_name")
    df = drop_rows(df, df["start"].isna().to_numpy() & df["end"].isna().to_numpy()
                   & df["gpus"].isna().to_numpy(), "no_tasks", report)
    df = drop_rows(df, df["any_blank_time"].astype(bool).to_numpy(), "missing_time", report)
    df = drop_rows(df, ~(df["gpus"] > 0).to_numpy(), "no_gpu", report)
    if misc_as is None:
        df = drop_rows(df, (df["gpu_type"] == "MISC").to_numpy(), "gpu_type=MISC", report)
    dev = df["gpu_type"].map(lambda v: mapping.get(v) if isinstance(v, str) else None)
    df = drop_rows(df, dev.isna().to_numpy(), "unknown_gpu_type", report)
    df = df.assign(device=dev.loc[df.index], duration=df["end"] - df["start"])
    df = drop_rows(df, (df["duration"] < 0).to_numpy(), "negative_duration", report)
    df = drop_rows(df, (df["duration"] == 0).to_numpy(), "zero_duration", report)
    workers = df["gpus"].to_numpy().astype(np.int64)
    cores = df["cores"].to_numpy() / workers
    mem = df["mem"].to_numpy() / workers
    out = pd.DataFrame({
        "arrival": df["arrival"].to_numpy(), "user": df["user"].astype(str).to_numpy(),
        "workers": workers,
        "cpus": np.where(cores > 0, cores, DEFAULT_CPUS), "mem_gb": np.where(mem > 0, mem, DEFAULT_MEM_GB),
        "job_class": job_class, "trace_id": df["job_name"].astype(str).to_numpy(),
        "duration": df["duration"].to_numpy(), "device": df["device"].to_numpy(),
    })
    out["job_type"] = draw_job_types(gen, len(out), model, job_types)
    # work = duration x per-worker tput on the job's own GPU type x workers
    tput_own = np.asarray([model.gpu_throughput(jt, d, int(w)) for jt, d, w in
                           zip(out["job_type"], out["device"], out["workers"])])
    out["work"] = out.pop("duration").to_numpy() * tput_own * out["workers"].to_numpy()
    out = out.drop(columns="device")
    frame = finish(out, source=str(jpath), report=report, devices=devs, throughput=model, rng=gen,
                   cpu_speedup=cpu_speedup)
    return frame, report
