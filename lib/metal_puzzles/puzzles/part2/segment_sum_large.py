"""Puzzle II.5: Segment Sum (Large) — one threadgroup per (segment, channel), threads cooperate."""

import numpy as np

from ...checking import Budget, Case, Puzzle
from ...checking.inputs import ceil_div, exclusive_offsets, lengths
from ..catalogue.entry import Entry
from .segment_sum import SPEC_SOURCE, segment_case, segment_sum_spec

TG = 8
LONGEST = 100  # the longest segment in any test; the read budget is stated with it

HEADER = """\
constant uint TG = 8;
"""


def grid_for(segments: int, channels: int) -> tuple[int, int, int]:
    """Threadgroup (c, k) of TG threads sums channel c of segment k."""
    return (TG, channels, segments)


def _case(rng: np.random.Generator, lens: np.ndarray, channels: int, what: str) -> Case:
    inputs = segment_case(rng, lens, channels)
    label = f"hidden test: {len(lens)} segments of up to {int(max(lens))} rows, {channels} channels, {what}"
    return Case(inputs, (len(lens), channels), grid_for(len(lens), channels), (TG, 1, 1), label)


def hidden(rng: np.random.Generator) -> list[Case]:
    return [
        _case(rng, np.array([LONGEST, 3, 0, 57], np.int32), 2, "one of 100 rows"),
        _case(rng, np.array([7], np.int32), 1, "shorter than a threadgroup"),
        _case(rng, lengths(rng, 6, 40, empty=2), 3, "two empty"),
        _case(rng, np.array([0, 16, 9, 0], np.int32), 2, "empty first and last"),
    ]


VISIBLE_LENGTHS = np.array([5, 0, 19], dtype=np.int32)
VISIBLE = Case((np.arange(48, dtype=np.float32).reshape(24, 2), VISIBLE_LENGTHS, exclusive_offsets(VISIBLE_LENGTHS)),
               (3, 2), grid_for(3, 2), (TG, 1, 1))

SETUP = """\
x = mx.arange(48, dtype=mx.float32).reshape(24, 2)
lengths = mx.array([5, 0, 19], dtype=mx.int32)
offsets = mx.cumsum(lengths) - lengths
output_shape = (3, 2)"""

PUZZLE = Puzzle(
    id="segment_sum_large",
    number="II.5",
    title="Segment Sum (Large)",
    kernel_name="segment_sum_large",
    input_names=("x", "lengths", "offsets"),
    description=f"""\
The same segment sum as II.4, but now segments can be long (up to {LONGEST} rows in the tests).
With one thread per output, the thread owning a long segment reads every one of its rows while
its neighbours with short segments sit idle: the whole launch waits for the slowest thread.

So give every output a whole **threadgroup**: the grid is `(TG, C, K)` with threadgroups of
`TG = 8` threads, so threadgroup `(0, c, k)` (see `threadgroup_position_in_grid`) owns
`out[k, c]`. Its threads take turns through the segment: thread `j` adds rows
`j, j + TG, j + 2*TG, ...` of the segment into a private sum. Then the group combines its 8
partial sums: store them in threadgroup memory, reduce them as in Part I's prefix-sum puzzle
(pairs at distance 1, 2, 4 with a barrier between rounds), and let thread 0 write the result.

A shortcut for the combining step: threads of a threadgroup are executed in **SIMD-groups** of
32 lanes, and `simd_sum(v)` returns the sum of `v` over the lanes of the caller's SIMD-group. A
threadgroup of 8 threads is a single SIMD-group, so `simd_sum` alone does the reduction (no
threadgroup memory, no barrier).

Budget: each thread reads the offset and the length once and at most `ceil(len / TG)` rows, at
most 2 + ceil({LONGEST} / 8) = {2 + ceil_div(LONGEST, TG)} global reads; 1 write; no atomics. One thread looping over a
whole segment of {LONGEST} rows is far over.""",
    spec=segment_sum_spec,
    spec_source=SPEC_SOURCE,
    visible=VISIBLE,
    hidden=hidden,
    header=HEADER,
    template="""\
threadgroup float partial[TG];
uint j = thread_position_in_threadgroup.x;
uint c = threadgroup_position_in_grid.y;
uint k = threadgroup_position_in_grid.z;
uint C = x_shape[1];
// FILL ME IN (roughly 14 lines)
""",
    budget=Budget(global_reads=2 + ceil_div(LONGEST, TG), global_writes=1, atomics=0),
    # A threadgroup of TG threads per (channel, segment).
    work=lambda case: (TG, case.output_shape[1], case.output_shape[0]),
)


ENTRY = Entry(PUZZLE, setup=SETUP)
