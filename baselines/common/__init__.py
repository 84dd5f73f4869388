"""Parts shared by the baseline families: typed parts (:mod:`.parts`), Numba kernels
(:mod:`.kernels`), the free-resource ledger of round decisions (:mod:`.ledger`), round
boundaries (:mod:`.rounds`) and heterogeneity-unaware device choice (:mod:`.unaware`).
"""
