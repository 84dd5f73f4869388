"""Throughput benchmarks of the simulator and the environment.

    python scripts/bench.py                 # simulator, env and batched env, default sizes
    python scripts/bench.py --jobs 100000 --env-steps 50000
    python scripts/bench.py --skip-sim --batched 1,8,64,256 --train 4,16,64
    python scripts/bench.py --skip-sim --skip-env --batched "" --train 32 --train-procs 1,2

Prints (1) simulated events/s and wall time of FIFO over N synthetic jobs on a
1,024-GPU hybrid cluster, with Numba compile time measured apart (a warm-up
run on a tiny scenario in the same process), (2) env steps/s of
``HetCluster-v0`` under a uniformly random masked policy on the default scenario,
(3) aggregate steps/s of the batched env (``gym.make_vec``) under the same policy
for each N of ``--batched``, serial and with threads, and (4) with ``--train``,
MaskablePPO training steps/s on the batched env for each N and each of
``--train-settings`` (TRAIN_SETTINGS; ``default``: one torch thread), and (5)
with ``--train-procs``, the same with the N envs of ``--train`` split over P worker
processes of batched envs (``vec_env="batched_subproc"``) for each P.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def big_cluster():
    """1,024 GPUs (32 x 8 K80, 48 x 8 P100, 48 x 8 V100) and 32 CPU nodes of 64 cores."""
    from hetgym import ClusterSpec, NodeSpec

    return ClusterSpec(nodes=[
        NodeSpec(name="cpu", count=32, gpu_type=None, gpus=0, cpus=64, mem_gb=512),
        NodeSpec(name="k80", count=32, gpu_type="K80", gpus=8, cpus=64, mem_gb=512, sockets=2),
        NodeSpec(name="p100", count=48, gpu_type="P100", gpus=8, cpus=64, mem_gb=512, sockets=2),
        NodeSpec(name="v100", count=48, gpu_type="V100", gpus=8, cpus=64, mem_gb=512, sockets=2),
    ])


def bench_sim(n_jobs: int, seed: int = 0) -> dict[str, float]:
    """FIFO over ``n_jobs`` synthetic jobs on :func:`big_cluster`."""
    import baselines
    import hetgym
    from hetgym.generators import SyntheticGenerator
    from hetgym.specs import Scenario, SimOptions
    from hetgym.workload import Workload

    cluster = big_cluster()
    gen = SyntheticGenerator(devices=cluster.device_types, rate=1 / 5.0, duration="lognormal",
                             mean_duration=1800.0, workers={1: 0.7, 2: 0.15, 4: 0.1, 8: 0.05})
    t = _clock()
    tiny = Scenario(cluster=cluster, workload=Workload.from_frame(gen.generate(50, seed=seed)),
                    options=SimOptions(cpu_slot_cores=8))
    hetgym.simulate(tiny, baselines.make("fifo"), seed=seed)
    compile_s = _clock() - t
    t = _clock()
    df = gen.generate(n_jobs, seed=seed)
    sc = Scenario(cluster=cluster, workload=Workload.from_frame(df),
                  options=SimOptions(cpu_slot_cores=8))
    build_s = _clock() - t
    t = _clock()
    res = hetgym.simulate(sc, baselines.make("fifo"), seed=seed)
    wall = _clock() - t
    m = res.summary()
    return {"jobs": n_jobs, "events": m["events"], "decision_points": m["decision_points"],
            "compile_and_warmup_s": compile_s, "build_s": build_s, "simulate_s": wall,
            "loop_s": res.wall_time, "events_per_s": m["events"] / res.wall_time,
            "util_v100": m["util_v100"], "avg_wait": m["avg_wait"]}


def bench_env(n_steps: int, seed: int = 0) -> dict[str, float]:
    """Random masked policy on the default scenario (resets included)."""
    import gymnasium as gym

    import hetgym  # noqa: F401

    env = gym.make("HetCluster-v0").unwrapped  # no wrappers: the env itself is measured
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    for _ in range(200):  # warm-up (compile)
        a = rng.choice(np.flatnonzero(env.action_masks()))
        if any(env.step(a)[2:4]):
            env.reset()
    episodes = 0
    t = _clock()
    for _ in range(n_steps):
        idx = np.flatnonzero(env.action_masks())
        _, _, term, trunc, _ = env.step(int(idx[rng.integers(len(idx))]))
        if term or trunc:
            episodes += 1
            env.reset()
    wall = _clock() - t
    return {"steps": n_steps, "episodes": episodes, "wall_s": wall, "steps_per_s": n_steps / wall}


def vec_rate(vec, seconds: float, act, warmup: int = 20) -> dict[str, float]:
    """Aggregate steps per second of a vector env (``vec.num_envs`` envs) stepped with
    ``act(vec) -> actions`` for ``seconds`` (after ``warmup`` steps and ``reset(seed=0)``);
    autoreset included. Each step's outputs are held until the next step returns, as in a
    user's ``obs, rew, term, trunc, info = vec.step(a)`` loop (the batched env then keeps a
    finished episode's simulator for its unread ``episode_metrics``). The timing loop of this script and of bench_decision_vec.py."""
    out = vec.reset(seed=0)
    for _ in range(warmup):  # compile, first episodes
        out = vec.step(act(vec))
    n = vec.num_envs
    steps = 0
    t = _clock()
    while _clock() - t < seconds:
        for _ in range(10):
            out = vec.step(act(vec))  # held until the next step returns, as a user's loop does
        steps += 10 * n
    del out
    wall = _clock() - t
    return {"n_envs": n, "steps": steps, "wall_s": wall, "steps_per_s": steps / wall}


