"""Runtime value helpers: C conversions and arithmetic on NumPy lanes.

A value is *uniform* (one NumPy scalar, or an ``(n,)`` array for an n-vector, shared by all
threads) or *varying* (a leading axis of one entry per thread). Keeping thread-invariant
values uniform is what makes lock-step execution cheap.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .types import (
    BFLOAT,
    BOOL,
    MatrixType,
    ScalarType,
    SimdgroupMatrixType,
    StructType,
    Type,
    VectorType,
)


def type_ndim(ty: Type) -> int:
    """Axes a value of ``ty`` has besides the lanes: a vector's components (or a SIMD-group
    matrix's two elements in this thread, or a struct's bytes), a matrix's columns and rows."""
    if isinstance(ty, VectorType | SimdgroupMatrixType | StructType):
        return 1
    if isinstance(ty, MatrixType):
        return 2
    return 0


def is_varying(v: Any, ty: Type) -> bool:
    return np.ndim(v) > type_ndim(ty)


def round_bfloat(x: Any) -> Any:
    """Round float32 values to the nearest bfloat16 (ties to even), kept in float32 storage."""
    a = np.asarray(x, dtype=np.float32)
    bits = a.view(np.uint32)
    rounded = ((bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000))
    out = np.where(np.isnan(a), a, rounded.view(np.float32))
    return out[()] if out.ndim == 0 else out


def cast(v: Any, src: Type, dst: Type) -> Any:
    """Convert a value between arithmetic types with C semantics."""
    if src == dst:
        return v
    d = dst.elem if isinstance(dst, VectorType | MatrixType) else dst
    s = src.elem if isinstance(src, VectorType | MatrixType) else src
    assert isinstance(d, ScalarType) and isinstance(s, ScalarType)
    if d == BOOL:
        return np.not_equal(v, 0)
    if d.is_float:
        out = np.asanyarray(v).astype(np.float32 if d == BFLOAT else d.dtype)
        if d == BFLOAT:
            out = round_bfloat(out)
        return out[()] if np.ndim(out) == 0 else out
    # To an integer type: float -> int truncates toward zero (values out of range are undefined
    # behaviour in C; NumPy's result stands in for the GPU's).
    out = np.asanyarray(v)
    if s.is_float:
        out = np.trunc(out)
        if d.bits == 64 and not d.signed:
            # float -> ulong for values of 2^63 and above: C converts them exactly, int64 cannot hold them.
            f = np.where(np.isfinite(out), out, 0).astype(np.float64)
            big = f >= 2.0**63
            low = np.where(big, f - 2.0**63, f).astype(np.int64).astype(np.uint64)
            out = np.where(big, low + np.uint64(2**63), low)
        elif d.bits == 64 or not d.signed:
            # Go through int64 so negative values wrap into unsigned types instead of saturating.
            out = np.where(np.isfinite(out), out, 0).astype(np.int64)
    out = out.astype(d.dtype)
    return out[()] if out.ndim == 0 else out


def splat(v: Any, ty: VectorType) -> np.ndarray:
    """Scalar to vector: repeat the scalar into every component."""
    if np.ndim(v) == 0:
        return np.full(ty.n, v, dtype=ty.elem.dtype if ty.elem != BFLOAT else np.float32)
    return np.repeat(np.asanyarray(v)[:, None], ty.n, axis=1)


def zero(ty: Type) -> Any:
    if isinstance(ty, VectorType):
        return np.zeros(ty.n, dtype=ty.elem.dtype)
    if isinstance(ty, SimdgroupMatrixType):
        return np.zeros(2, dtype=ty.elem.dtype)
    if isinstance(ty, MatrixType):
        return np.zeros((ty.cols, ty.rows), dtype=ty.elem.dtype)
    if isinstance(ty, StructType):
        return np.zeros(ty.size, dtype=np.uint8)
    assert isinstance(ty, ScalarType)
    return ty.dtype.type(0)


def c_divmod(a: Any, b: Any, want: str) -> Any:
    """Truncating integer division / remainder, with zero divisors replaced by 1 (the caller
    reports the division by zero); returns (result, zero_mask)."""
    a = np.asanyarray(a)
    b = np.asanyarray(b)
    zero_b = np.asarray(b == 0)
    if np.any(zero_b):
        b = np.where(zero_b, np.ones_like(b), b)
    if a.dtype.kind == "u":
        out = a // b if want == "/" else a % b
    else:
        r = np.fmod(a, b)
        out = r if want == "%" else (a - r) // b
    out = out.astype(a.dtype, copy=False)
    if np.any(zero_b):
        out = np.where(zero_b, np.zeros_like(out), out)  # the stand-in value for x / 0 and x % 0
    return (out[()] if out.ndim == 0 else out), zero_b


#: Unsigned integers from this value up are written in hexadecimal: such words hold bits (eight
#: 4-bit values, a radix sort's digits), which hex shows a digit per 4 bits and decimal, let alone
#: 1.39e+09, hides.
HEX_FROM = 1 << 16


def hex_word(v: Any) -> str | None:
    """An unsigned integer of 32 or more bits whose value is at least ``HEX_FROM``, as its
    hexadecimal word ('0x52fc9630', every digit of the word shown); None for any other value."""
    dtype = getattr(v, "dtype", None)
    if dtype is None or dtype.kind != "u" or dtype.itemsize < 4 or np.ndim(v) != 0 or int(v) < HEX_FROM:
        return None
    return f"0x{int(v):0{2 * dtype.itemsize}x}"
