"""Suite-wide pytest hooks.

``HETGYM_COMPILE_LOG=path python -m pytest ...`` records every Numba compilation of the run
(a ``numba:compile`` listener, the pattern of ``scripts/bench_startup.py``'s
``compile_recorder``): one tab-separated line per compilation with own CPU seconds (nested
compilations of callees taken out; CPU, not wall clock, so that a busy machine does not
inflate them), inclusive CPU seconds, the dispatcher, the signature and the
test that triggered it. Loads from Numba's file cache are not compilations and are not
listed. A last line ``# cpu_s`` gives the process's CPU seconds and its children's. Under
pytest-xdist each worker writes ``path.<worker id>``. Without the variable
nothing is installed (Numba is not imported here).

Under pytest-xdist (``-n 2``) the workers share Numba's file cache. Numba writes each cache
file through a temporary file and ``os.replace``, but ``IndexDataCacheFile.save`` reads the
function's index, picks the first free data-file number and writes both back: two workers
saving *different* signatures of one function at the same moment can both pick number 1, and
the index of one then names the other's machine code. Each worker therefore holds an
exclusive ``flock`` on the cache directory around that read-modify-write (a few milliseconds
per compilation; loads need no lock: files are replaced atomically).
"""

from __future__ import annotations

import fcntl
import functools
import os
import resource
import time

import pytest

_LOG = os.environ.get("HETGYM_COMPILE_LOG")
_REC = None  # the listener (hetgym.compile_log) while HETGYM_COMPILE_LOG is set


def _serialise_numba_cache_saves() -> None:
    """Wrap Numba's cache-index update in an exclusive ``flock`` on the cache directory
    (Linux locks directories too: no lock file is left behind)."""
    from numba.core import caching

    save = caching.IndexDataCacheFile.save

    @functools.wraps(save)
    def locked_save(self, key, data):
        fd = os.open(self._cache_path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return save(self, key, data)
        finally:
            os.close(fd)  # releases the lock

    caching.IndexDataCacheFile.save = locked_save


def pytest_configure(config: pytest.Config) -> None:
    global _REC
    if os.environ.get("PYTEST_XDIST_WORKER"):
        _serialise_numba_cache_saves()
    if not _LOG:
        return
    from numba.core import event

    from hetgym.compile_log import compile_listener

    _REC = compile_listener(time.process_time)
    _REC.tag = "(collection)"
    event.register("numba:compile", _REC)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if _REC is not None:
        _REC.tag = item.nodeid


def pytest_unconfigure(config: pytest.Config) -> None:
    if _REC is None or not _LOG:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    path = f"{_LOG}.{worker}" if worker else _LOG
    with open(path, "w") as fh:
        fh.write("own_s\tinclusive_s\tdispatcher\tsignature\ttest\n")
        fh.writelines(f"{own:.4f}\t{total:.4f}\t{name}\t{sig}\t{test}\n"
                      for own, total, name, sig, test in _REC.rows)
        me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        fh.write(f"# cpu_s {me.ru_utime + me.ru_stime:.1f} children {kids.ru_utime + kids.ru_stime:.1f}\n")
