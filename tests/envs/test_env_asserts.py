"""HetCluster-v0 on the toy scenario, asserted exactly, through the public env API only.

toy-3jobs: devices ``(cpu, v100)``, one CPU slot and one V100, three jobs at t=0 with
durations (GPU, CPU) = (3, 4), (4, 6), (5, 10) s. With ``window=4`` action
``k * 2 + c`` starts the k-th waiting job on device ``c`` (0 = cpu, 1 = v100) and
action 8 waits.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from hetgym.decisions import SchedulingError

CPU, V100, WAIT = 0, 1, 8


def _toy(**kw):
    env = gym.make("HetCluster-v0", scenario="toy-3jobs", window=4, **kw)
    _, info = env.reset(seed=0)
    return env, info


def _first_feasible_episode(env):
    """Roll the first feasible action; every step's (action, reward, info)."""
    steps, done = [], False
    while not done:
        a = int(np.flatnonzero(env.unwrapped.action_masks())[0])
        _, r, term, trunc, info = env.step(a)
        steps.append((a, r, info))
        done = term or trunc
    return steps, term, trunc


def test_first_feasible_rewards_by_hand():
    """J1 on the CPU (0-4 s), J2 on the V100 (0-4 s), then J3 on the CPU (4-14 s).

    Step rewards (jct term, scale 3600 s): 0 (J2 can start at once), -3 jobs x 4 s,
    -1 job x 10 s; the return is minus the total JCT (4 + 4 + 14 = 22 s) in hours.
    """
    env, info = _toy()
    assert info["time"] == 0.0 and info["queued"] == 3
    steps, term, trunc = _first_feasible_episode(env)
    assert term and not trunc
    assert [a for a, _, _ in steps] == [0 * 2 + CPU, 0 * 2 + V100, 0 * 2 + CPU]
    assert [i["time"] for _, _, i in steps] == [0.0, 4.0, 14.0]
    np.testing.assert_allclose([r for _, r, _ in steps], [0.0, -12 / 3600, -10 / 3600], rtol=1e-12)
    jct = [i["reward_terms"]["jct"] for _, _, i in steps]
    assert jct == [r for _, r, _ in steps]  # objective jct, weight 1
    assert sum(jct) == pytest.approx(-22 / 3600, rel=1e-12)
    m = steps[-1][2]["episode_metrics"]
    assert m["avg_jct"] * m["jobs"] == pytest.approx(22.0, rel=1e-12)
    assert sum(jct) == pytest.approx(-m["avg_jct"] * m["jobs"] / 3600, rel=1e-12)


def test_other_reward_terms_by_hand():
    """Same episode: slowdown = -(sum of JCT / best duration) = -(4/3 + 4/4 + 14/5);
    makespan = -14 s / 3600; a term never rewards (each step's term is <= 0)."""
    env, _ = _toy()
    steps, _, _ = _first_feasible_episode(env)
    terms = [i["reward_terms"] for _, _, i in steps]
    assert sum(t["slowdown"] for t in terms) == pytest.approx(-(4 / 3 + 4 / 4 + 14 / 5), rel=1e-12)
    assert [t["slowdown"] for t in terms] == pytest.approx([0.0, -(4 / 3 + 4 / 4 + 4 / 5), -10 / 5])
    assert sum(t["makespan"] for t in terms) == pytest.approx(-14 / 3600, rel=1e-12)


def test_invalid_action_wait_really_waits():
    """After J1 starts on the CPU, an infeasible action (empty slot 3) is a wait: time
    moves to the next event (J1 ends, t=4), no job starts, the reward is the wait's."""
    env, _ = _toy()
    _, r0, *_ = env.step(0 * 2 + CPU)
    assert r0 == 0.0
    mask = env.unwrapped.action_masks()
    assert mask[WAIT] and not mask[3 * 2 + CPU]
    _, r, term, trunc, info = env.step(3 * 2 + CPU)
    assert info["invalid_action"] is True
    assert not term and not trunc
    assert info["time"] == 4.0
    assert (info["running"], info["queued"], info["done"]) == (0, 2, 1)
    assert r == pytest.approx(-3 * 4 / 3600, rel=1e-12)
    # the same as an explicit wait from the same state
    env2, _ = _toy()
    env2.step(0 * 2 + CPU)
    _, r2, _, _, info2 = env2.step(WAIT)
    assert info2["invalid_action"] is False
    assert (info2["time"], info2["running"], info2["queued"], info2["done"], r2) == \
        (info["time"], info["running"], info["queued"], info["done"], r)


def test_invalid_action_when_wait_is_masked_does_not_end_the_episode():
    """At reset nothing runs and every job has arrived: 'wait' is masked. An infeasible
    action then must not end the episode early, and the episode can still complete."""
    env, info = _toy()
    assert not info["action_mask"][WAIT]
    _, _, term, trunc, info = env.step(3 * 2 + CPU)
    assert not term and not trunc
    _, term, trunc = _first_feasible_episode(env)
    assert term and not trunc


def test_invalid_action_raise_names_the_action_and_changes_nothing():
    env, _ = _toy(invalid_action="raise")
    with pytest.raises(SchedulingError, match=r"^action 8\b.*wait"):
        env.step(WAIT)  # nothing runs, every job arrived: wait is masked
    env.step(0 * 2 + CPU)
    before = env.unwrapped.action_masks()
    with pytest.raises(SchedulingError, match=r"^action 6\b.*slot 3"):
        env.step(3 * 2 + CPU)
    with pytest.raises(SchedulingError, match=r"^action 0\b.*cpu"):
        env.step(0 * 2 + CPU)  # J2 on the CPU that J1 holds
    np.testing.assert_array_equal(env.unwrapped.action_masks(), before)
    _, _, _, _, info = env.step(0 * 2 + V100)  # still at t=0, J2 can take the V100
    assert info["time"] == 4.0 and info["done"] == 2
