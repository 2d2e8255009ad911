"""V.2a and V.2b: rotary position embeddings in both of MLX's layouts, with an offset (the
position of the first token: the length of the cache already written). The spec is
``mx.fast.rope`` with ``traditional=True`` (interleaved pairs) and ``False`` (halves).

The error model: the kernel and the reference both compute each angle in float32 (MLX does so
even for float64 arrays), so an output may differ from the reference by what a few roundings of
an angle as large as the largest position make of a pair's values. That is not an input the
conditioned model sees (positions are integers), so the floor ``atol`` carries it; a wrong layout
or a forgotten offset is off by far more.
"""

import inspect

import mlx.core as mx
import numpy as np

from ..checking import Budget, Case, ErrorModel, Puzzle
from ..checking.inputs import scalar, values
from ..checking.tolerance import U32
from .entry import Entry

MAX_POSITION = 32  # offset + sequence length, at most, in any test
MAX_ABS = 4.0  # test values lie in [-4, 4)
#: What float32 roundings of an angle up to MAX_POSITION (the product, the frequency's few ulps,
#: cos and sin) can move it by, and so a pair's outputs (each at most |a| + |b| times that).
ANGLE_ERROR = 16 * U32 * MAX_POSITION
ATOL = 2 * MAX_ABS * ANGLE_ERROR

HEADER = """\
constant float BASE = 10000.0f;
"""


def rope_traditional_spec(x, offset):
    # Rotate the pairs (x[2i], x[2i+1]) of every position by its angle.
    return mx.fast.rope(x, x.shape[-1], traditional=True, base=10000.0, scale=1.0, offset=offset)


def rope_spec(x, offset):
    # Rotate the pairs (x[i], x[i + D/2]) of every position by its angle.
    return mx.fast.rope(x, x.shape[-1], traditional=False, base=10000.0, scale=1.0, offset=offset)


