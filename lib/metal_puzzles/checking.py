"""Checking a kernel against a spec on a set of launches: the verdicts learners and graders see.

One mechanism serves ``MetalProblem.check()``, ``metal-puzzles check`` and the grader: run every
case in the simulator (sanitizer in 'warn' mode so the output is still compared), compare with
the spec, apply the budget, and explain the first thing to fix.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .msl import ArgumentError, CompileError, Finding, KernelRuntimeError, RunResult, SanitizerError
from .puzzles.base import Budget, Case

PASS, WRONG, FINDINGS, COMPILE_ERROR, RUNTIME_ERROR = "pass", "wrong", "findings", "compile-error", "runtime-error"

#: Lock-step steps (statements, calls and loop iterations, once for all threads) a puzzle's kernel
#: may run per test. Every reference solution needs fewer than 100; an endless loop or a runaway
#: call tree is stopped here instead of at the simulator's general 100,000.
PUZZLE_MAX_STEPS = 20_000


@dataclass
class CaseOutcome:
    case: Case
    status: str
    yours: np.ndarray | None = None
    expected: np.ndarray | None = None
    findings: list[Finding] = field(default_factory=list)
    counts_max: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    run: RunResult | None = None

    @property
    def ok(self) -> bool:
        return self.status == PASS

    @property
    def mismatch(self) -> np.ndarray | None:
        if self.yours is None or self.expected is None or self.yours.shape != self.expected.shape:
            return None
        return ~_close(self.yours, self.expected)


@dataclass
class CheckResult:
    """The verdict on one puzzle. Truthy when the puzzle passes (correct and within budget)."""

    title: str
    outcomes: list[CaseOutcome]
    budget: Budget = field(default_factory=Budget)
    gpu_note: str | None = None
    printed: bool = False  # check() already printed the report

    @property
    def compile_error(self) -> str | None:
        for o in self.outcomes:
            if o.status == COMPILE_ERROR:
                return o.error
        return None

    @property
    def correct(self) -> bool:
        return bool(self.outcomes) and all(o.ok for o in self.outcomes)

    @property
    def counts_max(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for o in self.outcomes:
            for k, v in o.counts_max.items():
                out[k] = max(out.get(k, 0), v)
        return out

    @property
    def over_budget(self) -> list[str]:
        return self.budget.exceeded(self.counts_max)

    @property
    def within_budget(self) -> bool:
        return not self.over_budget

    @property
    def passed(self) -> bool:
        return self.correct and self.within_budget

    @property
    def findings(self) -> list[Finding]:
        return [f for o in self.outcomes for f in o.findings]

    @property
    def status(self) -> str:
        if self.passed:
            return "passed"
        if self.compile_error is not None:
            return "compile-error"
        if self.correct:
            return "over-budget"
        first = next(o for o in self.outcomes if not o.ok)
        return first.status

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        good = sum(o.ok for o in self.outcomes)
        return (f"CheckResult({self.title!r}, status={self.status!r}, tests passed={good}/{len(self.outcomes)}, "
                f"within_budget={self.within_budget})")

    def _ipython_display_(self) -> None:
        # In a notebook, check() has already printed the verdict; showing it twice is noise.
        if not self.printed:
            print(self.report())

    def report(self) -> str:
        """The verdict as a learner reads it: what passed, and the first thing to fix."""
        n = len(self.outcomes)
        if self.passed:
            lines = [f"Passed: {self.title} is correct on all {n} tests and within budget."]
        elif self.compile_error is not None:
            lines = [f"Failed: {self.title} does not compile.", "", self.compile_error]
        elif self.correct:
            lines = [f"Almost: {self.title} is correct on all {n} tests, but over budget:"]
            lines += [f"  - it {s}" for s in self.over_budget]
        else:
            bad = [o for o in self.outcomes if not o.ok]
            lines = [f"Failed: {self.title} fails {len(bad)} of {n} tests."]
            lines += ["", *describe_outcome(bad[0])]
            if len(bad) > 1:
                others = ", ".join(o.case.label for o in bad[1:4]) + (", ..." if len(bad) > 4 else "")
                lines.append(f"Also failing: {others}.")
            if self.over_budget:
                lines.append("Budget: it " + "; it ".join(self.over_budget) + ".")
        if self.gpu_note:
            lines += ["", self.gpu_note]
        return "\n".join(lines)


def describe_outcome(o: CaseOutcome) -> list[str]:
    case = o.case
    head = f"{case.label} (grid={case.grid}, threadgroup={case.threadgroup}):"
    if o.status == RUNTIME_ERROR:
        return [head + " the kernel stopped with an error.", o.error or ""]
    lines = []
    if o.findings:
        lines.append(head + " the sanitizer found a problem a GPU would hide:")
        for f in o.findings[:3]:
            where = f"line {f.pos.line}: " if f.pos is not None and f.pos.file == "source" else (
                f"{f.pos.file} line {f.pos.line}: " if f.pos is not None else "")
            lines.append(f"  {f.kind}: {where}{f.message}")
        if len(o.findings) > 3:
            lines.append(f"  ... and {len(o.findings) - 3} more")
        head = "Output:"
    if o.yours is not None and o.expected is not None:
        if o.yours.shape != o.expected.shape:
            lines.append(f"{head} output shape {o.yours.shape} differs from the spec's {o.expected.shape}.")
        elif o.mismatch is not None and o.mismatch.any():
            lines.append(f"{head} wrong output at {int(o.mismatch.sum())} of {o.mismatch.size} positions.")
            lines += format_comparison(o.yours, o.expected, o.mismatch)
        elif o.findings:
            lines.append("The output happens to match the spec on this test, but the problem above would show on "
                         "other sizes or hardware.")
    return lines


def format_comparison(yours: np.ndarray, expected: np.ndarray, mismatch: np.ndarray) -> list[str]:
    """Yours versus the spec, with the differing positions marked."""
    if yours.ndim <= 1:
        ys = [_fmt(v) for v in np.atleast_1d(yours)]
        es = [_fmt(v) for v in np.atleast_1d(expected)]
        w = [max(len(a), len(b)) for a, b in zip(ys, es, strict=True)]
        if len(ys) <= 24:
            row = lambda vals: "[" + " ".join(v.rjust(k) for v, k in zip(vals, w, strict=True)) + "]"  # noqa: E731
            marks = " " + " ".join(("^" * k if m else " " * k) for m, k in zip(np.atleast_1d(mismatch), w, strict=True))
            return [f"  Yours: {row(ys)}", f"  Spec : {row(es)}", f"         {marks.rstrip()}"]
    idx = [tuple(int(i) for i in p) for p in np.argwhere(mismatch)[:8]]
    out = ["  Yours:", _indent(np.array2string(yours, precision=4)), "  Spec :",
           _indent(np.array2string(expected, precision=4))]
    more = "" if mismatch.sum() <= 8 else f" (first 8 of {int(mismatch.sum())})"
    detail = ", ".join(f"{p}: yours {_fmt(yours[p])}, spec {_fmt(expected[p])}" for p in idx)
    out.append(f"  Differs at{more}: {detail}")
    return out


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def _fmt(v) -> str:
    v = float(v)
    if np.isfinite(v) and v == int(v) and abs(v) < 1e9:
        return str(int(v))
    return f"{v:.4g}"


def _close(a: np.ndarray, b: np.ndarray, rtol: float = 1e-5, atol: float = 1e-4) -> np.ndarray:
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    return np.isclose(a, b, rtol=rtol, atol=atol) | (np.isnan(a) & np.isnan(b))


Runner = Callable[[Case], RunResult]


def run_cases(run: Runner, spec: Callable, cases: Sequence[Case], *, rtol: float = 1e-5, atol: float = 1e-4,
              stop_on_compile_error: bool = True) -> list[CaseOutcome]:
    """Run every case, compare with the spec. ``run`` launches the learner's kernel on one case
    (sanitize='warn') and returns the run record."""
    outcomes = []
    for case in cases:
        outcome = run_one(run, spec, case, rtol, atol)
        outcomes.append(outcome)
        if outcome.status == COMPILE_ERROR and stop_on_compile_error:
            break
        if any(f.kind == "step-budget" for f in outcome.findings):
            # A kernel that does not finish would spend its whole step budget on every test:
            # the verdict is already known, so the remaining tests are not run.
            for rest in cases[len(outcomes):]:
                outcomes.append(CaseOutcome(rest, RUNTIME_ERROR, error="not run: the kernel did not finish an "
                                            "earlier test (see its step-budget finding)"))
            break
    return outcomes


def run_one(run: Runner, spec: Callable, case: Case, rtol: float, atol: float) -> CaseOutcome:
    expected = expected_output(spec, case)
    try:
        result = run(case)
    except CompileError as err:
        return CaseOutcome(case, COMPILE_ERROR, expected=expected, error=str(err))
    except SanitizerError as err:  # the step budget: an endless loop
        outcome = CaseOutcome(case, FINDINGS, expected=expected, findings=list(err.findings))
        if err.result is not None:
            outcome.counts_max = err.result.counts.max()
        return outcome
    except (KernelRuntimeError, ArgumentError) as err:
        return CaseOutcome(case, RUNTIME_ERROR, expected=expected, error=str(err))
    yours = np.asarray(result.outputs[0])
    outcome = CaseOutcome(case, PASS, yours=yours, expected=expected, findings=list(result.findings),
                          counts_max=result.counts.max(), run=result)
    if yours.shape != expected.shape or not _close(yours, expected, rtol, atol).all():
        outcome.status = WRONG
    if outcome.findings:
        outcome.status = FINDINGS
    return outcome


def expected_output(spec: Callable, case: Case) -> np.ndarray:
    import mlx.core as mx

    out = spec(*[mx.array(x) for x in case.inputs])
    return np.asarray(out, dtype=np.float64).reshape(case.output_shape) if np.size(out) == int(
        np.prod(case.output_shape)) else np.asarray(out, dtype=np.float64)


def check_source(puzzle, source: str, header: str | None = None, *, input_names: Sequence[str] | None = None,
                 output_names: Sequence[str] | None = None, seed: int = 0, max_steps: int | None = None) -> CheckResult:
    """Check a kernel body (and header) against a catalogue puzzle, without a notebook.

    This is what the grader and the tests use. ``header`` defaults to the puzzle's own header.
    """
    import warnings

    from .kernel import MetalKernel

    kernel = MetalKernel(puzzle.kernel_name, list(input_names or puzzle.input_names),
                         list(output_names or puzzle.output_names), source,
                         puzzle.header if header is None else header, atomic_outputs=puzzle.atomic_outputs)

    def run(case: Case) -> RunResult:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return kernel.kernel.run(inputs=list(case.inputs), output_shapes=[case.output_shape],
                                     output_dtypes=[puzzle.output_dtype], grid=case.grid, threadgroup=case.threadgroup,
                                     init_value=puzzle.init_value, sanitize="warn", trace=False,
                                     max_steps=max_steps or PUZZLE_MAX_STEPS)

    outcomes = run_cases(run, puzzle.spec, puzzle.cases(seed), rtol=puzzle.rtol, atol=puzzle.atol)
    return CheckResult(puzzle.title, outcomes, puzzle.budget)
