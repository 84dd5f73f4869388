"""Gavel's policies over GPU types, run in rounds (:mod:`.schedulers`), with its linear
programs (:mod:`.lp`, :mod:`.highs`, :mod:`.fifo`) and worker assignment (:mod:`.place`,
:mod:`.kernels`).
"""
