"""The canonical job table and its one door into the simulator.

Schema (one row a job; docs/semantics.md, "Jobs"):

============== ======== ===========================================================
column         type     meaning
============== ======== ===========================================================
job_id         int      unique id
arrival        float    arrival time (s), >= 0
user           any      user (mapped to dense ids 0..U-1 in order of first arrival)
job_class      str      ``"BE"`` or ``"TE"``
workers        int      gang size W >= 1
work           float    total iterations > 0
tput_<device>  float    iterations/s per worker on that device type, >= 0; 0 = cannot run
cpus           float    CPU cores per worker, >= 0
mem_gb         float    memory (GB) per worker, >= 0
deadline       float    optional, absolute (s); default +inf
weight         float    optional tardiness / priority weight; default 1
grace_period   float    optional (s), >= 0; default 0
comm           float    optional communication intensity in [0, 1]; default 0
forkable       bool     optional; default False
job_type       str      optional model name; default ""
min_workers    int      optional least gang size of an elastic job, 1..workers; default workers
max_workers    int      optional largest gang size, >= workers; default workers
scaling_exponent float  optional per-job scaling exponent in (0, 1]; default (NaN) the
                        scenario's ``SimOptions.scaling_exponent``
min_utility    float    optional least placement utility in [0, 1] (TOPO-AWARE-P); default 0
bw             float    optional interference pressure >= 0 (docs/semantics.md,
                        *Interference*); default empty = ``comm`` if workers >= 2, else 0
============== ======== ===========================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from hetgym import validate
from hetgym.devices import CATALOGUE, get_device

if TYPE_CHECKING:  # pragma: no cover
    from hetgym.specs import ClusterSpec, SimOptions

__all__ = ["Workload", "WorkloadError", "REQUIRED_COLUMNS", "OPTIONAL_DEFAULTS"]

REQUIRED_COLUMNS = ("job_id", "arrival", "user", "job_class", "workers", "work", "cpus", "mem_gb")
OPTIONAL_DEFAULTS: dict[str, object] = {
    "deadline": np.inf,
    "weight": 1.0,
    "grace_period": 0.0,
    "comm": 0.0,
    "forkable": False,
    "job_type": "",
    "min_workers": np.nan,  # NaN: = workers
    "max_workers": np.nan,  # NaN: = workers
    "scaling_exponent": np.nan,  # NaN: SimOptions.scaling_exponent
    "min_utility": 0.0,
    "bw": np.nan,
}


class WorkloadError(ValueError):
    """A job table that does not follow the canonical schema."""


def _first_bad(df: pd.DataFrame, mask: np.ndarray) -> str:
    idx = int(np.flatnonzero(mask)[0])
    row = df.iloc[idx]
    return f"first bad row {idx} (job_id={row.get('job_id', '?')})"


@dataclass(frozen=True)
class Workload:
    """A validated job table, sorted by ``(arrival, job_id)``.

    Build it with :meth:`from_frame`; ``frame`` is the validated copy and
    ``devices`` the device keys that have a ``tput_`` column.
    """

    frame: pd.DataFrame
    devices: tuple[str, ...]
    users: tuple[object, ...]

    @classmethod
    def from_frame(cls, df: pd.DataFrame, source: str = "job table") -> "Workload":
        """Validate a job table and return a :class:`Workload`.

        Args:
            df: A table in the canonical schema (module docstring).
            source: Name used in error messages (a file name, say).

        Raises:
            WorkloadError: naming the column and the first bad row.
        """
        if not isinstance(df, pd.DataFrame):
            raise WorkloadError(f"{source}: expected a pandas DataFrame, got {type(df).__name__}")
        missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
        if missing:
            raise WorkloadError(f"{source}: missing column(s) {missing}; required: {list(REQUIRED_COLUMNS)}")
        if len(df) == 0:
            raise WorkloadError(f"{source}: the job table is empty")
        tput_cols = [c for c in df.columns if str(c).startswith("tput_")]
        if not tput_cols:
            raise WorkloadError(f"{source}: no tput_<device> column (e.g. tput_v100, tput_cpu)")
        devices = []
        known = {d.key for d in CATALOGUE.values()}
        for c in tput_cols:
            key = str(c)[5:]
            if key not in known:
                raise WorkloadError(
                    f"{source}: column {c!r} names unknown device type {key!r}; "
                    f"known: {sorted(known)}"
                )
            devices.append(get_device(key).key)
        out = df.copy()
        for col, default in OPTIONAL_DEFAULTS.items():
            if col not in out.columns:
                out[col] = default
            else:
                out[col] = out[col].fillna(default) if col != "deadline" else out[col].fillna(np.inf)

        def numeric(col: str) -> np.ndarray:
            kind = out[col].dtype
            if pd.api.types.is_datetime64_any_dtype(kind) or pd.api.types.is_timedelta64_dtype(kind):
                raise WorkloadError(f"{source}: column {col!r} holds {kind} values; expected a number "
                                    "(seconds); convert first, e.g. (t - t0).dt.total_seconds()")
            try:
                return pd.to_numeric(out[col], errors="raise").to_numpy(dtype=np.float64)
            except (ValueError, TypeError) as exc:
                raise WorkloadError(f"{source}: column {col!r} must be numeric ({exc})") from None

        def check(col: str, bad: np.ndarray, expected: str) -> None:
            if bad.any():
                raise WorkloadError(
                    f"{source}: column {col!r}: {_first_bad(out, bad)} has "
                    f"{out[col].iloc[int(np.flatnonzero(bad)[0])]!r}; expected {expected}"
                )

        jid = numeric("job_id")
        check("job_id", ~np.isfinite(jid) | (jid != np.round(jid)), "an integer")
        check("job_id", np.abs(jid) >= 2.0**63, "an integer within int64 (|id| < 2**63)")
        dup = pd.Series(jid).duplicated().to_numpy()
        check("job_id", dup, "unique ids")
        arr = numeric("arrival")
        check("arrival", ~np.isfinite(arr) | (arr < 0), "a finite time >= 0")
        w = numeric("workers")
        check("workers", ~np.isfinite(w) | (w < 1) | (w != np.round(w)), "an integer >= 1")
        work = numeric("work")
        check("work", ~np.isfinite(work) | (work <= 0), "a finite number > 0")
        for col in ("cpus", "mem_gb", "weight", "grace_period"):
            v = numeric(col)
            check(col, ~np.isfinite(v) | (v < 0), "a finite number >= 0")
        comm = numeric("comm")
        check("comm", ~np.isfinite(comm) | (comm < 0) | (comm > 1), "a number in [0, 1]")
        for col in ("min_workers", "max_workers"):
            v = numeric(col)
            v = np.where(np.isnan(v), w, v)
            check(col, ~np.isfinite(v) | (v < 1) | (v != np.round(v)), "an integer >= 1")
            out[col] = v.astype(np.int64)
        check("min_workers", out["min_workers"].to_numpy() > w, "at most workers")
        check("max_workers", out["max_workers"].to_numpy() < w, "at least workers")
        se = numeric("scaling_exponent")
        check("scaling_exponent", ~np.isnan(se) & ~((se > 0) & (se <= 1)), "a number in (0, 1] or empty")
        out["scaling_exponent"] = se
        mu = numeric("min_utility")
        check("min_utility", ~np.isfinite(mu) | (mu < 0) | (mu > 1), "a number in [0, 1]")
        bw = numeric("bw")
        check("bw", (bw < 0) | np.isinf(bw), "empty or a finite number >= 0")
        dl = numeric("deadline")
        check("deadline", np.isnan(dl), "a time (s) or +inf")
        cls_ok = out["job_class"].isin(["BE", "TE"]).to_numpy()
        check("job_class", ~cls_ok, '"BE" or "TE"')
        tputs = np.stack([numeric(c) for c in tput_cols], axis=1)
        for k, c in enumerate(tput_cols):
            check(c, ~np.isfinite(tputs[:, k]) | (tputs[:, k] < 0), "iterations/s >= 0")
        check(tput_cols[0], (tputs <= 0).all(axis=1), "a job with tput > 0 on at least one device")

        out["job_id"] = jid.astype(np.int64)
        out["arrival"] = arr
        out["workers"] = w.astype(np.int64)
        out["work"] = work
        out["comm"] = comm
        out["min_utility"] = mu
        out["bw"] = bw
        out["deadline"] = dl
        fork = out["forkable"].tolist() if out["forkable"].dtype != bool else []
        for i, x in enumerate(fork):
            try:
                fork[i] = validate.boolean(x, "forkable")
            except ValueError:
                raise WorkloadError(f"{source}: column 'forkable': {_first_bad(out, np.arange(len(out)) == i)} "
                                    f"has {x!r}; expected a boolean (True/False, 0/1, or the text "
                                    "true/false)") from None
        if fork:
            out["forkable"] = np.asarray(fork, dtype=bool)
        out["job_type"] = out["job_type"].astype(str)
        for col in ("cpus", "mem_gb", "weight", "grace_period"):
            out[col] = numeric(col)
        for c in tput_cols:
            out[c] = numeric(c)
        out = out.sort_values(["arrival", "job_id"], kind="stable").reset_index(drop=True)
        users = tuple(pd.unique(out["user"]))
        return cls(frame=out, devices=tuple(devices), users=users)

    def __len__(self) -> int:
        return len(self.frame)

    def __repr__(self) -> str:
        return f"Workload({len(self)} jobs, devices={list(self.devices)}, users={len(self.users)})"

    def tput_matrix(self, devices: list[str]) -> np.ndarray:
        """``(n_jobs, len(devices))`` per-worker throughput; missing columns raise."""
        cols = []
        for d in devices:
            col = f"tput_{d}"
            if col not in self.frame.columns:
                raise WorkloadError(
                    f"job table: the cluster has device type {d!r} but there is no {col!r} column"
                )
            cols.append(self.frame[col].to_numpy(dtype=np.float64))
        return np.stack(cols, axis=1)

    def user_ids(self) -> np.ndarray:
        """Dense user ids (0..U-1, in order of first arrival)."""
        codes = {u: i for i, u in enumerate(self.users)}
        return np.asarray([codes[u] for u in self.frame["user"]], dtype=np.int64)

    def check_cluster(self, cluster: "ClusterSpec", options: "SimOptions") -> None:
        """Raise :class:`WorkloadError` for a job that fits no configuration of the cluster.

        A job fits device type ``d`` when its throughput there is > 0 and the
        cluster's nodes of type ``d`` together hold its ``workers`` (each worker:
        1 GPU, ``cpus`` cores and ``mem_gb`` on a GPU node; a CPU slot and
        ``mem_gb`` on a CPU node). A job that no single type holds but whose gang fits
        over several types where it can run is accepted (a mixed placement can run it;
        schedulers that use one type per job leave it waiting).
        """
        from hetgym.sim.state.nodes import cluster_nodes, gang_slots

        devices = cluster.device_types
        tput = self.tput_matrix(devices)
        fr = self.frame
        cpus = fr["cpus"].to_numpy(dtype=np.float64)
        cpus_need = np.repeat(cpus[:, None], len(devices), axis=1)
        if options.cpu_slot_cores is not None and "cpu" in devices:
            cpus_need[:, devices.index("cpu")] = float(options.cpu_slot_cores)
        nodes = cluster_nodes(cluster)
        least = (fr["min_workers"] if "min_workers" in fr.columns else fr["workers"]).to_numpy(
            dtype=np.int64)
        slots = gang_slots(least, cpus_need, fr["mem_gb"].to_numpy(dtype=np.float64), nodes)
        # one device type holds the gang, or a mixed gang over the types where it can run
        # (task-level heterogeneity: Start with an explicit mixed placement)
        fits_any = ((tput > 0) & (slots >= least[:, None])).any(axis=1) | \
            (np.where(tput > 0, slots, 0).sum(axis=1) >= least)
        if not fits_any.all():
            i = int(np.flatnonzero(~fits_any)[0])
            row = fr.iloc[i]
            raise WorkloadError(
                f"job table: job_id={row['job_id']} (row {i}) fits no node of the cluster: "
                f"workers={row['workers']}"
                + (f" (min_workers={row['min_workers']})" if row['min_workers'] != row['workers'] else "")
                + f", cpus={row['cpus']}, mem_gb={row['mem_gb']}, "
                f"throughputs {dict(zip(devices, tput[i]))}"
            )
