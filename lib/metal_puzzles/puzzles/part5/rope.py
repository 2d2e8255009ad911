"""V.2a and V.2b: rotary position embeddings in both of MLX's layouts, with an offset (the
position of the first token: the length of the cache already written). The spec is
``mx.fast.rope`` with ``traditional=True`` (interleaved pairs) and ``False`` (halves).

The error model: the kernel and the reference both compute each angle ``theta = p * BASE^(-2i/D)``
in float32 (MLX does so even for float64 arrays), and a relative error of the angle is an absolute
error ``|theta|`` times larger, which grows with the position: at position 4000 a correct float32
kernel, and MLX's own ``mx.fast.rope``, are 1e-4 to 1e-3 from the true rotation. Positions are
integers, so the conditioned model cannot see it: ``angle_allowance`` adds, per pair,

    ANGLE_ULPS * U32 * |theta| * (|a| + |b|) + ROTATION_ULPS * U32 * (|a| + |b|)

(the angle's error moves a rotated pair by at most that angle times its length; each pair's two
outputs are allowed alike). ANGLE_ULPS bounds what one float32 angle may be off by, relative, for
each of the two computations compared (the kernel's and the reference's), summed:

- the exponent ``-2i/D`` rounded once (exact when D is a power of two), and, in MLX's and the
  ``exp2`` form, ``log2(BASE)`` and its product with the exponent rounded: each an error of at
  most ``u`` relative in an exponent of magnitude up to ``log2(10000) = 13.3``, so ``13.3 ln 2 u =
  9.2 u`` relative in the frequency, three of them 27.6 u;
- ``pow`` or ``exp2`` themselves: Metal allows ``pow`` 16 ulp (``exp2`` 4 ulp);
- the product ``p * frequency``: 1 u (the position itself is exact below 2**24);

about 45 u for one computation, 90 u for both: ANGLE_ULPS = 96. ROTATION_ULPS covers ``cos`` and
``sin`` (4 ulp each in Metal) and the multiply-add of each output, for both computations. A
position rounded to half (spacing 2 above 2048, 4 above 4096) moves the angle by 1 to 2 times the
frequency, some 100 times what this allows; a wrong layout or a forgotten offset moves the pair by
its own size.
"""

import inspect

import mlx.core as mx
import numpy as np

from ...checking import Budget, Case, ErrorModel, Puzzle
from ...checking.inputs import scalar, values
from ...checking.tolerance import U32
from ..catalogue.entry import Entry

#: The largest position (offset + sequence length) in any test: models decode at thousands, and a
#: position rounded to half is off from 2049 on.
MAX_POSITION = 8192
MAX_ABS = 4.0  # test values lie in [-4, 4)
BASE = 10000.0
#: The relative error of a float32 angle, in units of U32, for the kernel's and the reference's
#: computation together (derived in the module's docstring).
ANGLE_ULPS = 96
#: cos, sin and the multiply-add of an output, for both computations (derived in the docstring).
ROTATION_ULPS = 24
#: The floor: the rotation's roundings at position 0, every output at most 2 * MAX_ABS.
ATOL = 2 * MAX_ABS * ROTATION_ULPS * U32


def _pair_allowance(x: np.ndarray, offset: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What float32 angles and rotations may move a pair's outputs by, relative to the pair's size
    (L, D/2), and the values' magnitudes |x| (H, L, D), which the layouts pair up."""
    _, length, d = x.shape
    theta = (int(offset) + np.arange(length))[:, None] * BASE ** (-2.0 * np.arange(d // 2) / d)
    x64 = np.abs(x.astype(np.float64))
    return (ANGLE_ULPS * theta + ROTATION_ULPS) * U32, x64


def angle_allowance_halves(inputs: tuple[np.ndarray, ...]) -> np.ndarray:
    """The allowance for ``traditional=False``: pair i is (x[i], x[i + D/2])."""
    per_angle, x = _pair_allowance(*inputs)
    half = x.shape[-1] // 2
    pair = per_angle * (x[..., :half] + x[..., half:])
    return np.concatenate([pair, pair], axis=-1)


def angle_allowance_interleaved(inputs: tuple[np.ndarray, ...]) -> np.ndarray:
    """The allowance for ``traditional=True``: pair i is (x[2i], x[2i + 1])."""
    per_angle, x = _pair_allowance(*inputs)
    pair = per_angle * (x[..., 0::2] + x[..., 1::2])
    return np.repeat(pair, 2, axis=-1)


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
    # Positions from 0 to MAX_POSITION: the early ones (where a learner's first kernel is tried), a
    # prompt deep into a long context, and single decode steps in the thousands (where float32's
    # angles lose digits and half's positions are off by whole units).
    far = int(rng.integers(2049, MAX_POSITION // 2))
    out = []
    for heads, length, d, offset, what in ((4, 5, 64, int(rng.integers(0, 30)), "a head dimension of 64, as Llama's"),
                                           (2, 3, 8, int(rng.integers(0, 30)), "short heads"),
                                           (3, 7, 16, far, "a longer sequence far into the context"),
                                           (2, 1, 64, 2 * far + 1, "one decode step in the thousands"),
                                           (2, 2, 32, MAX_POSITION - 2, "the largest offset")):
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

_ANGLE = f"""\
Pair `i` (from 0 to `D/2 - 1`) turns by the angle `theta = p * BASE^(-2i/D)` with `BASE = 10000`:
the first pairs turn fast (`theta = p` for `i = 0`), the last ones barely. A rotation by `theta`
sends the pair `(a, b)` to

```
(a * cos(theta) - b * sin(theta),   a * sin(theta) + b * cos(theta))
```

Because the angle grows with the position, the product of two rotated vectors depends only on the
distance between their positions: attention sees where tokens are relative to each other.
`pow(BASE, -2.0f * i / D)` gives the frequency (MLX's kernel computes the same as
`exp2(-2i/D * log2(BASE))`); work in `float`.

**Hidden tests** pose values in `[-4, 4)` at positions from 0 to {MAX_POSITION}: prompts at the
start, a sequence some thousands of tokens in, single decode steps in the thousands. There a
float32 angle is off by some ulps of an angle in the thousands, and so is MLX's own: outputs may
differ from the exact rotation by `{ANGLE_ULPS} * 2^-24 * |theta|` times the pair's size (and a
few ulps more). Keep the position an integer until you make it a `float`: as a `half` (11 bits)
it is off by whole units from 2049 on."""

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
    allowance=angle_allowance_interleaved,
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
    allowance=angle_allowance_halves,
    rtol=1e-5,
    error_model=ErrorModel.CONDITIONED,
)


TRADITIONAL_ENTRY = Entry(TRADITIONAL, setup=SETUP)
HALVES_ENTRY = Entry(HALVES, setup=SETUP)
