"""V.6: top-k sampling's first step, the K largest logits of each row and where they are, one
threadgroup a row: K rounds of V.5's block reduction carrying indices, each round taking the next
(value, index) in the order "larger value first, then smaller index".

``mx.topk`` returns the K largest values only, in no promised order, and ``mx.argpartition``
picks among equal values as its partition happens to; a sampler needs the indices. The contract
(checked against MLX on the CPU build, see tests/puzzles/part5/test_part5.py): the indices of the K largest
values, largest first, equal values in increasing index order, which is the first K entries of
``mx.argsort(-x)`` (MLX's sort is stable) and, for K = 1, ``mx.argmax``.

The output is indices, computed without rounding: the check is exact (tolerance 0).
"""

import inspect

import mlx.core as mx
import numpy as np

from ...checking import Budget, Case, ErrorModel, Puzzle
from ...checking.inputs import ceil_div, values
from ..catalogue.entry import Entry

TG = 64  # two SIMD-groups a row
K = 8  # the logits a row keeps
LONGEST = 256  # the longest row (vocabulary) in any test
PER_THREAD = ceil_div(LONGEST, TG)
#: What fits top-k when a kernel waits at more barriers than its K rounds: a round's slots the
#: next round cannot overwrite, rather than a second barrier a round (or a reduction's simd_sum).
BARRIERS_ADVICE = ("one barrier a round is enough: give each round slots of its own, two sets taken in turn "
                   "(best_values[2][SIMD_GROUPS], indexed by t % 2), so that a round's writes never meet the "
                   "previous round's reads and no second barrier is needed")

HEADER = f"""\
constant uint TG = {TG};
constant uint SIMD_GROUPS = TG / 32;
constant uint K = {K};
constant uint PER_THREAD = {PER_THREAD};  // rows are at most {LONGEST} long: TG * PER_THREAD
"""


def topk_spec(x):
    # mx.topk(x, K, axis=1) gives each row's K largest logits, in no promised order. The sampler
    # needs their indices, largest first, equal logits in index order: a stable sort's first K.
    return mx.argsort(-x, axis=1)[:, :K]


SPEC_SOURCE = f"K = {K}\n\n\n" + inspect.getsource(topk_spec).strip()


def _case(x: np.ndarray, label: str) -> Case:
    rows = x.shape[0]
    return Case((x,), (rows, K), (TG, rows, 1), (TG, 1, 1), label)


def _coarse(rng: np.random.Generator, rows: int, n: int) -> np.ndarray:
    """Logits on a grid of eighths in [-2, 2): 32 values, so every row of more than 32 logits
    repeats values, across SIMD-groups and among one thread's elements."""
    return (rng.integers(-16, 16, size=(rows, n)) / 8).astype(np.float32)


def hidden(rng: np.random.Generator) -> list[Case]:
    long = _coarse(rng, 3, LONGEST)
    long[2] = 1.5  # a row of equal logits: its answer is 0, 1, ..., K - 1
    short = values(rng, (2, 37))
    negative = _coarse(rng, 2, 150) - 4.0
    one_each = values(rng, (4, TG))
    one_each[:, TG - K:] = one_each.max() + 0.25  # the largest logits, at the end of the row, all equal
    return [_case(long, f"hidden test: 3 rows of {LONGEST}, four values per thread, one row all equal"),
            _case(short, "hidden test: 2 rows of 37, shorter than two SIMD-groups"),
            _case(one_each, f"hidden test: 4 rows of {TG}, one value per thread, the largest tied at the end"),
            _case(negative, "hidden test: 2 rows of 150, every logit negative, many ties")]


_C = np.arange(200)
VISIBLE = _case(np.stack([_C * 7 % 48 / 4, _C * 7 % 64 / 4 - 20]).astype(np.float32), "visible test")

SETUP = """\
c = mx.arange(200)
x = mx.stack([c * 7 % 48 / 4, c * 7 % 64 / 4 - 20])  # two rows of logits; row 1 all negative
output_shape = (2, 8)  # K = 8 indices a row"""

TEMPLATE = """\
threadgroup float best_values[2][SIMD_GROUPS];  // two rounds' slots: one barrier a round
threadgroup uint best_indices[2][SIMD_GROUPS];
uint j = thread_position_in_threadgroup.x;
uint r = threadgroup_position_in_grid.y;
uint N = x_shape[1];
uint lane = thread_index_in_simdgroup;
uint sg = simdgroup_index_in_threadgroup;
// FILL ME IN (roughly 40 lines): your elements into float v[PER_THREAD] once; then K rounds, each
// taking the best (value, index) that comes after the previous round's; thread t keeps round t's.
"""

