"""Serial or threaded kernel chooser of the batched env: :mod:`hetgym.autopar` (moved there
so that schedulers can use it without importing the environments)."""

from hetgym.autopar import KernelChooser, prefer_workqueue

__all__ = ["KernelChooser", "prefer_workqueue"]
