"""The finale of Part II: gradients that flow through the learner's own kernels.

A ``MetalProblem`` checks one kernel. The finale checks a *function*: an ``mx.custom_function``
whose forward pass and whose vjp launch kernels from earlier puzzles. Its check compares the
function's values, its vector-Jacobian products (``mx.vjp``) and the gradient of a scalar loss
(``mx.value_and_grad``) with a dense MLX reference, on random inputs with repeated and unsorted
indices, empty segments, several groups, and sizes that fill no threadgroup evenly.

Two ways in:

* in the notebook, ``GradProblem(title, op).check()`` checks the learner's own ``op`` (their
  Python wiring around their kernels);
* the grader never runs a submission's Python, so :func:`check_kernel_sources` wires the
  learner's *kernels* (read statically from the notebook) the reference way and runs the same
  tests: it grades whether the kernels compose into correct gradients.

The ``run_*`` launchers start a puzzle's kernel with that puzzle's grid convention; the finale
templates, ``metal_puzzles.ops`` and the grader share them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import mlx.core as mx
import numpy as np

from .base import Budget, Case, Puzzle
from .q04_segment_sum import segment_matrix
from .q05_segment_sum_large import TG as LARGE_TG
from .q07_mvmr import mvmr_spec
from .q_common import indices, launch, values
from .q_common import lengths as random_lengths

PASS, WRONG, FINDINGS, COMPILE_ERROR, RUNTIME_ERROR = "pass", "wrong", "findings", "compile-error", "runtime-error"


# ----------------------------------------------------------------------------- launchers
def _n(value: Any) -> int:
    return int(value.item()) if isinstance(value, mx.array) else int(value)


def _count(value: Any) -> mx.array:
    """A count as a kernel's 0-d int32 input."""
    return mx.array(_n(value), dtype=mx.int32)


def run_mvmr(kernel: Any, a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array, o_idx: mx.array,
             n: Any, **options: Any) -> mx.array:
    """MVMR with II.7b's kernel: one threadgroup of M threads per (t, g)."""
    _, g, _, m = a.shape
    t = a_idx.shape[0]
    return launch(kernel, [a, a_idx, b, b_idx, o_idx, _count(n)], (_n(n), g, m), (m, g, t), (m, 1, 1),
                  init_value=0.0, **options)


def run_mvmr_simple(kernel: Any, a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array, o_idx: mx.array,
                    n: Any, **options: Any) -> mx.array:
    """MVMR with II.7a's kernel: one thread per (t, g, m)."""
    _, g, _, m = a.shape
    t = a_idx.shape[0]
    return launch(kernel, [a, a_idx, b, b_idx, o_idx, _count(n)], (_n(n), g, m), (m, g, t),
                  (min(m, 64), 1, 1), init_value=0.0, **options)


def run_vvor(kernel: Any, a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array, o_idx: mx.array,
             n: Any, **options: Any) -> mx.array:
    """VVOR with II.8's kernel: thread (c, m, t * G + g)."""
    _, g, m = a.shape
    c = b.shape[2]
    t = a_idx.shape[0]
    return launch(kernel, [a, a_idx, b, b_idx, o_idx, _count(n)], (_n(n), g, m, c), (c, m, t * g),
                  (min(c, 16), min(m, 16), 1), init_value=0.0, **options)


def run_mvmr_backward_b(kernel: Any, a: mx.array, a_idx: mx.array, dout: mx.array, o_idx: mx.array,
                        b_idx: mx.array, nb: Any, **options: Any) -> mx.array:
    """db with II.9's kernel: thread (c, g, t)."""
    _, g, c, _ = a.shape
    t = a_idx.shape[0]
    return launch(kernel, [a, a_idx, dout, o_idx, b_idx, _count(nb)], (_n(nb), g, c), (c, g, t),
                  (min(c, 64), 1, 1), init_value=0.0, **options)


def run_segment_sum(kernel: Any, x: mx.array, lengths: mx.array, offsets: mx.array, **options: Any) -> mx.array:
    """Segment sum with II.4's kernel: thread (c, k)."""
    k, c = lengths.shape[0], x.shape[1]
    return launch(kernel, [x, lengths, offsets], (k, c), (c, k, 1), (min(c, 16), min(k, 16), 1), **options)


