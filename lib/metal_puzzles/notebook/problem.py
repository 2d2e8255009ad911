"""The notebook's face: ``MetalProblem`` (one puzzle: run it, show what every thread did, explore
it, check it), ``GradProblem`` (Part II's finale: check a differentiable function built on your
kernels), ``DecodeStepProblem`` (Part V's finale: a model's prefill and decode on your kernels) and ``explore`` (the explorer on a problem, a kernel's last call or a run record).

Compatible with the original Metal-Puzzles notebook: ``MetalProblem(name, fn, inputs,
output_shape, grid, threadgroup, spec)`` where ``fn(*inputs)`` returns a ``MetalKernel``.
Everything here composes lower layers (checking, drawing, the explorer); nothing below knows
this module exists.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import mlx.core as mx
import numpy as np

from ..checking import (
    COST_LABELS,
    Budget,
    Case,
    CheckResult,
    ErrorModel,
    GradPuzzle,
    LaunchOptions,
    Outcome,
    Puzzle,
    finding_text,
    grad_outcomes,
    run_case,
    run_cases,
    run_grad_checks,
    run_one,
)
from ..checking.launch import KernelLike
from ..checking.witness_record import METADATA_KEY, witness_record
from ..checking.wording import plural, report_html, terminal_width, wrap
from ..diagrams.access_map import ColourBy, draw_access_map
from ..diagrams.draw import RunDiagram, draw_run
from ..diagrams.marks import finding_sites, marks_legend
from ..explorer.widgets import Explorer, explore_kernel, explore_run
from ..host.kernel import KERNEL_ERRORS, MetalKernel, SimulatedKernel, dtype_name, to_numpy
from ..host.metal_backend import CUDA, METAL, cuda_available, metal_available
from ..host.shader_library import ShaderKernelFunction
from ..msl import Counter, Finding, RunResult
from ..msl.observe.cost import CostFigures, CostProfile
from ..msl.shader_program import declares_kernels
from ..puzzles import find_grad_puzzle, find_puzzle
from ..puzzles.composition.decode_model import DecodeKernels
from ..puzzles.part5.decode_step import PUZZLE as DECODE_STEP
from .session import record as record_progress
from .tables import Table, show_table
from .tables import row as table_row


def _shows_rich_output() -> bool:
    """Whether a returned diagram will be displayed: inside a Jupyter kernel, not a plain script
    or a terminal."""
    try:
        from IPython.core.getipython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with the notebook extras
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def show_report(result: CheckResult, metadata: dict | None = None) -> None:
    """A verdict in a notebook's output: its paragraphs one line each, which the page wraps to the
    output's width, once (a report wrapped at 100 characters was wrapped again in a narrower
    output: ragged lines); as HTML with hanging indents, and as plain text for front ends without."""
    from IPython.display import display

    text = result.report(width=None)
    display({"text/plain": text, "text/html": report_html(text)}, raw=True, metadata=metadata or {})


def _display_verdict(result: CheckResult) -> None:
    if not result.printed:  # check() has shown it already
        show_report(result)


def register_verdict_display(shell: object) -> None:
    """Show a CheckResult displayed on its own (a cell's last line) as check() shows it, wrapped
    once by the page: IPython's display formatter asks registered printers before an object's own
    ``_ipython_display_``, whose layer (checking) imports no IPython."""
    formatter = getattr(getattr(shell, "display_formatter", None), "ipython_display_formatter", None)
    if formatter is not None:
        formatter.for_type(CheckResult, _display_verdict)


def _register_in_this_kernel() -> None:
    try:
        from IPython.core.getipython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with the notebook extras
        return
    if _shows_rich_output():
        register_verdict_display(get_ipython())


def present_report(result: CheckResult) -> None:
    """A verdict where the learner is: shown in a notebook (``show_report``), printed at the
    terminal's width elsewhere."""
    if _shows_rich_output():
        show_report(result)
    else:
        print(result.report(terminal_width()))


def _three_dims(dims: Sequence[int], what: str) -> tuple[int, int, int]:
    """A grid or threadgroup size as MLX's metal_kernel takes it: three integers (fewer are the
    leading dimensions, the rest 1)."""
    sizes = [int(d) for d in dims]
    if not 1 <= len(sizes) <= 3:
        raise ValueError(f"{what} has {len(sizes)} dimensions; metal_kernel takes 3, such as (8, 1, 1)")
    x, y, z = (*sizes, 1, 1)[:3]
    return (x, y, z)


def _say_explorer_needs_jupyter() -> None:
    """Outside Jupyter the explorer's widgets show nothing: say so instead of returning silently."""
    if not _shows_rich_output():
        print("explore() is interactive and needs Jupyter (JupyterLab, Notebook 7 or VS Code's notebooks); "
              "outside it, show() prints the score table and returns a diagram to save, and check() the verdict.")


class NotAKernelError(TypeError):
    """The puzzle function returned something other than a ``MetalKernel``."""


#: Mistakes in the learner's code that entry points report as text, not as a traceback.
LEARNER_ERRORS = (*KERNEL_ERRORS, NotAKernelError)

#: Warm calls timed on a GPU for show()'s measured time (their median is said).
MEASURED_CALLS = 20


class MetalProblem:
    def __init__(self, name: str, fn: Callable[..., MetalKernel], inputs: Sequence[Any], output_shape: Sequence[int],
                 grid: Sequence[int] = (1, 1, 1), threadgroup: Sequence[int] = (1, 1, 1),
                 spec: Callable | None = None, *, puzzle: Puzzle | None = None, output_dtype: Any = None,
                 init_value: float | None = None, seed: int = 0) -> None:
        self.name = name
        self.fn = fn
        self.inputs = list(inputs)
        self.output_shape = tuple(int(s) for s in output_shape)
        self.grid = _three_dims(grid, "grid")
        self.threadgroup = _three_dims(threadgroup, "threadgroup")
        self.puzzle = puzzle if puzzle is not None else find_puzzle(name)
        self.spec = spec if spec is not None else (self.puzzle.spec if self.puzzle else None)
        if output_dtype is None:  # the puzzle's (indices are uint32), else MLX's usual float32
            output_dtype = self.puzzle.output_dtype if self.puzzle is not None else mx.float32
        self.output_dtype = dtype_name(output_dtype)
        self.seed = seed
        if init_value is None and self.puzzle is not None:
            init_value = self.puzzle.init_value
        self.init_value = init_value
        self.last_run: RunResult | None = None

    # ----------------------------------------------------------------- running
    @property
    def visible_case(self) -> Case:
        arrays = tuple(np.asarray(to_numpy(x)[0]) for x in self.inputs)
        return Case(arrays, self.output_shape, self.grid, self.threadgroup, "visible test")

    @property
    def budget(self) -> Budget:
        return self.puzzle.budget if self.puzzle else Budget()

    @property
    def launch_options(self) -> LaunchOptions:
        return LaunchOptions(self.output_dtype, self.init_value, self.budget.uses_cost,
                             self.puzzle.threadgroup_constant if self.puzzle else None,
                             self.puzzle.buffer_positions if self.puzzle else None,
                             self.puzzle.pipeline if self.puzzle else None)

    def cases(self) -> list[Case]:
        """This problem's visible test (the contract) and the puzzle's hidden tests, each marked
        with the conditions it poses beyond the visible test."""
        if self.puzzle is None:
            return [self.visible_case]
        return self.puzzle.cases(self.seed, visible=self.visible_case)

    def kernel_for(self, case: Case) -> MetalKernel:
        """The learner's kernel for a case (the puzzle function is called with the case's inputs)."""
        kernel = self.fn(*[mx.array(x) for x in case.inputs])
        if not isinstance(kernel, MetalKernel):
            raise NotAKernelError(f"{getattr(self.fn, '__name__', 'the puzzle function')} must return a "
                                  f"MetalKernel, but it returned {type(kernel).__name__}")
        return kernel

    def run_case(self, case: Case, trace: bool | None = False, steps: bool = False, cost=None) -> RunResult:
        """Run the learner's kernel on one case, collecting sanitizer findings instead of raising
        (``cost``: a cost profile, by default when the puzzle's budget needs one). Untraced unless
        asked: a verdict needs no trace (the counters over budget are explained from a traced rerun
        of the test where they peak), and tracing a value's sources costs minutes on attention over
        hundreds of keys, where every partial sum comes from every key."""
        return run_case(self.kernel_for(case), case, self.launch_options, trace=trace, steps=steps, cost=cost)

    # ------------------------------------------------------------------- show
    def score_table(self, result: RunResult) -> Table:
        """The score table: for each counter the largest count over threads ('yours') and, when the
        puzzle sets one, its limit ('budget'; '-' for none). ``str()`` of it is the text."""
        counts = result.counts.max()
        budget = self.puzzle.budget if self.puzzle else Budget()
        # Atomics get a column only in kernels that use them or puzzles that limit them.
        show_atomics = counts.get(Counter.ATOMICS) or budget.atomics is not None
        cols = [c for c in Counter if c != Counter.ATOMICS or show_atomics]
        limits = budget.limits()
        over = [k for k, c in enumerate(cols) if c in limits and counts.get(c, 0) > limits[c]]
        rows = [table_row("yours", [str(counts.get(c, "-")) for c in cols], over)]
        if limits:
            rows.append(table_row("budget", [str(limits.get(c, "-")) for c in cols]))
        return Table(tuple(c.heading for c in cols), tuple(rows),
                     above=(f"# {self.name}", "", "Score (Max Per Thread):"))

    def cost_table(self, result: RunResult, measured: str | None = None) -> Table:
        """The cost model's figures for a run (worst SIMD-group access), with the budget's;
        ``measured``: the kernel's time measured on this machine's GPU, said beside the estimate."""
        profile = result.cost
        if profile is None:
            raise ValueError("cost_table needs a run launched with a cost model (cost=True or a GPU's name)")
        figures = profile.figures()
        limits = self.budget.cost_limits()
        keys = list(COST_LABELS)
        values = {k: _cost_figure(k, figures) for k in keys}
        over = [n for n, k in enumerate(keys) if k in limits and
                (values[k] < limits[k] if k.startswith("min_") else values[k] > limits[k])]
        rows = [table_row("yours", [_cost_limit(k, values[k]) for k in keys], over)]
        if limits:
            rows.append(table_row("budget", [_cost_limit(k, limits[k]) if k in limits else "-" for k in keys]))
        return Table(tuple(label[0].upper() + label[1:] for label in COST_LABELS.values()), tuple(rows),
                     above=(f"Cost on a model of an Apple GPU ({profile.gpu.name}; the worst SIMD-group access; "
                            "problem.profile() for every line):",),
                     below=(f"Time (a roofline model): {profile.estimate.describe()}.",
                            *((measured,) if measured else ())))

    def show(self, max_groups: int = 4, colour_by: ColourBy | str | None = None,
             cost: bool | None = None) -> RunDiagram | None:
        """Print the score table of the visible test and return the diagram of what each thread did.

        When the puzzle's budget uses the cost model (Part III), or with ``cost=True``, a cost
        table follows the score table. ``colour_by='segment'`` or ``'bank'`` draws the access
        map instead of the run diagram: each SIMD-group's accesses coloured by the memory segment
        or threadgroup-memory bank they fall in (Part III puzzles draw both by default).
        """
        with_cost = bool(cost) if cost is not None else (self.budget.uses_cost or colour_by is not None)
        outcome = run_one(lambda c: self.run_case(c, trace=True, cost=with_cost), self.spec or (lambda *a: a[0]),
                          self.visible_case, **self._tolerance())
        if outcome.run is None:
            print(f"# {self.name}\n\n{outcome.error or 'the kernel did not run'}")
            if not _shows_rich_output():  # the save-the-diagram recipe printed elsewhere needs a diagram
                print("\n(No diagram: the kernel did not run, so show() returns None.)")
            return None
        result = outcome.run
        self.last_run = result
        rich = _shows_rich_output()
        if result.stopped is not None:  # counts and costs of an unfinished run would mislead
            print(f"# {self.name}\n\nNo score table: the kernel did not finish ({result.stopped}), so its counts "
                  "would measure an unfinished run.")
        else:
            show_table(self.score_table(result), rich)
        if result.cost is not None and result.stopped is None:
            if not rich:
                print()
            show_table(self.cost_table(result, self._measured_time()), rich)
        if result.findings:
            print("\n" + "\n".join(findings_summary(result.findings)))
            print("\n".join(wrap(f"In the diagram, {marks_legend(finding_sites(result))}.")))
        if result.cost is not None and (colour_by is not None or self.budget.uses_cost):
            diagram = draw_access_map(result, colour_by, title=self.name)
        else:
            diagram = draw_run(result, title=self.name, max_groups=max_groups)
        if not rich:
            name = "".join(c if c.isalnum() else "_" for c in self.name.lower()).strip("_") or "diagram"
            # The recipe on a line of its own, whole, so that it can be copied (and is never wrapped).
            print("\n(The diagram shows in Jupyter. Outside it, save what show() returns:\n"
                  f"    diagram = problem.show(); diagram.render_svg('{name}.svg') or diagram.render_png('{name}.png'))")
        return diagram

    def profile(self, gpu: str | None = None) -> CostProfile | None:
        """Print and return the cost profile of the visible test, line by line, on a GPU model
        (default: the Apple M1; also 'M3 Max', 'M4 Pro', 'H100', ...). A kernel that does not
        compile gets its compiler error printed instead (and None)."""
        try:
            result = self.run_case(self.visible_case, trace=False, cost=gpu or True)
        except LEARNER_ERRORS as err:
            print(f"# {self.name}\n\n{err}")
            return None
        self.last_run = result
        assert result.cost is not None  # asked for above
        print(result.cost.text())
        return result.cost

    def explore(self) -> Explorer | None:
        """An interactive explorer of the visible test: threads, barrier phases, step-through,
        the cost model's figures per line, Check. A kernel that does not compile gets its
        compiler error printed instead (and None)."""
        try:
            result = self.run_case(self.visible_case, trace=True, steps=True, cost=True)
        except LEARNER_ERRORS as err:
            print(f"# {self.name}\n\n{err}")
            return None
        _say_explorer_needs_jupyter()
        return explore_run(result, self.name, check=lambda: self.check(quiet=True))

    def _tolerance(self) -> dict:
        """How close the kernel must come to the spec: the catalogue puzzle's error model, or for a
        problem of the learner's own, the spec as written within fixed tolerances."""
        if self.puzzle is None:
            return dict(rtol=1e-5, atol=1e-4, model=ErrorModel.FIXED)
        return dict(rtol=self.puzzle.rtol, atol=self.puzzle.atol, model=self.puzzle.error_model,
                    allowance=self.puzzle.allowance, diagnose=self.puzzle.diagnose, condition=self.puzzle.condition)

    # ------------------------------------------------------------------ check
    def check(self, quiet: bool = False) -> CheckResult:
        """Run the visible and hidden tests; print a verdict; return a result (truthy when passed)."""
        if self.spec is None:
            raise ValueError(f"MetalProblem {self.name!r} has no spec to check against")
        outcomes = run_cases(self.run_case, self.spec, self.cases(), **self._tolerance())
        result = CheckResult(self.name, outcomes, self.budget)
        result.explain_counts(lambda case: self.run_case(case, trace=True))
        result.gpu_note = self._gpu_comparison(outcomes)
        if self.puzzle is not None:
            record_progress(self.puzzle.id, result)
        if not quiet:
            self._show_verdict(result)
            result.printed = True
        return result

    def _show_verdict(self, result: CheckResult) -> None:
        """Print the verdict, wrapped to the terminal; in Jupyter, show it with the witness of the
        kernel it checked (``checking/witness_record.py``), which the grader compares with what it reads."""
        record = self._witness() if _shows_rich_output() else None
        if record is None:
            print(result.report(terminal_width()))
            return
        show_report(result, metadata={METADATA_KEY: record})

    def _witness(self) -> dict | None:
        try:
            kernel = self.kernel_for(self.visible_case)
        except Exception:  # the learner's function failed: the verdict says so; no witness
            return None
        return witness_record(kernel.name, kernel.source, kernel.header or "")

    def _measured_time(self) -> str | None:
        """The visible test timed on this machine's GPU (Metal on a Mac; an NVIDIA GPU through
        MLX's CUDA back end), to stand beside the model's estimate; None where there is none."""
        backend = METAL if metal_available() else CUDA if cuda_available() else None
        if backend is None or (self.puzzle is not None and self.puzzle.pipeline is not None):
            return None
        case = self.visible_case
        inputs = [mx.array(x) for x in case.inputs]
        kernel = self.fn(*inputs)
        if backend == CUDA and kernel.kernel.whole_shaders and declares_kernels(kernel.source):
            return None  # cuda_kernel takes MLX's body ABI; a whole shader's kernel function is not that

        def call() -> None:
            outs = kernel.kernel(inputs=inputs, output_shapes=[case.output_shape],
                                 output_dtypes=[getattr(mx, self.output_dtype)], grid=case.grid,
                                 threadgroup=case.threadgroup, init_value=self.init_value or 0, backend=backend)
            mx.eval(*outs)

        where = "this Mac's GPU" if backend == METAL else "this NVIDIA GPU (the kernel translated to CUDA)"
        try:
            call()  # the first call compiles (MLX caches it)
            times = []
            for _ in range(MEASURED_CALLS):
                start = time.perf_counter()
                call()
                times.append(time.perf_counter() - start)
        except Exception as exc:  # the GPU path is best-effort information, never the verdict
            return f"Measured on {where}: the kernel failed to run ({exc})."
        return (f"Measured on {where}: {statistics.median(times) * 1e6:.0f} us a call (the median of "
                f"{MEASURED_CALLS}, launch and synchronisation included; another GPU than the model's).")

    def _gpu_comparison(self, outcomes: list[Outcome]) -> str | None:
        """Where a GPU is at hand (Metal on a Mac; an NVIDIA GPU through MLX's CUDA back end, the
        kernel translated to CUDA), also run the visible test on it and say whether it agrees."""
        backend = METAL if metal_available() else CUDA if cuda_available() else None
        if backend is None or not outcomes or outcomes[0].yours is None:
            return None
        if self.puzzle is not None and self.puzzle.pipeline is not None:
            return None  # the GPU path launches one kernel; a pipeline's stages run in the simulator only
        case = outcomes[0].case
        kernel = self.fn(*[mx.array(x) for x in case.inputs])
        if backend == CUDA and kernel.kernel.whole_shaders and declares_kernels(kernel.source):
            return None  # cuda_kernel takes MLX's body ABI; a whole shader's kernel function is not that
        where = "On the GPU" if backend == METAL else "On the NVIDIA GPU (the kernel translated to CUDA)"
        try:
            (gpu,) = kernel.kernel(inputs=[mx.array(x) for x in case.inputs], output_shapes=[case.output_shape],
                                   output_dtypes=[getattr(mx, self.output_dtype)], grid=case.grid,
                                   threadgroup=case.threadgroup, init_value=self.init_value or 0,
                                   backend=backend)
        except Exception as exc:  # the GPU path is best-effort information, never the verdict
            return f"{where}: the kernel failed to run ({exc})."
        same = np.allclose(np.asarray(gpu), outcomes[0].yours, rtol=1e-4, atol=1e-4)
        return f"{where}: the result agrees with the simulator." if same else \
            f"{where}: the result differs from the simulator's (a race or uninitialised memory?)."


def findings_summary(findings: list[Finding], shown: int = 3) -> list[str]:
    """What show() says about the visible test's findings: errors point to check(), which lists
    them for every test; notes (which never fail a check) say that check() lists them too."""
    errors = [f for f in findings if f.is_error]
    if errors:
        head = "The sanitizer found problems (check() says what to fix):"
    else:
        head = ("The sanitizer has a note (it does not fail check(), which lists it too):" if len(findings) == 1
                else "The sanitizer has notes (they do not fail check(), which lists them too):")
    lines = [head, *[line for f in findings[:shown] for line in wrap(finding_text(f), "  ")]]
    if len(findings) > shown:
        lines.append(f"  ... and {plural(len(findings) - shown, 'more finding')}")
    return lines


def _cost_figure(key: str, f: CostFigures) -> float:
    return {"max_load_segments": f.load_segments.value, "max_store_segments": f.store_segments.value,
             "max_bank_conflict": f.bank_conflict.value, "min_simd_efficiency": f.simd_efficiency,
             "max_reads_per_element": f.reads_per_element, "min_occupancy": f.occupancy,
             "max_barriers": f.barriers}[key]


def _cost_limit(key: str, value: float) -> str:
    if key in ("min_simd_efficiency", "min_occupancy"):
        return f"{value:.0%}"
    if key == "max_bank_conflict":
        return f"{value:g}-way" if value else "-"
    if key == "max_reads_per_element":
        return f"{value:.3g}"
    return f"{value:g}"


class GradProblem:
    """The notebook side of a finale entry: check a differentiable function built on your kernels."""

    def __init__(self, name: str, op: Callable, *, puzzle: GradPuzzle | None = None, seed: int = 0) -> None:
        self.name = name
        self.op = op
        self.puzzle = puzzle if puzzle is not None else find_grad_puzzle(name)
        self.seed = seed

    def show(self) -> None:
        """Print how far the visible test's values and gradients are from the reference."""
        outcomes = grad_outcomes(self.puzzle, self.op, self.puzzle.visible, np.random.default_rng(self.seed))
        print(f"# {self.name}\n")
        width = max(len(o.quantity or "") for o in outcomes)
        for o in outcomes:
            if o.yours is not None and o.expected is not None and o.yours.shape == o.expected.shape:
                gap = f"max |yours - reference| = {np.abs(o.yours - o.expected).max(initial=0.0):.3g}"
            elif o.yours is not None and o.expected is not None:
                gap = f"shape {o.yours.shape}, reference {o.expected.shape}"
            else:
                gap = (o.error or o.status).splitlines()[0]
            print(f"{(o.quantity or '').ljust(width)}  {'ok   ' if o.ok else 'WRONG'}  {gap}")

    def check(self, quiet: bool = False) -> CheckResult:
        result = run_grad_checks(self.puzzle, self.op, self.seed)
        record_progress(self.puzzle.id, result)
        if not quiet:
            present_report(result)
            result.printed = True
        return result


class DecodeStepProblem:
    """The notebook side of Part V's finale: a tiny transformer prefills a prompt, then decodes and
    samples, on your kernels (notebook test functions or MetalKernels), checked against the model
    in MLX operations."""

    def __init__(self, *, rms_norm: KernelLike, rope: KernelLike, quantized_matvec: KernelLike,
                 kv_cache_append: KernelLike, prefill_attention: KernelLike, gated_mlp: KernelLike,
                 decode_attention: KernelLike, sampling: KernelLike, seed: int = 0) -> None:
        self.kernels = DecodeKernels(rms_norm=rms_norm, rope=rope, quantized_matvec=quantized_matvec,
                                     kv_cache_append=kv_cache_append, prefill_attention=prefill_attention,
                                     gated_mlp=gated_mlp, decode_attention=decode_attention, sampling=sampling)
        self.puzzle = DECODE_STEP
        self.seed = seed

    def show(self) -> None:
        """Generate from the visible test's prompt on your kernels and say what it gave."""
        result = self.puzzle.check_prompts(self.kernels, [self.puzzle.visible])
        print(f"# {self.puzzle.title}\n")
        present_report(result)

    def check(self, quiet: bool = False) -> CheckResult:
        result = self.puzzle.check_wired(self.kernels, self.seed)
        record_progress(self.puzzle.id, result)
        if not quiet:
            present_report(result)
            result.printed = True
        return result


def explore(target: MetalProblem | MetalKernel | SimulatedKernel | ShaderKernelFunction | RunResult,
            title: str = "") -> Explorer | None:
    """Open the explorer on a problem's visible test, a kernel's last call, or a traced run. A
    kernel that does not compile gets its compiler error printed instead (and None)."""
    if isinstance(target, MetalProblem):
        return target.explore()
    _say_explorer_needs_jupyter()
    if isinstance(target, MetalKernel | SimulatedKernel | ShaderKernelFunction):
        try:
            return explore_kernel(target)
        except KERNEL_ERRORS as err:
            print(err)
            return None
    return explore_run(target, title)


_register_in_this_kernel()
