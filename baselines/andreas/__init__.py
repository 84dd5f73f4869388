"""ANDREAS Randomized Greedy and the first-principle methods it is compared with
(:mod:`.schedulers`); the compiled search is :mod:`.kernel`.
"""
