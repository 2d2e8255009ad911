"""The automatic access trace is bounded at its cause.

Launches of up to 1024 threads record a trace unless told otherwise, and a trace grows with
every access, not with the threads: one thread per query of an attention kernel looping over
the sequence recorded millions of accesses (minutes and gigabytes). The automatic trace stops
after ``AUTO_TRACE_ACCESSES`` element accesses and says so (``RunResult.trace_truncated``);
``trace=True`` keeps everything, ``trace=False`` records nothing.
"""

from __future__ import annotations

import numpy as np

from metal_puzzles.msl import simulate
from metal_puzzles.msl.program import AUTO_TRACE_ACCESSES

# Each of THREADS threads reads a long row: THREADS * STEPS reads plus THREADS writes in all.
# (The last value read is kept, not a sum, so that provenance stays one element per value.)
LONG_LOOP = """
    uint i = thread_position_in_grid.x;
    float last = 0.0f;
    for (int k = 0; k < STEPS; ++k) {
        last = a[k] + float(k);
    }
    out[i] = last;
"""


THREADS = 1024  # the largest launch traced automatically
LONG = AUTO_TRACE_ACCESSES // THREADS + 5  # enough steps to pass the bound


def _run(steps: int, trace):
    a = np.ones(steps, dtype=np.float32)
    return simulate("long", ["a"], ["out"], LONG_LOOP, inputs=[a], output_shapes=[(THREADS,)],
                    output_dtypes=["float32"], grid=(THREADS, 1, 1), threadgroup=(256, 1, 1),
                    template=[("STEPS", steps)], trace=trace)


def _recorded(res) -> int:
    return sum(e.lanes.size for e in res.trace.accesses())


def test_small_runs_are_traced_completely() -> None:
    res = _run(10, None)
    assert not res.trace_truncated
    assert _recorded(res) == THREADS * 10 + THREADS


def test_automatic_trace_stops_at_the_bound_and_says_so() -> None:
    res = _run(LONG, None)
    assert res.outputs[0].tolist() == [float(LONG)] * THREADS  # the run itself is complete
    assert res.trace_truncated
    assert AUTO_TRACE_ACCESSES - THREADS < _recorded(res) <= AUTO_TRACE_ACCESSES
    # Nothing after the stop: the last event recorded is a read of the loop, not the final write.
    assert res.trace.accesses()[-1].kind == "read"


def test_explicit_trace_keeps_every_access() -> None:
    res = _run(LONG, True)
    assert not res.trace_truncated
    assert _recorded(res) == THREADS * LONG + THREADS


def test_trace_false_records_nothing() -> None:
    res = _run(10, False)
    assert res.trace is None and not res.trace_truncated
