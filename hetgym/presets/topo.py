"""TOPO-AWARE's scenarios (Amaral et al., SC'17), registered on import:
``topo-prototype`` (sec. 5.2) and ``topo-sim`` (sec. 5.3-5.5).

Both use IBM Power8 "Minsky" servers (:func:`minsky_node`: 2 sockets x 2 P100, NVLink
pairs, :func:`hetgym.specs.minsky_topology`) and the authors' measured profile
(``hetgym/data/lab/topo/prof_from_experiments.json``, Apache-2.0, see its README):

* ``work`` = the job's measured solo time on a packed placement (s), at one iteration
  per second on the ideal placement (``tput_p100 = 1 / W``), so ``best_duration`` is the
  profile's best time and ``placement_slowdown`` compares with it (assumption *times from the
  profile*);
* ``comm`` = (t_inter / t_intra - 1) / (2 x ``topology_coeff``) clipped to [0, 1] from
  the profile's 2-GPU pack and spread times, so the simulator's topology factor gives the
  spread time exactly (mean distance 3 on a Minsky, assumption *times from the profile*);
* 3-GPU jobs (assumption *3-GPU jobs*): every 3-GPU placement on a Minsky is 2 + 1 across the
  sockets and the profile's 3-GPU time is that placement's, so ``work`` = that time and ``comm`` = 0
  (no placement is better or worse); their interference pressure ``bw`` keeps the
  type's 2-GPU ``comm``;
* interference: ``interference_coeff`` = 0.3 (assumption *interference cost*: the paper's ~30 %
  for two communication-heavy 2-GPU jobs), domain ``socket``; ``restart_delay`` = 0 (nothing is
  preempted); ``topology_coeff`` = 0.125.

Jobs carry ``min_utility`` (the TOPO-AWARE-P threshold) and ``job_type``
(``"alexnet-1"``: network and batch size).
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

import numpy as np
import pandas as pd

from hetgym import scenarios
from hetgym.specs import (
    ClusterSpec,
    NodeSpec,
    Scenario,
    SimOptions,
    dgx1_topology,
    minsky_topology,
)
from hetgym.workload import Workload

__all__ = [
    "KAPPA",
    "TOPOLOGY_COEFF",
    "dgx1_node",
    "generate_jobs",
    "job_profile",
    "minsky_cluster",
    "minsky_node",
    "profile",
    "topo_prototype",
    "topo_sim",
]

TOPOLOGY_COEFF = 0.125
KAPPA = 0.3
NETS = {"A": "bvlc_alexnet", "G": "bvlc_googlenet"}
#: The paper's Table 1 (sec. 5.2): network (A AlexNet, G GoogLeNet; job 5 is CaffeRef in
#: the paper, which the profile lacks: AlexNet, as the authors' workloads-5.json), batch
#: size, GPUs, min utility; arrivals from workloads-5.json (Table 1 rounds them).
TABLE1 = (("A", 1, 1, 0.3), ("G", 4, 1, 0.3), ("A", 1, 1, 0.3), ("A", 4, 2, 0.5),
          ("A", 1, 2, 0.5), ("A", 1, 2, 0.5))


def minsky_node(name: str = "minsky", count: int = 1) -> NodeSpec:
    """IBM Power8 S822LC "Minsky" (sec. 3.1): 2 sockets x 8 cores, 256 GB per socket,
    2 P100 per socket joined by NVLink."""
    return NodeSpec(name=name, count=count, gpu_type="P100", gpus=4, cpus=16, mem_gb=512.0,
                    sockets=2, topology=minsky_topology())


def dgx1_node(name: str = "dgx1", count: int = 1) -> NodeSpec:
    """NVIDIA DGX-1 (V100): 2 sockets x 20 cores, 512 GB, 8 V100 in a hybrid cube-mesh."""
    return NodeSpec(name=name, count=count, gpu_type="V100", gpus=8, cpus=40, mem_gb=512.0,
                    sockets=2, topology=dgx1_topology())


def minsky_cluster(n: int = 1) -> ClusterSpec:
    """``n`` Minsky servers."""
    return ClusterSpec(nodes=[minsky_node(count=n)])


def _data(name: str) -> dict:
    with resources.files("hetgym").joinpath(f"data/lab/topo/{name}").open("r") as fh:
        return json.load(fh)


@lru_cache(maxsize=1)
def profile() -> dict:
    """The authors' measured profile (seconds for 4000 iterations)."""
    return _data("prof_from_experiments.json")


def job_profile(net: str, batch: int, gpus: int) -> dict:
    """``work`` (s at the ideal rate), ``comm`` and ``bw`` of a job from the profile."""
    solo = profile()["solo"][net][str(batch)]["num_gpus"]
    pack2 = solo["2"]["intra-socket"]
    spread2 = solo["2"]["inter-socket"]
    comm = float(np.clip((spread2 / pack2 - 1.0) / (2 * TOPOLOGY_COEFF), 0.0, 1.0))
    work = float(solo[str(gpus)]["intra-socket"])
    if work <= 0:
        raise ValueError(f"profile has no {gpus}-GPU time for {net} batch {batch}")
    if gpus >= 3:  # assumption *3-GPU jobs*: the only placement a Minsky has; its time is the measurement
        return {"work": work, "comm": 0.0, "bw": comm}
    return {"work": work, "comm": comm, "bw": np.nan}


