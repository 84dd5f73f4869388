"""The AlloX family (:mod:`.schedulers`): AlloX, AlloX+ (:mod:`.plus`), the fair-sharing
baselines (:mod:`.drf`), the straightforward ones (:mod:`.naive`) and their parts
(:mod:`.machines`, :mod:`.shares`).
"""
