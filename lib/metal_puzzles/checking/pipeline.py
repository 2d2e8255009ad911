"""A puzzle whose answer is several kernels of one whole shader run in turn, as a host runs a
pipeline: each stage is one kernel (by host name) launched with the arrays its host binds at each
``[[buffer(i)]]``: the test's inputs, buffers the host allocates between stages, and the puzzle's
output, which the last stage writes.

Checking such a puzzle is checking its last stage's output against the spec, as for any kernel.
What a pipeline adds is where it went wrong: every stage's output is compared with NumPy's version
of that stage computed from the inputs the stage actually received, and the first stage that
differs is named (a wrong scan shows up as a scatter that writes out of bounds; the comparison
says it is the scan). The run record a check sees is the last stage's (its counts, cost profile
and diagram), with every stage's findings.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from ..host.buffer_binding import run_by_layout
from ..host.kernel import MetalKernel
from ..msl import Audience, RunResult, SanitizeMode
from ..msl.api import cost_model
from ..msl.observe.gpu_models import GpuModel
from ..msl.shader_program import LaunchGeometry
from .case import Case

Geometry = tuple[tuple[int, int, int], tuple[int, int, int]]


@dataclass(frozen=True)
class Buffer:
    """An array the host allocates between stages (a histogram, offsets)."""

    name: str
    shape: Callable[[Case], tuple[int, ...]]
    dtype: str
    #: What it holds before the first stage that writes it (0 for counters that kernels add
    #: to with atomics); None: nothing the host set, so reading it before a write is a finding.
    init_value: float | None = None


@dataclass(frozen=True)
class Stage:
    """One kernel of the pipeline as its host launches it."""

    #: The kernel's host name in the shader (its function name, or the name of an instantiation).
    kernel: str
    #: The array the host binds at [[buffer(i)]], i = 0, 1, ...: a name among the pipeline's
    #: inputs, its buffers, or its output.
    layout: tuple[str, ...]
    #: The array of ``layout`` this stage writes (the host reads it back; the others it only reads).
    writes: str
    #: The launch (grid, threadgroup) for a test.
    geometry: Callable[[Case], Geometry]
    #: NumPy's version of the stage: from every array so far (by name), what it writes.
    reference: Callable[[Mapping[str, np.ndarray]], np.ndarray]
    #: What the reference computes, as NumPy code a learner can run ('np.bincount(digits, minlength=16)').
    reference_text: str


@dataclass(frozen=True)
class Pipeline:
    #: The test's inputs, in the order of the case's (the puzzle's input names).
    inputs: tuple[str, ...]
    #: The array the last stage writes: the puzzle's output.
    output: str
    buffers: tuple[Buffer, ...]
    stages: tuple[Stage, ...]

    def __post_init__(self) -> None:
        known = {*self.inputs, self.output, *(b.name for b in self.buffers)}
        for stage in self.stages:
            unknown = [name for name in (*stage.layout, stage.writes) if name not in known]
            if unknown or stage.writes not in stage.layout:
                raise ValueError(f"stage {stage.kernel!r} binds or writes arrays the pipeline lacks or the stage does "
                                 f"not bind: {unknown or [stage.writes]}")
        if self.output not in self.stages[-1].writes:
            raise ValueError(f"the last stage ({self.stages[-1].kernel!r}) must write the output {self.output!r}")


@dataclass(frozen=True)
class StageCheck:
    """One stage's output against NumPy's version of that stage on the same inputs."""

    stage: Stage
    yours: np.ndarray
    numpy: np.ndarray

    @property
    def ok(self) -> bool:
        return self.yours.shape == self.numpy.shape and bool(np.array_equal(self.yours, self.numpy))


@dataclass
class PipelineRun(RunResult):
    """The last stage's run record, with every stage's findings and the stage-by-stage comparison."""

    checks: list[StageCheck] = field(default_factory=list)

    @property
    def wrong_stage(self) -> StageCheck | None:
        """The first stage whose output differs from NumPy's on the inputs it received."""
        return next((c for c in self.checks if not c.ok), None)

    def diagnosis(self) -> str | None:
        """Which stage goes wrong, in a sentence with yours and NumPy's values; None when every
        stage that ran agrees with NumPy."""
        wrong = self.wrong_stage
        if wrong is None:
            return None
        good = [c.stage.kernel for c in self.checks[:self.checks.index(wrong)]]
        before = (f"'{good[0]}' matches NumPy, " if len(good) == 1 else
                  f"{', '.join(repr(k) for k in good)} match NumPy, " if good else "")
        return (f"stage by stage (each kernel against NumPy on the inputs it received), {before}"
                f"'{wrong.stage.kernel}' does not: it writes {wrong.stage.writes} = {_values(wrong.yours)} where "
                f"{wrong.stage.reference_text} gives {_values(wrong.numpy)}. Fix the kernel '{wrong.stage.kernel}'.")


