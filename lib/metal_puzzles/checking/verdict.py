"""Verdicts: how each test of a puzzle went (``Outcome``) and the verdict on the puzzle
(``CheckResult``), with the report a learner reads. One type for every kind of puzzle: kernel
puzzles are checked test by test, the finale's gradient puzzles comparison by comparison."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from metal_puzzles.compat import StrEnum

from ..msl import (
    ArgumentError,
    CompileError,
    Finding,
    KernelRuntimeError,
    RunResult,
    SanitizerError,
    StopReason,
)
from ..msl.findings.registry import kind_entry
from ..msl.observe.cost import CostFigures, worst_figures
from .budget_detail import count_details
from .case import Case
from .difference import Difference, format_difference, position_text
from .likely_cause import likely_cause
from .pipeline import PipelineRun
from .puzzle import Budget
from .tolerance import ErrorModel, Tolerance, mismatch
from .wording import REPORT_WIDTH, plural, report_width, terminal_width, wrap


class CaseStatus(StrEnum):
    """How one test (or one comparison) went."""

    PASS = "pass"
    WRONG = "wrong"  # ran, but the output differs from the spec's
    FINDINGS = "findings"  # the sanitizer found something a GPU would hide
    COMPILE_ERROR = "compile-error"
    RUNTIME_ERROR = "runtime-error"


class PuzzleStatus(StrEnum):
    """The verdict on a puzzle (the grader's column), from its tests. What the grader says of a
    puzzle it did not check (no kernel, a limit reached) is ``grading.results.UncheckedStatus``."""

    PASSED = "passed"  # correct on every test and within budget
    OVER_BUDGET = "over-budget"  # correct on every test, over budget
    COMPILE_ERROR = "compile-error"
    WRONG = "wrong"
    FINDINGS = "findings"
    RUNTIME_ERROR = "runtime-error"


class Subject(StrEnum):
    """What a verdict judges: a kernel on its tests, a differentiable function's values,
    vector-Jacobian products and gradients, or a model run on the learner's kernels (its tests
    are prompts, each outcome says which stage failed)."""

    KERNEL = "kernel"
    GRADIENT = "gradient"
    MODEL = "model"


@dataclass
class Outcome:
    """One test of a puzzle (or, for a gradient puzzle, one comparison on a test)."""

    case: Case
    status: CaseStatus
    yours: np.ndarray | None = None
    expected: np.ndarray | None = None
    findings: list[Finding] = field(default_factory=list)
    counts_max: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    run: RunResult | None = None
    #: Why the kernel did not finish this test, if it did not.
    stopped: StopReason | None = None
    #: What a gradient comparison compares ('values', 'vjp w.r.t. a', ...); None for a kernel test.
    quantity: str | None = None
    rtol: float = 1e-5
    atol: float = 1e-4
    #: The error allowed at each element (see ``tolerance``); None: ``atol``/``rtol`` alone.
    allowed: np.ndarray | None = None
    #: The rule ``allowed`` follows, which a verdict states; None: ``atol``/``rtol`` as given.
    tolerance: Tolerance | None = None
    #: The cost model's figures for this test (when the puzzle's budget uses them).
    cost: CostFigures | None = None
    #: Not run: the kernel did not finish an earlier test, so this one would not either.
    not_run: bool = False
    #: The puzzle's own diagnosis of a wrong output (``Puzzle.diagnose``), or else a likely cause found
    #: when the test was judged, with the spec at hand (``likely_cause.scaled_input``): said before the
    #: general patterns of ``likely_cause``, which it replaces.
    cause: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == CaseStatus.PASS

    @property
    def mismatch(self) -> np.ndarray | None:
        if self.yours is None or self.expected is None or self.yours.shape != self.expected.shape:
            return None
        if self.allowed is not None:
            return mismatch(self.yours, self.expected, self.allowed)
        return ~close(self.yours, self.expected, self.rtol, self.atol)


@dataclass
class CheckResult:
    """The verdict on one puzzle. Truthy when the puzzle passes (correct and within budget).

    Only the visible test and the hidden tests within its structure decide it (``counted``);
    hidden tests beyond that structure (see ``contract``) still ran, and their failures are
    ``notes`` that teach.
    """

    title: str
    outcomes: list[Outcome]
    budget: Budget = field(default_factory=Budget)
    gpu_note: str | None = None
    printed: bool = False  # check() already printed the report
    subject: Subject = Subject.KERNEL
    #: Per counter over budget, the worst thread's accesses of that kind ('thread 2 reads a[2] (line 3), ...').
    count_details: dict[str, str] = field(default_factory=dict)

    @property
    def counted(self) -> list[Outcome]:
        """The tests that decide the verdict: the visible test and the hidden tests within its structure."""
        return [o for o in self.outcomes if not o.case.beyond]

    @property
    def beyond_failures(self) -> list[Outcome]:
        """Failed hidden tests that pose conditions the visible test does not: notes, not failures."""
        return [o for o in self.outcomes if o.case.beyond and not o.ok]

    @property
    def notes(self) -> list[str]:
        """One line per failed test beyond the visible test's structure, saying what would go wrong."""
        return [_note_line(o) for o in self.beyond_failures]

    @property
    def sanitizer_notes(self) -> list[str]:
        """The sanitizer's notes (harmless by the letter of the language, such as two threads
        storing one value), one per place in the kernel over every test: they never fail a
        check, but a learner who saw one in show() finds it here too."""
        seen: set[tuple] = set()
        out: list[str] = []
        for o in self.outcomes:
            for f in o.findings:
                key = (f.kind, f.pos, f.other_pos)
                if f.is_error or key in seen:
                    continue
                seen.add(key)
                out.append(finding_text(f))
        return out

    @property
    def compile_error(self) -> str | None:
        return next((o.error for o in self.outcomes if o.status == CaseStatus.COMPILE_ERROR), None)

    @property
    def correct(self) -> bool:
        counted = self.counted
        return bool(counted) and all(o.ok for o in counted)

    @property
    def counts_max(self) -> dict[str, int]:
        """The largest count of each counter over threads and tests; a run that did not finish
        counts nothing (its counts would judge an unfinished kernel against the budget)."""
        out: dict[str, int] = {}
        for o in self.counted:
            if o.stopped is not None:
                continue
            for k, v in o.counts_max.items():
                out[k] = max(out.get(k, 0), v)
        return out

    @property
    def cost_figures(self) -> CostFigures | None:
        """The cost model's figures, worst over the tests that count (None when none recorded
        them). SIMD efficiency is the worst test's own (active over issued lanes of that run),
        the figure show() prints for the visible test: one definition everywhere."""
        costs = [cost for _, cost in self._costed]
        figures = worst_figures(costs)
        if figures is None:
            return None
        least = min(costs, key=lambda cost: cost.simd_efficiency)
        return dataclasses.replace(figures, active_lanes=least.active_lanes, issued_lanes=least.issued_lanes)

    @property
    def simd_worst_test(self) -> str | None:
        """The label of the test with the least SIMD efficiency (what the budget sentence names)."""
        costed = self._costed
        return min(costed, key=lambda oc: oc[1].simd_efficiency)[0].case.label if costed else None

    @property
    def _costed(self) -> list[tuple[Outcome, CostFigures]]:
        """The tests that count and recorded the cost model's figures, with their figures."""
        return [(o, o.cost) for o in self.counted if o.cost is not None]

    @property
    def over_budget(self) -> list[str]:
        return (self.budget.exceeded(self.counts_max, self.count_details)
                + self.budget.exceeded_cost(self.cost_figures, simd_test=self.simd_worst_test))

    def explain_counts(self, traced: Callable[[Case], RunResult]) -> None:
        """Fill ``count_details`` for the counters over budget, running the tests where they peak
        again with a trace (``traced``)."""
        over = self.budget.exceeded_counters(self.counts_max)
        if over:
            pairs = [(o.case, o.counts_max) for o in self.counted if o.stopped is None]
            self.count_details = count_details(over, pairs, traced)

    @property
    def within_budget(self) -> bool:
        return not self.over_budget

    @property
    def passed(self) -> bool:
        return self.correct and self.within_budget

    @property
    def findings(self) -> list[Finding]:
        return [f for o in self.counted for f in o.findings]

    @property
    def status(self) -> PuzzleStatus:
        if self.passed:
            return PuzzleStatus.PASSED
        if self.compile_error is not None:
            return PuzzleStatus.COMPILE_ERROR
        if self.correct:
            return PuzzleStatus.OVER_BUDGET
        first = next((o for o in self.counted if not o.ok), None)
        return PuzzleStatus(first.status) if first is not None else PuzzleStatus.WRONG

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        counted = self.counted
        good = sum(o.ok for o in counted)
        what = {Subject.GRADIENT: "comparisons", Subject.MODEL: "prompts"}.get(self.subject, "tests")
        notes = f", notes={len(self.beyond_failures)}" if self.beyond_failures else ""
        return (f"CheckResult({self.title!r}, status={self.status.value!r}, {what} passed={good}/{len(counted)}, "
                f"within_budget={self.within_budget}{notes})")

    def _ipython_display_(self) -> None:
        # check() has already shown the verdict; showing it twice is noise. In a Jupyter kernel the
        # notebook face registers its own display for verdicts (paragraphs the page wraps once,
        # ``notebook.problem.register_verdict_display``); this is the terminal's.
        if not self.printed:
            print(self.report(terminal_width()))

    def report(self, width: int | None = REPORT_WIDTH) -> str:
        """The verdict as a learner reads it: what passed, and the first thing to fix; its prose
        wrapped at ``width`` characters, or (None) one line a paragraph, for a page that wraps it
        (``wording.report_html``)."""
        report = {Subject.GRADIENT: _gradient_report, Subject.MODEL: _model_report}.get(self.subject, _kernel_report)
        with report_width(width):
            lines = report(self)
        if self.gpu_note:
            lines += ["", self.gpu_note]
        return "\n".join(lines)