def run_segment_sum_large(kernel: Any, x: mx.array, lengths: mx.array, offsets: mx.array,
                          **options: Any) -> mx.array:
    """Segment sum with II.5's kernel: threadgroup (0, c, k) of TG threads."""
    k, c = lengths.shape[0], x.shape[1]
    return launch(kernel, [x, lengths, offsets], (k, c), (LARGE_TG, c, k), (LARGE_TG, 1, 1), **options)


def run_segment_sum_backward(kernel: Any, dy: mx.array, lengths: mx.array, offsets: mx.array, rows: int,
                             **options: Any) -> mx.array:
    """dx with II.6's kernel: thread (c, t), exactly ``rows`` rows of threads."""
    c = dy.shape[1]
    return launch(kernel, [dy, lengths, offsets], (rows, c), (c, rows, 1), (min(c, 16), min(max(rows, 1), 16), 1),
                  **options)


# ----------------------------------------------------------------------------- reference wiring
def build_mvmr(forward: Callable, da: Callable, db: Callable) -> Callable:
    """MVMR as an ``mx.custom_function`` from three launch functions.

    ``forward(a, a_idx, b, b_idx, o_idx, n)`` computes o; ``da(...)`` is a VVOR launch and
    ``db(...)`` a transposed-MVMR launch, called with the arguments DESIGN §6 gives them.
    """

    @mx.custom_function
    def mvmr(a, a_idx, b, b_idx, o_idx, n):
        return forward(a, a_idx, b, b_idx, o_idx, n)

    @mvmr.vjp
    def mvmr_vjp(primals, cotangent, output):
        a, a_idx, b, b_idx, o_idx, n = primals
        # da[a_idx[t], g, c, m] += b[b_idx[t], g, c] * do[o_idx[t], g, m]: a VVOR with (C, M) as (M, C).
        grad_a = da(b, b_idx, cotangent, o_idx, a_idx, a.shape[0])
        # db[b_idx[t], g, c] += sum_m do[o_idx[t], g, m] * a[a_idx[t], g, c, m]: MVMR with a transposed.
        grad_b = db(a, a_idx, cotangent, o_idx, b_idx, b.shape[0])
        # MLX lines gradients up with the array arguments: index arrays get zeros, not None.
        return grad_a, mx.zeros_like(a_idx), grad_b, mx.zeros_like(b_idx), mx.zeros_like(o_idx), None

    return mvmr


def build_segment_sum(forward: Callable, backward: Callable) -> Callable:
    """Segment sum as an ``mx.custom_function``: ``forward(x, lengths, offsets)`` and
    ``backward(dy, lengths, offsets, rows)`` are launch functions."""

    @mx.custom_function
    def segment_sum(x, lengths):
        return forward(x, lengths, exclusive_scan(lengths))

    @segment_sum.vjp
    def segment_sum_vjp(primals, cotangent, output):
        x, lengths = primals
        return backward(cotangent, lengths, exclusive_scan(lengths), x.shape[0]), mx.zeros_like(lengths)

    return segment_sum


def exclusive_scan(lengths: mx.array) -> mx.array:
    """Where each segment starts (int32)."""
    return (mx.cumsum(lengths) - lengths).astype(mx.int32)


def _bind(launcher: Callable, kernel: Any, **options: Any) -> Callable:
    return lambda *args: launcher(kernel, *args, **options)


def mvmr_from_kernels(forward: Any, vvor: Any, backward_b: Any, **options: Any) -> Callable:
    """The reference wiring around II.7b's, II.8's and II.9's kernels (or notebook functions)."""
    return build_mvmr(_bind(run_mvmr, forward, **options), _bind(run_vvor, vvor, **options),
                      _bind(run_mvmr_backward_b, backward_b, **options))


def segment_sum_from_kernels(forward: Any, backward: Any, **options: Any) -> Callable:
    """The reference wiring around II.4's and II.6's kernels (or notebook functions)."""
    return build_segment_sum(_bind(run_segment_sum, forward, **options),
                             _bind(run_segment_sum_backward, backward, **options))


# ----------------------------------------------------------------------------- dense references
def mvmr_dense(a, a_idx, b, b_idx, o_idx, n):
    return mvmr_spec(a, a_idx, b, b_idx, o_idx, n)


def segment_sum_dense(x, lengths):
    return segment_matrix(lengths, x.shape[0]) @ x


