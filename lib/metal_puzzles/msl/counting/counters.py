"""The per-thread access counters: what a learner's budget limits and the score table shows.

``Counter`` is the one list of them. Each member says what a learner reads for it (``label``:
"uses 3 global reads per thread"), which memory spaces it counts and which accesses. The run
record's ``Counts``, a puzzle's ``Budget``, the budget details, the score table and the explorer
all take their counters from here, so a new counter is added in this module (and given a field in
``Counts`` and ``Budget``, which tests hold to this list).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...compat import StrEnum
from ..lang.types import AddressSpace
from .access_kind import AccessKind


class Counter(StrEnum):
    """One per-thread counter. Its value is the name of its field in ``Counts`` and ``Budget``."""

    GLOBAL_READS = "global_reads"
    GLOBAL_WRITES = "global_writes"
    SHARED_READS = "shared_reads"
    SHARED_WRITES = "shared_writes"
    ATOMICS = "atomics"

    @property
    def label(self) -> str:
        """What the learner reads: 'global reads' ('uses 3 global reads per thread')."""
        return _DETAILS[self].label

    @property
    def heading(self) -> str:
        """The label as a table's column heading: 'Global Reads'."""
        return self.label.title()

    @property
    def spaces(self) -> tuple[AddressSpace, ...]:
        """The memory spaces whose accesses this counter counts."""
        return _DETAILS[self].spaces

    @property
    def access(self) -> AccessKind:
        """The kind of access it counts."""
        return _DETAILS[self].access


@dataclass(frozen=True)
class CounterDetails:
    label: str
    spaces: tuple[AddressSpace, ...]
    access: AccessKind


#: 'Global' memory is the kernel's buffers, device or constant; 'shared' is threadgroup memory.
_GLOBAL = (AddressSpace.DEVICE, AddressSpace.CONSTANT)
_SHARED = (AddressSpace.THREADGROUP,)

#: Every counter's details (a test checks that each member has its entry).
_DETAILS: dict[Counter, CounterDetails] = {
    Counter.GLOBAL_READS: CounterDetails("global reads", _GLOBAL, AccessKind.READ),
    Counter.GLOBAL_WRITES: CounterDetails("global writes", _GLOBAL, AccessKind.WRITE),
    Counter.SHARED_READS: CounterDetails("shared reads", _SHARED, AccessKind.READ),
    Counter.SHARED_WRITES: CounterDetails("shared writes", _SHARED, AccessKind.WRITE),
    # Atomic operations on device and threadgroup memory alike (constant memory has none).
    Counter.ATOMICS: CounterDetails("atomic operations", (AddressSpace.DEVICE, AddressSpace.THREADGROUP),
                                    AccessKind.ATOMIC),
}


class Counted(StrEnum):
    """Which pair of counters a memory object's plain reads and writes increment. Memory that is
    free to use (thread-private arrays, program constants, shape parameters) has none."""

    GLOBAL = "global"  # the kernel's input and output buffers
    SHARED = "shared"  # threadgroup memory

    @property
    def reads(self) -> Counter:
        return Counter(f"{self.value}_reads")

    @property
    def writes(self) -> Counter:
        return Counter(f"{self.value}_writes")


__all__ = ["Counter", "CounterDetails", "Counted"]
