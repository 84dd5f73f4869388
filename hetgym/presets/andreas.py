"""ANDREAS' simulated scenario (paper section V-B; docs/andreas.md), registered on import as
``andreas-sim``, and the ANDREAS job/option settings shared with ``andreas-armida``.

``hetgym.scenarios.get("andreas-sim", n_nodes=10, gpus="2/1", seed=0, load=0.8)``:

* N nodes, half ``V100`` nodes and half ``T4`` nodes (``gpus="2/1"``: 2 V100 / 1 T4 per
  node, the paper's first scenario; ``"4/2"``: 4 V100 / 2 T4, the second), each with
  ARMIDA's 128 cores, 512 GB and 2 sockets (``hetgym/data/lab/andreas.json``) and the
  catalogue's power model.
* J = 10 N jobs: application uniform over the four of Table V (EfficientNet, ConvNet,
  LSTM-big, LSTM-small), epochs uniform over {60, 80, 160} (Table V's values, assumption
  *arrivals and epochs*); one iteration = one epoch; per-epoch time on one V100 from
  ``andreas.json`` (placeholders, the paper does not publish its profiles), on a T4 by the
  catalogue's relative speed (assumption *execution times*); elastic: ``min_workers=1``,
  ``max_workers`` = the largest node's GPUs, ``scaling_exponent=0.8`` (assumption *execution
  times*).
* Due date = arrival + U(1, 3) x the job's fastest time (``max_workers`` V100s), weight
  U(0.003, 0.015) EUR per second late (the authors' generator
  ``GPUScheduler/script/py/generate_data.py``: ``fun_generate_deadline``,
  ``fun_generating_tardinessweight``; assumption *units*).
* Arrivals: exponential inter-arrival times scaled to the offered ``load`` (assumption *arrivals
  and epochs*: the paper's "mixed" rate of [15] is not given): load = arrival rate x mean
  one-V100 time / the cluster's V100-equivalent GPUs (T4 at its relative speed).
* Options (:func:`andreas_options`): energy at 0.172 EUR/kWh, PUE 1.33; nodes without a
  job are off (``idle_power="busy_nodes"``); a snapshot every epoch
  (``checkpoint_unit="work"``, interval 1); 10 s restart delay; tardiness at 1 EUR per
  weight-second in ``total_cost``. Objective: energy cost + tardiness.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from hetgym import scenarios
from hetgym.devices import get_device
from hetgym.sim.rules import scaled_rate
from hetgym.specs import ClusterSpec, NodeSpec, Objective, Scenario, SimOptions
from hetgym.traces.lab import lab_data
from hetgym.workload import Workload

__all__ = ["APPLICATIONS", "EPOCHS", "LAYOUTS", "andreas_options", "andreas_sim", "elastic_jobs"]

#: GPUs per V100 node / per T4 node of the paper's two scenarios.
LAYOUTS = {"2/1": (2, 1), "4/2": (4, 2)}
APPLICATIONS = ("EfficientNet", "ConvNet", "LSTM-big", "LSTM-small")
EPOCHS = (60, 80, 160)
OBJECTIVE = {"energy_cost": 1.0, "tardiness": 1.0}


def andreas_options(**overrides) -> SimOptions:
    """ANDREAS' simulation options (module docstring); ``overrides`` replace any field."""
    base = {"energy_price": 0.172, "pue": 1.33, "idle_power": "busy_nodes",
            "checkpoint_unit": "work", "checkpoint_interval": 1.0, "restart_delay": 10.0,
            "tardiness_price": 1.0}
    return SimOptions(**{**base, **overrides})


def elastic_jobs(df: pd.DataFrame, max_workers: int, exponent: float = 0.8) -> pd.DataFrame:
    """ANDREAS jobs: one to ``max_workers`` GPUs on one node, sublinear speed-up ``exponent``."""
    return df.assign(min_workers=1, max_workers=int(max_workers), scaling_exponent=float(exponent))


def andreas_sim(n_nodes: int = 10, gpus: str = "2/1", seed: int = 0, load: float = 0.8,
                n_jobs: int | None = None) -> Scenario:
    """ANDREAS' simulated cluster and workload (module docstring).

    Args:
        n_nodes: Nodes N (>= 2; the paper: 10 to 100), half V100 and half T4.
        gpus: ``"2/1"`` or ``"4/2"``: GPUs per V100 node / per T4 node.
        seed: Seed of the workload generator.
        load: Offered load (> 0).
        n_jobs: Jobs (default 10 N, the paper's J = 10 N).
    """
    if gpus not in LAYOUTS:
        raise ValueError(f"andreas-sim: gpus must be one of {sorted(LAYOUTS)}, got {gpus!r}")
    if int(n_nodes) < 2:
        raise ValueError(f"andreas-sim: n_nodes must be >= 2, got {n_nodes}")
    if not load > 0:
        raise ValueError(f"andreas-sim: load must be > 0, got {load}")
    a = lab_data("andreas.json")
    g_v, g_t = LAYOUTS[gpus]
    n_v = int(n_nodes) // 2
    n_t = int(n_nodes) - n_v
    kw = {"cpus": int(a["node_cpus"]), "mem_gb": float(a["node_mem_gb"]),
          "sockets": int(a["sockets"])}
    cluster = ClusterSpec([NodeSpec("v100", count=n_v, gpu_type="V100", gpus=g_v, **kw),
                           NodeSpec("t4", count=n_t, gpu_type="T4", gpus=g_t, **kw)])
    n = int(n_jobs) if n_jobs is not None else 10 * int(n_nodes)
    rng = np.random.default_rng(seed)
    app = rng.choice(len(APPLICATIONS), size=n)
    epochs = rng.choice(EPOCHS, size=n).astype(float)
    sec = np.asarray([float(a["epoch_seconds_v100"][APPLICATIONS[k]]) for k in app])
    t4 = get_device("t4").relative_speed / get_device("v100").relative_speed
    e = 0.8
    fastest = epochs * sec / scaled_rate(g_v, 1.0, e)
    one_v100 = epochs * sec
    capacity = n_v * g_v + n_t * g_t * t4
    mean_gap = one_v100.mean() / (float(load) * capacity)
    arrival = np.cumsum(rng.exponential(mean_gap, size=n))
    arrival -= arrival[0]
    df = pd.DataFrame({
        "job_id": np.arange(n), "arrival": arrival, "user": "andreas", "job_class": "BE",
        "workers": 1, "work": epochs, "tput_v100": 1.0 / sec, "tput_t4": t4 / sec,
        "cpus": 1.0, "mem_gb": 4.0,
        "deadline": arrival + rng.uniform(1.0, 3.0, size=n) * fastest,
        "weight": 2.0 * rng.uniform(0.0015, 0.0075, size=n),
        "job_type": [APPLICATIONS[k] for k in app],
    })
    df = elastic_jobs(df, g_v, e)
    return Scenario(cluster=cluster, workload=Workload.from_frame(df, source="andreas-sim"),
                    options=andreas_options(), objective=Objective.of(OBJECTIVE),
                    name="andreas-sim")


scenarios.register("andreas-sim", andreas_sim)