def _kernel_report(r: CheckResult) -> list[str]:
    counted = r.counted
    tests = plural(len(counted), "test")
    if r.passed:
        lines = [f"Passed: {r.title} is correct on {'all ' if len(counted) > 1 else ''}{tests} and within budget."]
    elif r.compile_error is not None:
        return [f"Failed: {r.title} does not compile.", "", r.compile_error]
    elif r.correct:
        lines = [f"Almost: {r.title} is correct on {'all ' if len(counted) > 1 else ''}{tests}, but over budget:",
                 *[line for s in r.over_budget for line in wrap(f"- it {s}", "  ")]]
    else:
        bad = [o for o in counted if not o.ok]
        lines = [f"Failed: {r.title} fails {len(bad)} of {tests}.", "", *describe_outcome(bad[0])]
        ran = [o for o in bad[1:] if not o.not_run]
        if ran:
            lines += wrap("Also failing: " + _listing([o.case.label for o in ran]) + ".")
        skipped = len(bad) - 1 - len(ran)
        if skipped:
            lines += wrap(f"({plural(skipped, 'more test')} not run: the kernel did not finish this one, so "
                          f"{'they' if skipped > 1 else 'it'} would not either.)")
        if r.over_budget and not any(o.stopped == StopReason.STEP_BUDGET for o in r.outcomes):
            # A run that did not finish has no counts to judge: its budget would be a side effect.
            lines += wrap("Budget: it " + "; it ".join(r.over_budget) + ".")
    return lines + _notes_section(r) + _sanitizer_notes_section(r)


