"""Helpers that keep the semantics tests short.

`run` wraps `metal_puzzles.msl.simulate` with defaults suited to small probes: one
threadgroup covering the grid, a single float32 output called `out`. `one` runs a body in a
single thread and returns `out[0]`, which most scalar semantics checks need.

Tests import these with ``from .conftest import run, one`` (the suite is a package).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from metal_puzzles.msl import simulate

OutSpec = tuple[tuple[int, ...], str]
Dim3 = tuple[int, int, int]


def _as_out_map(out: OutSpec | Mapping[str, OutSpec]) -> dict[str, OutSpec]:
    """Accept either one output spec (named `out`) or a name -> (shape, dtype) mapping."""
    if isinstance(out, Mapping):
        return dict(out)
    return {"out": out}


def run(
    source: str,
    inputs: Mapping[str, Any] | None = None,
    out: OutSpec | Mapping[str, OutSpec] = ((1,), "float32"),
    grid: Dim3 = (1, 1, 1),
    tg: Dim3 | None = None,
    header: str = "",
    template: Sequence[tuple[str, Any]] = (),
    init_value: float | None = None,
    atomic: bool = False,
    contiguous: bool = True,
    input_dtypes: Sequence[str | None] | None = None,
    sanitize: str = "error",
    name: str = "probe",
) -> Any:
    """Simulate `source` once and return the simulator's result object.

    `tg` defaults to the whole grid in one threadgroup, which is what most probes want.
    """
    inputs = dict(inputs or {})
    outs = _as_out_map(out)
    return simulate(
        name,
        list(inputs),
        list(outs),
        source,
        header,
        inputs=list(inputs.values()),
        output_shapes=[tuple(shape) for shape, _ in outs.values()],
        output_dtypes=[dtype for _, dtype in outs.values()],
        grid=tuple(grid),
        threadgroup=tuple(tg if tg is not None else grid),
        template=list(template),
        init_value=init_value,
        atomic_outputs=atomic,
        ensure_row_contiguous=contiguous,
        input_dtypes=list(input_dtypes) if input_dtypes is not None else None,
        sanitize=sanitize,
    )


def out0(source: str, **kwargs: Any) -> np.ndarray:
    """Run and return the first output array."""
    return run(source, **kwargs).outputs[0]


def one(body: str, dtype: str = "float32", **kwargs: Any) -> Any:
    """Run `body` in a single thread with a one-element output `out`; return out[0]."""
    return out0(body, out=((1,), dtype), **kwargs)[0]


def lin(grid: Dim3) -> int:
    """Number of threads in a grid."""
    return int(np.prod(grid))
