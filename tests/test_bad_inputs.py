"""A catalogue of bad inputs, one entry each, over every entry point: the specs, the job
table, the scenario registry, the env constructors and the trace loaders. Each entry
names the call, the error type and a pattern the message must match: the field (or
file and line) and what was expected."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pandas as pd
import pytest

import hetgym
from hetgym.episodes import EpisodeWindows
from hetgym.specs import NodeSpec, PowerModel, SimOptions
from hetgym.workload import Workload

NAN = math.nan


def _frame(**cols: Any) -> pd.DataFrame:
    """A valid two-job table with ``cols`` replaced."""
    df = pd.DataFrame(dict(job_id=[0, 1], arrival=[0.0, 5.0], user=["a", "b"], job_class=["BE", "TE"],
                           workers=[1, 2], work=[100.0, 200.0], cpus=[1.0, 2.0], mem_gb=[1.0, 1.0],
                           tput_v100=[1.0, 2.0]))
    for k, v in cols.items():
        df[k] = v
    return df


def _env(env_id: str, **kw: Any) -> Callable[[], Any]:
    import gymnasium as gym

    base = {"HetCluster-v0": dict(scenario="toy-3jobs")}.get(env_id, {})
    return lambda: gym.make(env_id, **{**base, **kw})


CASES: list[tuple[str, Callable[[], Any], type, str]] = []


def case(name: str, call: Callable[[], Any], err: type, pattern: str) -> None:
    CASES.append((name, call, err, pattern))


# ------------------------------------------------------------------ SimOptions
for field in ("restart_delay", "checkpoint_interval", "energy_price", "pue", "topology_coeff",
              "network_distance", "tardiness_price", "interference_coeff", "slo_slack"):
    case(f"SimOptions.{field}=-1", lambda f=field: SimOptions(**{f: -1.0}), ValueError, rf"SimOptions\.{field} must be >= 0")
    case(f"SimOptions.{field}=nan", lambda f=field: SimOptions(**{f: NAN}), ValueError, rf"SimOptions\.{field} must be a number")
case("SimOptions.pue='1.3'", lambda: SimOptions(pue="1.3"), TypeError, r"SimOptions\.pue must be a number")
case("SimOptions.fork_sync_delay=-1", lambda: SimOptions(fork_sync_delay=-1), ValueError, r"fork_sync_delay must be >= 0")
case("SimOptions.grace_period=nan", lambda: SimOptions(grace_period=NAN), ValueError, r"grace_period must be a number")
for bad in (0, -5, NAN):
    case(f"SimOptions.horizon={bad}", lambda b=bad: SimOptions(horizon=b), ValueError, r"SimOptions\.horizon.*(> 0|number)")
    case(f"SimOptions.round_length={bad}", lambda b=bad: SimOptions(round_length=b), ValueError,
         r"SimOptions\.round_length.*(> 0|number)")
for bad in (0, -4, 2.5, NAN):
    case(f"SimOptions.cpu_slot_cores={bad}", lambda b=bad: SimOptions(cpu_slot_cores=b), ValueError,
         r"SimOptions\.cpu_slot_cores must be an integer")
case("SimOptions.cpu_slot_cores=True", lambda: SimOptions(cpu_slot_cores=True), TypeError, r"cpu_slot_cores must be an integer")
case("SimOptions.max_copies=0", lambda: SimOptions(max_copies=0), ValueError, r"max_copies must be an integer >= 1")
case("SimOptions.max_copies=2.5", lambda: SimOptions(max_copies=2.5), ValueError, r"max_copies must be an integer")
case("SimOptions.max_preemptions=-1", lambda: SimOptions(max_preemptions=-1), ValueError, r"max_preemptions must be an integer >= 0")
case("SimOptions.max_preemptions=1.5", lambda: SimOptions(max_preemptions=1.5), ValueError, r"max_preemptions must be an integer")
for bad in (0, 1.5):
    case(f"SimOptions.scaling_exponent={bad}", lambda b=bad: SimOptions(scaling_exponent=b), ValueError,
         r"scaling_exponent must be in \(0, 1\]")
case("SimOptions.scaling_exponent=nan", lambda: SimOptions(scaling_exponent=NAN), ValueError, r"scaling_exponent must be a number")
case("SimOptions.idle_power", lambda: SimOptions(idle_power="never"), ValueError, r"idle_power must be 'always' or 'busy_nodes'")
case("SimOptions.checkpoint_unit", lambda: SimOptions(checkpoint_unit="h"), ValueError, r"checkpoint_unit must be 'seconds' or 'work'")
case("SimOptions.placement", lambda: SimOptions(placement="random"), ValueError, r"placement must be pack, spread or topology")
case("SimOptions.interference_domain", lambda: SimOptions(interference_domain="rack"), ValueError,
     r"interference_domain must be socket or node")

# ------------------------------------------------------------------ NodeSpec / PowerModel
V = dict(name="v", gpu_type="V100", gpus=2)
case("NodeSpec.count=0", lambda: NodeSpec(**V, count=0), ValueError, r"NodeSpec 'v': count must be an integer >= 1")
case("NodeSpec.count=2.5", lambda: NodeSpec(**V, count=2.5), ValueError, r"NodeSpec 'v': count must be an integer")
case("NodeSpec.count=True", lambda: NodeSpec(**V, count=True), TypeError, r"NodeSpec 'v': count must be an integer")
case("NodeSpec.gpus=1.5", lambda: NodeSpec(name="v", gpu_type="V100", gpus=1.5), ValueError, r"gpus must be an integer")
case("NodeSpec.gpus=0 on a GPU node", lambda: NodeSpec(name="v", gpu_type="V100", gpus=0), ValueError, r"needs gpus >= 1")
case("NodeSpec.gpus on a CPU node", lambda: NodeSpec(name="c", gpus=2), ValueError, r"gpus=2 but gpu_type is None")
case("NodeSpec.sockets=0", lambda: NodeSpec(**V, sockets=0), ValueError, r"sockets must be an integer >= 1")
for f in ("cpus", "mem_gb"):
    for bad in (NAN, -1.0, math.inf):
        case(f"NodeSpec.{f}={bad}", lambda f=f, b=bad: NodeSpec(**V, **{f: b}), ValueError,
             rf"NodeSpec 'v': {f} must be (>= 0|a finite number)")
case("NodeSpec.topology nan", lambda: NodeSpec(**V, topology=[[0, NAN], [NAN, 0]]), ValueError,
     r"topology distances must be finite and >= 0")
case("NodeSpec.topology negative", lambda: NodeSpec(**V, topology=[[0, -1], [-1, 0]]), ValueError,
     r"topology distances must be finite and >= 0")
case("NodeSpec.topology shape", lambda: NodeSpec(**V, topology=[[0]]), ValueError, r"topology must be 2x2")
case("NodeSpec.gpu_type unknown", lambda: NodeSpec(name="x", gpu_type="Z99", gpus=1), ValueError, r"Z99")
case("NodeSpec.power dict", lambda: NodeSpec(**V, power={"idle_w": 1}), TypeError, r"power must be a PowerModel")
for f in ("idle_w", "gpu_active_w", "cpu_core_active_w"):
    case(f"PowerModel.{f}=-1", lambda f=f: PowerModel(**{f: -1.0}), ValueError, rf"PowerModel\.{f} \(W\) must be >= 0")
case("PowerModel.idle_w=nan", lambda: PowerModel(idle_w=NAN), ValueError, r"PowerModel\.idle_w \(W\) must be a finite number")
case("PowerModel.idle_w=inf", lambda: PowerModel(idle_w=math.inf), ValueError, r"PowerModel\.idle_w \(W\) must be a finite number")

# ------------------------------------------------------------------ job table
W = Workload.from_frame
case("forkable text", lambda: W(_frame(forkable=["maybe", "False"])), ValueError, r"'forkable'.*row 0.*expected a boolean")
case("duplicate job_id", lambda: W(_frame(job_id=[3, 3])), ValueError, r"'job_id'.*expected unique ids")
case("fractional workers", lambda: W(_frame(workers=[1, 2.5])), ValueError, r"'workers'.*expected an integer >= 1")
case("job_id beyond int64", lambda: W(_frame(job_id=[0, 2**64])), ValueError, r"'job_id'.*within int64")
case("job_id nan", lambda: W(_frame(job_id=[0, NAN])), ValueError, r"'job_id'.*expected an integer")
case("datetime arrivals", lambda: W(_frame(arrival=pd.to_datetime(["2020-01-01", "2020-01-02"]))), ValueError,
     r"'arrival' holds datetime.*expected a number \(seconds\)")
case("negative arrival", lambda: W(_frame(arrival=[-1.0, 0.0])), ValueError, r"'arrival'.*a finite time >= 0")
case("work 0", lambda: W(_frame(work=[0.0, 1.0])), ValueError, r"'work'.*a finite number > 0")
case("cpus nan", lambda: W(_frame(cpus=[NAN, 1.0])), ValueError, r"'cpus'.*a finite number >= 0")
case("mem_gb negative", lambda: W(_frame(mem_gb=[-1.0, 1.0])), ValueError, r"'mem_gb'.*a finite number >= 0")
case("comm 2", lambda: W(_frame(comm=[2.0, 0.0])), ValueError, r"'comm'.*a number in \[0, 1\]")
case("job_class", lambda: W(_frame(job_class=["BE", "XX"])), ValueError, r"'job_class'.*\"BE\" or \"TE\"")
case("tput negative", lambda: W(_frame(tput_v100=[-1.0, 1.0])), ValueError, r"'tput_v100'.*iterations/s >= 0")
case("tput all zero", lambda: W(_frame(tput_v100=[0.0, 1.0])), ValueError, r"tput > 0 on at least one device")
case("missing column", lambda: W(_frame().drop(columns=["work"])), ValueError, r"missing column\(s\) \['work'\]")
case("unknown device column", lambda: W(_frame(tput_z99=[1.0, 1.0])), ValueError, r"unknown device type 'z99'")
case("text numbers", lambda: W(_frame(work=["a", "b"])), ValueError, r"'work' must be numeric")

# ------------------------------------------------------------------ scenarios
get = hetgym.scenarios.get
case("unknown scenario", lambda: get("no-such"), ValueError, r"unknown scenario 'no-such'; known:")
case("scenario n_jobs=2.5", lambda: get("hetero-small", n_jobs=2.5), ValueError, r"'hetero-small': n_jobs must be an integer")
case("scenario n_jobs=0", lambda: get("hetero-small", n_jobs=0), ValueError, r"n_jobs must be an integer >= 1")
case("scenario n_jobs=True", lambda: get("hetero-small", n_jobs=True), TypeError, r"n_jobs must be an integer")
case("scenario seed=-1", lambda: get("hetero-small", seed=-1), ValueError, r"seed must be an integer >= 0")
case("scenario n_jobs > source", lambda: get("google-hybrid", n_jobs=1024), ValueError,
     r"'google-hybrid': n_jobs=1024 but its source has \d+ jobs; expected n_jobs <= \d+")
case("scenario unknown override", lambda: get("hetero-small", bogus=1), TypeError, r"unknown override\(s\) \['bogus'\]")
case("scenario bad option", lambda: get("hetero-small", n_jobs=8, pue=NAN), ValueError, r"SimOptions\.pue must be a number")
case("EpisodeWindows n_jobs=2.5", lambda: EpisodeWindows(10, 2.5), ValueError, r"n_jobs \(jobs per episode\) must be an integer")

# ------------------------------------------------------------------ env constructors
for env_id in ("HetCluster-v0", "HetClusterPlacement-v0", "HetClusterElastic-v0", "HetClusterRounds-v0"):
    short = env_id.split("-")[0]
    case(f"{short} window=10**7", _env(env_id, window=10**7), ValueError, r"window must be <= 4096")
    case(f"{short} window=0", _env(env_id, window=0), ValueError, r"window must be >= 1")
    case(f"{short} n_jobs=2.5", _env(env_id, n_jobs=2.5), ValueError, r"n_jobs.*must be an integer")
    case(f"{short} max_steps=0", _env(env_id, max_steps=0), ValueError, r"max_steps must be >= 1")
    case(f"{short} invalid_action", _env(env_id, invalid_action="explode"), ValueError, r"invalid_action must be")
for env_id in ("HetClusterPlacement-v0", "HetClusterElastic-v0", "HetClusterRounds-v0"):
    case(f"{env_id} round_length=-5", _env(env_id, round_length=-5), ValueError, r"round_length must be > 0 seconds")
case("HetCluster reward_scale=nan", _env("HetCluster-v0", reward_scale=NAN), ValueError, r"reward_scale must be > 0")
case("HetCluster time_scale=0", _env("HetCluster-v0", time_scale=0), ValueError, r"time_scale must be > 0")
case("HetCluster render_mode", _env("HetCluster-v0", render_mode="video"), ValueError, r"render_mode must be one of")


# ------------------------------------------------------------------ trace files
def _gavel_latin1(tmp):
    from hetgym.traces.gavel import read_gavel_trace

    p = tmp / "t.trace"
    p.write_bytes("ResNet-18 (batch size 16)\t\xe9\t1\t0\t10\t0\t1\n".encode("latin-1"))
    return read_gavel_trace(p)


def _helios_utf16(tmp):
    from hetgym.traces.helios import load_helios

    p = tmp / "cluster_log.csv"
    p.write_text("job_id,user,vc,gpu_num,state,submit_time,duration\n", encoding="utf-16")
    return load_helios(p)


def _helios_dup(tmp):
    from hetgym.traces.helios import load_helios

    p = tmp / "cluster_log.csv"
    p.write_text("job_id,user,vc,gpu_num,cpu_num,state,submit_time,duration\n"
                 "j1,u,vc,1,4,COMPLETED,2020-01-01 00:00:00,100\n"
                 "j1,u,vc,1,4,COMPLETED,2020-01-01 00:00:05,100\n")
    return load_helios(p)


def _philly_derived(tmp):
    from hetgym.traces.philly import load_philly_derived

    p = tmp / "philly.csv"
    p.write_text("job_index_in_vc,vc,arrival_time_s,num_gpus,duration_s\n0,a,0,1,100\n0,a,5,2,100\n")
    return load_philly_derived(p)


FILES = [
    ("gavel latin-1", _gavel_latin1, ValueError, r"t\.trace: byte \d+ is not UTF-8.*expected a UTF-8"),
    ("helios utf-16", _helios_utf16, ValueError, r"cluster_log\.csv: byte \d+ is not UTF-8"),
    ("helios duplicate job id", _helios_dup, ValueError, r"cluster_log\.csv: job id 'j1' appears 2 times; expected each job once"),
    ("philly duplicate job", _philly_derived, ValueError, r"philly\.csv: job id 'a:0' appears 2 times"),
]


def _philly_frac(tmp):
    from hetgym.traces.philly import load_philly_derived

    p = tmp / "philly.csv"
    p.write_text("job_index_in_vc,vc,arrival_time_s,num_gpus,duration_s\n0,a,0,1,100\n1,a,5,2.7,100\n")
    return load_philly_derived(p)


FILES.append(("philly fractional gpus", _philly_frac, ValueError,
              r"philly\.csv: line 3: column 'num_gpus' is 2\.7; expected a whole number"))


def test_catalogue_is_large():
    assert len(CASES) + len(FILES) >= 80


@pytest.mark.parametrize(("name", "call", "err", "pattern"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_refused_by_name(name, call, err, pattern):
    with pytest.raises(err, match=pattern):
        call()


@pytest.mark.parametrize(("name", "call", "err", "pattern"), FILES, ids=[c[0] for c in FILES])
def test_bad_file_refused_by_name(tmp_path, name, call, err, pattern):
    with pytest.raises(err, match=pattern):
        call(tmp_path)


def test_accepted_on_purpose():
    """What is coerced on purpose (docs/semantics.md, *Accepted inputs*)."""
    assert SimOptions(cpu_slot_cores=4.0).cpu_slot_cores == 4
    assert NodeSpec(name="v", gpu_type="V100", gpus=2.0, count=np.int64(3)).count == 3
    wl = Workload.from_frame(_frame(forkable=["False", "true"]))
    assert wl.frame.sort_values("job_id")["forkable"].tolist() == [False, True]


def test_gavel_trace_with_bom_keeps_its_first_job(tmp_path):
    """A UTF-8 byte-order mark does not turn the first job type into an unknown one."""
    from hetgym.traces.gavel import packaged_gavel_dir, read_gavel_trace

    src = sorted(packaged_gavel_dir().glob("*.trace"))[0]
    p = tmp_path / "bom.trace"
    p.write_bytes(b"\xef\xbb\xbf" + src.read_bytes())
    a, b = read_gavel_trace(src), read_gavel_trace(p)
    assert a.drop(columns="line").equals(b.drop(columns="line"))