def _listing(items: list[str], shown: int = 3) -> str:
    """'a; b; c; and 2 more': one separator (labels themselves hold commas)."""
    head = "; ".join(items[:shown])
    return head + (f"; and {len(items) - shown} more" if len(items) > shown else "")


def _notes_section(r: CheckResult) -> list[str]:
    """The failed tests beyond the visible test's structure, as notes that do not count."""
    beyond = r.beyond_failures
    if not beyond:
        return []
    n = len(beyond)
    if not r.correct:  # the failure to fix is above; these would mostly repeat it
        conditions = "; ".join(dict.fromkeys(b for o in beyond for b in o.case.beyond))
        they = "they do" if n > 1 else "it does"
        return wrap(f"(Also {plural(n, 'more hidden test')} {'fail' if n > 1 else 'fails'} on what the visible test "
                    f"does not show ({conditions}): the puzzle does not ask for that, so {they} not count.)")
    lead = "correct for this puzzle as its visible test poses it. "
    lines = [""] + wrap(f"Note: {lead}Hidden tests that pose more than the visible test does still ran, without "
                        f"counting; {n} would fail:")
    first = beyond[0]
    lines += wrap(f"- {_note_line(first)}" + (":" if first.findings or first.error else "."))
    detail = [finding_text(f) for f in first.findings[:1]] or ([first.error.splitlines()[0]] if first.error else [])
    lines += [line for text in detail for line in wrap(text, "    ")]
    lines += [line for o in beyond[1:4] for line in wrap(f"- {_note_line(o)}.")]
    if n > 4:
        lines.append(f"- and {n - 4} more.")
    return lines


def _sanitizer_notes_section(r: CheckResult) -> list[str]:
    """The sanitizer's notes, under every verdict: show() prints them too, and they are worth
    fixing even though they never fail a check."""
    notes = r.sanitizer_notes
    if not notes:
        return []
    head = "Note from the sanitizer" if len(notes) == 1 else "Notes from the sanitizer"
    return ["", f"{head} (not counted against the verdict):",
            *[line for text in notes[:3] for line in wrap(f"- {text}")],
            *([f"- and {plural(len(notes) - 3, 'more note')}."] if len(notes) > 3 else [])]


