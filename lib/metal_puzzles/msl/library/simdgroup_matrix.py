"""SIMD-group matrices (``<metal_simdgroup_matrix>``): ``simdgroup_load``, ``simdgroup_store``,
``simdgroup_multiply``, ``simdgroup_multiply_accumulate``, ``make_filled_simdgroup_matrix`` and
``thread_elements()``.

A ``simdgroup_matrix<T, 8, 8>`` belongs to a whole SIMD-group: each of its 32 threads holds two of
the 64 elements, which is also how the simulator keeps it (a value of two elements per lane,
like a 2-vector). Which two is what ``thread_elements()`` exposes and what real kernels rely on
when they fill or read fragments directly: lane ``l``, with ``q = l / 4``, holds row
``(q & 4) + (l / 2) % 4``, columns ``(q & 2) * 2 + (l % 2) * 2`` and the one after (the layout of
MLX's steel ``BaseMMAFrag<T, 8, 8>::get_coord``). The collective operations gather each SIMD-group's
matrix from its lanes, compute, and hand every lane its two elements back; all 32 threads of a
SIMD-group must execute them together, anything else is reported.

Element (row r, column c) of a matrix loaded from ``src`` with ``elements_per_row`` ``ld`` and
``matrix_origin`` ``(x, y)`` (x a column, y a row of the source) is ``src[(y + r) * ld + x + c]``,
or ``src[(y + c) * ld + x + r]`` with ``transpose_matrix``; a store writes the same places.
Products are exact then rounded once to the destination's element type (the hardware's order
of accumulation is not specified; this is the correctly rounded result).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..counting.op_kinds import BuiltinCost
from ..executor.codegen.codegen_state import CodeGenState
from ..executor.codegen.interfaces import Fn
from ..executor.codegen.masks import Mask
from ..executor.memory import view_of
from ..executor.runtime import Ctx
from ..findings.advice import simdgroup_size_fix
from ..findings.finding import FindingKind
from ..findings.registry import kind_entry
from ..front import ast
from ..front.checker.checker_state import CheckerState
from ..lang.errors import CompileError, KernelRuntimeError, Pos
from ..lang.lane_values import round_bfloat
from ..lang.types import (
    BFLOAT,
    ULONG,
    VOID,
    PointerType,
    ScalarType,
    SimdgroupMatrixType,
    Type,
    vector,
)
from ..thread_grid import SIMD_WIDTH
from .base import BUILTINS, Builtin, TemplateArgs, register

_LANE = np.arange(SIMD_WIDTH)
_Q = _LANE // 4
#: Row and first column of each lane's two elements.
FRAGMENT_ROW = (_Q & 4) + (_LANE // 2) % 4
FRAGMENT_COL = (_Q & 2) * 2 + (_LANE % 2) * 2
ORIGIN = vector(ULONG, 2)


def _matrix_arg(ck: CheckerState, a: ast.Expr, what: str) -> SimdgroupMatrixType:
    if not isinstance(a.ty, SimdgroupMatrixType):
        raise CompileError(f"{what} must be a simdgroup matrix (e.g. simdgroup_float8x8), got '{a.ty}'", a.pos)
    return a.ty


def _destination(ck: CheckerState, a: ast.Expr, name: str) -> SimdgroupMatrixType:
    ty = _matrix_arg(ck, a, f"the first argument of '{name}'")
    ck.exprs.require_modifiable(a)
    return ty


# ============================================================================ lanes <-> matrices
def gather(c: Ctx, value: Any) -> np.ndarray:
    """Each SIMD-group's 8x8 matrix from its lanes' two elements: (SIMD-groups, 8, 8)."""
    v = np.asarray(value)
    if v.ndim == 1:
        v = np.broadcast_to(v, (c.n, 2))
    table = c.lanes.simd_table
    rows = v[np.where(table >= 0, table, 0)]  # (simds, 32, 2)
    out = np.zeros((table.shape[0], 8, 8), dtype=v.dtype)
    out[:, FRAGMENT_ROW, FRAGMENT_COL] = rows[:, :, 0]
    out[:, FRAGMENT_ROW, FRAGMENT_COL + 1] = rows[:, :, 1]
    return out


def scatter(c: Ctx, mats: np.ndarray) -> np.ndarray:
    """Every lane's two elements of its SIMD-group's matrix: (lanes, 2)."""
    simd, lane = c.lanes.simd_global, c.lanes.simd_lane
    row, col = FRAGMENT_ROW[lane], FRAGMENT_COL[lane]
    return np.stack([mats[simd, row, col], mats[simd, row, col + 1]], axis=1)


def check_together(c: Ctx, m: Mask, pos: Pos, name: str) -> None:
    """All 32 threads of every SIMD-group that runs a collective matrix operation run it."""
    table = c.lanes.simd_table
    exists = table >= 0
    active = exists if m is None else exists & m[np.where(exists, table, 0)]
    running = active.any(axis=1)
    short = running & ~active.all(axis=1)
    if not short.any():
        return
    s = int(np.flatnonzero(short)[0])
    here = int(table[s][active[s]][0])
    lanes_of_s = np.zeros(c.n, dtype=bool)
    lanes_of_s[table[s][exists[s]]] = True
    if not exists[s].all():
        message = (f"{c.lanes.label(here)} runs {name}, which needs all {SIMD_WIDTH} threads of a SIMD-group, but its "
                   f"SIMD-group has only {int(exists[s].sum())} (the threadgroup's size is not a multiple of "
                   f"{SIMD_WIDTH}): {simdgroup_size_fix(SIMD_WIDTH)}")
    else:
        away = int(table[s][~active[s]][0])
        message = (f"{c.lanes.label(here)} runs {name} but {c.lanes.label(away)} of the same SIMD-group does not (all "
                   f"{SIMD_WIDTH} threads of a SIMD-group must execute simdgroup matrix operations together: "
                   f"{kind_entry(FindingKind.SIMDGROUP_DIVERGENCE).fix})")
    c.report(FindingKind.SIMDGROUP_DIVERGENCE, pos, lanes_of_s, message)


def _rounded(exact: np.ndarray, elem: ScalarType) -> np.ndarray:
    """The exact (float64) result rounded once to the element type."""
    out = exact.astype(np.float32 if elem == BFLOAT else elem.dtype)
    return round_bfloat(out) if elem == BFLOAT else out


# ============================================================================ builtins
class SimdgroupLoadStore(Builtin):
    """simdgroup_load(d, src, elements_per_row = 8, matrix_origin = 0, transpose = false) and
    simdgroup_store(a, dst, ...)."""

    def __init__(self, name: str, store: bool, cost: BuiltinCost) -> None:
        super().__init__(name, cost)
        self.store = store
        self.lvalue_args = () if store else (0,)

    def check(self, ck: CheckerState, call: ast.Call, args: list[ast.Expr], targs: TemplateArgs) -> Type:
        if not 2 <= len(args) <= 5:
            raise CompileError(f"'{self.name}' takes a matrix, a pointer, and optionally elements per row, the "
                               "matrix origin (ulong2: column, row) and whether to transpose", call.pos)
        if self.store:
            ty = _matrix_arg(ck, ck.conversions.rvalue(args[0]), f"the first argument of '{self.name}'")
            first = ck.conversions.rvalue(args[0])
        else:
            ty = _destination(ck, args[0], self.name)
            first = args[0]
        p = ck.conversions.rvalue(args[1])
        if not (isinstance(p.ty, PointerType) and p.ty.pointee == ty.elem):
            raise CompileError(f"'{self.name}' of a '{ty}' needs a pointer to '{ty.elem}' (device or threadgroup), "
                               f"got '{p.ty}'", p.pos)
        if self.store and p.ty.const:
            raise CompileError(f"'{self.name}' cannot write through '{p.ty}' (it points to read-only memory)", p.pos)
        rest = [ck.conversions.convert(ck.conversions.rvalue(args[2]), ULONG, "elements per row") if len(args) > 2 else None,
                ck.conversions.convert(ck.conversions.rvalue(args[3]), ORIGIN, "matrix origin") if len(args) > 3 else None,
                ck.conversions.to_bool(ck.conversions.rvalue(args[4])) if len(args) > 4 else None]
        call.args = [first, p] + [a for a in rest if a is not None]
        call.arg_ty = ty
        return VOID

    def emit(self, cg: CodeGenState, call: ast.Call, fns: list[Fn]) -> Fn:
        ty: SimdgroupMatrixType = call.arg_ty
        view = view_of(ty.elem)
        mat_fn, ptr_fn = fns[0], fns[1]
        ld_fn = fns[2] if len(fns) > 2 else (lambda c, m: np.uint64(ty.cols))
        origin_fn = fns[3] if len(fns) > 3 else (lambda c, m: np.zeros(2, dtype=np.uint64))
        tr_fn = fns[4] if len(fns) > 4 else (lambda c, m: np.bool_(False))
        pos, name, store = call.pos, self.name, self.store

        def places(c: Ctx, m: Mask) -> Any:
            lane = c.lanes.simd_lane
            rows, cols = FRAGMENT_ROW[lane], FRAGMENT_COL[lane]
            ld = np.asarray(ld_fn(c, m)).astype(np.int64)
            origin = np.asarray(origin_fn(c, m)).astype(np.int64)
            ox, oy = origin[..., 0], origin[..., 1]
            tr = np.asarray(tr_fn(c, m))
            out = []
            for col in (cols, cols + 1):
                straight = (oy + rows) * ld + ox + col
                swapped = (oy + col) * ld + ox + rows
                out.append(np.where(tr, swapped, straight))
            return out

        if store:
            def simd_store(c: Ctx, m: Mask) -> None:
                check_together(c, m, pos, name)
                p = ptr_fn(c, m)
                if not p.mem.writable:
                    raise KernelRuntimeError(f"write to read-only memory '{p.mem.name}'", pos)
                vals = np.broadcast_to(np.asarray(mat_fn(c, m)), (c.n, 2))
                for k, off in enumerate(places(c, m)):
                    c.store(p.mem, p.off + off, vals[:, k], m, view, pos)
            return simd_store

        def simd_load(c: Ctx, m: Mask) -> None:
            check_together(c, m, pos, name)
            p = ptr_fn(c, m)
            loaded = [c.load(p.mem, p.off + off, m, view, pos) for off in places(c, m)]
            both = np.stack(np.broadcast_arrays(*[np.broadcast_to(x, (c.n,)) for x in loaded]), axis=1)
            mat_fn(c, m).store(c, both.astype(ty.elem.dtype, copy=False), m)
        return simd_load


class SimdgroupMultiply(Builtin):
    """simdgroup_multiply(d, a, b): d = a * b; simdgroup_multiply_accumulate(d, a, b, c): d = a * b + c."""

    lvalue_args = (0,)

    def __init__(self, name: str, accumulate: bool, cost: BuiltinCost) -> None:
        super().__init__(name, cost)
        self.accumulate = accumulate

    def check(self, ck: CheckerState, call: ast.Call, args: list[ast.Expr], targs: TemplateArgs) -> Type:
        want = 4 if self.accumulate else 3
        if len(args) != want:
            raise CompileError(f"'{self.name}' takes {want} simdgroup matrices (the destination first)", call.pos)
        d = _destination(ck, args[0], self.name)
        rest = [ck.conversions.rvalue(a) for a in args[1:]]
        for a, what in zip(rest, ("a", "b", "c"), strict=False):
            _matrix_arg(ck, a, f"'{self.name}' operand {what}")
        call.args = [args[0], *rest]
        call.arg_ty = d
        return VOID

    def emit(self, cg: CodeGenState, call: ast.Call, fns: list[Fn]) -> Fn:
        d_fn, a_fn, b_fn = fns[:3]
        c_fn = fns[3] if self.accumulate else None
        elem = call.arg_ty.elem
        pos, name = call.pos, self.name

        def multiply(c: Ctx, m: Mask) -> None:
            check_together(c, m, pos, name)
            exact = np.matmul(gather(c, a_fn(c, m)).astype(np.float64), gather(c, b_fn(c, m)).astype(np.float64))
            if c_fn is not None:
                exact = exact + gather(c, c_fn(c, m)).astype(np.float64)
            d_fn(c, m).store(c, scatter(c, _rounded(exact, elem)), m)
        return multiply


class MakeFilled(Builtin):
    """make_filled_simdgroup_matrix<T, Cols[, Rows]>(value): every element ``value``."""

    def check(self, ck: CheckerState, call: ast.Call, args: list[ast.Expr], targs: TemplateArgs) -> Type:
        if not targs or len(targs) not in (2, 3) or not isinstance(targs[0], ast.TypeSpec):
            raise CompileError("make_filled_simdgroup_matrix takes <T, 8> or <T, 8, 8>", call.pos)
        elem = ck.types.resolve_type(targs[0])
        dims = [ck.types.const_int(t, "matrix size") for t in targs[1:]]
        if not isinstance(elem, ScalarType) or elem.name not in ("float", "half", "bfloat") or any(d != 8 for d in dims):
            raise CompileError(f"simdgroup matrices are 8x8 of float, half or bfloat; got <{elem}, "
                               + ", ".join(map(str, dims)) + ">", call.pos)
        if len(args) != 1:
            raise CompileError("make_filled_simdgroup_matrix takes one value", call.pos)
        call.args = [ck.conversions.convert(ck.conversions.rvalue(args[0]), elem, "fill value")]
        return SimdgroupMatrixType(elem)

    def emit(self, cg: CodeGenState, call: ast.Call, fns: list[Fn]) -> Fn:
        (v,) = fns
        return lambda c, m: fill(v(c, m))


def fill(value: Any) -> np.ndarray:
    """A matrix with every element ``value`` (per lane: its two elements)."""
    v = np.asarray(value)
    return np.stack([v, v], axis=-1)


class ThreadElements(Builtin):
    """m.thread_elements(): this thread's two elements, a vec<T, 2> that is also a place."""

    def check(self, ck: CheckerState, call: ast.Call, args: list[ast.Expr], targs: TemplateArgs) -> Type:
        (m,) = args
        call.args = [m]
        return vector(m.ty.elem, 2)

    def emit(self, cg: CodeGenState, call: ast.Call, fns: list[Fn]) -> Fn:
        return fns[0]


register(SimdgroupLoadStore("simdgroup_load", store=False, cost=BuiltinCost.ELEMENTWISE))
register(SimdgroupLoadStore("simdgroup_store", store=True, cost=BuiltinCost.ELEMENTWISE))
register(SimdgroupMultiply("simdgroup_multiply", accumulate=False, cost=BuiltinCost.MATRIX_PRODUCT))
register(SimdgroupMultiply("simdgroup_multiply_accumulate", accumulate=True, cost=BuiltinCost.MATRIX_PRODUCT))
register(MakeFilled("make_filled_simdgroup_matrix", BuiltinCost.ELEMENTWISE))
BUILTINS["simdgroup_matrix.thread_elements"] = ThreadElements("simdgroup_matrix.thread_elements",
                                                                 BuiltinCost.ELEMENTWISE)
