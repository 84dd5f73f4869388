"""hetgym.autopar.KernelChooser's paired trials (both kernels timed on the same calls) and
its bound on the calls between trials; the unpaired rule is tested with the batched env
(tests/envs/test_refill.py)."""

from __future__ import annotations

import numpy as np

from hetgym.autopar import BOTH, KernelChooser


def drive(ch: KernelChooser, speed: dict, calls: int, rng: np.random.Generator,
          now: list) -> list[int]:
    """``calls`` calls whose work swings 20x from call to call (log-uniform), kernel ``k``
    taking ``speed[k] x work`` seconds; on a BOTH call both are timed."""
    picks = []
    for _ in range(calls):
        work = float(np.exp(rng.uniform(0.0, np.log(20.0))))
        k = ch.pick()
        picks.append(k)
        if k == BOTH:
            ch.record_both(speed[0] * work, speed[1] * work)
            now[0] += (speed[0] + speed[1]) * work
        else:
            ch.record(k, speed[k] * work)
            now[0] += speed[k] * work
    return picks


def test_paired_trials_keep_the_faster_kernel_when_work_swings() -> None:
    now = [0.0]
    rng = np.random.default_rng(1)
    ch = KernelChooser(share=0.05, clock=lambda: now[0], paired=True)
    picks = drive(ch, {0: 1.0, 1: 0.8}, 4000, rng, now)  # threads 20 % faster
    assert ch.best == 1
    trials = picks.count(BOTH)
    assert 0 < trials < 0.1 * len(picks)  # trials are few ...
    assert picks[200:].count(0) == 0  # ... and the kept kernel is the only one used between them
    drive(ch, {0: 1.0, 1: 1.25}, 4000, rng, now)  # the other core gets busy
    assert ch.best == 0
    drive(ch, {0: 1.0, 1: 0.8}, 4000, rng, now)
    assert ch.best == 1


def test_unpaired_trials_never_return_both() -> None:
    now = [0.0]
    ch = KernelChooser(share=0.05, clock=lambda: now[0])
    picks = drive(ch, {0: 1.0, 1: 0.8}, 2000, np.random.default_rng(2), now)
    assert BOTH not in picks and {0, 1} <= set(picks)


def test_both_calls_alternate_which_kernel_runs_first() -> None:
    now = [0.0]
    ch = KernelChooser(clock=lambda: now[0], paired=True, probe_len=6)
    firsts = []
    for _ in range(40):
        k = ch.pick()
        if k == BOTH:
            firsts.append(ch.first_of_both())
            ch.record_both(1.0, 2.0)
        else:
            ch.record(k, 1.0)
        now[0] += 1.0
    assert len(firsts) == 6 and firsts == [firsts[0], 1 - firsts[0]] * 3
    assert ch.best == 0  # 1.0 against 2.0 on every call


def run_long_then_short(ch: KernelChooser, now: list) -> list[int]:
    """1,000 calls: the first 20 take 1,000 s (kernel 1) or 2,000 s (kernel 0), the rest
    1 s or 2 s."""
    picks = []
    for i in range(1000):
        k = ch.pick()
        picks.append(k)
        scale = 1000.0 if i < 20 else 1.0
        if k == BOTH:
            ch.record_both(2.0 * scale, scale)
            now[0] += 3.0 * scale
        else:
            t = scale * (1.0 if k == 1 else 2.0)
            ch.record(k, t)
            now[0] += t
    return picks


def test_max_gap_bounds_the_calls_between_trials() -> None:
    """A trial made while calls were long puts the next, by the time rule, past thousands
    of short calls; the bound in calls still calls one every ``max_gap`` calls."""
    now = [0.0]
    unbounded = run_long_then_short(KernelChooser(clock=lambda: now[0], paired=True), now)
    assert unbounded.count(BOTH) == 6  # the first trial only
    now = [0.0]
    picks = run_long_then_short(KernelChooser(clock=lambda: now[0], paired=True, max_gap=50), now)
    starts = [i for i, k in enumerate(picks) if k == BOTH and (i == 0 or picks[i - 1] != BOTH)]
    assert len(starts) >= 15 and max(np.diff(starts)) <= 50 + 6
