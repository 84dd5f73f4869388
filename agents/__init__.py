"""Learned policies (Stable-Baselines3) and the adapter that runs them through ``hetgym.simulate``.

Importing ``agents`` does not import torch; the training modules do.
"""