def _values(a: np.ndarray, shown: int = 16) -> str:
    flat = np.asarray(a).reshape(-1)
    text = ", ".join(str(v) for v in flat[:shown].tolist())
    return f"[{text}{', ...' if flat.size > shown else ''}]"


def run_pipeline(pipeline: Pipeline, kernel: MetalKernel, case: Case, output_dtype: str, *,
                 init_value: float | None = None, trace: bool | None = False, steps: bool = False,
                 max_steps: int | None = None,
                 cost: GpuModel | str | bool | None = None, sanitize: SanitizeMode = SanitizeMode.WARN) -> PipelineRun:
    """Run every stage of ``kernel`` (a whole shader) on one test, as the pipeline's host does;
    the record is the last stage's (``steps`` and the trace, which diagrams draw, are recorded
    for it alone). A stage that does not finish ends the pipeline there. Findings are collected
    (a check reports them beside the output); ``sanitize=SanitizeMode.ERROR`` raises the first
    stage's instead, as an operation should."""
    library = kernel.kernel.shader_library()
    arrays: dict[str, np.ndarray] = dict(zip(pipeline.inputs, (np.asarray(x) for x in case.inputs), strict=True))
    allocated = {b.name: b for b in pipeline.buffers}
    findings = []
    checks: list[StageCheck] = []
    result: RunResult | None = None
    for number, stage in enumerate(pipeline.stages):
        last = number == len(pipeline.stages) - 1
        if stage.writes == pipeline.output:
            shape, dtype, init = tuple(case.output_shape), case.output_dtype or output_dtype, init_value
        else:
            buffer = allocated[stage.writes]
            shape, dtype, init = buffer.shape(case), buffer.dtype, buffer.init_value
        inputs = {name: arrays[name] for name in stage.layout if name != stage.writes}
        grid, threadgroup = stage.geometry(case)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            result = run_by_layout(library, stage.kernel, list(stage.layout), inputs,
                                   {n: a.dtype.name for n, a in inputs.items()}, {stage.writes: (shape, dtype)},
                                   LaunchGeometry(grid, threadgroup), init, sanitize=sanitize,
                                   trace=trace if last else False, steps=steps and last, max_steps=max_steps,
                                   audience=Audience.PUZZLE, warned=set(),
                                   cost=cost_model(cost) if last else None)
        findings += result.findings
        if result.stopped is not None:
            break
        (written,) = result.outputs
        checks.append(StageCheck(stage, np.asarray(written), np.asarray(stage.reference(dict(arrays)))))
        arrays[stage.writes] = written
    assert result is not None
    # A stage that did not finish leaves the output unwritten (its record says it stopped).
    final = arrays.get(pipeline.output, np.zeros(case.output_shape, dtype=case.output_dtype or output_dtype))
    fields = {f.name: getattr(result, f.name) for f in dataclasses.fields(RunResult)}
    fields.update(outputs=[final], output_names=[pipeline.output], findings=findings)
    return PipelineRun(**fields, checks=checks)
