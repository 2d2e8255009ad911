"""Puzzle II.6: Segment Sum Backward — dx[t] = dy[segment of t], found by binary search."""

import inspect
import math

import numpy as np

from ...checking import Budget, Case, Puzzle
from ...checking.inputs import exclusive_offsets, lengths, padded, values
from ..catalogue.entry import Entry
from .segment_sum import segment_matrix

TG = (4, 4, 1)
MOST_SEGMENTS = 40  # the most segments in any test; the read budget is stated with it
# A binary search over K sorted offsets needs ceil(log2(K + 1)) probes. The budget lets every probe
# read two values (offsets and lengths, for searches that test "t inside segment mid"), plus dy.
PROBES = math.ceil(math.log2(MOST_SEGMENTS + 1))
READS = 2 * PROBES + 1


def segment_sum_backward_spec(dy, lengths, offsets):
    # y = member @ x, so the gradient is dx = member.T @ dy: row t of dx is dy's row for t's segment.
    rows = int(lengths.sum())
    return segment_matrix(lengths, rows).T @ dy


def _case(rng: np.random.Generator, lens: np.ndarray, channels: int, what: str) -> Case:
    # As in the visible test: at most one threadgroup of channels, padded; a row of threads per row.
    lens = np.asarray(lens, dtype=np.int32)
    dy = values(rng, (len(lens), channels))
    n = int(lens.sum())
    grid = (padded(channels, TG[0]), n, 1)
    label = f"hidden test: {n} rows in {len(lens)} segments, {channels} channels, {what}"
    return Case((dy, lens, exclusive_offsets(lens)), (n, channels), grid, TG, label)


def hidden(rng: np.random.Generator) -> list[Case]:
    return [
        _case(rng, np.array([3], np.int32), 1, "one segment"),
        _case(rng, lengths(rng, MOST_SEGMENTS, 4, empty=8), 2, "many segments, some empty"),
        _case(rng, np.array([0, 0, 5, 0, 2, 0, 0], np.int32), 3, "runs of empty segments"),
        _case(rng, lengths(rng, 9, 7, empty=1), 4, "one empty"),
    ]


VISIBLE_LENGTHS = np.array([2, 0, 3, 1, 1], dtype=np.int32)
VISIBLE = Case((np.arange(15, dtype=np.float32).reshape(5, 3), VISIBLE_LENGTHS, exclusive_offsets(VISIBLE_LENGTHS)),
               (7, 3), (4, 7, 1), TG)

SETUP = """\
dy = mx.arange(15, dtype=mx.float32).reshape(5, 3)
lengths = mx.array([2, 0, 3, 1, 1], dtype=mx.int32)
offsets = mx.cumsum(lengths) - lengths
output_shape = (7, 3)"""

PUZZLE = Puzzle(
    id="segment_sum_backward",
    number="II.6",
    title="Segment Sum Backward",
    kernel_name="segment_sum_backward",
    input_names=("dy", "lengths", "offsets"),
    output_names=("dx",),
    description=f"""\
Training needs gradients. If `y = segment_sum(x, lengths)` and `dy` is the gradient of the loss
with respect to `y` (shape `(K, C)`), then the gradient with respect to `x` is `dx[t, c] =
dy[k, c]`, where `k` is the segment that row `t` belongs to: each row of `x` went into exactly one
sum, with weight 1. Empty segments own no rows, so their rows of `dy` are never used.

One thread per element of `dx` (shape `(N, C)`): `.x` is the channel, `.y` the row `t`. The grid
has exactly `N` rows of threads (7 in the visible test, so its last threadgroup is partial) and
pads the channels (`dy_shape[1]` is `C`). The work is in
finding `k`. Reading `offsets` from the start until you pass `t` costs up to `K` reads; but
`offsets` is sorted, so **binary search** it: the segment of row `t` is the *last* `k` with
`offsets[k] <= t`. (Why the last? An empty segment starts where the next one starts, so several
segments can share an offset; only the last of them actually contains `t`.) `lengths_shape[0]`
is `K`.

Budget: at most {READS} global reads per thread and 1 write. The tests have up to {MOST_SEGMENTS}
segments, so a binary search makes at most `ceil(log2({MOST_SEGMENTS} + 1)) = {PROBES}` probes; the
budget allows two reads a probe (`offsets` and `lengths`) and one read of `dy`. A linear search
reads up to {MOST_SEGMENTS}.""",
    spec=segment_sum_backward_spec,
    spec_source=inspect.getsource(segment_matrix).strip() + "\n\n\n"
    + inspect.getsource(segment_sum_backward_spec).strip(),
    visible=VISIBLE,
    hidden=hidden,
    template="""\
uint c = thread_position_in_grid.x;
uint t = thread_position_in_grid.y;
// FILL ME IN (roughly 12 lines)
""",
    budget=Budget(global_reads=READS, global_writes=1, atomics=0),
)


ENTRY = Entry(PUZZLE, setup=SETUP)