def _case(x: np.ndarray, offset: int, label: str) -> Case:
    heads, length, d = x.shape
    # One thread per pair; a threadgroup per head.
    return Case((x, scalar(offset)), x.shape, (d // 2, length, heads), (d // 2, length, 1), label)


def hidden(rng: np.random.Generator) -> list[Case]:
    out = []
    for heads, length, d, what in ((4, 5, 64, "a head dimension of 64, as Llama's"), (2, 3, 8, "short heads"),
                                   (3, 7, 16, "a longer sequence"), (2, 2, 32, "the largest offset")):
        offset = MAX_POSITION - length if "offset" in what else int(rng.integers(0, MAX_POSITION - length))
        out.append(_case(values(rng, (heads, length, d)), offset,
                         f"hidden test: {heads} heads, {length} positions of {d} from {offset}, {what}"))
    return out


_X = ((np.arange(32) % 9 - 4) / 2).astype(np.float32).reshape(2, 2, 8)
VISIBLE = _case(_X, 5, "visible test")

SETUP = """\
x = ((mx.arange(32) % 9 - 4) / 2).astype(mx.float32).reshape(2, 2, 8)  # (heads, positions, D)
offset = mx.array(5, dtype=mx.int32)  # the position of the first row: tokens already in the cache
output_shape = (2, 2, 8)"""

_LAYOUT = """\
`x` has shape `(H, L, D)`: `H` heads, `L` positions (tokens), head dimension `D` (8 to 64 in the
tests, even). The token at row `l` sits at position `p = offset + l`: when a model writes its 101st
token, 100 are already in its cache, `offset` is 100 and `L` is 1. The launch has one thread per
pair: the grid is `(D/2, L, H)`, `thread_position_in_grid` is `(i, l, h)`, and a threadgroup holds
the pairs of one head (`(D/2, L, 1)` threads). `offset` arrives as a scalar input
(`const constant int& offset`)."""

_ANGLE = """\
Pair `i` (from 0 to `D/2 - 1`) turns by the angle `theta = p * BASE^(-2i/D)` with `BASE = 10000`:
the first pairs turn fast (`theta = p` for `i = 0`), the last ones barely. A rotation by `theta`
sends the pair `(a, b)` to

```
(a * cos(theta) - b * sin(theta),   a * sin(theta) + b * cos(theta))
```

Because the angle grows with the position, the product of two rotated vectors depends only on the
distance between their positions: attention sees where tokens are relative to each other.
`pow(BASE, -2.0f * i / D)` gives the frequency (MLX's kernel computes the same as
`exp2(-2i/D * log2(BASE))`); work in `float`."""

TEMPLATE = """\
uint i = thread_position_in_grid.x;  // the pair
uint l = thread_position_in_grid.y;  // the row (position offset + l)
uint h = thread_position_in_grid.z;  // the head
uint L = x_shape[1];
uint D = x_shape[2];
uint row = (h * L + l) * D;  // where this position's D values start
// FILL ME IN (roughly 8 lines)
"""

_BUDGET = Budget(global_reads=3, global_writes=2)  # offset, then the pair

TRADITIONAL = Puzzle(
    id="rope_traditional",
    number="V.2a",
    title="Rotary Embeddings (interleaved)",
    kernel_name="rope_traditional",
    input_names=("x", "offset"),
    header=HEADER,
    description=f"""\
A transformer has to know where each token is. **Rotary position embeddings** (RoPE) tell it by
rotating the query and key vectors: their `D` values are taken as `D/2` pairs, and each pair, seen
as a point in a plane, is turned by an angle that grows with the token's position.

{_ANGLE}

{_LAYOUT}

Which values form a pair is a matter of **layout**, and MLX has two. This puzzle is the original
paper's, `traditional=True`: pairs are **interleaved**, pair `i` is `(x[2i], x[2i + 1])`. In the
visible test's first row (`D = 8`), pair 0 is elements 0 and 1, pair 3 is elements 6 and 7.

**Budget**: 3 global reads per thread (`offset`, then your pair, read once) and 2 writes.""",
    spec=rope_traditional_spec,
    spec_source=inspect.getsource(rope_traditional_spec).strip(),
    visible=VISIBLE,
    hidden=hidden,
    template=TEMPLATE,
    budget=_BUDGET,
    work=lambda case: (case.output_shape[2] // 2, case.output_shape[1], case.output_shape[0]),
    atol=ATOL,
    rtol=1e-5,
    error_model=ErrorModel.CONDITIONED,
)

HALVES = Puzzle(
    id="rope",
    number="V.2b",
    title="Rotary Embeddings (halves)",
    kernel_name="rope",
    input_names=("x", "offset"),
    header=HEADER,
    description=f"""\
The same rotation in the layout most models use today (Llama, Mistral, Qwen as mlx-lm loads them),
`traditional=False`: the vector is cut in **halves**, and pair `i` is `(x[i], x[i + D/2])`. In the
visible test's first row (`D = 8`), pair 0 is elements 0 and 4, pair 3 is elements 3 and 7.
Same angles, same rotation, other partners: a kernel written for one layout is wrong for the other
(the two differ from the first pair on: try V.2a's kernel here). A model's weights are trained
with one of them, which is why `mx.fast.rope` asks.

{_LAYOUT}

**Budget**: 3 global reads and 2 global writes per thread.""",
    spec=rope_spec,
    spec_source=inspect.getsource(rope_spec).strip(),
    visible=VISIBLE,
    hidden=hidden,
    template=TEMPLATE,
    budget=_BUDGET,
    work=TRADITIONAL.work,
    atol=ATOL,
    rtol=1e-5,
    error_model=ErrorModel.CONDITIONED,
)


TRADITIONAL_ENTRY = Entry(TRADITIONAL, setup=SETUP, solution="V_02a_rope_traditional.metal")
HALVES_ENTRY = Entry(HALVES, setup=SETUP, solution="V_02b_rope.metal")
