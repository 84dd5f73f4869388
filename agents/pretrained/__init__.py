"""The shipped models: their files and cards in this folder (``<name>.zip`` or ``<name>.pt``
with ``<name>.json``) and the code that lists, loads and ships them
(:mod:`agents.pretrained.registry`; ``agents.pretrained_names``, ``agents.load_pretrained``)."""
