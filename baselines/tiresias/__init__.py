"""Tiresias (:mod:`.schedulers`, compiled walk in :mod:`.kernels`) and YARN-CS, the
capacity scheduler it is compared with (:mod:`.yarn`).
"""