def finding_text(f: Finding) -> str:
    """A finding as one sentence of a report: 'race: line 6: thread 2 ... race-free'."""
    if f.pos is None:
        where = ""
    elif f.pos.file == "source":
        where = f"line {f.pos.line}: "
    else:
        where = f"{f.pos.file} line {f.pos.line}: "
    return f"{f.kind}: {where}{f.message}"


def _note_line(o: Outcome) -> str:
    """'on <test> (<what it poses>), it would <go wrong>' for a failed test beyond the contract."""
    case = o.case
    label = case.label.removeprefix("hidden test: ")
    # A label may already say what the test poses: say each condition once.
    poses = [b for b in case.beyond if b not in label]
    return f"on {label}{' (' + '; '.join(poses) + ')' if poses else ''}, {_what_goes_wrong(o)}"


def _what_goes_wrong(o: Outcome) -> str:
    if o.status == CaseStatus.RUNTIME_ERROR:
        return "the kernel would stop with an error"
    if o.findings:
        f = o.findings[0]
        line = f" (line {f.pos.line})" if f.pos is not None else ""
        return f"it would {kind_entry(f.kind).verb(f)}{line}"
    mismatch = o.mismatch
    if mismatch is not None and mismatch.any():
        return f"it would give wrong values at {int(mismatch.sum())} of {mismatch.size} positions"
    return "its output would differ from the spec's"


def _gradient_report(r: CheckResult) -> list[str]:
    n = len(r.outcomes)
    if r.passed:
        return [f"Passed: {r.title} matches the dense reference in values, vjps and gradients "
                f"({plural(n, 'comparison')})."]
    bad = [o for o in r.outcomes if not o.ok]
    lines = [f"Failed: {r.title} fails {len(bad)} of {plural(n, 'comparison')}.", "", *_describe_comparison(bad[0])]
    if len(bad) > 1:
        lines += wrap("Also failing: " + _listing([f"{o.case.label}: {o.quantity}" for o in bad[1:]]) + ".")
    return lines


def _model_report(r: CheckResult) -> list[str]:
    """A model on the learner's kernels: one outcome a prompt, whose quantity says what it gave
    (or which stage failed) and whose error says how far off."""
    n = len(r.outcomes)
    prompts = plural(n, "prompt")
    if r.passed:
        return [f"Passed: {r.title}: on your kernels the model samples MLX's tokens from MLX's logits for "
                f"{'all ' if n > 1 else ''}{prompts}.", *[f"- {o.case.label}: {o.quantity}." for o in r.outcomes]]
    bad = [o for o in r.outcomes if not o.ok]
    first = bad[0]
    lines = [f"Failed: {r.title}: on your kernels the model differs from MLX's on {len(bad)} of {prompts}.", "",
             *(wrap(f"{first.case.label}, {first.quantity}:{first.error}") if first.status == CaseStatus.WRONG
               else _wrap_head(_describe_comparison(first)))]
    if len(bad) > 1:
        lines += wrap("Also failing: " + _listing([o.case.label for o in bad[1:]]) + ".")
    return lines


def _wrap_head(lines: list[str]) -> list[str]:
    """A report's first line broken between words; the lines after it (a compiler's message with its
    caret, findings already wrapped) as they are."""
    return [*wrap(lines[0]), *lines[1:]] if lines else lines


def describe_outcome(o: Outcome, head: str | None = None) -> list[str]:
    """What went wrong on one kernel test, as lines of a report, the first one starting with
    ``head`` (by default the test's label and launch)."""
    case = o.case
    if head is None:
        head = f"{case.label} (grid={case.grid}, threadgroup={case.threadgroup}):"
    if o.status == CaseStatus.RUNTIME_ERROR:
        return [head + " the kernel stopped with an error.", o.error or ""]
    lines = []
    errors = [f for f in o.findings if f.is_error]
    if errors:
        lines.append(head + " the sanitizer found a problem a GPU would hide:")
        lines += [line for f in errors[:3] for line in wrap(finding_text(f), "  ")]
        if len(errors) > 3:
            lines.append(f"  ... and {plural(len(errors) - 3, 'more problem')}")
        head = "Output:"
    if o.stopped is not None:
        lines.append(f"{head} not compared: the kernel did not finish, so its output is incomplete.")
    elif o.yours is not None and o.expected is not None:
        if o.yours.shape != o.expected.shape:
            lines.append(f"{head} output shape {o.yours.shape} differs from the spec's {o.expected.shape}.")
        elif o.mismatch is not None and o.mismatch.any():
            lines.append(f"{head} wrong output at {int(o.mismatch.sum())} of {o.mismatch.size} positions.")
            difference = _difference(o)
            lines += format_difference(difference)
            if not errors:  # what the run did that explains it (a finding would have said so already)
                lines += [line for hint in output_hints(o) for line in wrap("Why: " + hint)]
                cause = o.cause or likely_cause(o.yours, o.expected, o.mismatch, difference.allowed, _sizes(o))
                if cause is not None:
                    lines += wrap("Likely cause: " + cause)
        elif errors:
            lines += wrap("The output happens to match the spec on this test, but the problem above would show on "
                          "other sizes or hardware.")
    if isinstance(o.run, PipelineRun):  # where a pipeline's symptom (above) comes from
        diagnosis = o.run.diagnosis()
        if diagnosis is not None:
            lines += wrap("Where: " + diagnosis)
    # The sanitizer's notes are listed once, under the verdict (``CheckResult.sanitizer_notes``).
    return lines