# ----------------------------------------------------------------------------- the puzzles
@dataclass(frozen=True)
class GradPuzzle(Puzzle):
    """A finale entry: the learner writes Python (a custom function and its vjp), not a kernel.

    ``kernels`` names the kernels (by ``kernel_name``) the function wires together, for the
    grader; ``wire`` builds the function from them the reference way; ``argnums`` are the
    differentiated arguments; ``spec`` is the dense MLX reference taking the same arguments.
    The template is Python code for a notebook cell.
    """

    kernels: tuple[str, ...] = ()
    wire: Callable[..., Callable] | None = None
    argnums: tuple[int, ...] = (0,)
    arg_names: tuple[str, ...] = ()

    def args(self, case: Case) -> list[Any]:
        """The function's arguments for a case: arrays as mx.array, 0-d counts as ints."""
        return [int(x) if np.ndim(x) == 0 else mx.array(x) for x in case.inputs]


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


def mvmr_wire(kernels: Mapping[str, Any], **options: Any) -> Callable:
    return mvmr_from_kernels(kernels["mvmr"], kernels["vvor"], kernels["mvmr_backward_b"], **options)


def segment_sum_wire(kernels: Mapping[str, Any], **options: Any) -> Callable:
    return segment_sum_from_kernels(kernels["segment_sum"], kernels["segment_sum_backward"], **options)


