"""How good are the rollout teacher's labels without the real future? (``fitgpp-lab``, docs/agents.md)

Along FitGpp's own run of the family's validation windows, every candidate deviation of
every decision point is valued three ways (:class:`agents.residual.teacher.RolloutChooser`): with the
window's real future (clairvoyant), with no future (myopic), and with K sampled futures
(:mod:`agents.residual.futures`; the first k of the K give K = k, the same seeds). ``analyse`` compares
the myopic and sampled labels with the clairvoyant ones::

    NUMBA_NUM_THREADS=1 nice -n 10 python scripts/futures_probe.py run probe.json   # ~30 s CPU / window
    python scripts/futures_probe.py analyse probe.json

Nothing here runs on the test windows.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing as mp
import time
from pathlib import Path

import numpy as np

FAMILY = "fitgpp-lab"


def _config(k: int):
    from agents import residual as R

    return R.ResidualConfig(base="fitgpp", metric="te_p95_slowdown", constraint="be_p50_slowdown",
                            penalty=10.0, futures=k, futures_family=FAMILY)


def probe_window(i: int, k: int = 8) -> dict:
    """The labels of every decision point of FitGpp's run of validation window ``i``."""
    import hetgym
    from agents import residual as R
    from agents.common.envtools import EnvConfig
    from agents.evaluation.heldout import split
    from agents.pretrained.registry import card

    class Probe(R.RolloutChooser):
        def __init__(self) -> None:
            super().__init__("base")
            self.out: list[dict] = []

        def __call__(self, sched, obs, mask, base, cand):
            cfg = sched.cfg
            rec = {"point": sched.points, "cand": [int(c) for c in cand], "arrived": sched.env.sim.next_arrival}
            for name, over in (("clair", {"futures": 0}), ("myopic", {"futures": 0, "myopic": True})):
                sched.cfg = dataclasses.replace(cfg, **over)
                v0, q = self.values(sched, cand, None)
                rec[name] = [v0, *q.tolist()]
            sched.cfg = cfg
            rec["futures"] = [[v, *x.tolist()] for v, x in (self.values(sched, cand, f) for f in self.fills(sched))]
            self.out.append(rec)
            return -1  # the base's own decisions

    env = EnvConfig.from_dict(card(FAMILY)["env"])
    chooser = Probe()
    t = time.process_time()
    hetgym.simulate(split(FAMILY).val[i], R.ResidualScheduler(chooser, env, _config(k)), seed=0)
    return {"window": i, "cpu_s": time.process_time() - t, "states": chooser.out}


def _advantage(v: list[float]) -> np.ndarray | None:
    """Each candidate's relative advantage over the base, as the teacher records it."""
    v0, q = v[0], np.array(v[1:])
    if not (np.isfinite(v0) and v0 > 0):
        return None
    return np.where(np.isfinite(q), (v0 - q) / v0, -1.0)


def _ranks(x: np.ndarray) -> np.ndarray:
    return np.argsort(np.argsort(x))


def analyse(records: list[dict], ks: tuple[int, ...] = (1, 2, 4, 8), gain: float = 0.01) -> list[str]:
    """Lines of the comparison: per label kind, its correlation with the clairvoyant advantage,
    how often it says "gains > ``gain``", and what the clairvoyant advantage is there."""
    rows = []
    for w in records:
        for s in w["states"]:
            c, m = _advantage(s["clair"]), _advantage(s["myopic"])
            fut = [_advantage(f) for f in s["futures"]]
            if c is None or m is None or any(f is None for f in fut):
                continue
            f = np.array(fut)
            for j in range(len(c)):
                rows.append((c[j], m[j], *[f[:k, j].mean() for k in ks], f[:, j].std(), len(f)))
    r = np.array(rows)
    c = r[:, 0]
    g = c > gain
    out = [(f"{len(r)} candidates of {sum(len(w['states']) for w in records)} decision points, "
            f"{int((r[:, -1] > 1).sum())} with futures to sample; clairvoyant gains > {gain:.0%}: {int(g.sum())}")]
    for i, name in enumerate(["myopic", *[f"K={k}" for k in ks]]):
        x = r[:, 1 + i]
        pos = x > gain
        tp = int((pos & g).sum())
        out.append(f"{name:7s} Pearson {np.corrcoef(x, c)[0, 1]:.3f}, Spearman {np.corrcoef(_ranks(x), _ranks(c))[0, 1]:.3f}; "
                   f"says > {gain:.0%}: {int(pos.sum())}, of which clairvoyant too: {tp} "
                   f"(precision {tp / max(int(pos.sum()), 1):.2f}, recall {tp / max(int(g.sum()), 1):.2f}); "
                   f"clairvoyant advantage there {c[pos].mean() if pos.any() else float('nan'):+.4f}")
    spread = r[r[:, -1] > 1, -2]
    out.append(f"spread of one candidate's advantage across the futures (std): median {np.median(spread):.4f}, "
               f"mean {spread.mean():.4f}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["run", "analyse"])
    ap.add_argument("path", type=Path, help="the probe's JSON (written by run, read by analyse)")
    ap.add_argument("--windows", type=int, default=8, help="validation windows 0..n-1 (run)")
    ap.add_argument("--futures", type=int, default=8, help="sampled futures per decision point (run)")
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    if a.what == "analyse":
        print("\n".join(analyse(json.loads(a.path.read_text()))))
        return
    from agents.residual import futures as F

    F.family_source(FAMILY, 64)  # built once, before the workers fork
    args = [(i, a.futures) for i in range(a.windows)]
    with mp.get_context("fork").Pool(a.workers) as pool:
        recs = pool.starmap(probe_window, args)
    tmp = a.path.with_suffix(a.path.suffix + ".tmp")
    tmp.write_text(json.dumps(recs))
    tmp.replace(a.path)
    print("\n".join(analyse(recs)))


if __name__ == "__main__":
    main()
