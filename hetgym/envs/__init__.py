"""Gymnasium environments of hetgym."""

from hetgym.envs.hetcluster import HetClusterEnv

__all__ = ["HetClusterEnv"]