def _difference(o: Outcome) -> Difference:
    """A wrong output as the report shows it, with the error allowed at each position and the
    rule that allowed it (``atol``/``rtol`` where the outcome has none of its own)."""
    assert o.yours is not None and o.expected is not None and o.mismatch is not None
    expected = np.asarray(o.expected, dtype=np.float64)
    allowed = o.allowed if o.allowed is not None else o.atol + o.rtol * np.abs(expected)
    tolerance = o.tolerance if o.tolerance is not None else Tolerance(ErrorModel.FIXED, o.atol, o.rtol)
    return Difference(o.yours, expected, o.mismatch, np.broadcast_to(allowed, o.yours.shape), tolerance)


def _sizes(o: Outcome) -> set[int]:
    """The sizes of a test's problem: its inputs' and output's axes."""
    output = () if o.expected is None else o.expected.shape
    return {int(n) for x in o.case.inputs for n in np.shape(x)} | {int(n) for n in output}


def output_hints(o: Outcome) -> list[str]:
    """What the test's run did that explains its wrong output (``RunResult.output_hints``)."""
    return list(o.run.output_hints) if o.run is not None else []


def _describe_comparison(o: Outcome) -> list[str]:
    head = f"{o.case.label}, {o.quantity}:"
    if o.status in (CaseStatus.COMPILE_ERROR, CaseStatus.RUNTIME_ERROR):
        return [head + (" a kernel does not compile." if o.status == CaseStatus.COMPILE_ERROR else " it raised an error."),
                o.error or ""]
    errors = [f for f in o.findings if f.is_error]
    if errors:
        return [head + " the sanitizer found a problem in a kernel:",
                *[line for f in errors[:3] for line in wrap(finding_text(f), "  ")]]
    yours, expected = o.yours, o.expected
    if yours is not None and expected is not None:
        if yours.shape != expected.shape:
            return [f"{head} shape {yours.shape}, but the reference's is {expected.shape}.",
                    *(wrap(o.error) if o.error else [])]
        mismatch = o.mismatch
        if mismatch is not None:
            where = [tuple(int(i) for i in p) for p in np.argwhere(mismatch)[:4]]
            shown = Difference(yours, np.asarray(expected, dtype=np.float64), mismatch)
            digits = shown.digits(where)
            detail = ", ".join(f"{position_text(p)}: yours {shown.text(yours[p], digits)}, reference "
                               f"{shown.text(expected[p], digits)}" for p in where)
            rule = Tolerance(ErrorModel.FIXED, o.atol, o.rtol).describe().replace("spec", "reference")
            return [f"{head} wrong at {int(mismatch.sum())} of {mismatch.size} positions, e.g. {detail}. {rule}"]
    return [head + (o.error or " wrong.")]


def close(a: np.ndarray, b: np.ndarray, rtol: float = 1e-5, atol: float = 1e-4) -> np.ndarray:
    """Where two outputs agree (NaN agrees with NaN)."""
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    return np.isclose(a, b, rtol=rtol, atol=atol) | (np.isnan(a) & np.isnan(b))


def classify(exc: BaseException) -> tuple[CaseStatus, str, list[Finding]]:
    """A failed launch as a test's status, its message and the findings it carries."""
    if isinstance(exc, CompileError):
        return CaseStatus.COMPILE_ERROR, str(exc), []
    if isinstance(exc, SanitizerError):
        return CaseStatus.FINDINGS, str(exc), list(exc.findings)
    if isinstance(exc, KernelRuntimeError | ArgumentError):
        return CaseStatus.RUNTIME_ERROR, str(exc), []
    return CaseStatus.RUNTIME_ERROR, f"{type(exc).__name__}: {exc}", []
