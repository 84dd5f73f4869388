"""Hadar and HadarE (:mod:`.schedulers`), with their parts (:mod:`.parts`), the compiled
search (:mod:`.compiled`, :mod:`.kernels`) and the decisions of a round (:mod:`.emit`).
"""
