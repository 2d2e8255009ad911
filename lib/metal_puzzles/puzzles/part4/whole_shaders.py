"""Part IV: whole shaders. The learner writes complete kernel functions, as ``.metal`` files and
``torch.mps.compile_shader`` take them: their own parameter lists with ``[[buffer(n)]]``
indices, a dims buffer, thread attributes under their own names, templates instantiated with
``host_name``. Each puzzle states the host's buffer layout (``Puzzle.buffer_layout``) and its tests
bind the arrays by index, as a host does.

IV.1: the sparse convolution's MVMR (II.7) laid out as a porting guide lays it out: seven
buffers, sizes in a dims buffer, one thread per (t, g, m) row, atomics cast from a float
pointer. IV.2: a PyTorch-style elementwise operator templated over float, half and bfloat and
instantiated per type; the tests run its float and half instantiations.
"""

import inspect

import mlx.core as mx
import numpy as np

from ...checking import Budget, Case, ErrorModel, Puzzle
from ...checking.inputs import indices, values
from ..catalogue.entry import Entry

#: Threads per threadgroup of the MVMR launches: rows are rarely a multiple of it, so the last
#: threadgroup is partial, as real launches are.
MVMR_GROUP = 16


def mvmr_dims_spec(a, a_idx, b, b_idx, o_idx, dims):
    # II.7's MVMR; dims = [T, G, C, M, n] holds the sizes the kernel reads (n: output rows).
    products = mx.einsum("tgc,tgcm->tgm", b[b_idx], a[a_idx])
    o = mx.zeros((int(dims[4]), a.shape[1], a.shape[3]), dtype=a.dtype)
    return o.at[o_idx].add(products)


def _mvmr_case(a, a_idx, b, b_idx, o_idx, n: int, label: str = "visible test") -> Case:
    t, g, c, m = len(a_idx), a.shape[1], a.shape[2], a.shape[3]
    dims = np.array([t, g, c, m, n], np.uint32)
    ids = [np.asarray(v, np.uint32) for v in (a_idx, b_idx, o_idx)]
    return Case((a, ids[0], b, ids[1], ids[2], dims), (n, g, m), (t * g * m, 1, 1), (MVMR_GROUP, 1, 1), label)


def _visible_mvmr() -> Case:
    g, c, m = 2, 2, 3
    a = (np.arange(2 * g * c * m) % 4).astype(np.float32).reshape(2, g, c, m)
    b = (np.arange(3 * g * c) % 3 + 1).astype(np.float32).reshape(3, g, c)
    return _mvmr_case(a, [1, 0, 1, 1], b, [2, 0, 2, 1], [0, 2, 0, 2], 4)


# (Na, Nb, n, T, G, C, M, what)
_MVMR_SHAPES = (
    (1, 1, 1, 1, 1, 1, 1, "a single row"),
    (3, 5, 4, 18, 2, 5, 3, "repeated output rows"),
    (4, 6, 10, 30, 2, 4, 4, "some output rows receive nothing"),
    (2, 2, 2, 12, 1, 16, 4, "long rows"),
)


def hidden_mvmr(rng: np.random.Generator) -> list[Case]:
    cases = []
    for na, nb, n, t, g, c, m, what in _MVMR_SHAPES:
        a = values(rng, (na, g, c, m))
        b = values(rng, (nb, g, c))
        cases.append(_mvmr_case(a, indices(rng, t, na), b, indices(rng, t, nb), indices(rng, t, n), n,
                                f"hidden test: T={t}, G={g}, C={c}, M={m}, {what}"))
    return cases


MVMR_TEMPLATE = """\
#include <metal_stdlib>
using namespace metal;

// dims = [T, G, C, M, n]; one thread per row (t, g, m) = row index t * G * M + g * M + m.
kernel void mvmr_shader(device const float* a [[buffer(0)]],
                        device const uint* a_idx [[buffer(1)]],
                        device const float* b [[buffer(2)]],
                        device const uint* b_idx [[buffer(3)]],
                        device const uint* o_idx [[buffer(4)]],
                        device float* o [[buffer(5)]],
                        constant uint* dims [[buffer(6)]],
                        uint row [[thread_position_in_grid]]) {
  // FILL ME IN (roughly 14 lines)
}
"""