def random_masked(seed: int = 0):
    """``act`` for :func:`vec_rate`: uniform over each env's feasible actions (one numpy call
    for all envs)."""
    rng = np.random.default_rng(seed)

    def act(vec) -> np.ndarray:
        m = vec.action_masks()
        return (rng.random(m.shape) * m).argmax(axis=1)

    return act


PARALLEL = {"serial": False, "threads": True, "auto": None}


def bench_batched(n_envs: int, seconds: float, parallel: bool | None, seed: int = 0) -> dict[str, float]:
    """Random masked policy on ``n_envs`` batched envs of the default scenario (autoreset
    included): aggregate env steps per second. ``parallel``: the batch kernel (None:
    chosen as it runs, see hetgym.autopar)."""
    from hetgym.envs.batched import HetClusterVecEnv

    vec = HetClusterVecEnv(num_envs=n_envs, parallel=parallel)
    r = vec_rate(vec, seconds, random_masked(seed), warmup=max(20, 2000 // n_envs))
    r["parallel"] = parallel
    if vec._chooser is not None:
        r["chosen"] = "threads" if vec._chooser.best else "serial"
    return r


#: MaskablePPO settings of ``--train-settings``: rollout steps (all envs), minibatch,
#: epochs per rollout, torch threads. ``default`` is AgentConfig's (one torch thread);
#: ``fast`` is conf/experiment/train_fast.yaml's.
TRAIN_SETTINGS = {
    "default": {"rollout": 2048, "batch_size": 256, "n_epochs": 10, "threads": 1},
    "default_t2": {"rollout": 2048, "batch_size": 256, "n_epochs": 10, "threads": 2},
    "batch1024": {"rollout": 4096, "batch_size": 1024, "n_epochs": 10, "threads": 1},
    "fast": {"rollout": 4096, "batch_size": 1024, "n_epochs": 5, "threads": 1},
    "fast_t2": {"rollout": 4096, "batch_size": 1024, "n_epochs": 5, "threads": 2},
}


def bench_train(n_envs: int, timesteps: int, seed: int = 0, vec_env: str = "batched",
                n_procs: int = 1, setting: str = "default") -> dict[str, float]:
    """MaskablePPO (MLP 128x128) on ``n_envs`` batched envs of the default scenario (in
    ``n_procs`` worker processes with ``vec_env="batched_subproc"``) with the
    :data:`TRAIN_SETTINGS` ``setting`` (n_steps per env = rollout / n_envs, at least 16)."""
    import torch

    from agents.common.envtools import EnvConfig
    from agents.sb3.agent import AgentConfig, make_vec_env
    from hetgym import scenarios

    cfg = TRAIN_SETTINGS[setting]
    torch.set_num_threads(cfg["threads"])
    venv = make_vec_env(scenarios.DEFAULT, EnvConfig(), n_envs=n_envs, seed=seed,
                        vec_env=vec_env, n_procs=n_procs)
    n_steps = max(16, cfg["rollout"] // n_envs)
    model = AgentConfig(n_steps=n_steps, batch_size=cfg["batch_size"],
                        n_epochs=cfg["n_epochs"]).build(venv, seed=seed)
    model.learn(n_steps * n_envs)  # warm-up
    t = _clock()
    model.learn(timesteps, reset_num_timesteps=False)
    wall = _clock() - t
    venv.close()
    return {"n_envs": n_envs, "n_steps": n_steps, "timesteps": timesteps, "wall_s": wall,
            "steps_per_s": timesteps / wall, "setting": setting}


_CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
_clock = _CLOCKS["wall"]


def _ints(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}")


def main() -> None:
    """Run the benchmarks and print the figures."""
    from hetgym.cli import plain_doc
    p = argparse.ArgumentParser(description=plain_doc(__doc__), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--jobs", type=int, default=100_000)
    p.add_argument("--env-steps", type=int, default=50_000)
    p.add_argument("--skip-sim", action="store_true")
    p.add_argument("--skip-env", action="store_true")
    p.add_argument("--batched", type=_ints, default=[1, 8, 64, 256],
                   help="numbers of batched envs to measure (empty string: none)")
    p.add_argument("--seconds", type=float, default=5.0, help="seconds per batched measurement")
    p.add_argument("--modes", type=lambda t: [m for m in t.split(",") if m], default=["serial", "threads"],
                   help="batch kernels to measure: serial, threads, auto (chosen as it runs)")
    p.add_argument("--train", type=_ints, default=[],
                   help="numbers of batched envs for MaskablePPO training steps/s (needs torch)")
    p.add_argument("--train-steps", type=int, default=20_000)
    p.add_argument("--train-settings", type=lambda t: [x for x in t.split(",") if x],
                   default=["default"], help=f"MaskablePPO settings, of {sorted(TRAIN_SETTINGS)}")
    p.add_argument("--train-procs", type=_ints, default=[],
                   help="worker processes of batched envs for the --train sizes (batched_subproc)")
    p.add_argument("--clock", choices=sorted(_CLOCKS), default="wall",
                   help="time measured: wall clock, or the process's CPU time (on a shared "
                        "machine; the threaded batched figures then count both threads)")
    a = p.parse_args()
    global _clock
    _clock = _CLOCKS[a.clock]
    print(f"clock: {a.clock}")
    if not a.skip_sim:
        r = bench_sim(a.jobs)
        print(f"FIFO, {r['jobs']:,} jobs, 1,024-GPU hybrid cluster: {r['events']:,.0f} events, "
              f"{r['decision_points']:,.0f} decision points")
        print(f"  compile+warm-up {r['compile_and_warmup_s']:.2f} s (apart); build scenario "
              f"{r['build_s']:.2f} s; simulate {r['simulate_s']:.2f} s (event loop {r['loop_s']:.2f} s)"
              f" -> {r['events_per_s']:,.0f} events/s; util_v100 {r['util_v100']:.2f}, "
              f"avg wait {r['avg_wait']:.0f} s")
    if not a.skip_env:
        r = bench_env(a.env_steps)
        print(f"HetCluster-v0 random masked policy: {r['steps']:,} steps, {r['episodes']} episodes, "
              f"{r['wall_s']:.2f} s -> {r['steps_per_s']:,.0f} steps/s")
    for n in a.batched:
        for mode in a.modes if n >= 2 else ["serial"]:
            r = bench_batched(n, a.seconds, PARALLEL[mode])
            chosen = f" [{r['chosen']}]" if "chosen" in r else ""
            print(f"batched HetCluster-v0, N={n:>4} ({mode:>7}{chosen}): "
                  f"{r['steps']:,} steps in {r['wall_s']:.2f} s -> {r['steps_per_s']:,.0f} steps/s")
    for n in a.train:
        for setting in a.train_settings:
            r = bench_train(n, a.train_steps, setting=setting)
            print(f"MaskablePPO training on the batched env, N={n:>3}, {setting} "
                  f"({TRAIN_SETTINGS[setting]}, n_steps {r['n_steps']}): {r['timesteps']:,} steps "
                  f"in {r['wall_s']:.1f} s -> {r['steps_per_s']:,.0f} steps/s")
        for procs in a.train_procs:
            r = bench_train(n, a.train_steps, vec_env="batched_subproc", n_procs=procs)
            print(f"MaskablePPO training, N={n:>3} batched envs in {procs} worker process(es): "
                  f"{r['timesteps']:,} steps in {r['wall_s']:.1f} s -> {r['steps_per_s']:,.0f} steps/s")


if __name__ == "__main__":
    main()
