"""FitGpp and the preemptive baselines it is compared with (:mod:`.schedulers`), with
its parts (:mod:`.parts`) and preemption rules (:mod:`.preemption`).
"""
