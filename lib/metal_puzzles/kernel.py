"""``metal_kernel``: a drop-in for ``mx.fast.metal_kernel`` that runs on the simulator (or, when
asked and available, on the real GPU), and ``MetalKernel``, the puzzle wrapper of the original
Metal-Puzzles notebook.

This is the boundary between MLX and the NumPy-only simulator: MLX arrays and dtypes are
converted here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import mlx.core as mx
import numpy as np

from .metal_backend import METAL, MetalBackendKernel, resolve_backend
from .msl import RunResult, simulate
from .msl.abi.signature import normalize_dtype_name

_MX_DTYPES = {
    "bool": mx.bool_, "int8": mx.int8, "uint8": mx.uint8, "int16": mx.int16, "uint16": mx.uint16,
    "int32": mx.int32, "uint32": mx.uint32, "int64": mx.int64, "uint64": mx.uint64,
    "float16": mx.float16, "bfloat16": mx.bfloat16, "float32": mx.float32,
}


_MX_NAMES = {v: k for k, v in _MX_DTYPES.items()}


def dtype_name(dtype: Any) -> str:
    """NumPy-style name of an MLX or NumPy dtype ('float32', 'bfloat16', ...)."""
    if isinstance(dtype, mx.Dtype):
        if dtype not in _MX_NAMES:
            raise ValueError(f"dtype {dtype} cannot be used in a Metal kernel")
        return _MX_NAMES[dtype]
    return normalize_dtype_name(dtype)


def to_numpy(x: Any) -> tuple[Any, str | None]:
    """An input as the simulator takes it, plus a dtype override for bfloat16.

    MLX views keep their strides (``np.asarray`` shares the buffer), which is what
    ``ensure_row_contiguous=False`` kernels expect to see. NumPy has no bfloat16, so those
    arrays travel as float32 holding bfloat16 values.
    """
    if isinstance(x, mx.array):
        if x.dtype == mx.bfloat16:
            return np.asarray(x.astype(mx.float32)), "bfloat16"
        return np.asarray(x), None
    if isinstance(x, bool | int | float):
        return x, None
    return np.asarray(x), None


def to_mlx(arr: np.ndarray, dtype: str) -> mx.array:
    if dtype == "bfloat16":
        return mx.array(arr.astype(np.float32)).astype(mx.bfloat16)
    return mx.array(arr)


class SimulatedKernel:
    """What ``metal_kernel`` returns: call it like the object ``mx.fast.metal_kernel`` returns.

    Besides MLX's keyword arguments it takes ``backend`` ('simulator' or 'metal', default from
    the METAL_PUZZLES_BACKEND environment variable, else 'simulator'), ``sanitize`` ('error',
    'warn', 'off'), ``trace`` and ``cost`` (a cost profile on a GPU model). The last simulator
    run is kept in ``last_run`` (counts, trace, findings, cost profile) for diagrams;
    ``metal_puzzles.explore(kernel)`` opens the explorer on it.
    """

    def __init__(self, name: str, input_names: Sequence[str], output_names: Sequence[str], source: str,
                 header: str = "", ensure_row_contiguous: bool = True, atomic_outputs: bool = False,
                 compile_options: dict | None = None) -> None:
        self.name = name
        self.input_names = list(input_names)
        self.output_names = list(output_names)
        self.source = source
        self.header = header
        self.ensure_row_contiguous = ensure_row_contiguous
        self.atomic_outputs = atomic_outputs
        self.compile_options = compile_options
        self.last_run: RunResult | None = None
        self.last_call: dict | None = None
        self._metal: MetalBackendKernel | None = None

    def __call__(self, *, inputs: Sequence[Any], output_shapes: Sequence[Sequence[int]],
                 output_dtypes: Sequence[Any], grid: Sequence[int], threadgroup: Sequence[int],
                 template: Sequence[tuple[str, Any]] | None = None, init_value: float | None = None,
                 verbose: bool = False, stream: Any = None, backend: str | None = None,
                 sanitize: str = "error", trace: bool | None = None, max_steps: int | None = None,
                 cost: Any = None) -> list[mx.array]:
        if resolve_backend(backend) == METAL:
            return self._run_metal(inputs=inputs, output_shapes=output_shapes, output_dtypes=output_dtypes,
                                   grid=grid, threadgroup=threadgroup, template=template, init_value=init_value,
                                   verbose=verbose, stream=stream)
        result = self.run(inputs=inputs, output_shapes=output_shapes, output_dtypes=output_dtypes, grid=grid,
                          threadgroup=threadgroup, template=template, init_value=init_value, verbose=verbose,
                          sanitize=sanitize, trace=trace, max_steps=max_steps, cost=cost)
        return [to_mlx(o, dtype_name(d)) for o, d in zip(result.outputs, output_dtypes, strict=True)]

    def run(self, *, inputs, output_shapes, output_dtypes, grid, threadgroup, template=None, init_value=None,
            verbose=False, sanitize="error", trace=None, max_steps=None, steps=False, cost=None) -> RunResult:
        """Run on the simulator and return the full run record (outputs as NumPy arrays).

        ``cost`` asks for a cost profile in ``RunResult.cost`` (True: the default GPU model,
        Apple M1; or a model's name such as 'M3 Max' or 'H100')."""
        self.last_call = dict(inputs=inputs, output_shapes=output_shapes, output_dtypes=output_dtypes, grid=grid,
                              threadgroup=threadgroup, template=template, init_value=init_value)
        arrays, overrides = zip(*(to_numpy(x) for x in inputs), strict=True) if inputs else ((), ())
        tmpl = [(n, v if isinstance(v, bool | int) else dtype_name(v)) for n, v in (template or [])]
        result = simulate(
            self.name, self.input_names, self.output_names, self.source, self.header,
            inputs=list(arrays), output_shapes=[tuple(s) for s in output_shapes],
            output_dtypes=[dtype_name(d) for d in output_dtypes], grid=tuple(grid), threadgroup=tuple(threadgroup),
            template=tmpl, init_value=init_value, atomic_outputs=self.atomic_outputs,
            ensure_row_contiguous=self.ensure_row_contiguous, verbose=verbose, input_dtypes=list(overrides),
            sanitize=sanitize, trace=trace, max_steps=max_steps, steps=steps, cost=cost)
        self.last_run = result
        return result

    def replay(self, **options: Any) -> RunResult:
        """Run the last call again on the simulator, with other options (``trace=True``,
        ``steps=True``, ``sanitize='warn'``...): what the explorer shows."""
        if self.last_call is None:
            raise RuntimeError("call the kernel once before replaying (or exploring) it")
        return self.run(**{**self.last_call, **options})

    def _run_metal(self, **call: Any) -> list[mx.array]:
        if self._metal is None:
            self._metal = MetalBackendKernel(self.name, self.input_names, self.output_names, self.source,
                                             self.header, self.ensure_row_contiguous, self.atomic_outputs)
        call = {k: v for k, v in call.items() if v is not None or k in ("init_value",)}
        return self._metal(**call)


def metal_kernel(name: str, input_names: Sequence[str], output_names: Sequence[str], source: str,
                 header: str = "", ensure_row_contiguous: bool = True, atomic_outputs: bool = False,
                 compile_options: dict | None = None) -> SimulatedKernel:
    """Drop-in for ``mx.fast.metal_kernel`` (MLX 0.32 arguments) running on the simulator."""
    return SimulatedKernel(name, input_names, output_names, source, header, ensure_row_contiguous,
                           atomic_outputs, compile_options)


@dataclass
class MetalKernel:
    """The puzzle wrapper: holds a kernel's definition.

    ``kernel(inputs=..., output_shapes=..., ...)`` runs it; ``kernel()`` returns a callable that
    takes those arguments (the original notebook's style).
    """

    name: str
    input_names: list[str]
    output_names: list[str]
    source: str
    header: str = ""
    ensure_row_contiguous: bool = True
    atomic_outputs: bool = False
    _kernel: SimulatedKernel | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def kernel(self) -> SimulatedKernel:
        if self._kernel is None:
            self._kernel = metal_kernel(self.name, self.input_names, self.output_names, self.source, self.header,
                                        self.ensure_row_contiguous, self.atomic_outputs)
        return self._kernel

    def __call__(self, *args: Any, **kwargs: Any):
        if not args and not kwargs:
            return self.kernel
        if args:
            raise TypeError("MetalKernel takes keyword arguments (inputs=..., output_shapes=..., ...)")
        return self.kernel(**kwargs)
