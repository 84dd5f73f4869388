"""Scenario presets of the source papers (data, not schedulers).

=================  ==========================================  ==========================
name               what                                        module
=================  ==========================================  ==========================
``allox-hybrid``   AlloX's simulated hybrid cluster (sec. 5.1)  :mod:`hetgym.presets.allox`
``allox-paper``    the same in the paper's regime (5.1, 5.2)   :mod:`hetgym.presets.allox_paper`
``fitgpp-lab``     FitGpp's 84-node lab workload (sec. 4)       :mod:`hetgym.presets.fitgpp`
``andreas-sim``    ANDREAS' simulated V100/T4 cluster (V-B)     :mod:`hetgym.presets.andreas`
``hadar-sim``      Hadar's 60-GPU Philly simulation (sec. IV)  :mod:`hetgym.presets.hadar`
``hadar-aws``      Hadar's 5-GPU AWS testbed, one mix (VI-A)   :mod:`hetgym.presets.hadar`
=================  ==========================================  ==========================

Each module registers its scenarios with :func:`hetgym.scenarios.register` on import;
``hetgym.scenarios`` imports them lazily, so ``hetgym.scenarios.names()`` lists them.
Trace-based presets live in :mod:`hetgym.presets.traces`. The schedulers that the papers
propose live in ``baselines``, which uses these presets; ``hetgym`` never imports it.
"""
