"""What an access does to an element: read it, write it, or update it atomically. The lowest
word of the run: memory records it, the counters count by it, the trace and diagrams draw it."""

from __future__ import annotations

from ...compat import StrEnum


class AccessKind(StrEnum):
    """What an access does to an element."""

    READ = "read"
    WRITE = "write"
    ATOMIC = "atomic"  # a read-modify-write

    @property
    def verb(self) -> str:
        """What a thread does with this access, as messages say it ('thread 3 reads a[9]')."""
        return {AccessKind.READ: "reads", AccessKind.WRITE: "writes", AccessKind.ATOMIC: "atomically updates"}[self]
