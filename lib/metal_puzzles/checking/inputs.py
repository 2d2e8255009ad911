"""Test inputs for puzzles: deterministic ranges and random values, indices and segment lengths.

Random values lie on a grid of quarters, so float32 sums and products stay exact and results do
not depend on the order in which threads (or atomics) add them up. Index arrays have repeats and
no order; segment lengths include empty segments: the cases sparse kernels exist for.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt


def arange(n: int, dtype: npt.DTypeLike = np.int32) -> np.ndarray:
    return np.arange(n, dtype=dtype)


def randint(rng: np.random.Generator, shape: int | Sequence[int], low: int = -20, high: int = 20,
            dtype: npt.DTypeLike = np.int32) -> np.ndarray:
    return rng.integers(low, high, size=shape).astype(dtype)


def randfloat(rng: np.random.Generator, shape: int | Sequence[int], low: float = -4.0,
              high: float = 4.0) -> np.ndarray:
    """Random float32 values on a grid of quarters in [low, high)."""
    return (rng.integers(int(low * 4), int(high * 4), size=shape) / 4.0).astype(np.float32)


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
