"""Bad constructor arguments of every registered env give a ValueError naming the argument
(hetgym.envs.args), before anything is built."""

from __future__ import annotations

import gymnasium as gym
import pytest

import hetgym  # noqa: F401  (registers the ids)
from hetgym.envs.args import count_arg, positive_arg

IDS = ["HetCluster-v0", "HetClusterPlacement-v0", "HetClusterElastic-v0", "HetClusterRounds-v0"]

BAD = [
    ({"window": 0}, "window must be >= 1, got 0"),
    ({"window": "a"}, "window must be an integer >= 1, got 'a'"),
    ({"window": 2.5}, "window must be an integer >= 1, got 2.5"),
    ({"reward_scale": -1}, "reward_scale must be > 0 seconds per reward unit, got -1"),
    ({"reward_scale": 0}, "reward_scale must be > 0 seconds per reward unit, got 0"),
    ({"time_scale": 0}, "time_scale must be > 0 seconds, got 0"),
    ({"max_steps": 0}, "max_steps must be >= 1, got 0"),
]


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("kwargs,message", BAD)
def test_bad_argument_names_itself(env_id: str, kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(".", r"\.")):
        gym.make(env_id, n_jobs=8, **kwargs)


def test_window_arguments_of_the_two_slot_envs() -> None:
    with pytest.raises(ValueError, match="run_window must be >= 1, got 0"):
        gym.make("HetCluster-v0", preemption=True, run_window=0)
    gym.make("HetCluster-v0", n_jobs=8, run_window=0)  # no preemption: run_window unused
    with pytest.raises(ValueError, match="run_window must be >= 0, got -1"):
        gym.make("HetClusterElastic-v0", run_window=-1)
    with pytest.raises(ValueError, match="max_candidates must be >= 1, got 0"):
        gym.make("HetClusterPlacement-v0", max_candidates=0)


def test_checks_accept_numpy_numbers_and_refuse_bools() -> None:
    import numpy as np

    assert count_arg("w", np.int64(3)) == 3 and isinstance(count_arg("w", np.int64(3)), int)
    assert positive_arg("s", np.float32(2.0), "s") == 2.0
    with pytest.raises(ValueError, match="w must be an integer >= 1, got True"):
        count_arg("w", True)
    with pytest.raises(ValueError, match="s must be > 0 s, got nan"):
        positive_arg("s", float("nan"), "s")


@pytest.mark.parametrize("env_id", IDS)
def test_scenario_kwargs_with_a_scenario_object_are_refused(env_id: str) -> None:
    from hetgym import scenarios

    sc = scenarios.get("toy-3jobs")
    with pytest.raises(ValueError, match=r"scenario_kwargs \['n_jobs'\] apply to a scenario name"):
        gym.make(env_id, scenario=sc, scenario_kwargs={"n_jobs": 5})
    gym.make(env_id, scenario=sc, scenario_kwargs={})  # nothing to ignore
