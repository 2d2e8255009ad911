"""Matrix arithmetic on lanes. A matrix value is (columns, rows) when uniform, (lanes, columns,
rows) when it varies; vectors are (n,) or (lanes, n). Products accumulate column by column in
the element type, rounding after every multiply and add as the GPU's float (or half)
arithmetic does; there is no fused multiply-add and no wider intermediate."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..front.ast import MatrixOp
from ..lang.types import MatrixType


def mat_vec(m: Any, v: Any) -> Any:
    """m * v: the columns of m weighted by v's components, summed in order."""
    m, v = np.asarray(m), np.asarray(v)
    acc = m[..., 0, :] * v[..., 0:1]
    for i in range(1, m.shape[-2]):
        acc = acc + m[..., i, :] * v[..., i:i + 1]
    return acc


def vec_mat(v: Any, m: Any) -> Any:
    """v * m: the dot product of v with each column of m."""
    m, v = np.asarray(m), np.asarray(v)
    acc = v[..., 0:1] * m[..., :, 0]
    for j in range(1, m.shape[-1]):
        acc = acc + v[..., j:j + 1] * m[..., :, j]
    return acc


def mat_mat(a: Any, b: Any) -> Any:
    """a * b: a times each column of b."""
    b = np.asarray(b)
    cols = [mat_vec(a, b[..., c, :]) for c in range(b.shape[-2])]
    return np.stack(np.broadcast_arrays(*cols), axis=-2)


def binary(op: MatrixOp, symbol: str) -> Any:
    """f(x, y) for a binary operator involving a matrix."""
    if op == MatrixOp.MAT_VEC:
        return mat_vec
    if op == MatrixOp.VEC_MAT:
        return vec_mat
    if op == MatrixOp.MAT_MAT:
        return mat_mat
    if op == MatrixOp.ELEMENTWISE:
        return np.add if symbol == "+" else np.subtract
    # SCALE: the scalar goes with every element; a varying scalar (lanes,) gets the matrix axes.
    f = np.multiply if symbol == "*" else np.divide

    def scale(x: Any, y: Any) -> Any:
        x, y = np.asarray(x), np.asarray(y)
        if x.ndim == 1:
            x = x[:, None, None]
        if y.ndim == 1:
            y = y[:, None, None]
        return f(x, y)
    return scale


def from_columns(columns: list, ty: MatrixType) -> Any:
    return np.stack(np.broadcast_arrays(*[np.asarray(c) for c in columns]), axis=-2).astype(ty.elem.dtype, copy=False)


def from_scalars(values: list, ty: MatrixType) -> Any:
    flat = np.stack(np.broadcast_arrays(*[np.asarray(v) for v in values]), axis=-1)
    return flat.reshape(flat.shape[:-1] + (ty.cols, ty.rows)).astype(ty.elem.dtype, copy=False)


def diagonal(value: Any, ty: MatrixType) -> Any:
    """s on the diagonal, zero elsewhere."""
    eye = np.eye(ty.cols, ty.rows, dtype=ty.elem.dtype)
    v = np.asarray(value, dtype=ty.elem.dtype)
    return eye * (v[..., None, None] if v.ndim else v)
