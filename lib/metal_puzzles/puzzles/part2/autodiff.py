"""The finale of Part II: gradients that flow through the learner's own kernels.

Each entry is a ``GradPuzzle``: the learner writes an ``mx.custom_function`` whose forward pass
and vjp launch kernels from earlier puzzles (with the launchers of
``puzzles.composition.launchers``); it is checked against a dense MLX reference (see ``checking.gradients``) on random inputs with
repeated and unsorted indices, empty segments, several groups, and sizes that fill no
threadgroup evenly. The grader wires the learner's kernels the reference way
(``puzzles.composition.wiring``).
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np

from ...checking import Case, GradPuzzle
from ...checking.inputs import indices, values
from ...checking.inputs import lengths as random_lengths
from ..catalogue.entry import Entry
from ..composition.wiring import mvmr_wire, segment_sum_wire
from . import mvmr, mvmr_backward_b, segment_sum, segment_sum_backward, vvor
from .mvmr import mvmr_spec
from .segment_sum import segment_matrix


def mvmr_dense(a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array, o_idx: mx.array, n: int) -> mx.array:
    return mvmr_spec(a, a_idx, b, b_idx, o_idx, n)


def segment_sum_dense(x: mx.array, lengths: mx.array) -> mx.array:
    return segment_matrix(lengths, x.shape[0]) @ x




def _mvmr_case(rng: np.random.Generator, na: int, nb: int, n: int, t: int, g: int, c: int, m: int,
               label: str) -> Case:
    a = values(rng, (na, g, c, m))
    b = values(rng, (nb, g, c))
    inputs = (a, indices(rng, t, na), b, indices(rng, t, nb), indices(rng, t, n), np.asarray(n, np.int32))
    return Case(inputs, (n, g, m), (m, g, t), (m, 1, 1), label)


def _mvmr_hidden(rng: np.random.Generator) -> list[Case]:
    shapes = ((4, 6, 5, 23, 3, 5, 3), (2, 3, 9, 12, 1, 17, 6), (5, 5, 2, 30, 2, 4, 7))
    return [_mvmr_case(rng, *s, f"hidden test: Na={s[0]}, Nb={s[1]}, n={s[2]}, T={s[3]}, G={s[4]}, C={s[5]}, "
                       f"M={s[6]}") for s in shapes]


def _segment_case(rng: np.random.Generator, lens: np.ndarray, channels: int, label: str) -> Case:
    lens = np.asarray(lens, np.int32)
    x = values(rng, (int(lens.sum()), channels))
    return Case((x, lens), (len(lens), channels), (channels, len(lens), 1), (16, 16, 1), label)


def _segment_hidden(rng: np.random.Generator) -> list[Case]:
    return [
        _segment_case(rng, random_lengths(rng, 9, 7, empty=3), 3, "hidden test: 9 segments, three empty, 3 channels"),
        _segment_case(rng, np.array([0, 5, 0, 0, 1], np.int32), 6, "hidden test: empty first and last segments"),
        _segment_case(rng, random_lengths(rng, 23, 4, empty=5), 5, "hidden test: 23 segments, 5 channels"),
    ]


def _mvmr_visible() -> Case:
    return _mvmr_case(np.random.default_rng(7), 2, 3, 4, 6, 2, 3, 2, "visible test")


def _segment_visible() -> Case:
    return _segment_case(np.random.default_rng(8), np.array([2, 0, 3, 1], np.int32), 2, "visible test")


MVMR_TEMPLATE = '''\
from metal_puzzles import GradProblem
from metal_puzzles.puzzles.composition.launchers import run_mvmr, run_mvmr_backward_b, run_vvor


@mx.custom_function
def mvmr_op(a, a_idx, b, b_idx, o_idx, n):
    # The forward pass: your kernel from II.7b.
    return run_mvmr(mvmr_fast_test, a, a_idx, b, b_idx, o_idx, n)


@mvmr_op.vjp
def mvmr_op_vjp(primals, cotangent, output):
    a, a_idx, b, b_idx, o_idx, n = primals
    # FILL ME IN (roughly 2 lines): da with run_vvor(vvor_test, ...), db with
    # run_mvmr_backward_b(mvmr_backward_b_test, ...).
    return da, mx.zeros_like(a_idx), db, mx.zeros_like(b_idx), mx.zeros_like(o_idx), None


problem = GradProblem("MVMR Autodiff", mvmr_op)
problem.show()
'''

SEGMENT_TEMPLATE = '''\
from metal_puzzles import GradProblem
from metal_puzzles.puzzles.composition.launchers import run_segment_sum, run_segment_sum_backward


def exclusive_scan(lengths):
    return mx.cumsum(lengths) - lengths


@mx.custom_function
def segment_sum_op(x, lengths):
    # The forward pass: your kernel from II.4.
    return run_segment_sum(segment_sum_test, x, lengths, exclusive_scan(lengths))


@segment_sum_op.vjp
def segment_sum_op_vjp(primals, cotangent, output):
    x, lengths = primals
    # FILL ME IN (roughly 1 line): dx with run_segment_sum_backward(segment_sum_backward_test, ...).
    return dx, mx.zeros_like(lengths)


problem = GradProblem("Segment Sum Autodiff", segment_sum_op)
problem.show()
'''

_HOW_CHECKED = """\
`problem.check()` runs your function on the visible test and on hidden tests ({hidden}) and
compares it with a dense MLX reference: the values, `mx.vjp` with a random cotangent, and the
gradient of the loss `(f(...) ** 2).sum()` from `mx.value_and_grad`. Any sanitizer finding in
one of your kernels fails the test.

