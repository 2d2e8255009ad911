"""Shared pieces of Part II: random sparse inputs, and launching a puzzle's kernel outside a check.

The hidden tests of Part II need index arrays with repeats and in no particular order, segment
lengths with empty segments, and values that keep float32 sums exact (so that the order in which
atomics land cannot change the answer). The launch helpers let the finale and ``metal_puzzles.ops``
call a puzzle's kernel with the same grid and threadgroup as the puzzle's own tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .base import randfloat


def values(rng: np.random.Generator, shape: Sequence[int]) -> np.ndarray:
    """Random float32 values on a grid of quarters in [-4, 4): products and sums stay exact."""
    return randfloat(rng, tuple(shape))


def indices(rng: np.random.Generator, count: int, upper: int) -> np.ndarray:
    """``count`` int32 indices in [0, upper), unsorted; repeats are forced when count > 1."""
    idx = rng.integers(0, upper, size=count).astype(np.int32)
    if count > 1 and len(set(idx.tolist())) == count:
        idx[-1] = idx[0]  # at least one index shared by two threads: the case atomics exist for
    return idx


def lengths(rng: np.random.Generator, count: int, longest: int, empty: int = 1) -> np.ndarray:
    """``count`` int32 segment lengths in [0, longest]: one of them ``longest``, then ``empty`` of
    the others empty (as many as there are)."""
    out = rng.integers(1, longest + 1, size=count).astype(np.int32)
    order = rng.permutation(count)
    out[order[:1]] = longest  # the longest segment is always present
    out[order[1:1 + empty]] = 0
    return out


def exclusive_offsets(lens: np.ndarray) -> np.ndarray:
    """Where each segment starts: the exclusive prefix sum of its length."""
    return (np.cumsum(lens) - lens).astype(np.int32)


def scalar(n: int) -> np.ndarray:
    """A 0-d int32 array: how a count such as ``n`` travels into a kernel (``const constant int&``)."""
    return np.asarray(n, dtype=np.int32)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def padded(n: int, multiple: int) -> int:
    """``n`` rounded up to a multiple: a grid with spare threads that must do nothing."""
    return ceil_div(n, multiple) * multiple


def as_kernel(kernel: Any, inputs: Sequence[Any]):
    """A ``MetalKernel`` from either a kernel or a notebook test function returning one."""
    from ..kernel import MetalKernel

    if isinstance(kernel, MetalKernel):
        return kernel
    if callable(kernel):
        made = kernel(*inputs)
        if isinstance(made, MetalKernel):
            return made
        raise TypeError(f"{getattr(kernel, '__name__', 'the function')} must return a MetalKernel, "
                        f"got {type(made).__name__}")
    raise TypeError(f"expected a MetalKernel or a function returning one, got {type(kernel).__name__}")


def launch(kernel: Any, inputs: Sequence[Any], output_shape: Sequence[int], grid: Sequence[int],
           threadgroup: Sequence[int], *, init_value: float | None = None, **options: Any):
    """Run a puzzle kernel once and return its output as an ``mx.array``.

    ``options`` reach the kernel call (``sanitize``, ``max_steps``, ``backend``, ``trace``; no
    access trace unless asked, since nobody draws these runs). Empty launches (a zero-sized grid
    or output) return zeros without running anything, as a GPU would.
    """
    import mlx.core as mx

    options.setdefault("trace", False)
    arrays = [x if isinstance(x, mx.array) else mx.array(x) for x in inputs]
    shape = tuple(int(s) for s in output_shape)
    if min(grid) == 0 or 0 in shape:
        return mx.zeros(shape, dtype=mx.float32)
    k = as_kernel(kernel, arrays)
    (out,) = k.kernel(inputs=arrays, output_shapes=[shape], output_dtypes=[mx.float32], grid=tuple(grid),
                      threadgroup=tuple(threadgroup), init_value=init_value, **options)
    return out

