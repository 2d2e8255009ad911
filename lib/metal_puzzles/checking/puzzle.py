"""What a puzzle is: its text, its spec in MLX ops, its tests, budget and template, and how to
make and launch its kernel. The catalogue (``metal_puzzles.puzzles``) is a list of these."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields

import numpy as np

from ..host.kernel import MetalKernel
from ..msl import Counter
from ..msl.observe.cost import CostFigures
from .case import Case
from .contract import WorkExtent, mark_beyond
from .pipeline import Pipeline
from .tolerance import Allowance, Condition, ErrorModel

#: A puzzle's own diagnosis of a wrong output (``Puzzle.diagnose``).
Diagnose = Callable[[Case, np.ndarray], "str | None"]

#: The cost-model figures a budget can limit (Part III), as the cost table labels them.
COST_LABELS = {
    "max_load_segments": "load segments",  # per SIMD-group load, worst access
    "max_store_segments": "store segments",
    "max_bank_conflict": "bank conflict",  # n-way, worst access
    "min_simd_efficiency": "SIMD efficiency",
    "max_reads_per_element": "reads per element",
    "min_occupancy": "occupancy",
    "max_barriers": "barriers",  # per threadgroup
}


@dataclass(frozen=True)
class Budget:
    """What a solution may spend (None: no limit): per-thread counts (Parts I and II; one field
    per ``Counter``, named by its value) and, for Part III, figures of the cost model
    (``msl.observe.cost``) on the default GPU model, worst over the tests."""

    global_reads: int | None = None
    global_writes: int | None = None
    shared_reads: int | None = None
    shared_writes: int | None = None
    atomics: int | None = None
    #: Distinct memory segments one SIMD-group device load (store) may touch, worst access.
    max_load_segments: int | None = None
    max_store_segments: int | None = None
    #: The worst n-way threadgroup-memory bank conflict allowed (1: none).
    max_bank_conflict: int | None = None
    #: Active lanes over issued lanes, whole kernel (0 to 1).
    min_simd_efficiency: float | None = None
    #: Device loads over distinct device elements loaded (1.0: every element read once).
    max_reads_per_element: float | None = None
    #: Resident SIMD-groups over the most a GPU core holds (0 to 1).
    min_occupancy: float | None = None
    #: Threadgroup barriers a threadgroup passes.
    max_barriers: int | None = None
    #: What to do about too many reads per element in this puzzle, when the general advice (keep
    #: values in registers instead of reading them again in a later pass) does not fit.
    reads_advice: str | None = None
    #: How this puzzle's kernel makes do with ``max_barriers`` (what the budget sentence advises
    #: when a kernel waits at more); None: the sentence states the count alone, since no one cure
    #: fits every puzzle (a reduction's simd_sum is no help to top-k's rounds).
    barriers_advice: str | None = None
    #: What to do about too many global reads per thread in this puzzle, where the count alone does
    #: not say it (prefill attention: a tile of keys shared through threadgroup memory).
    global_reads_advice: str | None = None

    def limits(self) -> dict[str, int]:
        """The per-thread count limits (the score table's columns), by counter name."""
        return {c.value: getattr(self, c.value) for c in Counter if getattr(self, c.value) is not None}

    def cost_limits(self) -> dict[str, float]:
        """The cost-model limits (the cost table's columns)."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if f.name in COST_LABELS and getattr(self, f.name) is not None}

    @property
    def uses_cost(self) -> bool:
        """Whether checking this budget needs a cost profile of every test."""
        return bool(self.cost_limits())

    def exceeded_cost(self, figures: CostFigures | None, simd_test: str | None = None) -> list[str]:
        """Learner-facing sentences for every cost figure over budget, each saying what to do
        (``simd_test``: the test whose SIMD efficiency ``figures`` holds, named in its sentence)."""
        if figures is None:
            return []
        out = []
        for key, limit in self.cost_limits().items():
            if key == "min_simd_efficiency":
                sentence = _simd(figures, limit, simd_test)
            elif key == "max_reads_per_element":
                sentence = _reads(figures, limit, self.reads_advice)
            elif key == "max_barriers":
                sentence = _barriers(figures, limit, self.barriers_advice)
            else:
                sentence = _COST_SENTENCES[key](figures, limit)
            if sentence is not None:
                out.append(sentence)
        return out

    def exceeded_counters(self, counts_max: dict[str, int]) -> list[str]:
        """The counters over budget (``Counter`` values)."""
        return [key for key, limit in self.limits().items() if counts_max.get(key, 0) > limit]

    def exceeded(self, counts_max: dict[str, int], details: dict[str, str] | None = None) -> list[str]:
        """Learner-facing sentences for every counter over budget; ``details`` says, per counter,
        which thread made which of those accesses (``budget_detail``)."""
        out = []
        for key in self.exceeded_counters(counts_max):
            detail = (details or {}).get(key)
            advice = self.global_reads_advice if key == Counter.GLOBAL_READS.value else None
            out.append(f"uses {counts_max[key]} {Counter(key).label} per thread; this puzzle needs at most "
                       f"{self.limits()[key]}" + (f" ({detail})" if detail else "") + (f": {advice}" if advice else ""))
        return out


def _at(line: int | None) -> str:
    return f" (line {line})" if line is not None else ""


def _segments(what: str, verb: str):
    def sentence(f: CostFigures, limit: float) -> str | None:
        worst = f.load_segments if what == "load" else f.store_segments
        if worst.value <= limit:
            return None
        return (f"touches {worst.value:g} memory segments per SIMD-group {what}{_at(worst.line)}; this puzzle "
                f"allows at most {limit:g}: neighbouring threads should {verb} neighbouring addresses, so that a "
                "SIMD-group's 32 accesses fall in few segments")
    return sentence


def _banks(f: CostFigures, limit: float) -> str | None:
    worst = f.bank_conflict
    if worst.value <= limit:
        return None
    allowed = "none" if limit <= 1 else f"at most {limit:g}-way"
    return (f"has a {worst.value:g}-way bank conflict in threadgroup memory{_at(worst.line)}: {worst.value:g} lanes "
            f"of a SIMD-group wait on one bank; this puzzle allows {allowed}: the lanes of a SIMD-group should "
            "address different banks (pad each row of a tile by one element)")


def _simd(f: CostFigures, limit: float, test: str | None = None) -> str | None:
    if f.simd_efficiency >= limit:
        return None
    on = f" on the {test}" if test == "visible test" else f" on {test}" if test else ""
    return (f"keeps {f.simd_efficiency:.0%} of its SIMD-group lanes busy{on}; this puzzle needs at least {limit:.0%}: "
            "the 32 threads of a SIMD-group run in lock-step, so a branch they disagree on runs both sides "
            "with lanes idle; give each SIMD-group threads that take the same branch")


def _reads(f: CostFigures, limit: float, advice: str | None = None) -> str | None:
    if f.reads_per_element <= limit + 1e-9:
        return None
    return (f"reads each input element {f.reads_per_element:.3g} times from device memory; this puzzle allows "
            f"{limit:g}: " + (advice or "keep what a thread has read in registers (or threadgroup memory) instead "
                                        "of reading it again in a later pass"))


def _occupancy(f: CostFigures, limit: float) -> str | None:
    if f.occupancy >= limit - 1e-9:
        return None
    return (f"keeps {f.occupancy:.0%} of a GPU core's SIMD-groups resident (limited by {f.occupancy_limit}); "
            f"this puzzle needs at least {limit:.0%}: a core shares its threadgroup memory among the threadgroups "
            "it runs, so fewer, larger threadgroups (or less threadgroup memory each) keep more threads in "
            "flight to hide memory latency")


#: The barrier advice of a sum over a threadgroup (``Budget.barriers_advice``).
SIMD_SUM_BARRIERS = ("reduce within each SIMD-group with simd_sum (no barrier needed), then combine the SIMD-groups' "
                     "results once")


def _barriers(f: CostFigures, limit: float, advice: str | None = None) -> str | None:
    if f.barriers <= limit:
        return None
    return f"makes each threadgroup wait at {f.barriers} barriers; this puzzle allows {limit:g}" + (
        f": {advice}" if advice else "")


_COST_SENTENCES = {
    "max_load_segments": _segments("load", "read"),
    "max_store_segments": _segments("store", "write"),
    "max_bank_conflict": _banks,
    "min_simd_efficiency": _simd,
    "max_reads_per_element": _reads,
    "min_occupancy": _occupancy,
}


@dataclass(frozen=True)
class LaunchOptions:
    """How a puzzle's kernel is launched besides the case: its output dtype and, for kernels that
    accumulate (scatter-adds), the value outputs start from; whether each test also records a
    cost profile (Part III budgets); and, for a puzzle whose threadgroup size is the learner's
    choice, the header constant holding it."""

    output_dtype: str = "float32"
    init_value: float | None = None
    cost: bool = False
    threadgroup_constant: str | None = None
    #: A whole shader's buffers as its host binds them, [[buffer(0)]] first: each a position in the
    #: launch's inputs followed by its outputs (so a kernel that names its arrays otherwise binds alike).
    buffer_layout: tuple[int, ...] | None = None
    #: A whole shader whose kernels run in turn, each launched as the pipeline says (``pipeline``).
    pipeline: Pipeline | None = None


@dataclass(frozen=True)
class Puzzle:
    id: str  # short identifier, e.g. 'map'
    number: str  # position in the book, e.g. '1' or 'II.3'
    title: str  # also the name given to MetalProblem in the notebook
    kernel_name: str  # the name= of the template's MetalKernel (how the grader finds it)
    input_names: tuple[str, ...]
    description: str  # Markdown
    spec: Callable  # MLX ops computing the expected output from the inputs
    visible: Case
    hidden: Callable[[np.random.Generator], Sequence[Case]]
    template: str  # the kernel body handed to the learner, with '// FILL ME IN'
    header: str = ""
    budget: Budget = field(default_factory=Budget)
    output_names: tuple[str, ...] = ("out",)
    output_dtype: str = "float32"
    spec_source: str = ""  # the spec's Python source as shown to the learner
    atol: float = 1e-4
    rtol: float = 1e-5
    #: What float32 can promise for the spec's computation (see ``tolerance``); atol/rtol are the floor.
    error_model: ErrorModel = ErrorModel.EXACT_SUMS
    #: An error the model cannot see in the spec's float inputs, added to what it allows (RoPE's
    #: float32 angles of integer positions; see ``tolerance.Allowance``).
    allowance: Allowance | None = None
    #: The spec's condition in closed form, for the conditioned model (``tolerance.Condition``):
    #: the allowance autodiff would give, without building the Jacobian a row an output element
    #: (attention over hundreds of keys, 4-bit products MLX cannot vmap). None: autodiff.
    condition: Condition | None = None
    #: Launch options the puzzle's kernel needs (scatter-adds: init_value=0, atomic_outputs=True).
    init_value: float | None = None
    atomic_outputs: bool = False
    #: Work items along each grid dimension of a test, x first, when they are not the output's
    #: elements (a reduction's input, pairs of a sparse product): what "more threads than
    #: elements" compares with (see ``contract``).
    work: WorkExtent | None = None
    #: A header constant (e.g. 'TG') that sets the width of every test's threadgroups: the
    #: threadgroup size is then the learner's choice (Part III, occupancy).
    threadgroup_constant: str | None = None
    #: Part IV: the arrays in the order the host binds them ([[buffer(0)]] first). A host binds by
    #: index, so a whole shader must declare each parameter where the host puts its array.
    buffer_layout: tuple[str, ...] | None = None
    #: A pipeline of the whole shader's kernels (its stages, their launches and buffers), run in
    #: turn on every test; the output is the last stage's. None: one kernel, ``kernel_name``.
    pipeline: Pipeline | None = None
    #: The puzzle's own reading of a wrong output (a test and the kernel's output in, a sentence
    #: naming the likely cause in the puzzle's terms out, or None): what the general patterns of
    #: ``likely_cause`` cannot see, such as a query that attended to a key in its future.
    diagnose: Diagnose | None = None

    def cases(self, seed: int = 0, visible: Case | None = None) -> list[Case]:
        """The visible test (by default the puzzle's own) followed by the hidden tests, each marked
        with the ways it goes beyond the visible test's structure (deterministic for a seed)."""
        rng = np.random.default_rng(seed)
        visible = self.visible if visible is None else visible
        hidden = _distinct_labels(self.hidden(rng))
        return [visible, *mark_beyond(visible, hidden, self.input_names, self.work)]

    @property
    def launch_options(self) -> LaunchOptions:
        return LaunchOptions(self.output_dtype, self.init_value, self.budget.uses_cost, self.threadgroup_constant,
                             self.buffer_positions, self.pipeline)

    @property
    def buffer_positions(self) -> tuple[int, ...] | None:
        """``buffer_layout`` as positions in the inputs followed by the outputs."""
        if self.buffer_layout is None:
            return None
        arrays = (*self.input_names, *self.output_names)
        return tuple(arrays.index(name) for name in self.buffer_layout)

    def kernel(self, source: str, header: str | None = None, *, input_names: Sequence[str] | None = None,
               output_names: Sequence[str] | None = None) -> MetalKernel:
        """This puzzle's kernel with the given body (and header: by default the puzzle's own)."""
        return MetalKernel(self.kernel_name, list(input_names or self.input_names),
                           list(output_names or self.output_names), source,
                           self.header if header is None else header, atomic_outputs=self.atomic_outputs)


def _distinct_labels(cases: Sequence[Case]) -> list[Case]:
    """The cases, a repeated label (two draws of one shape) told apart by its draw number, so
    that a report never lists what reads as one test twice."""
    seen: dict[str, int] = {}
    out = []
    for case in cases:
        seen[case.label] = seen.get(case.label, 0) + 1
        count = seen[case.label]
        out.append(case if count == 1 else dataclasses.replace(case, label=f"{case.label} (draw {count})"))
    return out
