"""Line scans of the project's own source, for tests that forbid a pattern in code."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path


def code_hits(root: Path, folders: Iterable[str], hit: Callable[[str], bool]) -> list[str]:
    """``"path:line: text"`` for every line of the ``*.py`` files under ``root / folder``
    (each folder in turn, files in sorted order) whose code, its ``#`` comment cut off,
    satisfies ``hit``. A folder that does not exist has no lines."""
    hits = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            for no, line in enumerate(path.read_text().splitlines(), 1):
                if hit(line.split("#", 1)[0]):
                    hits.append(f"{path.relative_to(root)}:{no}: {line.strip()}")
    return hits
