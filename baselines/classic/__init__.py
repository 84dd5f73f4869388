"""Classic schedulers: FIFO, SJF and SRPT (:mod:`.schedulers`), with SRPT's compiled
decision point (:mod:`.srpt_plan`, :mod:`.srpt_kernels`, :mod:`.srpt_decide`, :mod:`.srpt_arrays`).
"""
