"""SenseTime Helios traces (S-Lab-System-Group/HeliosData, CC BY 4.0).

Reads a cluster's ``cluster_log.csv`` (header row; columns per HeliosData's README:
``job_id, user, vc, gpu_num, cpu_num, node_num, state, submit_time, start_time,
end_time, duration, queue``; times "YYYY-MM-DD HH:MM:SS", duration in s; some
releases add ``jobname``, which is ignored).

* arrival = ``submit_time``; workers = ``gpu_num``; user = ``user`` (or ``vc``);
* duration = ``duration`` (``end_time - start_time`` when the column is absent), taken
  as the run time on ``gpu_type`` (the public log names no GPU type per job);
* cpus per worker = ``cpu_num / gpu_num`` (``cpus`` when absent); memory is not in the
  log (``mem_gb``);
* states kept: ``COMPLETED`` by default (others: CANCELLED, FAILED, TIMEOUT, NODE_FAIL);
  jobs with ``gpu_num == 0`` (CPU jobs, about half the log) are dropped as ``no_gpu``;
* job types are drawn (seeded) from the throughput model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from hetgym.throughput import ThroughputModel
from hetgym.traces._common import (named_decode_errors,
    DEFAULT_CPUS, DEFAULT_MEM_GB, JobTypes, SpeedupSampler, check_on_bad, device_keys,
    draw_job_types, drop_rows, finish, gpu_key, make_rng, model_or_default, parse_numbers,
    parse_times, require_columns,
)
from hetgym.traces.report import LoadReport

__all__ = ["load_helios", "HELIOS_COLUMNS", "HELIOS_TIME_FORMAT"]

HELIOS_COLUMNS = ("job_id", "user", "vc", "gpu_num", "cpu_num", "node_num", "state", "submit_time",
                  "start_time", "end_time", "duration", "queue")
REQUIRED = ("job_id", "user", "vc", "gpu_num", "state", "submit_time")
HELIOS_TIME_FORMAT = "%Y-%m-%d %H:%M:%S"


@named_decode_errors
def load_helios(
    path: str | Path,
    *,
    states: Sequence[str] | None = ("COMPLETED",),
    gpu_type: str = "v100",
    user_field: str = "user",
    devices: Sequence[str] | None = None,
    throughput: ThroughputModel | None = None,
    job_types: JobTypes = None,
    cpus: float = DEFAULT_CPUS,
    mem_gb: float = DEFAULT_MEM_GB,
    job_class: str = "BE",
    time_format: str = HELIOS_TIME_FORMAT,
    rng: np.random.Generator | None = None,
    seed: int | None = 0,
    cpu_speedup: SpeedupSampler | None = None,
    on_bad: str = "raise",
) -> tuple[pd.DataFrame, LoadReport]:
    """Load a Helios ``cluster_log.csv`` as a canonical job table.

    Args:
        path: The CSV file.
        states: States kept (``None`` keeps all); others dropped as ``state=<s>``.
        gpu_type: GPU type the durations are run times on.
        user_field: ``"user"`` or ``"vc"``.
        devices: Device keys with a ``tput_`` column (default k80, p100, v100).
        throughput: Throughput model (default Gavel's).
        job_types: Job types to draw from.
        cpus: Cores per worker when ``cpu_num`` is absent or 0.
        mem_gb: Memory per worker (not in the log).
        job_class: ``"BE"`` or ``"TE"``.
        time_format: ``strptime`` format of the times.
        rng: Random generator; else ``default_rng(seed)``.
        seed: Seed when ``rng`` is None.
        cpu_speedup: GPU/CPU speedup sampler.
        on_bad: ``"raise"`` on an unparsable value, or ``"drop"`` it (counted).

    Returns:
        ``(job table, report)``. Drop reasons: ``state=<s>``, ``no_gpu``, ``missing_time``,
        ``unparsable_<column>``, ``negative_duration``, ``zero_duration``.

    Raises:
        ValueError: a missing column or (``on_bad="raise"``) an unparsable value, naming
            the file, line and column.
    """
    check_on_bad(on_bad)
    if user_field not in ("user", "vc"):
        raise ValueError(f"user_field must be 'user' or 'vc', got {user_field!r}")
    path = Path(path)
    model = model_or_default(throughput)
    devs = device_keys(devices)
    ref = gpu_key(gpu_type)
    gen = make_rng(rng, seed)
    raw = pd.read_csv(path, encoding="utf-8-sig", dtype=str, keep_default_na=False)
    raw.columns = [str(c).strip() for c in raw.columns]
    require_columns(list(raw.columns), REQUIRED, path, "HeliosData cluster_log.csv")
    if "duration" not in raw.columns and not {"start_time", "end_time"} <= set(raw.columns):
        raise ValueError(f"{path}: needs a 'duration' column or both 'start_time' and 'end_time'")
    report = LoadReport(source=str(path), rows_read=len(raw))
    raw["_line"] = np.arange(len(raw)) + 2
    if states is not None:
        for st in sorted(set(raw["state"]) - set(states)):
            raw = drop_rows(raw, (raw["state"] == st).to_numpy(), f"state={st}", report)
    rows = [f"line {n}" for n in raw["_line"]]
    gpu, gblank, gbad = parse_numbers(raw["gpu_num"], path=path, column="gpu_num", rows=rows, on_bad=on_bad,
                                      expected="an integer number of GPUs")
    if gblank.any() and on_bad == "raise":
        i = int(np.flatnonzero(gblank)[0])
        raise ValueError(f"{path}: {rows[i]}: column 'gpu_num' is empty; expected an integer number of GPUs")
    bad_any = gbad | gblank
    report.drop("unparsable_gpu_num", int(bad_any.sum()))
    sub, sblank, sbad = parse_times(raw["submit_time"], fmt=time_format, path=path, column="submit_time",
                                    rows=rows, on_bad=on_bad)
    report.drop("unparsable_submit_time", int((sbad & ~bad_any).sum()))
    bad_any |= sbad
    if "duration" in raw.columns:
        dur, dblank, dbad = parse_numbers(raw["duration"], path=path, column="duration", rows=rows,
                                          on_bad=on_bad, expected="seconds")
    else:
        st, b1, e1 = parse_times(raw["start_time"], fmt=time_format, path=path, column="start_time",
                                 rows=rows, on_bad=on_bad)
        en, b2, e2 = parse_times(raw["end_time"], fmt=time_format, path=path, column="end_time",
                                 rows=rows, on_bad=on_bad)
        dur, dblank, dbad = en - st, b1 | b2, e1 | e2
    report.drop("unparsable_duration", int((dbad & ~bad_any).sum()))
    bad_any |= dbad
    if "cpu_num" in raw.columns:
        cpu = parse_numbers(raw["cpu_num"], path=path, column="cpu_num", rows=rows, on_bad=on_bad)[0]
    else:
        cpu = np.full(len(raw), np.nan)
    df = raw.assign(gpus=gpu, arrival=sub, duration=dur, cores=cpu, _blank=sblank | dblank).loc[~bad_any]
    df = drop_rows(df, ~(df["gpus"] > 0).to_numpy(), "no_gpu", report)
    df = drop_rows(df, df["_blank"].to_numpy(dtype=bool), "missing_time", report)
    df = drop_rows(df, (df["duration"] < 0).to_numpy(), "negative_duration", report)
    df = drop_rows(df, (df["duration"] == 0).to_numpy(), "zero_duration", report)
    workers = np.ceil(df["gpus"].to_numpy()).astype(np.int64)
    per = df["cores"].to_numpy() / workers
    out = pd.DataFrame({
        "arrival": df["arrival"].to_numpy(), "user": df[user_field].astype(str).to_numpy(),
        "workers": workers, "duration": df["duration"].to_numpy(),
        "cpus": np.where(np.isfinite(per) & (per > 0), per, cpus), "mem_gb": float(mem_gb),
        "job_class": job_class, "trace_id": df["job_id"].astype(str).to_numpy(),
    })
    out["job_type"] = draw_job_types(gen, len(out), model, job_types)
    frame = finish(out, source=str(path), report=report, devices=devs, throughput=model, rng=gen,
                   cpu_speedup=cpu_speedup, duration_device=ref, unique_ids=True)
    return frame, report