MVMR_SETUP = """\
T, G, C, M = 4, 2, 2, 3
a = mx.arange(2 * G * C * M, dtype=mx.float32).reshape(2, G, C, M) % 4
b = mx.arange(3 * G * C, dtype=mx.float32).reshape(3, G, C) % 3 + 1
a_idx = mx.array([1, 0, 1, 1], dtype=mx.uint32)
b_idx = mx.array([2, 0, 2, 1], dtype=mx.uint32)
o_idx = mx.array([0, 2, 0, 2], dtype=mx.uint32)
dims = mx.array([T, G, C, M, 4], dtype=mx.uint32)  # [T, G, C, M, n]
output_shape = (4, G, M)"""


def _rows(case: Case) -> tuple[int]:
    """A thread per (t, g, m) row."""
    t, g, _, m, _ = (int(x) for x in case.inputs[5])
    return (t * g * m,)


MVMR_SHADER = Puzzle(
    id="mvmr_shader",
    number="IV.1",
    title="MVMR as a Whole Shader",
    kernel_name="mvmr_shader",
    input_names=("a", "a_idx", "b", "b_idx", "o_idx", "dims"),
    output_names=("o",),
    description="""\
So far MLX wrote every kernel's signature from `input_names` and `output_names`. A `.metal` file,
a porting guide or `torch.mps.compile_shader` has whole kernel functions instead: the kernel
declares its own parameters, each buffer at an index (`[[buffer(5)]]`), sizes arrive in a small
**dims buffer**, and the thread attributes it wants are parameters with names of its own (`uint
row [[thread_position_in_grid]]`). A host binds buffers **by index**, not by name: this puzzle's
host puts `a`, `a_idx`, `b`, `b_idx` and `o_idx` at buffers 0 to 4, the output `o` at buffer 5 and
`dims` at buffer 6, so each parameter must sit at its array's index (what you call it is yours).

This is II.7's MVMR, `o[o_idx[t], g, m] += sum over c of b[b_idx[t], g, c] * a[a_idx[t], g, c,
m]`, laid out the way a port to Metal lays it out: the output `o` sits at buffer 5 between the
index buffers and the dims buffer `dims = [T, G, C, M, n]`, and the grid is one-dimensional, one
thread per row `(t, g, m)`, in threadgroups of 16, so the last threadgroup is usually partial. The
kernel has no `atomic_outputs`: it declares `o` as floats, and adds into `o` through a cast,
`(device atomic_float*)&o[...]`, with `atomic_fetch_add_explicit(..., memory_order_relaxed)`.

Read the sizes from `dims`, return early for a row past `T * G * M`, split the row into `t`, `g`
and `m`, and accumulate the dot product in a register. (A port that computes its row from
`threadgroup_position_in_grid * threads_per_threadgroup + thread_position_in_threadgroup` goes
wrong in the partial last threadgroup, where `threads_per_threadgroup` is smaller.)

Budget: 1 atomic operation and no plain writes per thread.""",
    spec=mvmr_dims_spec,
    spec_source=inspect.getsource(mvmr_dims_spec).strip(),
    visible=_visible_mvmr(),
    hidden=hidden_mvmr,
    template=MVMR_TEMPLATE,
    budget=Budget(global_writes=0, atomics=1),
    work=_rows,
    init_value=0.0,
    buffer_layout=("a", "a_idx", "b", "b_idx", "o_idx", "o", "dims"),
)


def lerp_spec(start, end, weight, numel):
    # Compute in float (PyTorch's opmath type), store in the tensors' own type.
    s = start.astype(mx.float32)
    return (s + weight * (end.astype(mx.float32) - s)).astype(start.dtype)


