"""Launching a puzzle's kernel outside a check, as an MLX operation: how the finale's launchers,
``metal_puzzles.ops`` and the grader's gradient wiring call a kernel with that puzzle's grid."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import mlx.core as mx

from ..host.kernel import MetalKernel

#: A kernel as launchers accept it: a MetalKernel, or a notebook test function returning one.
KernelLike = MetalKernel | Callable[..., MetalKernel]


def as_kernel(kernel: KernelLike, inputs: Sequence[Any]) -> MetalKernel:
    """A ``MetalKernel`` from either a kernel or a notebook test function returning one."""
    if isinstance(kernel, MetalKernel):
        return kernel
    if callable(kernel):
        made = kernel(*inputs)
        if isinstance(made, MetalKernel):
            return made
        raise TypeError(f"{getattr(kernel, '__name__', 'the function')} must return a MetalKernel, "
                        f"got {type(made).__name__}")
    raise TypeError(f"expected a MetalKernel or a function returning one, got {type(kernel).__name__}")


def launch(kernel: KernelLike, inputs: Sequence[Any], output_shape: Sequence[int], grid: Sequence[int],
           threadgroup: Sequence[int], *, init_value: float | None = None, output_dtype: mx.Dtype = mx.float32,
           **options: Any) -> mx.array:
    """Run a puzzle kernel once and return its output as an ``mx.array``.

    ``options`` reach the kernel call (``sanitize``, ``max_steps``, ``backend``, ``trace``; no
    access trace unless asked, since nobody draws these runs). A puzzle's kernel is strict: a
    sanitizer finding raises unless ``sanitize`` says otherwise (the drop-in alone only warns).
    Empty launches (a zero-sized grid or output) return zeros without running anything, as a
    GPU would. ``output_dtype`` is the output's (an index, as argmax's, is ``mx.uint32``).
    """
    options.setdefault("trace", False)
    options.setdefault("sanitize", "error")
    arrays = [x if isinstance(x, mx.array) else mx.array(x) for x in inputs]
    shape = tuple(int(s) for s in output_shape)
    if min(grid) == 0 or 0 in shape:
        return mx.zeros(shape, dtype=output_dtype)
    k = as_kernel(kernel, arrays)
    (out,) = k.kernel(inputs=arrays, output_shapes=[shape], output_dtypes=[output_dtype], grid=tuple(grid),
                      threadgroup=tuple(threadgroup), init_value=init_value, **options)
    return out
