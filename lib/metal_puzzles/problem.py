"""``MetalProblem``: one puzzle in the notebook — run it, show what every thread did, check it.

Compatible with the original Metal-Puzzles notebook: ``MetalProblem(name, fn, inputs,
output_shape, grid, threadgroup, spec)`` where ``fn(*inputs)`` returns a ``MetalKernel``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import mlx.core as mx
import numpy as np

from . import progress as progress_mod
from .checking import PUZZLE_MAX_STEPS, CheckResult, run_cases
from .kernel import MetalKernel, dtype_name, to_numpy
from .msl import RunResult
from .puzzles import find_puzzle
from .puzzles.base import Budget, Case, Puzzle

COLUMNS = (("global_reads", "Global Reads"), ("global_writes", "Global Writes"),
           ("shared_reads", "Shared Reads"), ("shared_writes", "Shared Writes"))


class MetalProblem:
    def __init__(self, name: str, fn: Callable[..., MetalKernel], inputs: Sequence[Any], output_shape: Sequence[int],
                 grid: Sequence[int] = (1, 1, 1), threadgroup: Sequence[int] = (1, 1, 1),
                 spec: Callable | None = None, *, puzzle: Puzzle | None = None, output_dtype: Any = mx.float32,
                 init_value: float | None = None, seed: int = 0) -> None:
        self.name = name
        self.fn = fn
        self.inputs = list(inputs)
        self.output_shape = tuple(int(s) for s in output_shape)
        self.grid = tuple(int(g) for g in grid)
        self.threadgroup = tuple(int(t) for t in threadgroup)
        self.puzzle = puzzle if puzzle is not None else find_puzzle(name)
        self.spec = spec if spec is not None else (self.puzzle.spec if self.puzzle else None)
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

    def cases(self) -> list[Case]:
        hidden = list(self.puzzle.hidden(np.random.default_rng(self.seed))) if self.puzzle else []
        return [self.visible_case, *hidden]

    def run_case(self, case: Case, trace: bool | None = None) -> RunResult:
        """Run the learner's kernel on one case, collecting sanitizer findings instead of raising."""
        kernel = self.fn(*[mx.array(x) for x in case.inputs])
        if not isinstance(kernel, MetalKernel):
            raise TypeError(f"the puzzle function must return a MetalKernel, got {type(kernel).__name__}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return kernel.kernel.run(inputs=list(case.inputs), output_shapes=[case.output_shape],
                                     output_dtypes=[self.output_dtype], grid=case.grid, threadgroup=case.threadgroup,
                                     init_value=self.init_value, sanitize="warn", trace=trace,
                                     max_steps=PUZZLE_MAX_STEPS)

    # ------------------------------------------------------------------- show
    def score_table(self, result: RunResult) -> str:
        counts = result.counts.max()
        budget = self.puzzle.budget if self.puzzle else Budget()
        show_atomics = counts.get("atomics") or budget.atomics is not None
        cols = list(COLUMNS) + ([("atomics", "Atomics")] if show_atomics else [])
        head = "| " + " | ".join(label for _, label in cols) + " |"
        row = "| " + " | ".join(str(counts[k]).rjust(len(label)) for k, label in cols) + " |"
        lines = [f"# {self.name}", "", "Score (Max Per Thread):", head, row]
        if budget.limits():
            limits = budget.limits()
            lines.append("| " + " | ".join(str(limits.get(k, "-")).rjust(len(label)) for k, label in cols)
                         + " |  <- budget")
        return "\n".join(lines)

    def show(self, max_groups: int = 4):
        """Print the score table of the visible test and return the diagram of what each thread did."""
        from .checking import run_one

        outcome = run_one(lambda c: self.run_case(c, trace=True), self.spec or (lambda *a: a[0]),
                          self.visible_case, 1e-5, 1e-4)
        if outcome.run is None:
            print(f"# {self.name}\n\n{outcome.error or 'the kernel did not run'}")
            return None
        result = outcome.run
        self.last_run = result
        print(self.score_table(result))
        if result.findings:
            print("\nThe sanitizer found problems (run check() for details):")
            for f in result.findings[:3]:
                where = f" at line {f.pos.line}" if f.pos is not None else ""
                print(f"  {f.kind}{where}: {f.message}")
        from .draw import draw_run

        return draw_run(result, title=self.name, max_groups=max_groups)

    def explore(self):
        """An interactive explorer of the visible test: threads, barrier phases, step-through, Check."""
        from .widgets import Explorer

        kernel = self.fn(*[mx.array(x) for x in self.visible_case.inputs])
        case = self.visible_case
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            result = kernel.kernel.run(inputs=list(case.inputs), output_shapes=[case.output_shape],
                                       output_dtypes=[self.output_dtype], grid=case.grid,
                                       threadgroup=case.threadgroup, init_value=self.init_value, sanitize="warn", trace=True,
                                       steps=True)
        return Explorer(result, title=self.name, problem=self)

    # ------------------------------------------------------------------ check
    def check(self, quiet: bool = False) -> CheckResult:
        """Run the visible and hidden tests; print a verdict; return a result (truthy when passed)."""
        if self.spec is None:
            raise ValueError(f"MetalProblem {self.name!r} has no spec to check against")
        tol = dict(rtol=self.puzzle.rtol, atol=self.puzzle.atol) if self.puzzle else {}
        outcomes = run_cases(self.run_case, self.spec, self.cases(), **tol)
        result = CheckResult(self.name, outcomes, self.puzzle.budget if self.puzzle else Budget())
        result.gpu_note = self._gpu_comparison(outcomes)
        if self.puzzle is not None:
            progress_mod.record(self.puzzle.id, result)
        if not quiet:
            print(result.report())
            result.printed = True
        return result

    def _gpu_comparison(self, outcomes) -> str | None:
        """On a Mac with Metal, also run the visible test on the GPU and say whether it agrees."""
        from .metal_backend import metal_available

        if not metal_available() or not outcomes or outcomes[0].yours is None:
            return None
        case = outcomes[0].case
        kernel = self.fn(*[mx.array(x) for x in case.inputs])
        try:
            (gpu,) = kernel.kernel(inputs=[mx.array(x) for x in case.inputs], output_shapes=[case.output_shape],
                                   output_dtypes=[getattr(mx, self.output_dtype)], grid=case.grid,
                                   threadgroup=case.threadgroup, init_value=self.init_value or 0,
                                   backend="metal")
        except Exception as exc:  # the GPU path is best-effort information, never the verdict
            return f"On the GPU: the kernel failed to run ({exc})."
        same = np.allclose(np.asarray(gpu), outcomes[0].yours, rtol=1e-4, atol=1e-4)
        return "On the GPU: the result agrees with the simulator." if same else \
            "On the GPU: the result differs from the simulator's (a race or uninitialised memory?)."