PUZZLE = Puzzle(
    id="topk",
    number="V.6",
    title="Top-k Sampling",
    kernel_name="topk",
    input_names=("x",),
    output_dtype="uint32",
    header=HEADER,
    description=f"""\
Greedy decoding (V.5) always writes the likeliest token. **Top-k sampling** draws the next token at
random from the `K` likeliest only, so a model's text varies without wandering into tokens it
finds unlikely. Its first step is this kernel: for each row of logits `x` (shape `(R, V)`, `V` from
{K} to {LONGEST}), `out[r]` holds the **indices** of the row's `K = {K}` largest logits, **largest
first**, and between equal logits the **smaller index first** (`uint` indices, shape `(R, K)`).

Why that order? `mx.topk(x, K)` returns the `K` largest *values* only, in no promised order: on
the visible test MLX's CPU build gives row 0 as `[11.5, 11.5, 11.75, ...]`. The indices come from
`mx.argpartition(-x, K - 1)[:, :K]`, again in no promised order (`[185, 41, 89, 137, 82, 34, 130,
178]` for row 0). A sampler wants the likeliest first, and a check needs one answer: the first `K`
of a **stable** sort, `mx.argsort(-x)[:, :K]` (MLX's sort keeps equal values in index order),
which for `K = 1` is `mx.argmax`'s answer, the first index. In the visible test, row 0's largest
logit, 11.75, is at 41, 89, 137 and 185 (in both SIMD-groups), the next, 11.5, at 34, 82, 130 and
178: the answer is `[41, 89, 137, 185, 34, 82, 130, 178]`. Row 1 is all negative, and its ties
sit in one thread: -4.25 at 9, 73 and 137, thread 9's three elements, then -4.5 at 18, 82, 146.

One threadgroup of `TG = {TG}` threads (two SIMD-groups) per row; thread `j` owns elements
`j, j + {TG}, ...` (at most `PER_THREAD = {PER_THREAD}`). Top-k is `K` rounds of V.5's argmax,
each round excluding what the earlier rounds took:

1. read your elements **once** into `float v[PER_THREAD]` (registers); every round reads them there;
2. the rounds take pairs `(value, index)` in the order *larger value first, then smaller index*:
   round `t` takes the first pair that comes **after** round `t - 1`'s winner `(wv, wi)` in that
   order, that is with `v < wv`, or `v == wv` and index `> wi` (round 0: any pair);
3. each round is V.5's reduction: your best such pair, `simd_max` of the values and `simd_min` of
   the indices offering the group's best (`UINT_MAX` from the others), lane 0's pair into the
   round's slots, **one** barrier, and then **every** thread merges the `SIMD_GROUPS` pairs itself
   (every thread needs the winner for the next round);
4. the slots alternate between two sets, `[t % 2]`: a fast thread writing round `t + 1`'s pair
   cannot overwrite a slot a slow thread still reads for round `t`, so one barrier a round is
   enough (round `t + 2` reuses the set only after round `t + 1`'s barrier, which every thread
   reaches after reading round `t`'s);
5. thread `t` keeps round `t`'s index, and at the end threads `0` to `K - 1` write `out[r]`
   side by side, one store each.

Logits are finite here (a masked logit of `-INFINITY` would need the "no pair" of a thread told
apart from a real one). With `K` this small, `K` rounds over values held in registers cost less
than sorting the row.

**Hidden tests** pose logits on a grid of eighths in `[-2, 2)` (32 values, so long rows repeat
values across SIMD-groups and within a thread), a row of equal logits, the largest logits tied at
the end of a row, and a row of negative logits only: ties are where top-k kernels go wrong, and
the answer (indices) must be exact.

**Budget**: each logit read once (at most {PER_THREAD} global reads per thread, 1 read per
element), one write per thread, and `K = {K}` barriers per threadgroup, one a round.""",
    spec=topk_spec,
    spec_source=SPEC_SOURCE,
    visible=VISIBLE,
    hidden=hidden,
    template=TEMPLATE,
    budget=Budget(global_reads=PER_THREAD, global_writes=1, max_barriers=K, max_reads_per_element=1.0,
                  barriers_advice=BARRIERS_ADVICE),
    work=lambda case: (TG, case.output_shape[0]),
    atol=0.0,
    rtol=0.0,
    error_model=ErrorModel.EXACT_SUMS,
)


ENTRY = Entry(PUZZLE, setup=SETUP)
