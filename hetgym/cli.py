"""Small helpers shared by the command-line entry points (``python -m hetgym.compare``,
``scripts/*.py``)."""

from __future__ import annotations

import re

__all__ = ["plain_doc"]


def plain_doc(doc: str | None) -> str:
    """``doc`` without its reST markup (``:func:`x` `` -> ``x``, double backquotes
    dropped), for ``--help``."""
    return re.sub(r":\w+:`~?([^`]+)`", r"\1", doc or "").replace("``", "")