MVMR_TEMPLATE = '''\
from metal_puzzles.puzzles.finale import GradProblem, run_mvmr, run_mvmr_backward_b, run_vvor


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
from metal_puzzles.puzzles.finale import GradProblem, run_segment_sum, run_segment_sum_backward


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
    part=2,
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
    kernels=("mvmr", "vvor", "mvmr_backward_b"),
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
    part=2,
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
    kernels=("segment_sum", "segment_sum_backward"),
    wire=segment_sum_wire,
    argnums=(0,),
    atol=1e-3,
    rtol=1e-4,
)

FINALE: list[GradPuzzle] = [MVMR_AUTODIFF, SEGMENT_SUM_AUTODIFF]


# ----------------------------------------------------------------------------- checking
@dataclass
class GradOutcome:
    """One comparison (values, a vjp, a gradient) on one test; shaped like checking.CaseOutcome
    so the grader's summaries read it unchanged."""

    case: Case
    status: str
    yours: np.ndarray | None = None
    expected: np.ndarray | None = None
    findings: list = field(default_factory=list)
    counts_max: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    quantity: str = "values"

    @property
    def ok(self) -> bool:
        return self.status == PASS

    @property
    def mismatch(self) -> np.ndarray | None:
        if self.yours is None or self.expected is None or self.yours.shape != self.expected.shape:
            return None
        return ~np.isclose(self.yours, self.expected, rtol=1e-4, atol=1e-3)


@dataclass
class GradCheckResult:
    """The verdict on a finale entry; truthy when every comparison passed. Same interface as
    ``checking.CheckResult`` (there is no budget: the kernels' budgets were their own puzzles')."""

    title: str
    outcomes: list[GradOutcome]
    budget: Budget = field(default_factory=Budget)
    gpu_note: str | None = None

    @property
    def compile_error(self) -> str | None:
        return next((o.error for o in self.outcomes if o.status == COMPILE_ERROR), None)

    @property
    def correct(self) -> bool:
        return bool(self.outcomes) and all(o.ok for o in self.outcomes)

    @property
    def counts_max(self) -> dict[str, int]:
        return {}

    @property
    def over_budget(self) -> list[str]:
        return []

    @property
    def within_budget(self) -> bool:
        return True

    @property
    def passed(self) -> bool:
        return self.correct

    @property
    def findings(self) -> list:
        return [f for o in self.outcomes for f in o.findings]

    @property
    def status(self) -> str:
        if self.passed:
            return "passed"
        if self.compile_error is not None:
            return COMPILE_ERROR
        return next(o.status for o in self.outcomes if not o.ok) if self.outcomes else WRONG

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        good = sum(o.ok for o in self.outcomes)
        return f"GradCheckResult({self.title!r}, status={self.status!r}, comparisons passed={good}/{len(self.outcomes)})"

    def report(self) -> str:
        n = len(self.outcomes)
        if self.passed:
            return (f"Passed: {self.title} matches the dense reference in values, vjps and gradients "
                    f"({n} comparisons).")
        bad = [o for o in self.outcomes if not o.ok]
        lines = [f"Failed: {self.title} fails {len(bad)} of {n} comparisons.", ""]
        lines += _describe(bad[0])
        if len(bad) > 1:
            others = "; ".join(f"{o.case.label}: {o.quantity}" for o in bad[1:4])
            lines.append(f"Also failing: {others}" + (f"; and {len(bad) - 4} more." if len(bad) > 4 else "."))
        return "\n".join(lines)


def _describe(o: GradOutcome) -> list[str]:
    head = f"{o.case.label}, {o.quantity}:"
    if o.status in (COMPILE_ERROR, RUNTIME_ERROR):
        return [head + (" a kernel does not compile." if o.status == COMPILE_ERROR else " it raised an error."),
                o.error or ""]
    lines = []
    if o.findings:
        lines.append(head + " the sanitizer found a problem in a kernel:")
        lines += [f"  {f.kind}: " + (f"line {f.pos.line}: " if f.pos is not None else "") + f.message
                  for f in o.findings[:3]]
        return lines
    if o.yours is not None and o.expected is not None and o.yours.shape != o.expected.shape:
        return [f"{head} shape {o.yours.shape}, but the reference's is {o.expected.shape}."]
    mismatch = o.mismatch
    if mismatch is not None:
        where = [tuple(int(i) for i in p) for p in np.argwhere(mismatch)[:4]]
        detail = ", ".join(f"{p}: yours {float(o.yours[p]):.4g}, reference {float(o.expected[p]):.4g}" for p in where)
        lines.append(f"{head} wrong at {int(mismatch.sum())} of {mismatch.size} positions, e.g. {detail}.")
    return lines or [head + (o.error or " wrong.")]


def _classify(exc: BaseException) -> tuple[str, str, list]:
    from ..msl import CompileError, SanitizerError

    if isinstance(exc, CompileError):
        return COMPILE_ERROR, str(exc), []
    if isinstance(exc, SanitizerError):
        return FINDINGS, str(exc), list(exc.findings)
    return RUNTIME_ERROR, f"{type(exc).__name__}: {exc}", []


def _compare(case: Case, quantity: str, yours: Any, expected: Any, rtol: float, atol: float) -> GradOutcome:
    if yours is None:
        return GradOutcome(case, WRONG, expected=np.asarray(expected), quantity=quantity,
                           error=" your function returned None.")
    y = np.asarray(yours, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    ok = y.shape == e.shape and bool(np.isclose(y, e, rtol=rtol, atol=atol).all())
    return GradOutcome(case, PASS if ok else WRONG, yours=y, expected=e, quantity=quantity)


def _evaluate(fn: Callable[[], Any]) -> Any:
    out = fn()
    mx.eval(out)
    return out


def grad_outcomes(puzzle: GradPuzzle, op: Callable, case: Case, rng: np.random.Generator) -> list[GradOutcome]:
    """Compare ``op`` with the dense reference on one case: values, vjp, loss gradient."""
    args = puzzle.args(case)
    names = [puzzle.arg_names[i] for i in puzzle.argnums]

    def partial(fn):
        def f(*diff):
            full = list(args)
            for i, v in zip(puzzle.argnums, diff, strict=True):
                full[i] = v
            return fn(*full)
        return f

    primals = [args[i] for i in puzzle.argnums]
    expected_value = puzzle.spec(*args)
    cotangent = mx.array(values(rng, expected_value.shape))
    checks: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = [
        ("values", lambda: [op(*args)], lambda: [expected_value]),
        *[(f"vjp w.r.t. {name}", lambda i=i: mx.vjp(partial(op), primals, [cotangent])[1][i],
           lambda i=i: mx.vjp(partial(puzzle.spec), primals, [cotangent])[1][i]) for i, name in enumerate(names)],
        *[(f"gradient of (f ** 2).sum() w.r.t. {name}",
           lambda i=i: _loss_grad(partial(op), primals)[i], lambda i=i: _loss_grad(partial(puzzle.spec), primals)[i])
          for i, name in enumerate(names)],
    ]
    outcomes = []
    for quantity, yours_fn, expected_fn in checks:
        expected = _evaluate(expected_fn)
        try:
            yours = _evaluate(yours_fn)
        except Exception as exc:  # learner code may raise anything; it becomes a verdict
            status, message, findings = _classify(exc)
            outcomes.append(GradOutcome(case, status, error=message, findings=findings, quantity=quantity))
            continue
        if quantity == "values":
            yours, expected = yours[0], expected[0]
        outcomes.append(_compare(case, quantity, yours, expected, puzzle.rtol, puzzle.atol))
    return outcomes


def _loss_grad(f: Callable, primals: Sequence[mx.array]) -> list[mx.array]:
    def loss(*p):
        return (f(*p) ** 2).sum()

    _, grads = mx.value_and_grad(loss, argnums=list(range(len(primals))))(*primals)
    return list(grads)


def run_grad_checks(puzzle: GradPuzzle, op: Callable, seed: int = 0) -> GradCheckResult:
    rng = np.random.default_rng(seed + 1)
    outcomes: list[GradOutcome] = []
    for case in puzzle.cases(seed):
        outcomes.extend(grad_outcomes(puzzle, op, case, rng))
        if outcomes and outcomes[-1].status == COMPILE_ERROR:
            break
    return GradCheckResult(puzzle.title, outcomes)


def check_kernel_sources(puzzle: GradPuzzle, kernels: Mapping[str, Any], *, seed: int = 0,
                         max_steps: int | None = None) -> GradCheckResult:
    """Grade a finale entry without running learner Python: wire the learner's kernels the
    reference way and run the finale's tests.

    ``kernels`` maps each name in ``puzzle.kernels`` to the kernel as read from the notebook:
    a mapping or an object with ``source`` and optionally ``header``, ``input_names``,
    ``output_names`` (the grader's ``ExtractedKernel`` has them).
    """
    from ..kernel import MetalKernel
    from .part2 import PART_II

    made = {}
    missing = [name for name in puzzle.kernels if name not in kernels]
    if missing:
        error = "missing kernel(s): " + ", ".join(missing)
        return GradCheckResult(puzzle.title, [GradOutcome(puzzle.visible, RUNTIME_ERROR, error=error)])
    for name in puzzle.kernels:
        owner = next(p for p in PART_II if p.kernel_name == name and not isinstance(p, GradPuzzle))
        k = kernels[name]
        get = (lambda key, k=k: k.get(key)) if isinstance(k, Mapping) else (lambda key, k=k: getattr(k, key, None))
        made[name] = MetalKernel(name, list(get("input_names") or owner.input_names),
                                 list(get("output_names") or owner.output_names), get("source"),
                                 get("header") or owner.header, atomic_outputs=owner.atomic_outputs)
    op = puzzle.wire(made, sanitize="error", max_steps=max_steps)
    return run_grad_checks(puzzle, op, seed)


class GradProblem:
    """The notebook side of a finale entry: check a differentiable function built on your kernels."""

    def __init__(self, name: str, op: Callable, *, puzzle: GradPuzzle | None = None, seed: int = 0) -> None:
        self.name = name
        self.op = op
        self.puzzle = puzzle if puzzle is not None else _find(name)
        self.seed = seed

    def show(self) -> None:
        """Print how far the visible test's values and gradients are from the reference."""
        outcomes = grad_outcomes(self.puzzle, self.op, self.puzzle.visible, np.random.default_rng(self.seed))
        print(f"# {self.name}\n")
        width = max(len(o.quantity) for o in outcomes)
        for o in outcomes:
            if o.yours is not None and o.expected is not None and o.yours.shape == o.expected.shape:
                gap = f"max |yours - reference| = {np.abs(o.yours - o.expected).max(initial=0.0):.3g}"
            elif o.yours is not None and o.expected is not None:
                gap = f"shape {o.yours.shape}, reference {o.expected.shape}"
            else:
                gap = (o.error or o.status).splitlines()[0]
            print(f"{o.quantity.ljust(width)}  {'ok   ' if o.ok else 'WRONG'}  {gap}")

    def check(self, quiet: bool = False) -> GradCheckResult:
        from ..progress import record

        result = run_grad_checks(self.puzzle, self.op, self.seed)
        record(self.puzzle.id, result)
        if not quiet:
            print(result.report())
        return result


def _find(name: str) -> GradPuzzle:
    key = "".join(ch for ch in name.lower() if ch.isalnum())
    for p in FINALE:
        if key in ("".join(ch for ch in p.title.lower() if ch.isalnum()), p.id.replace("_", "")):
            return p
    raise KeyError(f"no finale puzzle named {name!r}; known: {', '.join(p.title for p in FINALE)}")
