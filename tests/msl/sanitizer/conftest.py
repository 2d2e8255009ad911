"""Helpers for the sanitizer corpus.

Every planted bug is a small kernel whose offending line carries a marker comment such as
``// @BUG``; ``line_of`` turns the marker into the 1-based line number the finding must name,
so the kernels can be edited without renumbering assertions.

Every test runs twice, through both ABIs (the ``kernel_abi`` fixture): as an MLX body, and as
the whole kernel function MLX would generate for it, compiled as a shader of its own (with
``#line`` directives, so that findings name the same lines). The planted bugs must be found the
same way both times.

``findings_of`` runs a kernel in the default ``sanitize="error"`` mode and returns the
findings of the ``SanitizerError`` it must raise; ``clean`` runs a kernel that must raise
nothing and returns its result. ``check_finding`` compares one finding with the expected
kind, thread, buffer, index and line. Thread coordinates are written as ``T(grid, group,
local)`` so that a mismatch prints all three.

Tests import these with ``from .conftest import ...`` (the suite is a package).
"""

from __future__ import annotations

import dataclasses
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from metal_puzzles.msl import Finding, RunResult, SanitizerError, simulate
from metal_puzzles.msl.abi.prelude import PRELUDE
from metal_puzzles.msl.abi.signature import (
    build_signature,
    describe_input,
    template_value,
)
from metal_puzzles.msl.lang.kernel_parameters import ParamRole
from metal_puzzles.msl.shader_program import LaunchGeometry, ShaderLibrary

Dim3 = tuple[int, int, int]
OutSpec = tuple[tuple[int, ...], str]

#: Expected value for a field the contract leaves open (e.g. the buffer of a division by zero).
ANY: Any = object()


def kernel(text: str) -> str:
    """Dedent a kernel body written inside a test and drop the leading blank line."""
    return textwrap.dedent(text).lstrip("\n")


def line_of(source: str, marker: str) -> int:
    """The 1-based line of ``source`` that contains ``marker`` (exactly one line must)."""
    hits = [n for n, text in enumerate(source.split("\n"), start=1) if marker in text]
    assert len(hits) == 1, f"marker {marker!r} found on lines {hits}"
    return hits[0]


@dataclass(frozen=True)
class T:
    """A thread as the sanitizer names it: grid position, threadgroup position, local position."""

    grid: Dim3
    group: Dim3
    local: Dim3

    @staticmethod
    def of(d: Mapping[str, Any]) -> T:
        return T(tuple(d["grid"]), tuple(d["group"]), tuple(d["local"]))


