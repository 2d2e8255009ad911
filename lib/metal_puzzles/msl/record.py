"""The run record: everything one launch leaves behind for the layers above (outputs, per-thread
counts, findings, the access trace and step-through record when asked for, and why the run
stopped early if it did)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .counting.counters import Counter
from .findings.finding import Finding
from .findings.modes import StopReason
from .lang.errors import KernelRuntimeError, SourceRegistry
from .observe.cost import CostProfile
from .observe.stepper import Step
from .observe.trace import Recorder
from .thread_grid import Lanes


@dataclass
class Counts:
    """Per-thread access counters, indexed by the thread's linear position in the grid: one field
    per ``Counter``, named by its value."""

    global_reads: np.ndarray
    global_writes: np.ndarray
    shared_reads: np.ndarray
    shared_writes: np.ndarray
    atomics: np.ndarray

    def of(self, counter: Counter) -> np.ndarray:
        """One counter's count for every thread."""
        return getattr(self, counter.value)

    def max(self) -> dict[str, int]:
        """Each counter's largest count over the threads, by the counter's name."""
        return {c.value: int(self.of(c).max(initial=0)) for c in Counter}

    def of_thread(self, linear: int) -> dict[str, int]:
        """Each counter's count for one thread, by the counter's name."""
        return {c.value: int(self.of(c)[linear]) for c in Counter}


@dataclass
class RunResult:
    outputs: list[np.ndarray]
    counts: Counts
    findings: list[Finding]
    generated_source: str
    kernel_name: str
    lanes: Lanes
    trace: Recorder | None = None
    grid: tuple[int, int, int] = (1, 1, 1)
    threadgroup: tuple[int, int, int] = (1, 1, 1)
    output_names: list[str] = field(default_factory=list)
    input_names: list[str] = field(default_factory=list)
    inputs: list[np.ndarray] = field(default_factory=list)
    #: Declared shape of each threadgroup array (e.g. {'a_shared': (3, 3)}), for drawing.
    threadgroup_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    #: Step-through record (when launched with steps=True): one Step before each statement.
    steps: list[Step] | None = None
    #: The outputs' contents before the kernel ran (kept with a step-through record, so that the
    #: memory at any step can be rebuilt from the trace's writes).
    initial_outputs: list[np.ndarray] = field(default_factory=list)
    source: str = ""
    #: Why the kernel did not run to its end (None: it did).
    stopped: StopReason | None = None
    #: The cost profile (when launched with cost=...): SIMD efficiency, segments, bank conflicts,
    #: occupancy and a roofline time on a GPU model, per source line and per kernel.
    cost: CostProfile | None = None
    #: What the run did that would explain a wrong output, though nothing a GPU forbids happened
    #: (so no finding): several threads' atomic stores to one element, positions computed from
    #: the threadgroup size in a partial threadgroup. A verdict shows them under a wrong output.
    output_hints: list[str] = field(default_factory=list)

    @property
    def trace_truncated(self) -> bool:
        """The automatic trace stopped recording before the kernel ended (it keeps a bounded
        number of accesses; launch with trace=True for all of them)."""
        return self.trace is not None and self.trace.truncated

    @property
    def errors(self) -> list[Finding]:
        """The findings that are errors (not notes)."""
        return [f for f in self.findings if f.is_error]


class SanitizerError(KernelRuntimeError):
    """The run produced findings (out-of-bounds access, race, ...) and the mode is 'error', or it
    ran past its step budget."""

    def __init__(self, findings: list[Finding], result: RunResult | None = None,
                 registry: SourceRegistry | None = None) -> None:
        self.findings = findings
        self.result = result
        first = findings[0]
        more = f" (and {len(findings) - 1} more finding(s))" if len(findings) > 1 else ""
        thread = first.threads[0]["grid"] if first.threads else None
        super().__init__(f"{first.kind}: {first.message}{more}", first.pos, None, registry)
        self.thread = thread
