"""Running a puzzle's kernel on its tests: the one way every part of the package launches a
puzzle kernel on a test case (check, show, explore, the book's images, the grader), and the
comparison of each run with the spec."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Sequence
from functools import lru_cache

import numpy as np

from ..host.kernel import KERNEL_ERRORS, MetalKernel
from ..msl import (
    ArgumentError,
    Audience,
    CompileError,
    RunResult,
    SanitizeMode,
    SanitizerError,
    StopReason,
    simulate,
)
from ..msl.observe.gpu_models import GpuModel
from .case import Case
from .likely_cause import scaled_input
from .pipeline import run_pipeline
from .puzzle import Diagnose, LaunchOptions, Puzzle
from .tolerance import Allowance, Condition, ErrorModel, compare_with_spec, spec_in_float64
from .verdict import CaseStatus, CheckResult, Outcome, classify

#: Lock-step steps (statements, calls and loop iterations, once for all threads) a puzzle's kernel
#: may run per test. Every reference solution needs fewer than 100; an endless loop or a runaway
#: call tree is stopped here instead of at the simulator's general 100,000.
PUZZLE_MAX_STEPS = 20_000

Runner = Callable[[Case], RunResult]
#: A float32 output that starts uninitialised: how most puzzles launch.
DEFAULT_LAUNCH = LaunchOptions()


def run_case(kernel: MetalKernel, case: Case, options: LaunchOptions = DEFAULT_LAUNCH, *,
             trace: bool | None = False, steps: bool = False, max_steps: int | None = None,
             cost: GpuModel | str | bool | None = None) -> RunResult:
    """Launch a puzzle's kernel on one test case in the simulator.

    Findings are collected in the run record, not raised or warned about (sanitize='warn' with
    warnings silenced), so the output can still be compared with the spec and the findings
    reported beside it. ``trace`` and ``steps`` record what diagrams and the explorer show;
    ``cost`` a cost profile (default: when the puzzle's budget needs one, on the default GPU).
    The findings' hints are worded for a puzzle's learner, who writes the kernel but not its launch.
    """
    case = launched_case(kernel, case, options)
    if options.pipeline is not None:
        return run_pipeline(options.pipeline, kernel, case, options.output_dtype, init_value=options.init_value,
                            trace=trace, steps=steps, max_steps=max_steps or PUZZLE_MAX_STEPS,
                            cost=options.cost if cost is None else cost)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return kernel.kernel.run(inputs=list(case.inputs), output_shapes=[case.output_shape],
                                 output_dtypes=[case.output_dtype or options.output_dtype], grid=case.grid,
                                 threadgroup=case.threadgroup,
                                 init_value=options.init_value, sanitize=SanitizeMode.WARN, trace=trace, steps=steps,
                                 max_steps=max_steps or PUZZLE_MAX_STEPS, audience=Audience.PUZZLE,
                                 cost=options.cost if cost is None else cost, buffer_layout=buffer_layout(kernel, options))


def buffer_layout(kernel: MetalKernel, options: LaunchOptions) -> list[str] | None:
    """The kernel's own array names in the order the puzzle's host binds them (whole shaders)."""
    if options.buffer_layout is None:
        return None
    names = [*kernel.input_names, *kernel.output_names]
    return [names[k] for k in options.buffer_layout]


def launched_case(kernel: MetalKernel, case: Case, options: LaunchOptions) -> Case:
    """The case as it is launched: for a puzzle whose threadgroup size is the learner's choice,
    with threadgroups as wide as the kernel's header says."""
    if options.threadgroup_constant is None:
        return case
    width = header_constant(kernel.header, options.threadgroup_constant)
    if not 0 < width <= 1024:
        raise ArgumentError(f"{options.threadgroup_constant} = {width} in the header: a threadgroup holds 1 to 1024 "
                            "threads")
    return dataclasses.replace(case, threadgroup=(width, 1, 1))


@lru_cache(maxsize=64)
def header_constant(header: str, name: str) -> int:
    """The value of an integer constant of a kernel header, read by compiling a one-line kernel
    that stores it (so #define, constant globals and expressions all work as in the kernel)."""
    try:
        run = simulate("header_constant", [], ["out"], f"out[0] = long({name});", header, inputs=[],
                       output_shapes=[(1,)], output_dtypes=["int64"], grid=(1, 1, 1), threadgroup=(1, 1, 1),
                       trace=False)
    except CompileError as err:
        first = str(err).splitlines()[0]
        raise ArgumentError(f"this puzzle launches threadgroups of {name} threads, so the header must define the "
                            f"constant {name} (for example 'constant uint {name} = 256;'): {first}") from None
    return int(run.outputs[0][0])


def run_cases(run: Runner, spec: Callable, cases: Sequence[Case], *, rtol: float = 1e-5, atol: float = 1e-4,
              stop_on_compile_error: bool = True, model: ErrorModel = ErrorModel.FIXED,
              allowance: Allowance | None = None, diagnose: Diagnose | None = None,
              condition: Condition | None = None) -> list[Outcome]:
    """Run every case and compare it with the spec. ``run`` launches the learner's kernel on one
    case (usually ``run_case`` with the kernel bound); ``model`` says how close float32 can come
    (see ``tolerance``), with ``atol``/``rtol`` as the floor and ``allowance`` the puzzle's own
    error the model cannot see, ``condition`` its condition in closed form; ``diagnose`` the
    puzzle's own reading of a wrong output."""
    outcomes: list[Outcome] = []
    for case in cases:
        outcome = run_one(run, spec, case, rtol, atol, model, allowance, diagnose, condition)
        if (outcome.status == CaseStatus.WRONG and outcome.cause is None
                and not any(o.status == CaseStatus.WRONG for o in outcomes)):
            # The verdict details the first wrong output: what evaluating the spec again can tell
            # (where the puzzle's own diagnosis said nothing).
            outcome.cause = _scaled_input_cause(spec, outcome)
        outcomes.append(outcome)
        if outcome.status == CaseStatus.COMPILE_ERROR and stop_on_compile_error:
            break
        if outcome.stopped == StopReason.STEP_BUDGET:
            # A kernel that does not finish would spend its whole step budget on every test:
            # the verdict is already known, so the remaining tests are not run.
            for rest in cases[len(outcomes):]:
                outcomes.append(Outcome(rest, CaseStatus.RUNTIME_ERROR, error="not run: the kernel did not finish "
                                        "an earlier test (see its step-budget finding)", not_run=True))
            break
    return outcomes


def _scaled_input_cause(spec: Callable, o: Outcome) -> str | None:
    if o.yours is None or o.expected is None or o.allowed is None or o.yours.shape != o.expected.shape:
        return None
    sizes = {int(n) for x in o.case.inputs for n in np.shape(x)} | {int(n) for n in o.expected.shape}
    return scaled_input(o.yours, o.expected, o.allowed, o.case.inputs,
                        lambda inputs: spec_in_float64(spec, inputs, o.case.output_shape), sizes)


def run_one(run: Runner, spec: Callable, case: Case, rtol: float, atol: float,
            model: ErrorModel = ErrorModel.FIXED, allowance: Allowance | None = None,
            diagnose: Diagnose | None = None, condition: Condition | None = None) -> Outcome:
    """Run one case and judge it (a wrong output read by the puzzle's ``diagnose``, if it has one)."""
    comparison = compare_with_spec(spec, case.inputs, case.output_shape, model, atol, rtol, allowance,
                                   case.output_dtype, condition)
    expected = comparison.expected
    try:
        result = run(case)
    except KERNEL_ERRORS as exc:  # a kernel that does not compile or stops is that test's verdict
        # Anything else escaping the simulator is a bug of ours, never the learner's: it propagates
        # (the grader reports it as a grader fault and leaves the puzzle unscored).
        status, message, findings = classify(exc)
        outcome = Outcome(case, status, expected=expected, findings=findings, rtol=rtol, atol=atol,
                          allowed=comparison.allowed, tolerance=comparison.tolerance, error=None if findings else message)
        if isinstance(exc, SanitizerError) and exc.result is not None:  # the record of the stopped run
            outcome.counts_max = exc.result.counts.max()
            outcome.stopped = exc.result.stopped
        return outcome
    yours = np.asarray(result.outputs[0])
    outcome = Outcome(case, CaseStatus.PASS, yours=yours, expected=expected, findings=list(result.findings),
                      counts_max=result.counts.max(), run=result, stopped=result.stopped, rtol=rtol, atol=atol,
                      allowed=comparison.allowed, tolerance=comparison.tolerance,
                      cost=result.cost.figures() if result.cost is not None else None)
    if yours.shape != expected.shape or comparison.mismatch(yours).any():
        outcome.status = CaseStatus.WRONG
        if diagnose is not None and yours.shape == expected.shape:
            outcome.cause = diagnose(case, yours)
    if any(f.is_error for f in outcome.findings):  # notes (benign races) never fail a test
        outcome.status = CaseStatus.FINDINGS
    return outcome


def check_source(puzzle: Puzzle, source: str, header: str | None = None, *, input_names: Sequence[str] | None = None,
                 output_names: Sequence[str] | None = None, seed: int = 0, max_steps: int | None = None) -> CheckResult:
    """Check a kernel body (and header) against a catalogue puzzle, without a notebook: what the
    grader and the tests use. ``header`` defaults to the puzzle's own header."""
    try:
        kernel = puzzle.kernel(source, header, input_names=input_names, output_names=output_names)
    except ArgumentError as exc:  # names MLX could not declare: the kernel cannot be made
        return CheckResult(puzzle.title, [Outcome(puzzle.cases(seed)[0], CaseStatus.COMPILE_ERROR, error=str(exc))],
                           puzzle.budget)
    options = puzzle.launch_options
    outcomes = run_cases(lambda case: run_case(kernel, case, options, max_steps=max_steps), puzzle.spec,
                         puzzle.cases(seed), rtol=puzzle.rtol, atol=puzzle.atol, model=puzzle.error_model,
                         allowance=puzzle.allowance, diagnose=puzzle.diagnose, condition=puzzle.condition)
    result = CheckResult(puzzle.title, outcomes, puzzle.budget)
    result.explain_counts(lambda case: run_case(kernel, case, options, trace=True, max_steps=max_steps))
    return result
