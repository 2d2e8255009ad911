"""Puzzle II.4: Segment Sum — one thread per (segment, channel) of the output.

How offsets reach the kernel: the kernel receives both ``lengths`` and ``offsets``, where
``offsets`` is the exclusive scan of ``lengths`` computed before the launch (by the scan of II.1
in a real pipeline; by ``mx.cumsum`` in the notebook and the tests). The spec trusts ``lengths``
alone, and every test passes offsets consistent with them.
"""

import inspect

import mlx.core as mx
import numpy as np

from ...checking import Budget, Case, Puzzle
from ...checking.inputs import exclusive_offsets, lengths, padded, values
from ..catalogue.entry import Entry

TG = (4, 4, 1)
LONGEST = 10  # the longest segment in any test; the read budget is stated with it


def segment_matrix(lengths, rows):
    # member[k, t] is 1 when row t lies in segment k: rows start[k] .. start[k] + lengths[k] - 1.
    start = mx.cumsum(lengths) - lengths
    t = mx.arange(rows)[None, :]
    inside = (t >= start[:, None]) & (t < (start + lengths)[:, None])
    return inside.astype(mx.float32)


def segment_sum_spec(x, lengths, offsets):
    # offsets are not needed here: the spec recomputes them from lengths.
    return segment_matrix(lengths, x.shape[0]) @ x


SPEC_SOURCE = inspect.getsource(segment_matrix).strip() + "\n\n\n" + inspect.getsource(segment_sum_spec).strip()


def segment_case(rng: np.random.Generator, lens: np.ndarray, channels: int) -> tuple[np.ndarray, ...]:
    """(x, lengths, offsets) for the given segment lengths."""
    lens = np.asarray(lens, dtype=np.int32)
    x = values(rng, (int(lens.sum()), channels))
    return x, lens, exclusive_offsets(lens)


def _case(rng: np.random.Generator, lens: np.ndarray, channels: int, what: str) -> Case:
    # As in the visible test: at most one threadgroup of channels, the grid padded on both sides.
    inputs = segment_case(rng, lens, channels)
    k = len(lens)
    grid = (padded(channels, TG[0]), padded(k, TG[1]), 1)
    label = f"hidden test: {k} segments of up to {int(max(lens))} rows, {channels} channels, {what}"
    return Case(inputs, (k, channels), grid, TG, label)


def hidden(rng: np.random.Generator) -> list[Case]:
    return [
        _case(rng, np.array([1], np.int32), 1, "a single row"),
        _case(rng, lengths(rng, 7, 6, empty=2), 3, "two empty"),
        _case(rng, lengths(rng, 12, LONGEST, empty=3), 4, "several empty"),
        _case(rng, np.array([0, 0, 4, 0], np.int32), 2, "empty first and last"),
    ]


VISIBLE_LENGTHS = np.array([2, 0, 3, 1, 2], dtype=np.int32)
VISIBLE = Case((np.arange(24, dtype=np.float32).reshape(8, 3), VISIBLE_LENGTHS, exclusive_offsets(VISIBLE_LENGTHS)),
               (5, 3), (4, 8, 1), TG)

SETUP = """\
x = mx.arange(24, dtype=mx.float32).reshape(8, 3)
lengths = mx.array([2, 0, 3, 1, 2], dtype=mx.int32)
offsets = mx.cumsum(lengths) - lengths  # exclusive scan: [0, 2, 2, 5, 6]
output_shape = (5, 3)"""

PUZZLE = Puzzle(
    id="segment_sum",
    number="II.4",
    title="Segment Sum",
    kernel_name="segment_sum",
    input_names=("x", "lengths", "offsets"),
    description=f"""\
The rows of `x` (shape `(N, C)`) are cut into `K` consecutive **segments**: segment `k` is
`lengths[k]` rows long, and the segments follow each other in order. Sum each segment: `out[k, c]`
is the sum of `x[t, c]` over the rows `t` of segment `k`. A segment of length 0 sums to 0.
(Point clouds in a batch, the neighbours of each output voxel, the tokens of each sentence:
ragged data is stored like this.)

Where does segment `k` start? At `offsets[k] = lengths[0] + ... + lengths[k-1]`, the **exclusive
scan** of `lengths`: the kind of array II.1 computes. It is computed before this kernel runs and
passed in as `offsets` (in the visible test, `[0, 2, 2, 5, 6]`), so no thread has to add up the
lengths before its own.

One thread per output element: `thread_position_in_grid.x` is the channel `c`, `.y` the segment
`k`. The grid is padded (4 columns of threads for 3 channels, 8 rows for 5 segments in the visible
test): `x_shape[1]` is `C` and `lengths_shape[0]` is `K`. Sum in a local
variable and write `out` once at the end; every output element is written by exactly one thread,
so no atomics are needed. (There is no `init_value` here: the empty segments' zeros are yours to
write.)

Budget: each thread reads its segment's offset and length and each of its rows once (at most
2 + {LONGEST} reads: no segment in the tests is longer than {LONGEST}) and writes 1 element; no atomics.""",
    spec=segment_sum_spec,
    spec_source=SPEC_SOURCE,
    visible=VISIBLE,
    hidden=hidden,
    template="""\
uint c = thread_position_in_grid.x;
uint k = thread_position_in_grid.y;
// FILL ME IN (roughly 8 lines)
""",
    budget=Budget(global_reads=2 + LONGEST, global_writes=1, atomics=0),
)


ENTRY = Entry(PUZZLE, setup=SETUP)