def _lerp_case(rng: np.random.Generator | None, n: int, dtype: str, group: int, label: str) -> Case:
    start: np.ndarray
    end: np.ndarray
    if rng is None:
        start = (np.arange(n) / 4 - 2).astype(dtype)
        end = (np.arange(n) % 5).astype(dtype)
    else:
        start = rng.uniform(-8, 8, n).astype(dtype)
        end = rng.uniform(-8, 8, n).astype(dtype)
    weight = np.asarray(np.float32(0.25 if rng is None else rng.uniform(0, 1)))
    grid = -(-n // group) * group  # whole threadgroups: spare threads past numel
    return Case((start, end, weight, np.asarray(np.uint32(n))), (n,), (grid, 1, 1), (group, 1, 1), label,
                output_dtype=dtype)


def hidden_lerp(rng: np.random.Generator) -> list[Case]:
    return [
        _lerp_case(rng, 1, "float32", 8, "hidden test: one element, float"),
        _lerp_case(rng, 50, "float32", 16, "hidden test: 50 floats"),
        _lerp_case(rng, 37, "float16", 8, "hidden test: 37 halves (the half instantiation)"),
        _lerp_case(rng, 64, "float16", 32, "hidden test: 64 halves"),
    ]


LERP_TEMPLATE = """\
#include <metal_stdlib>
using namespace metal;

// out = start + weight * (end - start), computed in float, stored as T.
template <typename T>
kernel void lerp(device const T* start [[buffer(0)]],
                 device const T* end [[buffer(1)]],
                 device T* out [[buffer(2)]],
                 constant float& weight [[buffer(3)]],
                 constant uint& numel [[buffer(4)]],
                 uint index [[thread_position_in_grid]]) {
  // FILL ME IN (roughly 3 lines)
}

// One line per type, as PyTorch's shaders register them (host names lerp_float, lerp_half, ...).
#define REGISTER_LERP(T) template [[host_name("lerp_" #T)]] kernel void lerp<T>(device const T*, device const T*, device T*, constant float&, constant uint&, uint);
REGISTER_LERP(float)
// FILL ME IN: REGISTER_LERP for half and bfloat
"""

LERP_SETUP = """\
start = mx.arange(12, dtype=mx.float32) / 4 - 2
end = mx.arange(12, dtype=mx.float32) % 5
weight = mx.array(0.25, dtype=mx.float32)
numel = mx.array(12, dtype=mx.uint32)
output_shape = (12,)"""

LERP = Puzzle(
    id="lerp_shader",
    number="IV.2",
    title="A PyTorch-style Operator",
    kernel_name="lerp",
    input_names=("start", "end", "weight", "numel"),
    output_names=("out",),
    description="""\
PyTorch's Metal operators are whole shaders written once as a template over the element type
`T` and **instantiated** once per type, each with the name the host looks it up by:

```
template [[host_name("lerp_float")]] kernel void lerp<float>(device const float*, ...);
```

Usually a macro writes those lines, `#T` turning the type into the name's suffix. Write the body
of `lerp` (linear interpolation, `start + weight * (end - start)`, computed in `float` as
PyTorch's *opmath* type and converted to `T` when stored; threads past `numel` do nothing) and
register it for `half` and `bfloat` beside `float`. `weight` and `numel` come by constant reference,
as `compile_shader` passes Python numbers. The host binds `start`, `end`, `out`, `weight` and
`numel` at buffers 0 to 4, and picks the instantiation named after the inputs' type: `lerp_float`
for the visible test, `lerp_half` for two hidden ones. An instantiation must match the template's
signature exactly, as clang requires (`constant int&` where the template has `constant uint&` is
an error).

Budget: 4 global reads (`start`, `end`, `weight`, `numel`) and 1 global write per thread.""",
    spec=lerp_spec,
    spec_source=inspect.getsource(lerp_spec).strip(),
    visible=_lerp_case(None, 12, "float32", 8, "visible test"),
    hidden=hidden_lerp,
    template=LERP_TEMPLATE,
    budget=Budget(global_reads=4, global_writes=1),
    atol=1e-3,
    rtol=1e-3,
    # The spec states the arithmetic's precision itself (float opmath, stored in the tensors' type,
    # half included): compared as written, within a tolerance above one half-precision ulp.
    error_model=ErrorModel.FIXED,
    buffer_layout=("start", "end", "out", "weight", "numel"),
)


MVMR_SHADER_ENTRY = Entry(MVMR_SHADER, setup=MVMR_SETUP)
LERP_ENTRY = Entry(LERP, setup=LERP_SETUP)
