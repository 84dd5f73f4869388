"""Gymnasium environments of hetgym (the table of every id: docs/envs.md)."""

from hetgym.envs.elastic import HetClusterElasticEnv
from hetgym.envs.hetcluster import HetClusterEnv
from hetgym.envs.placement import HetClusterPlacementEnv
from hetgym.envs.rounds import HetClusterRoundsEnv

__all__ = ["HetClusterElasticEnv", "HetClusterEnv", "HetClusterPlacementEnv", "HetClusterRoundsEnv"]
