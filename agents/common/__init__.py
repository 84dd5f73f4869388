"""What every agent sub-package shares: the adapter that runs a policy as a ``hetgym``
scheduler (:mod:`agents.common.adapter`), the env arguments, masks and trace windows
(:mod:`agents.common.envtools`) and the loading of model files without unpickling
(:mod:`agents.common.safe_load`). None of them imports torch at import time."""
