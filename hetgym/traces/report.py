"""What a trace loader kept and what it dropped, and why."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["LoadReport"]


@dataclass
class LoadReport:
    """Accounting of one load: every row read is either kept or dropped for a named reason.

    Invariant (checked by :meth:`check`): ``rows_read == rows_kept + sum(dropped.values())``.

    Attributes:
        source: The file (or folder) read.
        rows_read: Jobs (rows, JSON records, job ids) read from the source.
        rows_kept: Jobs in the returned job table.
        dropped: ``{reason: count}`` for every job left out, e.g. ``"status=Killed"``,
            ``"no_attempts"``, ``"negative_duration"``.
        notes: Free-text notes (mapping rules applied, parameters that matter).
    """

    source: str
    rows_read: int = 0
    rows_kept: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def drop(self, reason: str, count: int = 1) -> None:
        """Count ``count`` rows dropped for ``reason`` (zero counts are ignored)."""
        count = int(count)
        if count < 0:
            raise ValueError(f"LoadReport.drop: negative count {count} for {reason!r}")
        if count:
            self.dropped[reason] = self.dropped.get(reason, 0) + count

    @property
    def rows_dropped(self) -> int:
        """Total rows dropped, all reasons together."""
        return sum(self.dropped.values())

    def check(self) -> None:
        """Raise ``AssertionError`` if kept + dropped does not add up to read."""
        if self.rows_read != self.rows_kept + self.rows_dropped:
            raise AssertionError(
                f"{self.source}: rows_read={self.rows_read} but kept={self.rows_kept} + "
                f"dropped={self.rows_dropped} ({self.dropped})"
            )

    def merge(self, other: "LoadReport") -> None:
        """Add another report's counts into this one (for multi-file loads)."""
        self.rows_read += other.rows_read
        self.rows_kept += other.rows_kept
        for reason, n in other.dropped.items():
            self.drop(reason, n)
        for note in other.notes:
            if note not in self.notes:
                self.notes.append(note)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (used by the Parquet cache)."""
        return {
            "source": self.source,
            "rows_read": self.rows_read,
            "rows_kept": self.rows_kept,
            "dropped": dict(self.dropped),
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "LoadReport":
        """Inverse of :meth:`to_dict`."""
        return cls(
            source=str(d["source"]),
            rows_read=int(d["rows_read"]),
            rows_kept=int(d["rows_kept"]),
            dropped={str(k): int(v) for k, v in d.get("dropped", {}).items()},
            notes=[str(n) for n in d.get("notes", [])],
        )

    def __str__(self) -> str:
        head = f"{self.source}: read {self.rows_read} rows, kept {self.rows_kept}"
        if not self.dropped:
            return head + ", dropped 0"
        parts = ", ".join(f"{k}: {v}" for k, v in sorted(self.dropped.items(), key=lambda kv: -kv[1]))
        return f"{head}, dropped {self.rows_dropped} ({parts})"
