"""TOPO-AWARE, TOPO-AWARE-P and the FCFS and BF baselines (:mod:`.schedulers`), with the
utility model and subset search (:mod:`.parts`, :mod:`.kernels`).
"""