def _frame(rows: list[dict]) -> pd.DataFrame:
    out = []
    for i, r in enumerate(rows):
        p = job_profile(r["net"], r["batch"], r["gpus"])
        out.append({"job_id": i, "arrival": float(r["arrival"]), "user": "u", "job_class": "BE",
                    "workers": int(r["gpus"]), "work": p["work"],
                    "tput_p100": 1.0 / int(r["gpus"]), "cpus": 1.0, "mem_gb": 1.0,
                    "comm": p["comm"], "bw": p["bw"], "min_utility": float(r["min_utility"]),
                    "job_type": f"{r['net'].split('_')[-1]}-{r['batch']}"})
    return pd.DataFrame(out)


def _options(**overrides) -> SimOptions:
    return SimOptions(**{"restart_delay": 0.0, "topology_coeff": TOPOLOGY_COEFF,
                         "interference_coeff": KAPPA, "interference_domain": "socket",
                         **overrides})


def topo_prototype(jobs: str = "paper", **options) -> Scenario:
    """One Minsky server and the six jobs of the paper's Table 1 (sec. 5.2); ``options``
    override :class:`SimOptions` fields (e.g. ``interference_coeff=0``).

    ``jobs="paper"``: Table 1 (job 1 GoogLeNet batch 4, job 2 AlexNet batch 1);
    ``jobs="authors"``: the authors' ``workloads-5.json`` (job 1 AlexNet batch 4, job 2
    GoogLeNet batch 1). Both: job 5 AlexNet batch 1 (CaffeRef is not in the profile)."""
    w5 = [v for _, v in sorted(_data("workloads-5.json").items(), key=lambda kv: int(kv[0]))]
    if jobs == "paper":
        rows = [{"net": NETS[n], "batch": b, "gpus": g, "min_utility": mu,
                 "arrival": v["arrival"]} for (n, b, g, mu), v in zip(TABLE1, w5)]
    elif jobs == "authors":
        rows = [{"net": v["type"], "batch": int(v["size"]), "gpus": int(v["gpus"]),
                 "min_utility": float(v["minimal_utility"]), "arrival": v["arrival"]}
                for v in w5]
    else:
        raise ValueError(f"topo-prototype: jobs must be 'paper' or 'authors', got {jobs!r}")
    wl = Workload.from_frame(_frame(rows), source="topo-prototype")
    return Scenario(cluster=minsky_cluster(1), workload=wl, options=_options(**options),
                    name="topo-prototype")


def generate_jobs(n_jobs: int, seed: int) -> list[dict]:
    """Jobs from the authors' generator (``src/workload/work_gen.py::gen_jobs``) with a
    NumPy generator: inter-arrival Poisson(10) whole seconds (the first job arrives after
    its draw, assumption *topo-sim arrivals*), batch Binomial(3, 0.1) -> 1, 4, 128, 64, GPUs
    Binomial(2, 0.39) + 1, network Binomial(1, 0.2) -> AlexNet / GoogLeNet, min utility U(0.30,
    0.52)."""
    rng = np.random.default_rng(seed)
    gaps = rng.poisson(10, n_jobs)
    batch = rng.binomial(3, 0.1, n_jobs)
    gpus = rng.binomial(2, 0.39, n_jobs) + 1
    net = rng.binomial(1, 0.2, n_jobs)
    mu = rng.uniform(0.30, 0.52, n_jobs)
    sizes = {0: 1, 1: 4, 2: 128, 3: 64}
    return [{"net": ("bvlc_alexnet", "bvlc_googlenet")[int(net[i])],
             "batch": sizes[int(batch[i])], "gpus": int(gpus[i]), "min_utility": float(mu[i]),
             "arrival": float(gaps[: i + 1].sum())} for i in range(n_jobs)]


def authors_jobs(n_jobs: int = 100) -> list[dict]:
    """The first ``n_jobs`` of the authors' ``workloads-100.json`` (simulation scenario 1)."""
    d = _data("workloads-100.json")
    rows = [d[k] for k in sorted(d, key=int)][:n_jobs]
    return [{"net": r["type"], "batch": int(r["size"]), "gpus": int(r["gpus"]),
             "min_utility": float(r["minimal_utility"]), "arrival": float(r["arrival"])}
            for r in rows]


def topo_sim(n_jobs: int = 100, n_machines: int = 5, seed: int = 0, authors: bool = False,
             **options) -> Scenario:
    """Homogeneous Minsky servers and jobs from the authors' generator (sec. 5.3): the
    paper's scenario 1 is ``n_jobs=100, n_machines=5``, scenario 2 ``n_jobs=10000,
    n_machines=1000``. With ``authors=True`` the jobs are the authors' own
    ``workloads-100.json`` (at most 100) instead of a fresh draw."""
    if authors:
        if n_jobs > 100:
            raise ValueError(f"topo-sim: authors=True has 100 jobs, asked for {n_jobs}")
        rows = authors_jobs(n_jobs)
    else:
        rows = generate_jobs(int(n_jobs), int(seed))
    wl = Workload.from_frame(_frame(rows), source="topo-sim")
    return Scenario(cluster=minsky_cluster(int(n_machines)), workload=wl,
                    options=_options(**options), name="topo-sim")


scenarios.register("topo-prototype", topo_prototype)
scenarios.register("topo-sim", topo_sim)
