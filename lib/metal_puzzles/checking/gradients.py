"""Gradient puzzles (the finale): the learner writes an ``mx.custom_function`` whose forward pass
and vjp launch their kernels; it is checked against a dense MLX reference in its values, its
vector-Jacobian products (``mx.vjp``) and the gradient of a scalar loss (``mx.value_and_grad``).

The grader never runs a submission's Python: it wires the learner's *kernels* the reference way
(``wired.check_kernel_sources``) and runs the same checks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import mlx.core as mx
import numpy as np

from ..msl import SanitizerError, StopReason
from .case import Case
from .inputs import values
from .verdict import CaseStatus, CheckResult, Outcome, Subject, classify
from .wired import WiredPuzzle


@dataclass(frozen=True)
class GradPuzzle(WiredPuzzle):
    """A finale entry of Part II: the learner writes Python (a custom function and its vjp), not a kernel.

    ``kernel_puzzles`` are the puzzles whose kernels the function wires together; ``wire``
    builds the function from such kernels (by kernel name) the reference way; ``argnums`` are
    the differentiated arguments; ``spec`` is the dense MLX reference taking the same arguments.
    """

    argnums: tuple[int, ...] = (0,)
    arg_names: tuple[str, ...] = ()

    @property
    def subject(self) -> Subject:
        return Subject.GRADIENT

    def check_wired(self, wired: Callable, seed: int = 0) -> CheckResult:
        return run_grad_checks(self, wired, seed)

    def args(self, case: Case) -> list[Any]:
        """The function's arguments for a case: arrays as mx.array, 0-d counts as ints."""
        return [int(x) if np.ndim(x) == 0 else mx.array(x) for x in case.inputs]


def _compare(case: Case, quantity: str, yours: Any, expected: Any, rtol: float, atol: float) -> Outcome:
    if yours is None:
        return Outcome(case, CaseStatus.WRONG, expected=np.asarray(expected), quantity=quantity,
                       error=" your function returned None.", rtol=rtol, atol=atol)
    y = np.asarray(yours, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    ok = y.shape == e.shape and bool(np.isclose(y, e, rtol=rtol, atol=atol).all())
    return Outcome(case, CaseStatus.PASS if ok else CaseStatus.WRONG, yours=y, expected=e, quantity=quantity,
                   rtol=rtol, atol=atol)


def _evaluate(fn: Callable[[], Any]) -> Any:
    out = fn()
    mx.eval(out)
    return out


def _loss_grad(f: Callable, primals: Sequence[mx.array]) -> list[mx.array]:
    def loss(*p):
        return (f(*p) ** 2).sum()

    _, grads = mx.value_and_grad(loss, argnums=list(range(len(primals))))(*primals)
    return list(grads)


def grad_outcomes(puzzle: GradPuzzle, op: Callable, case: Case, rng: np.random.Generator) -> list[Outcome]:
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
    for n, (quantity, yours_fn, expected_fn) in enumerate(checks):
        expected = _evaluate(expected_fn)
        try:
            yours = _evaluate(yours_fn)
        except Exception as exc:  # learner code may raise anything; it becomes a verdict
            status, message, findings = classify(exc)
            outcome = Outcome(case, status, error=message, findings=findings, quantity=quantity)
            if isinstance(exc, SanitizerError) and exc.result is not None:
                outcome.stopped = exc.result.stopped
            outcomes.append(outcome)
            if outcome.stopped == StopReason.STEP_BUDGET:
                # As for kernel tests (``run_cases``): a kernel that does not finish would spend its
                # whole step budget on every comparison; the verdict is known, the rest is not run.
                outcomes.extend(_not_run(case, q) for q, _, _ in checks[n + 1:])
                break
            continue
        if quantity == "values":
            yours, expected = yours[0], expected[0]
        outcome = _compare(case, quantity, yours, expected, puzzle.rtol, puzzle.atol)
        got, wanted = outcome.yours, outcome.expected
        if quantity != "values" and got is not None and wanted is not None and got.shape != wanted.shape:
            shapes = {"the cotangent (the output)": tuple(expected_value.shape)} | {
                f"'{name}'": tuple(np.shape(x)) for name, x in zip(puzzle.arg_names, case.inputs, strict=False)}
            outcome.error = misplaced_gradient_cause(got.shape, shapes)
        outcomes.append(outcome)
    return outcomes


def misplaced_gradient_cause(shape: tuple[int, ...], shapes: dict[str, tuple[int, ...]]) -> str:
    """Why a gradient has another shape than its argument: the vjp's gradients out of place."""
    like = next((what for what, s in shapes.items() if s == tuple(shape)), None)
    return ((f"{tuple(shape)} is the shape of {like}. " if like else "")
            + "A gradient of the wrong shape usually means the vjp's gradients are out of place: it must return "
            "one per argument, in order, with mx.zeros_like(...) for each index array and None only for an "
            "argument that is not an array (such as n); a None in place of an array shifts the gradients after it.")


def _not_run(case: Case, quantity: str = "every comparison") -> Outcome:
    return Outcome(case, CaseStatus.RUNTIME_ERROR, quantity=quantity, not_run=True,
                   error="not run: the kernel did not finish an earlier test (see its step-budget finding)")


def run_grad_checks(puzzle: GradPuzzle, op: Callable, seed: int = 0) -> CheckResult:
    """The verdict on a differentiable function: every comparison on every test (those after a
    kernel that did not finish are marked not run)."""
    rng = np.random.default_rng(seed + 1)
    outcomes: list[Outcome] = []
    cases = puzzle.cases(seed)
    for i, case in enumerate(cases):
        outcomes.extend(grad_outcomes(puzzle, op, case, rng))
        if outcomes and outcomes[-1].status == CaseStatus.COMPILE_ERROR:
            break
        if any(o.stopped == StopReason.STEP_BUDGET for o in outcomes):
            outcomes.extend(_not_run(rest) for rest in cases[i + 1:])
            break
    return CheckResult(puzzle.title, outcomes, subject=Subject.GRADIENT)
