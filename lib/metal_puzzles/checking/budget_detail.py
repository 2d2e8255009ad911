"""Which reads and writes put a kernel over its per-thread budget: the thread with the most of a
counted kind, and its accesses (element and line), read from a traced run of the test where that
count peaked. "uses 3 global reads per thread" becomes "thread 2 reads a[2] (line 3), a[2]
(line 4) and a[3] (line 4)": where to look, in the learner's own code."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..msl import Counter, RunResult
from ..msl.lang.types import AddressSpace
from ..msl.observe.trace import ElementAccess
from ..msl.program import AUTO_TRACE_ACCESSES
from .case import Case

#: Accesses named in one sentence; the rest are counted.
SHOWN = 6
#: The most accesses of the counted kind (per-thread count times threads) a test may make for its
#: detail to be traced again: a traced run follows every value's sources, and a running softmax
#: over a long cache carries all of them along (prefill attention reading each key per query on
#: 520 keys: 533,000 reads, minutes and more than 20 GB traced). The simulator's own automatic
#: trace stops at this many accesses too.
DETAIL_ACCESSES = AUTO_TRACE_ACCESSES


def worst_thread_accesses(run: RunResult, counter: Counter | str) -> str | None:
    """'thread 2 reads a[2] (line 3), ...' for the thread with the highest ``counter`` in a traced
    run, or None (an untraced run, or no thread made such an access)."""
    if run.trace is None:
        return None
    counter = Counter(counter)
    spaces, kind = counter.spaces, counter.access
    per_thread = np.asarray(run.counts.of(counter))
    if per_thread.size == 0 or per_thread.max(initial=0) == 0:
        return None
    linear = int(np.argmax(per_thread))
    lanes = np.flatnonzero(np.asarray(run.lanes.grid_linear) == linear)
    if lanes.size == 0:
        return None
    lane = int(lanes[0])
    # Global counters count the kernel's inputs and outputs, not the a_shape-style parameters MLX adds.
    buffers = set(run.input_names) | set(run.output_names)
    accesses = [a for a in run.trace.element_accesses(lane=lane) if a.kind == kind and a.space in spaces
                and (a.space == AddressSpace.THREADGROUP or a.buffer in buffers)]
    if not accesses:
        return None
    return f"{run.lanes.label(lane)} {kind.verb} {_listing(accesses)}"


def _listing(accesses: list[ElementAccess]) -> str:
    named = [f"{a.buffer}[{a.index}] (line {a.line})" for a in accesses[:SHOWN]]
    rest = len(accesses) - len(named)
    if rest > 0:
        return ", ".join(named) + f" and {rest} more"
    return named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]


def count_details(over: list[str], outcomes_counts: list[tuple[Case, dict[str, int]]],
                  traced: Callable[[Case], RunResult]) -> dict[str, str]:
    """For each counter in ``over``, the worst thread's accesses on the test where it peaked:
    ``outcomes_counts`` pairs each test with its per-thread maxima; ``traced`` runs a test again
    with a trace (only for the tests needed, once each, and none past ``DETAIL_ACCESSES``)."""
    details: dict[str, str] = {}
    runs: dict[int, RunResult] = {}
    for counter in over:
        peak = max(range(len(outcomes_counts)), key=lambda k: outcomes_counts[k][1].get(counter, 0), default=None)
        if peak is None:
            continue
        case, counts = outcomes_counts[peak]
        if counts.get(counter, 0) * int(np.prod(case.grid)) > DETAIL_ACCESSES:
            continue  # too costly to trace again: the count's sentence stands without the detail
        if peak not in runs:
            try:
                runs[peak] = traced(outcomes_counts[peak][0])
            except Exception:  # the detail is a courtesy; the verdict stands without it
                continue
        text = worst_thread_accesses(runs[peak], counter)
        if text is not None:
            details[counter] = text
    return details


__all__ = ["worst_thread_accesses", "count_details"]