*Grading:* the grader never runs a notebook's Python, so it cannot run your `custom_function`.
It reads your kernels ({kernels}) from the notebook, wires them the standard way (as above),
and runs the same tests. Your grade for this entry says whether your kernels compose into
correct gradients; `check()` in the notebook also checks your own wiring."""

MVMR_AUTODIFF = GradPuzzle(
    id="mvmr_autodiff",
    number="II.10a",
    title="MVMR Autodiff",
    kernel_name="mvmr_op",
    input_names=("a", "a_idx", "b", "b_idx", "o_idx", "n"),
    arg_names=("a", "a_idx", "b", "b_idx", "o_idx", "n"),
    description="""\
Time to train. MLX computes gradients by reverse-mode autodiff, and it cannot look inside a Metal
kernel; `mx.custom_function` lets you say what the gradient of your function is. Decorate the
forward function with `@mx.custom_function`, and give it a **vjp** (vector-Jacobian product)
with `@f.vjp`: it receives the forward's arguments (`primals`), the gradient of the loss with
respect to the output (`cotangent`, shape `(n, G, M)`) and the output itself, and returns one
gradient per argument. The index arrays are not differentiated: return `mx.zeros_like(a_idx)`
and so on for them, and `None` for `n`, which is not an array. (Not `None` for an index array:
MLX matches the returned gradients to the *array* arguments in order, so a `None` there would
shift `db` into the wrong place.)

For `o = MVMR(a, a_idx, b, b_idx, o_idx, n)` with cotangent `do`:

- `da = VVOR(b, b_idx, do, o_idx, a_idx, Na)`: pair `t` adds the outer product of
  `b[b_idx[t], g, :]` and `do[o_idx[t], g, :]` into `da[a_idx[t], g]`; the result has `a`'s shape
  `(Na, G, C, M)` (VVOR's `M` and `C` are MVMR's `C` and `M`);
- `db = MVMR(a transposed, a_idx, do, o_idx, b_idx, Nb)`: your II.9 kernel.

Each `run_*` helper launches one of your earlier kernels with that puzzle's grid: `run_vvor(kernel,
a, a_idx, b, b_idx, o_idx, n)` and `run_mvmr_backward_b(kernel, a, a_idx, dout, o_idx, b_idx, nb)`
take the arguments in the order of II.8 and II.9, and `kernel` is the test function of that
puzzle's cell (`vvor_test`, `mvmr_backward_b_test`). Then `mx.grad` flows through your own
kernels.

""" + _HOW_CHECKED.format(hidden="repeated and unsorted indices, several groups, output rows that receive "
                          "nothing, sizes that fill no threadgroup evenly",
                          kernels="`mvmr` from II.7b, `vvor` from II.8, `mvmr_backward_b` from II.9"),
    spec=mvmr_dense,
    spec_source="def mvmr_dense(a, a_idx, b, b_idx, o_idx, n):\n    return mvmr_spec(a, a_idx, b, b_idx, o_idx, n)",
    visible=_mvmr_visible(),
    hidden=_mvmr_hidden,
    template=MVMR_TEMPLATE,
    kernel_puzzles=(mvmr.FAST, vvor.PUZZLE, mvmr_backward_b.PUZZLE),
    wire=mvmr_wire,
    argnums=(0, 2),
    atol=1e-3,
    rtol=1e-4,
)

SEGMENT_SUM_AUTODIFF = GradPuzzle(
    id="segment_sum_autodiff",
    number="II.10b",
    title="Segment Sum Autodiff",
    kernel_name="segment_sum_op",
    input_names=("x", "lengths"),
    arg_names=("x", "lengths"),
    description="""\
The same for segment sums: `y = segment_sum(x, lengths)` with your II.4 kernel forward, and the
vjp with your II.6 kernel, `dx[t] = dy[segment of t]`. The offsets are the exclusive scan of
`lengths`, computed with `mx.cumsum` (a real engine would run II.1's scan). The vjp returns
`dx` and `mx.zeros_like(lengths)`. `run_segment_sum_backward(kernel, dy, lengths, offsets, rows)`
needs the number of rows of `x`, which the cotangent alone does not tell.

""" + _HOW_CHECKED.format(hidden="empty segments, also first and last, other sizes and channel counts",
                          kernels="`segment_sum` from II.4 and `segment_sum_backward` from II.6"),
    spec=segment_sum_dense,
    spec_source="def segment_sum_dense(x, lengths):\n    return segment_matrix(lengths, x.shape[0]) @ x",
    visible=_segment_visible(),
    hidden=_segment_hidden,
    template=SEGMENT_TEMPLATE,
    kernel_puzzles=(segment_sum.PUZZLE, segment_sum_backward.PUZZLE),
    wire=segment_sum_wire,
    argnums=(0,),
    atol=1e-3,
    rtol=1e-4,
)

FINALE: list[GradPuzzle] = [MVMR_AUTODIFF, SEGMENT_SUM_AUTODIFF]


MVMR_AUTODIFF_ENTRY = Entry(MVMR_AUTODIFF, setup=None)
SEGMENT_SUM_AUTODIFF_ENTRY = Entry(SEGMENT_SUM_AUTODIFF, setup=None)