def t1(gid: int, tg: int) -> T:
    """The thread at x = ``gid`` of a 1D launch with threadgroups of ``tg`` threads."""
    return T((gid, 0, 0), (gid // tg, 0, 0), (gid % tg, 0, 0))


def t2(x: int, y: int, tg: tuple[int, int]) -> T:
    """The thread at (x, y) of a 2D launch with threadgroups of ``tg`` = (tx, ty) threads."""
    return T((x, y, 0), (x // tg[0], y // tg[1], 0), (x % tg[0], y % tg[1], 0))


#: The two ways a kernel reaches the simulator: an MLX body, or a whole kernel function.
ABIS = ("mlx-body", "whole-kernel")
_current_abi = [ABIS[0]]


@pytest.fixture(autouse=True, params=ABIS)
def kernel_abi(request: pytest.FixtureRequest) -> Any:
    _current_abi[0] = request.param
    yield request.param
    _current_abi[0] = ABIS[0]


def launch(
    source: str,
    inputs: Mapping[str, Any] | None = None,
    outputs: Mapping[str, OutSpec] | None = None,
    *,
    grid: Dim3,
    tg: Dim3,
    header: str = "",
    init_value: float | None = 0,
    atomic: bool = False,
    sanitize: str = "error",
    max_steps: int | None = None,
    template: Sequence[tuple[str, Any]] = (),
    warned: set | None = None,
) -> RunResult:
    """Run ``source`` on the simulator. Outputs default to one float32 ``out`` of ``grid[0]``
    elements; ``init_value`` defaults to 0 so that only kernels about uninitialised outputs
    have to think about them."""
    inputs = dict(inputs or {})
    outs = dict(outputs) if outputs is not None else {"out": ((grid[0],), "float32")}
    kwargs: dict[str, Any] = {}
    if max_steps is not None:
        kwargs["max_steps"] = max_steps
    if warned is not None:
        kwargs["warned"] = warned
    if _current_abi[0] == "whole-kernel":
        return _launch_whole_kernel(source, header, inputs, outs, grid, tg, init_value, atomic, sanitize,
                                    list(template), kwargs)
    return simulate(
        "sanitizer_probe",
        list(inputs),
        list(outs),
        source,
        header,
        inputs=list(inputs.values()),
        output_shapes=[tuple(shape) for shape, _ in outs.values()],
        output_dtypes=[dtype for _, dtype in outs.values()],
        grid=grid,
        threadgroup=tg,
        template=list(template),
        init_value=init_value,
        atomic_outputs=atomic,
        sanitize=sanitize,
        **kwargs,
    )


def _launch_whole_kernel(source: str, header: str, inputs: dict[str, Any], outs: dict[str, OutSpec], grid: Dim3,
                         tg: Dim3, init_value: float | None, atomic: bool, sanitize: str, template: list,
                         kwargs: dict[str, Any]) -> RunResult:
    """The kernel MLX would generate for this call, run as a whole shader with each buffer bound
    at its index (outputs the host never filled are 'unset', as MLX's are without init_value)."""
    descs = [describe_input(name, value) for name, value in inputs.items()]
    out_dtypes = [dtype for _, dtype in outs.values()]
    generated = build_signature("sanitizer_probe", list(inputs), list(outs), source, header, descs, out_dtypes,
                                [(n, template_value(v)) for n, v in template], atomic)
    shader = (f'#line 1 "<mlx utils>"\n{PRELUDE}\n#line 1 "header"\n{header}\n{generated.signature}'
              f'#line 1 "source"\n{source}\n}}\n{generated.instantiation_line}')
    kernel = ShaderLibrary(shader).kernel(generated.kernel_name)
    values: dict[int, np.ndarray] = {}
    unset = []
    arrays = {name: np.asarray(value) for name, value in inputs.items()}
    for index, param in enumerate(p for p in generated.params if p.role != ParamRole.ATTRIBUTE):
        if param.role == ParamRole.INPUT:
            values[index] = arrays[param.name].astype(desc_dtype(descs, param.name))
        elif param.role == ParamRole.SHAPE:
            values[index] = np.array(arrays[param.of].shape, dtype=np.int32)
        elif param.role == ParamRole.STRIDES:
            shape = arrays[param.of].shape
            values[index] = np.array([int(np.prod(shape[k + 1:])) for k in range(len(shape))], dtype=np.int64)
        elif param.role == ParamRole.NDIM:
            values[index] = np.asarray(np.int32(arrays[param.of].ndim))
        else:
            shape, dtype = outs[param.name]
            fill = 0 if init_value is None else init_value
            values[index] = np.full(int(np.prod(shape)), fill, dtype=dtype)
            if init_value is None:
                unset.append(index)
    result = kernel.launch(values, LaunchGeometry(grid, tg), unset=unset, sanitize=sanitize, **kwargs)
    shapes = [shape for shape, _ in outs.values()]
    return dataclasses.replace(result, outputs=[o.reshape(s) for o, s in zip(result.outputs, shapes, strict=True)])


def desc_dtype(descs: Sequence[Any], name: str) -> str:
    return next(d.dtype for d in descs if d.name == name)


def findings_of(source: str, *args: Any, **kwargs: Any) -> list[Finding]:
    """Run a kernel that must raise ``SanitizerError`` in the default mode; return its findings."""
    with pytest.raises(SanitizerError) as info:
        launch(source, *args, **kwargs)
    found = info.value.findings
    assert found, "SanitizerError raised without findings"
    return found


def clean(source: str, *args: Any, **kwargs: Any) -> RunResult:
    """Run a kernel that must produce no finding at all; return its result."""
    try:
        res = launch(source, *args, **kwargs)
    except SanitizerError as err:
        lines = "\n".join(f"  {f.kind} at {f.pos}: {f.message}" for f in err.findings)
        pytest.fail(f"false alarm(s) on a correct kernel:\n{lines}")
    assert res.findings == []
    return res


def check_finding(
    f: Finding,
    kind: str,
    line: int | None,
    thread: T | None,
    buffer: str | None,
    index: int | None,
    *,
    file: str = "source",
) -> None:
    """Assert every field of one finding that the contract pins down; ``None`` for ``line`` or
    ``thread`` skips that check, ``ANY`` does so for ``buffer`` or ``index``."""
    assert f.kind == kind, f"expected a {kind} finding, got {f.kind}: {f.message}"
    assert isinstance(f.message, str) and f.message.strip(), "a finding needs a message"
    assert "\n" not in f.message.strip(), "the message should be one sentence on one line"
    if line is not None:
        assert f.pos is not None, f"{kind} finding without a position"
        assert (f.pos.file, f.pos.line) == (file, line), f"{f.pos} != {file}:{line} ({f.message})"
    if thread is not None:
        assert f.threads, f"{kind} finding names no thread"
        assert T.of(f.threads[0]) == thread, f"threads[0] = {f.threads[0]} ({f.message})"
    if buffer is not ANY:
        assert f.buffer == buffer, f"buffer {f.buffer!r} != {buffer!r} ({f.message})"
    if index is not ANY:
        assert f.index == index, f"index {f.index!r} != {index!r} ({f.message})"


def expect_one_kind(
    found: list[Finding],
    kind: str,
    line: int | None,
    thread: T | None,
    buffer: str | None,
    index: int | None,
    *,
    file: str = "source",
) -> Finding:
    """The first finding must be exactly the planted bug, and every finding of that run must be
    of the planted kind (a planted bug must not drag unrelated false alarms along)."""
    kinds = [f.kind for f in found]
    assert all(k == kind for k in kinds), f"expected only {kind} findings, got {kinds}"
    check_finding(found[0], kind, line, thread, buffer, index, file=file)
    return found[0]


def check_race(f: Finding, race: str, other_line: int, other: T) -> None:
    """The race-specific fields: which flavour, and the other access (line and thread)."""
    assert f.extra.get("race") == race, f"race flavour {f.extra.get('race')!r} != {race!r}"
    other_pos = f.extra.get("other_pos")
    assert other_pos is not None and other_pos.line == other_line, f"other_pos {other_pos} != line {other_line}"
    other_thread = f.extra.get("other_thread")
    assert other_thread is not None and T.of(other_thread) == other, f"other_thread {other_thread} != {other}"


def f32(values: Sequence[float] | np.ndarray) -> np.ndarray:
    return np.asarray(values, dtype=np.float32)


def i32(values: Sequence[int] | np.ndarray) -> np.ndarray:
    return np.asarray(values, dtype=np.int32)
