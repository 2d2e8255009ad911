"""Turns the checked syntax tree into Python closures that run every thread of the grid in
lock-step over NumPy arrays. Each expression becomes ``f(ctx, mask) -> value``; each statement
``f(ctx, mask) -> None``. The tree is compiled once per kernel instance and reused."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..abi.signature import ParamRole
from ..front import ast
from ..front.ast import CastStyle, ConvertKind
from ..front.symbols import FuncInstance, Var, VarKind
from ..lang.errors import CompileError, KernelRuntimeError, Pos
from ..lang.types import (
    BFLOAT,
    BOOL,
    ULONG,
    AddressSpace,
    ArrayType,
    EnumType,
    MatrixType,
    PointerType,
    ScalarType,
    SimdgroupMatrixType,
    Type,
    VectorType,
    VoidType,
    size_of,
    storage_scalar,
    unit_of,
    units_in,
    vector,
)
from ..lang.values import c_divmod, cast, is_varying, round_bfloat, splat, type_ndim, zero
from . import matrices
from .finding_kinds import kind_entry
from .findings import FindingKind, SanitizeMode
from .hints import wraparound_explainer
from .memory import (
    Memory,
    Ptr,
    SplitPtr,
    View,
    from_bytes,
    merge_pointers,
    span_view,
    to_bytes,
    view_of,
)
from .op_kinds import OpKind, binary_kind, builtin_kind, elem_of
from .runtime import Ctx, Frame, LoopState

Fn = Callable[[Ctx, object], object]


# ============================================================================ helpers
def and_mask(ctx: Ctx, m, c):
    """Lanes of m for which the (bool) condition c holds; c may be uniform."""
    if np.ndim(c) == 0:
        if c:
            return m
        return np.zeros(ctx.n, dtype=bool)
    return c if m is None else (m & c)


def andnot_mask(ctx: Ctx, m, c):
    if np.ndim(c) == 0:
        if not c:
            return m
        return np.zeros(ctx.n, dtype=bool)
    return ~c if m is None else (m & ~c)


def empty(m) -> bool:
    return m is not None and not m.any()


def merge(m, new, old, ndim: int):
    """Per-lane select: new where the mask is set, old elsewhere (``ndim``: the value's axes
    besides the lanes, see ``values.type_ndim``)."""
    if m is None:
        return new
    if isinstance(new, Ptr) or isinstance(old, Ptr):
        return merge_ptr(m, new, old)
    return np.where(m.reshape(m.shape + (1,) * ndim) if ndim else m, new, old)


def merge_ptr(m, new: Ptr, old):
    if old is None or not isinstance(old, Ptr):
        return new
    if isinstance(new, SplitPtr) or isinstance(old, SplitPtr):
        return merge_pointers(m, new, old)
    if new.mem is not old.mem:
        if old.mem is None:
            return new
        return merge_pointers(m, new, old)
    return Ptr(new.mem, np.where(m, new.off, old.off))


#: How deeply calls may nest at run time (recursion compiles, as in Metal since MSL 2.4; a GPU
#: thread's stack is small, and a recursion that does not end must stop with a message).
MAX_CALL_DEPTH = 64

# ============================================================================ locations
class SlotLoc:
    __slots__ = ("slots", "k", "vec", "pos", "name")

    def __init__(self, slots, k, vec, pos=None, name=None) -> None:
        self.slots, self.k, self.vec, self.pos, self.name = slots, k, vec, pos, name

    def load(self, ctx, m):
        if self.name is not None and ctx.sanitizer is not None:
            init = ctx.local_init.get((id(self.slots), self.k))
            if init is not None:
                missing = ~init if m is None else (m & ~init)
                if missing.any():
                    lane = int(np.flatnonzero(missing)[0])
                    ctx.report_first(FindingKind.UNINITIALIZED_READ, self.pos, lane, missing,
                                     f"{ctx.lanes.label(lane)} reads variable '{self.name}' before any value was "
                                     "assigned to it: initialise it where it is declared", buffer=self.name)
        return self.slots[self.k]

    def peek(self, ctx, m):
        """The current value without counting as a read (for writing some components)."""
        return self.slots[self.k]

    def store(self, ctx, val, m):
        self.slots[self.k] = merge(m, val, self.slots[self.k], self.vec)
        if self.name is not None and ctx.sanitizer is not None:
            init = ctx.local_init.get((id(self.slots), self.k))
            if init is not None:
                _mark_init(init, m)


class MemLoc:
    """An object in memory: where it is (offset in units of its type) and how it is seen."""

    __slots__ = ("mem", "off", "view", "pos", "ty")

    def __init__(self, mem, off, view: View, pos, ty) -> None:
        self.mem, self.off, self.view, self.pos, self.ty = mem, off, view, pos, ty

    def load(self, ctx, m):
        return ctx.load(self.mem, self.off, m, self.view, self.pos)

    def store(self, ctx, val, m):
        if not self.mem.writable:
            raise KernelRuntimeError(f"write to read-only memory '{self.mem.name}'", self.pos)
        ctx.store(self.mem, self.off, val, m, self.view, self.pos)


class CompLoc:
    """Components of a vector lvalue (swizzle or subscript)."""

    __slots__ = ("base", "comps", "single")

    def __init__(self, base, comps, single) -> None:
        self.base, self.comps, self.single = base, comps, single

    def load(self, ctx, m):
        v = self.base.load(ctx, m)
        if self.single:
            return _component(ctx, v, self.comps)
        return v[..., self.comps]

    def store(self, ctx, val, m):
        base = self.base
        if isinstance(base, MemLoc):
            one = view_of(base.ty.elem)
            if self.single:
                ctx.store(base.mem, base.off + self.comps, val, m, one, base.pos)
            else:
                for j, k in enumerate(self.comps):
                    ctx.store(base.mem, base.off + k, val[..., j], m, one, base.pos)
            return
        old = base.peek(ctx, m) if isinstance(base, SlotLoc | ColumnLoc) else base.load(ctx, m)
        vary = np.ndim(old) > 1 or np.ndim(val) > (0 if self.single else 1) or np.ndim(self.comps) > 0 or m is not None
        new = np.array(np.broadcast_to(old, (ctx.n, old.shape[-1])) if vary else old, copy=True)
        if self.single:
            if np.ndim(self.comps):
                new[np.arange(ctx.n), self.comps] = val
            else:
                new[..., self.comps] = val
        else:
            new[..., self.comps] = val
        base.store(ctx, new, m)


class ColumnLoc:
    """A column of a matrix held in a register (slot or reference)."""

    __slots__ = ("base", "k")

    def __init__(self, base, k) -> None:
        self.base, self.k = base, k

    def load(self, ctx, m):
        return _column(ctx, self.base.load(ctx, m), self.k)

    def peek(self, ctx, m):
        """The column's current value without counting as a read (to write some components)."""
        return _column(ctx, self._whole(ctx, m), self.k)

    def _whole(self, ctx, m):
        return self.base.peek(ctx, m) if isinstance(self.base, SlotLoc) else self.base.load(ctx, m)

    def store(self, ctx, val, m):
        old = np.asarray(self._whole(ctx, m))
        new = np.array(np.broadcast_to(old, (ctx.n,) + old.shape[-2:]), copy=True)
        if np.ndim(self.k):
            new[np.arange(ctx.n), self.k] = np.broadcast_to(val, (ctx.n, new.shape[-1]))
        else:
            new[:, self.k] = val
        self.base.store(ctx, new, m)


def _column(ctx, v, k):
    v = np.asarray(v)
    if np.ndim(k) == 0:
        return v[..., k, :]
    v = np.broadcast_to(v, (ctx.n,) + v.shape[-2:])
    return v[np.arange(ctx.n), k]


def _thread_memory(c, k: int, name: str, ty: Type) -> Ptr:
    """The thread-private memory behind slot k (one object of type ``ty`` per thread),
    allocated the first time its declaration runs in this frame."""
    p = c.slots[k]
    if p is None:
        mem = Memory(name, AddressSpace.THREAD, storage_scalar(ty), size_of(ty), regions=c.n,
                     lane_region=c.all_lanes, writable=True, ty=ty)
        if c.sanitizer is not None:
            c.sanitizer.watch(mem, initialized=False)
        p = c.slots[k] = Ptr(mem, np.int64(0))
    return p


def _materialised(value, ty: Type, pos: Pos):
    """A temporary object in thread memory of its own, so that a member function can be called on
    it ('F()(x)': its 'this' refers to the temporary, which lives until the call ends)."""
    view = view_of(ty)

    def loc(c, m):
        mem = Memory("temporary", AddressSpace.THREAD, storage_scalar(ty), size_of(ty), regions=c.n,
                     lane_region=c.all_lanes, writable=True, ty=ty)
        c.store(mem, np.int64(0), value(c, m), m, view, pos)
        return MemLoc(mem, np.int64(0), view, pos, ty)
    return loc


def _mark_init(init, m) -> None:
    if m is None:
        init[:] = True
    else:
        init |= m


def _component(ctx, v, k):
    if np.ndim(k) == 0:
        return v[..., k]
    v = np.broadcast_to(v, (ctx.n, v.shape[-1]))
    return v[np.arange(ctx.n), k]


# ============================================================================ arithmetic
def _arith_fn(op: str, ty: Type) -> Callable:
    elem = ty.elem if isinstance(ty, VectorType) else ty
    table = {
        "+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide,
        "&": np.bitwise_and, "|": np.bitwise_or, "^": np.bitwise_xor,
        "==": np.equal, "!=": np.not_equal, "<": np.less, ">": np.greater,
        "<=": np.less_equal, ">=": np.greater_equal,
    }
    if elem == BOOL and op in ("&", "|", "^"):
        return {"&": np.logical_and, "|": np.logical_or, "^": np.logical_xor}[op]
    f = table[op]
    if elem == BFLOAT and op in ("+", "-", "*", "/"):
        return lambda a, b: round_bfloat(f(a, b))
    return f


def binary_op(op: str, ty: Type, pos: Pos) -> Callable:
    """f(ctx, mask, x, y) computing 'x op y' in type ty (both operands already converted)."""
    elem = ty.elem if isinstance(ty, VectorType) else ty
    if op in ("/", "%") and elem.is_int:
        def intdiv(c, m, x, y):
            out, zero_b = c_divmod(x, y, op)
            if np.any(zero_b):
                zb = np.any(zero_b, axis=-1) if np.ndim(zero_b) > 1 or (isinstance(ty, VectorType) and np.ndim(zero_b) == 1) else zero_b
                _report_div_zero(c, m, zb, pos, op)
            return out
        return intdiv
    if op in ("<<", ">>"):
        left_dtype = elem.dtype
        mask_bits = np.int64(elem.bits - 1)
        sh = np.left_shift if op == "<<" else np.right_shift

        def shift(c, m, x, y):
            s = (np.asarray(y).astype(np.int64) & mask_bits).astype(left_dtype)
            r = sh(x, s)
            return r.astype(left_dtype) if np.ndim(r) else left_dtype.type(r)
        return shift
    f = _arith_fn(op, ty)
    return lambda c, m, x, y: f(x, y)


#: Units of work one step pays for. A statement (or a loop's own condition and increment) costs
#: one step per this many units, at least one: a long expression in a loop is as much work as many
#: short statements, and must run out of budget as soon. A unit is an expression node, or an
#: element of a thread-private array that a declaration fills.
WORK_PER_STEP = 8


class CodeGen:
    """Compiles a checked kernel into closures.

    With ``cost=True`` it compiles the instrumented variant the cost model runs: every statement
    and loop iteration, and every arithmetic operation, also reports to ``ctx.cost`` (the cost
    recorder). The plain variant contains none of those calls, so a run that does not ask for a
    cost profile pays nothing for it.
    """

    def __init__(self, functions: list[FuncInstance], *, cost: bool = False) -> None:
        self.const_memories: dict[int, Memory] = {}
        self.functions = functions
        self.cost = cost
        self.work = 0  # units of work in the statement being compiled (see WORK_PER_STEP)
        # Compiled header-function bodies of this variant (each variant compiles its own).
        self.bodies: dict[int, object] = {}

    def _step_cost(self) -> int:
        return 1 + self.work // WORK_PER_STEP

    def counted(self, fn: Fn, kind: OpKind | None, per_lane: int, pos: Pos) -> Fn:
        """``fn`` itself, or in the instrumented variant ``fn`` preceded by reporting one
        arithmetic instruction of ``kind`` (``per_lane`` operations for each active lane: the
        vector width, or the steps of a SIMD-group reduction)."""
        if not self.cost or kind is None:
            return fn

        def costed(c, m):
            c.cost.op(kind, per_lane, m, pos)
            return fn(c, m)
        return costed

    def _binary_counted(self, fn: Fn, op: str, ty: Type, pos: Pos, right: ast.Expr | None = None) -> Fn:
        if not self.cost:
            return fn
        return self.counted(fn, binary_kind(op, ty, _constant_int(right)), elem_of(ty)[1], pos)

    # ======================================================================= exprs
    def expr(self, e: ast.Expr) -> Fn:
        self.work += 1
        method = getattr(self, "x_" + type(e).__name__)
        return method(e)

    def x_IntLit(self, e):
        v = e.ty.dtype.type(e.value)
        return lambda c, m: v

    def x_FloatLit(self, e):
        with np.errstate(over="ignore"):  # 1e39f: too large for float, an infinity (clang warns, as the checker may)
            v = e.ty.dtype.type(e.value)
        return lambda c, m: v

    def x_BoolLit(self, e):
        v = np.bool_(e.value)
        return lambda c, m: v

    def x_Name(self, e):
        sym: Var = e.symbol
        kind = sym.kind
        if kind == VarKind.LOCAL and sym.maybe_uninit:
            k = sym.slot
            name, pos = sym.name, e.pos

            def read_checked(c, m):
                if c.sanitizer is not None:
                    init = c.local_init.get((id(c.slots), k))
                    if init is not None:
                        missing = ~init if m is None else (m & ~init)
                        if missing.any():
                            lane = int(np.flatnonzero(missing)[0])
                            c.report_first(FindingKind.UNINITIALIZED_READ, pos, lane, missing,
                                           f"{c.lanes.label(lane)} reads variable '{name}' before any value was "
                                           "assigned to it: initialise it where it is declared",
                                           buffer=name)
                return c.slots[k]
            return read_checked
        if kind == VarKind.LOCAL or kind == VarKind.ARRAY:
            k = sym.slot
            return lambda c, m: c.slots[k]
        if kind == VarKind.REF:
            k = sym.slot
            return lambda c, m: c.slots[k].load(c, m)
        if kind in (VarKind.TGVAR, VarKind.MEMVAR):
            k = sym.slot
            view = view_of(sym.ty)
            pos = e.pos

            def read_tgvar(c, m):
                p = c.slots[k]
                return c.load(p.mem, p.off, m, view, pos)
            return read_tgvar
        if kind == VarKind.CONST:
            v = sym.const_value
            if isinstance(v, list) and v and v[0] == "expr":
                inner = self.expr(v[1])
                return inner
            if isinstance(sym.ty, ArrayType):
                mem = self._const_memory(sym)
                p = Ptr(mem, np.int64(0))
                return lambda c, m: p
            if isinstance(sym.ty, ScalarType):
                v = sym.ty.dtype.type(v)
            return lambda c, m: v
        name = sym.name
        if kind == VarKind.ATTR:
            return lambda c, m: c.attrs[name]
        if kind == VarKind.SCALAR_INPUT:
            role = sym.role
            pos = e.pos
            if role in (ParamRole.INPUT, ParamRole.OUTPUT):  # an object in a buffer (0-d input, 'device T&')
                view = view_of(sym.ty)

                def read_scalar(c, m):
                    mem = c.memories[name]
                    return c.load(mem, np.int64(0), m, view, pos)
                return read_scalar
            return lambda c, m: c.scalars[name]
        raise CompileError(f"cannot read '{sym.name}'", e.pos)

    def _const_memory(self, sym: Var) -> Memory:
        key = id(sym)
        if key not in self.const_memories:
            flat = np.array(_flatten(sym.const_value, sym.ty), dtype=storage_scalar(sym.ty).dtype)
            full = np.zeros(units_in(sym.ty), dtype=flat.dtype)
            full[: flat.size] = flat
            self.const_memories[key] = Memory.of_values(sym.name, AddressSpace.CONSTANT, storage_scalar(sym.ty), full)
        return self.const_memories[key]

    def x_Convert(self, e):
        inner = self.expr(e.operand)
        kind = e.kind
        src, dst = e.operand.ty, e.ty
        if kind == ConvertKind.PTR and isinstance(dst, PointerType) and isinstance(src, PointerType) \
                and unit_of(src.pointee) != unit_of(dst.pointee):
            return _pointer_cast(inner, src, dst, e.pos)  # to 'void*': the offset counts bytes
        if kind in (ConvertKind.DECAY, ConvertKind.PTR, ConvertKind.LOAD):
            return inner
        if kind == ConvertKind.SPLAT:
            assert isinstance(dst, VectorType)
            return lambda c, m: splat(inner(c, m), dst)
        if isinstance(src, PointerType) and dst == BOOL:
            return lambda c, m: np.bool_(True)
        return lambda c, m: cast(inner(c, m), src, dst)

    def x_Cast(self, e):
        inner = self.expr(e.operand)
        src, dst = e.operand.ty, e.ty
        if isinstance(dst, VoidType):
            return inner
        if e.style == CastStyle.AS_TYPE and isinstance(dst, PointerType):
            return _pointer_cast(inner, src, dst, e.pos)
        if e.style == CastStyle.AS_TYPE:
            return lambda c, m: _bitcast(inner(c, m), src, dst)
        if isinstance(dst, PointerType):
            return _pointer_cast(inner, src, dst, e.pos)
        if isinstance(src, PointerType):
            if not (isinstance(dst, ScalarType) and dst.is_int and dst != BOOL):
                raise CompileError(f"a pointer converts only to an integer type, not to '{dst}'", e.pos)
            unit = unit_of(src.pointee)
            pos = e.pos
            return lambda c, m: cast(c.address_of(inner(c, m), unit, m, pos), ULONG, dst)
        if isinstance(src, EnumType):
            return lambda c, m: cast(np.int32(inner(c, m)), ScalarType("int", "int", 32, True, 3), dst)
        if isinstance(dst, VectorType) and isinstance(src, ScalarType):
            return lambda c, m: splat(cast(inner(c, m), src, dst.elem), dst)
        return lambda c, m: cast(inner(c, m), src, dst)

    def x_Construct(self, e):
        if isinstance(e.ty, MatrixType):
            return self._matrix_construct(e)
        if isinstance(e.ty, SimdgroupMatrixType):  # every element one value: two per thread
            f = self.expr(e.args[0])
            pair = vector(e.ty.elem, 2)
            return lambda c, m: splat(f(c, m), pair)
        ty: VectorType = e.ty
        fns = [self.expr(a) for a in e.args]
        if e.splat:
            f = fns[0]
            return lambda c, m: splat(f(c, m), ty)
        widths = [a.ty.n if isinstance(a.ty, VectorType) else 1 for a in e.args]
        dtype = ty.elem.dtype

        def construct(c, m):
            parts = [f(c, m) for f in fns]
            varying = any(np.ndim(p) > (1 if w > 1 else 0) for p, w in zip(parts, widths, strict=True))
            if not varying:
                return np.concatenate([np.atleast_1d(p) for p in parts]).astype(dtype)
            cols = []
            for p, w in zip(parts, widths, strict=True):
                if w == 1:
                    cols.append(np.broadcast_to(p, (c.n,))[:, None])
                else:
                    cols.append(np.broadcast_to(p, (c.n, w)))
            return np.concatenate(cols, axis=1).astype(dtype, copy=False)
        return construct

    def _matrix_construct(self, e):
        ty: MatrixType = e.ty
        fns = [self.expr(a) for a in e.args]
        if e.splat:
            f = fns[0]
            return lambda c, m: matrices.diagonal(f(c, m), ty)
        build = matrices.from_columns if isinstance(e.args[0].ty, VectorType) else matrices.from_scalars
        return lambda c, m: build([f(c, m) for f in fns], ty)

    def x_Unary(self, e):
        op = e.op
        if op in ("++", "--"):
            return self._incdec(e.operand, op, prefix=True, pos=e.pos)
        if op == "&":
            lv = self.lvalue(e.operand)

            def address(c, m):
                loc = lv(c, m)
                if not isinstance(loc, MemLoc):
                    raise KernelRuntimeError("cannot take the address of this value", e.pos)
                return Ptr(loc.mem, loc.off)
            return address
        if op == "*":
            ptr = self.expr(e.operand)
            ty = e.ty
            pos = e.pos
            if isinstance(ty, ArrayType):
                return ptr
            view = view_of(ty)
            return lambda c, m: _deref(c, ptr(c, m), m, view, pos)
        f = self.expr(e.operand)
        if op == "-":
            if e.ty == BFLOAT:
                return lambda c, m: np.negative(f(c, m))
            return lambda c, m: np.negative(f(c, m))
        if op == "+":
            return f
        if op == "~":
            return lambda c, m: np.invert(f(c, m))
        if op == "!":
            return lambda c, m: np.logical_not(f(c, m))
        raise CompileError(f"unsupported operator '{op}'", e.pos)

    def x_Postfix(self, e):
        return self._incdec(e.operand, e.op, prefix=False, pos=e.pos)

    def _incdec(self, target, op, prefix, pos):
        lv = self.lvalue(target)
        ty = target.ty
        if isinstance(ty, PointerType):
            stride = units_in(ty.pointee)
            delta = np.int64(stride if op == "++" else -stride)

            def ptr_step(c, m):
                loc = lv(c, m)
                old = loc.load(c, m)
                new = old.moved(delta)
                loc.store(c, new, m)
                return new if prefix else old
            return ptr_step
        elem = ty.elem if isinstance(ty, VectorType) else ty
        one = elem.dtype.type(1)
        f = np.add if op == "++" else np.subtract
        rnd = round_bfloat if elem == BFLOAT else None

        def step(c, m):
            loc = lv(c, m)
            old = loc.load(c, m)
            new = f(old, one)
            if rnd is not None:
                new = rnd(new)
            loc.store(c, new, m)
            return new if prefix else old
        return self._binary_counted(step, "+", ty, pos)

    def x_Binary(self, e):
        op = e.op
        if op in ("&&", "||"):
            return self._logical(e)
        lt, rt = e.left.ty, e.right.ty
        if isinstance(lt, PointerType) or isinstance(rt, PointerType):
            return self._pointer_binary(e)
        a, b = self.expr(e.left), self.expr(e.right)
        if e.matrix_op is not None:
            mf = matrices.binary(e.matrix_op, op)
            return lambda c, m: mf(a(c, m), b(c, m))
        f = binary_op(op, e.op_ty, e.pos)
        return self._binary_counted(lambda c, m: f(c, m, a(c, m), b(c, m)), op, e.op_ty, e.pos, e.right)

    def _logical(self, e):
        a, b = self.expr(e.left), self.expr(e.right)
        is_and = e.op == "&&"

        def logical(c, m):
            x = a(c, m)
            if np.ndim(x) == 0:
                if bool(x) != is_and:
                    return np.bool_(not is_and)
                return b(c, m)
            sub = and_mask(c, m, x) if is_and else andnot_mask(c, m, x)
            if empty(sub):
                return x
            y = b(c, sub)
            if is_and:
                return x & y
            return x | y
        return logical

    def _pointer_binary(self, e):
        a, b = self.expr(e.left), self.expr(e.right)
        op = e.op
        if isinstance(e.ty, PointerType):
            stride = np.int64(units_in(e.ty.pointee))
            sign = -1 if op == "-" else 1

            def ptr_add(c, m):
                p = a(c, m)
                k = b(c, m)
                return p.moved(sign * np.asarray(k, dtype=np.int64) * stride)
            return ptr_add
        stride = np.int64(units_in(e.left.ty.pointee))
        if op == "-":
            return lambda c, m: (a(c, m).off - b(c, m).off) // stride
        f = _arith_fn(op, ScalarType("long", "int", 64, True, 4))
        return lambda c, m: f(a(c, m).off, b(c, m).off)

    def x_Assign(self, e):
        lv = self.lvalue(e.target)
        val = self.expr(e.value)
        tt = e.target.ty
        if e.op == "=":
            def assign(c, m):
                v = val(c, m)
                loc = lv(c, m)
                loc.store(c, v, m)
                return v
            return assign
        op = e.op[:-1]
        if isinstance(tt, MatrixType):  # the checker made the value 'a op b' in full
            def matrix_compound(c, m):
                v = val(c, m)
                lv(c, m).store(c, v, m)
                return v
            return matrix_compound
        if isinstance(tt, PointerType):
            stride = np.int64(units_in(tt.pointee))
            sign = -1 if op == "-" else 1

            def ptr_compound(c, m):
                loc = lv(c, m)
                p = loc.load(c, m)
                new = p.moved(sign * np.asarray(val(c, m), dtype=np.int64) * stride)
                loc.store(c, new, m)
                return new
            return ptr_compound
        op_ty = e.op_ty
        f = binary_op(op, op_ty, e.pos)
        cur_t = tt
        rhs_t = e.value.ty
        shift = op in ("<<", ">>")

        def compound(c, m):
            loc = lv(c, m)
            cur = loc.load(c, m)
            rhs = val(c, m)
            res = f(c, m, cast(cur, cur_t, op_ty), rhs if shift else cast(rhs, rhs_t, op_ty))
            new = cast(res, op_ty, cur_t)
            loc.store(c, new, m)
            return new
        return self._binary_counted(compound, op, op_ty, e.pos, e.value)

    def x_Ternary(self, e):
        cond, a, b = self.expr(e.cond), self.expr(e.then), self.expr(e.other)
        vec = type_ndim(e.ty)

        def ternary(c, m):
            k = cond(c, m)
            if np.ndim(k) == 0:
                return a(c, m) if k else b(c, m)
            mt = and_mask(c, m, k)
            mf = andnot_mask(c, m, k)
            if empty(mf):
                return a(c, mt)
            if empty(mt):
                return b(c, mf)
            x, y = a(c, mt), b(c, mf)
            if isinstance(x, Ptr):
                return merge_ptr(k, x, y)
            return np.where(k.reshape(k.shape + (1,) * vec) if vec else k, x, y)
        return ternary

    def x_Comma(self, e):
        fns = [self.expr(x) for x in e.exprs]

        def comma(c, m):
            v = None
            for f in fns:
                v = f(c, m)
            return v
        return comma

    def x_Index(self, e):
        if e.matrix_index and e.base.memory:  # a matrix in memory: read that column only
            loc = self._column_loc(e)
            return lambda c, m: loc(c, m).load(c, m)
        if e.matrix_index:
            base = self.expr(e.base)
            idx = self.expr(e.index)
            cols = e.base.ty.cols
            pos = e.pos
            return lambda c, m: _column(c, base(c, m), _checked_component(c, idx(c, m), cols, m, pos))
        if e.vector_index:
            base = self.expr(e.base)
            idx = self.expr(e.index)
            n = e.base.ty.n
            pos = e.pos

            def vindex(c, m):
                return _component(c, base(c, m), _checked_component(c, idx(c, m), n, m, pos))
            return vindex
        addr = self._address(e)
        ty = e.ty
        if isinstance(ty, ArrayType):
            return lambda c, m: Ptr(*addr(c, m))
        view = view_of(ty)
        pos = e.pos

        def load(c, m):
            mem, off = addr(c, m)
            return c.load(mem, off, m, view, pos)
        return load

    def _address(self, e: ast.Index):
        """(memory, offset) of an element of an array or pointer."""
        base = self.expr(e.base)
        idx = self.expr(e.index)
        stride = np.int64(units_in(e.ty))
        unit = unit_of(e.ty)
        bt = e.base.ty
        bound = bt.n if isinstance(bt, ArrayType) else None
        pos = e.pos
        # Most indices have no unsigned subtraction, and get no explainer.
        explain = wraparound_explainer(e.index, pos, self.expr)

        def address(c, m):
            p = base(c, m)
            k = idx(c, m)
            if isinstance(p, SplitPtr):
                p = p.for_threads(m, pos)
            if explain is not None and c.sanitize != SanitizeMode.OFF:
                explain(c, m, k if bound is None or stride == 1 else np.asarray(k, dtype=np.int64) * stride, p,
                        p.mem.nbytes // unit if p.mem is not None else 0)
            if bound is not None and bound * stride != p.mem.nbytes // unit:
                _check_subscript(c, p.mem, k, bound, m, pos, p.off, stride, unit)
            if stride == 1:
                return p.mem, p.off + k.astype(np.int64) if np.ndim(k) else p.off + np.int64(k)
            return p.mem, p.off + np.asarray(k, dtype=np.int64) * stride
        return address

    def x_Member(self, e):
        if e.field is not None:
            return self._struct_member(e)
        base = self.expr(e.base)
        comps = e.comps
        if len(comps) == 1:
            k = comps[0]
            return lambda c, m: base(c, m)[..., k]
        idx = np.array(comps)
        return lambda c, m: base(c, m)[..., idx]

    def _struct_member(self, e: ast.Member):
        """A struct member's value: read from memory where the struct is (only the member is
        read and counted), or taken from the bytes of a struct value."""
        field = e.field
        if e.arrow or e.base.lvalue:
            loc = self.lvalue(e)
            if isinstance(field.ty, ArrayType):
                return lambda c, m: _as_pointer(loc(c, m))
            return lambda c, m: loc(c, m).load(c, m)
        base = self.expr(e.base)
        off, ty = field.offset, field.ty
        return lambda c, m: from_bytes(base(c, m), off, ty)

    def _member_loc(self, e: ast.Member):
        """Where a struct member is: a place in the memory its struct is in."""
        field = e.field
        ty = field.ty
        view = view_of(ty)
        unit = unit_of(ty)
        offset = field.offset
        pos = e.pos
        if e.arrow:
            ptr = self.expr(e.base)

            def through_pointer(c, m):
                p = ptr(c, m)
                mem = _pointee(p, m, pos, "member access through an uninitialised pointer")
                return MemLoc(mem, _member_offset(c, m, mem, p.off, offset, unit, pos), view, pos, ty)
            return through_pointer
        base = self.lvalue(e.base)
        base_unit = unit_of(e.base.ty)

        def member(c, m):
            loc = base(c, m)
            if not isinstance(loc, MemLoc):
                raise KernelRuntimeError("this struct is not in memory", pos)
            return MemLoc(loc.mem, _member_offset(c, m, loc.mem, loc.off * base_unit, offset, unit, pos), view, pos, ty)
        return member

    def _column_loc(self, e: ast.Index):
        """A matrix column as a place: in memory, the column's own vector; in a register, a
        read-modify-write of the matrix."""
        base = self.lvalue(e.base)
        idx = self.expr(e.index)
        mt: MatrixType = e.base.ty
        col = mt.column
        view = view_of(col)
        stride = np.int64(units_in(col))
        pos = e.pos

        def column(c, m):
            loc = base(c, m)
            k = _checked_component(c, idx(c, m), mt.cols, m, pos)
            if isinstance(loc, MemLoc):
                return MemLoc(loc.mem, loc.off + np.asarray(k, dtype=np.int64) * stride, view, pos, col)
            return ColumnLoc(loc, k)
        return column

    def x_StructInit(self, e: ast.StructInit):
        size = e.ty.size
        parts = [(off, self.expr(x), x.ty) for off, x in e.parts]

        def build(c, m):
            values = [(off, f(c, m), ty) for off, f, ty in parts]
            varying = any(is_varying(v, ty) for _, v, ty in values)
            blob = np.zeros((c.n, size) if varying else size, dtype=np.uint8)
            for off, v, ty in values:
                b = to_bytes(v, ty)
                blob[..., off: off + b.shape[-1]] = b
            return blob
        return build

    def x_Call(self, e):
        target = e.target
        if isinstance(target, FuncInstance):
            call = self._call_function(e, target)
            if target.ret_ref:  # the value of the object the returned reference designates
                return lambda c, m: call(c, m).load(c, m)
            return call
        arg_fns = [self.expr(a) if not _is_lvalue_arg(target, i) else self.lvalue(a) for i, a in enumerate(e.args)]
        fn = target.emit(self, e, arg_fns)
        if self.cost:
            found = builtin_kind(target.name, e.arg_ty if e.arg_ty is not None else e.ty)
            if found is not None:
                kind, steps = found
                fn = self.counted(fn, kind, steps * elem_of(e.arg_ty if e.arg_ty is not None else e.ty)[1], e.pos)
        return fn

    def _call_function(self, e, inst: FuncInstance):
        arg_fns = []
        for p, a in zip(inst.params, e.args, strict=True):
            if p.kind == VarKind.REF and not a.lvalue:  # a member function called on a temporary object
                arg_fns.append(_materialised(self.expr(a), a.ty, a.pos))
            else:
                arg_fns.append(self.lvalue(a) if p.kind == VarKind.REF else self.expr(a))
        key = id(inst)
        bodies = self.bodies
        if key not in bodies:
            bodies[key] = None  # compiling: a recursive call finds it here and calls it once it is compiled
            bodies[key], _ = self.stmt(inst.body)
        params = inst.params
        nslots = inst.nslots
        ret_void = isinstance(inst.ret, VoidType)
        # Structs passed by value: copied into the callee's own thread memory.
        copies = [(p.slot, p.name, p.ty, view_of(p.ty)) for p in params if p.kind == VarKind.MEMVAR]

        def call(c, m):
            c.step(e.pos)
            vals = [f(c, m) for f in arg_fns]
            saved = (c.slots, c.frame, c.loop)
            slots = [None] * nslots
            for p, v in zip(params, vals, strict=True):
                slots[p.slot] = v
            c.slots, c.frame, c.loop = slots, Frame(), None
            for k, name, ty, view in copies:
                value, slots[k] = slots[k], None
                mem = _thread_memory(c, k, name, ty).mem
                c.store(mem, np.int64(0), value, m, view, e.pos)
            c.call_depth += 1
            if c.call_depth > MAX_CALL_DEPTH:
                raise KernelRuntimeError(f"'{inst.name}' is called more than {MAX_CALL_DEPTH} calls deep: a recursion "
                                         "that does not end? (a GPU thread's call stack is small)", e.pos)
            try:
                bodies[key](c, m)
                result = c.frame.ret_val
            finally:
                c.slots, c.frame, c.loop = saved
                c.call_depth -= 1
            if ret_void:
                return None
            if result is None:
                raise KernelRuntimeError(f"function '{inst.name}' ended without returning a value", e.pos)
            return result
        return call

    def x_SizeOf(self, e):  # pragma: no cover - folded by the checker
        raise CompileError("sizeof", e.pos)

    def x_InitList(self, e):
        raise CompileError("unexpected initializer list", e.pos)

    # ======================================================================= lvalues
    def lvalue(self, e: ast.Expr) -> Callable:
        if isinstance(e, ast.Name):
            sym = e.symbol
            if sym.kind in (VarKind.LOCAL, VarKind.ARRAY):
                k = sym.slot
                vec = type_ndim(sym.ty)
                if sym.maybe_uninit:
                    name, pos = sym.name, e.pos
                    return lambda c, m: SlotLoc(c.slots, k, vec, pos, name)
                return lambda c, m: SlotLoc(c.slots, k, vec)
            if sym.kind == VarKind.REF:
                k = sym.slot
                return lambda c, m: c.slots[k]
            if sym.kind in (VarKind.TGVAR, VarKind.MEMVAR):
                k = sym.slot
                view = view_of(sym.ty)
                ty = sym.ty
                return lambda c, m: MemLoc(c.slots[k].mem, c.slots[k].off, view, e.pos, ty)
            if sym.kind == VarKind.SCALAR_INPUT:
                name = sym.name
                view = view_of(sym.ty)
                return lambda c, m: MemLoc(c.memories[name], np.int64(0), view, e.pos, sym.ty)
            raise CompileError(f"'{sym.name}' is not assignable", e.pos)
        if isinstance(e, ast.TemporaryObject):  # 'P(1, 2).a', 'P(1, 2).get()': the temporary itself
            k, ty, name = e.var.slot, e.ty, e.var.name
            construct = self.expr(e.construct)
            loc = self.lvalue(e.value)

            def temporary_loc(c, m):
                _thread_memory(c, k, name, ty)
                construct(c, m)
                return loc(c, m)
            return temporary_loc
        if isinstance(e, ast.Index) and e.matrix_index:
            return self._column_loc(e)
        if isinstance(e, ast.Index):
            if e.vector_index:
                base = self.lvalue(e.base)
                idx = self.expr(e.index)
                n = e.base.ty.n
                pos = e.pos

                def vloc(c, m):
                    return CompLoc(base(c, m), _checked_component(c, idx(c, m), n, m, pos), True)
                return vloc
            addr = self._address(e)
            view = view_of(e.ty)
            ty = e.ty
            pos = e.pos

            def mloc(c, m):
                mem, off = addr(c, m)
                return MemLoc(mem, off, view, pos, ty)
            return mloc
        if isinstance(e, ast.Unary) and e.op == "*":
            ptr = self.expr(e.operand)
            view = view_of(e.ty)
            ty = e.ty
            pos = e.pos

            def dloc(c, m):
                p = ptr(c, m)
                return MemLoc(_pointee(p, m, pos, "dereference of an uninitialised pointer"), p.off, view, pos, ty)
            return dloc
        if isinstance(e, ast.Member) and e.field is not None:
            return self._member_loc(e)
        if isinstance(e, ast.Member):
            base = self.lvalue(e.base)
            comps = e.comps
            single = len(comps) == 1
            key = comps[0] if single else np.array(comps)
            return lambda c, m: CompLoc(base(c, m), key, single)
        if isinstance(e, ast.Convert) and e.kind in (ConvertKind.LOAD, ConvertKind.DECAY, ConvertKind.PTR):
            return self.lvalue(e.operand)
        if isinstance(e, ast.Call) and isinstance(e.target, FuncInstance) and e.target.ret_ref:
            return self._call_function(e, e.target)  # the object the returned reference designates
        if isinstance(e, ast.Call) and e.lvalue:  # m.thread_elements(): this thread's part of the matrix
            return self.lvalue(e.args[0])
        raise CompileError("expression is not assignable", e.pos)

    # ======================================================================= statements
    def stmt(self, s: ast.Stmt) -> tuple[Callable, bool]:
        method = getattr(self, "s_" + type(s).__name__)
        # Count this statement's own work; nested statements count theirs.
        outer_work, self.work = self.work, 0
        try:
            f, jumps = method(s)
            cost = self._step_cost()
        finally:
            self.work = outer_work
        # Blocks are not steps of their own; loops record a step at every iteration themselves.
        if f is None or isinstance(s, ast.Block | ast.For | ast.While | ast.DoWhile):
            return f, jumps
        pos = s.pos

        def stepped(c, m):
            c.steps += cost  # Ctx.step inlined: this runs for every statement
            if c.steps > c.max_steps:
                c.out_of_steps(pos)
            # A step-through recorder, when attached, sees every statement before it runs.
            if c.stepper is not None:
                c.stepper.before(c, pos, m)
            f(c, m)

        def stepped_costed(c, m):
            c.steps += cost
            if c.steps > c.max_steps:
                c.out_of_steps(pos)
            if c.stepper is not None:
                c.stepper.before(c, pos, m)
            c.cost.statement(pos, m)  # which lanes of each SIMD-group execute it
            f(c, m)
        return (stepped_costed if self.cost else stepped), jumps

    def s_Block(self, s: ast.Block):
        parts = [self.stmt(x) for x in s.stmts]
        parts = [(f, j) for f, j in parts if f is not None]
        fns = [f for f, _ in parts]
        any_jump = any(j for _, j in parts)
        if not any_jump:
            if len(fns) == 1:
                return fns[0], False

            def block(c, m):
                for f in fns:
                    f(c, m)
            return block, False

        def jump_block(c, m):
            for f, j in parts:
                f(c, m)
                if j:
                    m = c.live(m)
                    if m is not None and not m.any():
                        return
        return jump_block, True

    def s_Empty(self, s):
        return None, False

    def s_UsingNamespace(self, s):  # the checker has widened name lookup: nothing runs
        return None, False

    def s_StaticAssert(self, s):  # checked at compile time: nothing runs
        return None, False

    def s__AliasStmt(self, s):
        return None, False

    def s_LocalTypeDef(self, s):  # the type is the checker's; its variables are declared as any are
        return self.s_Decl(s.decl) if s.decl is not None else (None, False)

    def s_ExprStmt(self, s):
        f = self.expr(s.expr)
        return (lambda c, m: f(c, m)), False

    def s_Decl(self, s: ast.Decl):
        fns = []
        for d in s.declarators:
            sym: Var = d.symbol
            if sym.kind == VarKind.CONST:
                continue
            if sym.kind in (VarKind.ARRAY, VarKind.TGVAR):
                if sym.space == AddressSpace.THREADGROUP:
                    continue  # allocated once per launch
                fns.append(self._array_decl(d, sym))
                continue
            if sym.kind == VarKind.REF:
                fns.append(self._ref_decl(d, sym))
                continue
            if sym.kind == VarKind.MEMVAR:
                fns.append(self._memvar_decl(d, sym))
                continue
            k = sym.slot
            vec = type_ndim(sym.ty)
            ty = sym.ty
            if d.init is None:
                z = None if isinstance(ty, PointerType) else zero(ty)

                def declare(c, m, k=k, z=z, ty=ty, pos=d.pos):
                    if c.slots[k] is None:
                        c.slots[k] = z if z is not None else Ptr(None, np.int64(0))
                    if c.sanitizer is not None:
                        key = (id(c.slots), k)
                        init = c.local_init.get(key)
                        if init is None:
                            init = c.local_init[key] = np.zeros(c.n, dtype=bool)
                        if m is None:
                            init[:] = False
                        else:
                            init[m] = False
                fns.append(declare)
                continue
            init = self.expr(d.init)

            def declare_init(c, m, k=k, init=init, vec=vec, ty=ty):
                v = init(c, m)
                old = c.slots[k]
                if m is None or old is None:
                    if m is not None and not isinstance(v, Ptr):
                        old = zero(ty)
                        c.slots[k] = merge(m, v, old, vec)
                    else:
                        c.slots[k] = v
                else:
                    c.slots[k] = merge(m, v, old, vec)
                if c.sanitizer is not None:
                    key = (id(c.slots), k)
                    if key in c.local_init:
                        _mark_init(c.local_init[key], m)
            fns.append(declare_init)
        if not fns:
            return None, False
        if len(fns) == 1:
            return fns[0], False

        def decls(c, m):
            for f in fns:
                f(c, m)
        return decls, False

    def _ref_decl(self, d: ast.Declarator, sym: Var):
        lv = self.lvalue(d.init)
        k = sym.slot

        def bind(c, m):
            c.slots[k] = lv(c, m)
        return bind

    def _memvar_decl(self, d: ast.Declarator, sym: Var):
        """A local whose address is taken: it lives in a one-element thread-private memory."""
        k = sym.slot
        ty = sym.ty
        init = self.expr(d.init) if d.init is not None else None
        construct = self.expr(d.construct) if d.construct is not None else None
        view = view_of(ty)
        name, pos = sym.name, d.pos

        def declare(c, m):
            p = _thread_memory(c, k, name, ty)
            if init is not None:
                c.store(p.mem, np.int64(0), init(c, m), m, view, pos)
            if construct is not None:  # a constructor initialises it in place
                construct(c, m)
        return declare

    def x_TemporaryObject(self, e: ast.TemporaryObject):
        k, ty, name = e.var.slot, e.ty, e.var.name
        construct = self.expr(e.construct)
        value = self.expr(e.value)

        def temporary(c, m):
            _thread_memory(c, k, name, ty)
            construct(c, m)
            return value(c, m)
        return temporary

    def _array_decl(self, d: ast.Declarator, sym: Var):
        k = sym.slot
        ty = sym.ty
        whole = span_view(ty)
        init_items = _flatten_init(d.init) if d.init is not None else None
        init_fns = [self.expr(x) for x in init_items] if init_items else []
        if d.init is not None:  # every run zero-fills the whole array
            self.work += whole.width
        offsets = _init_offsets(d.init, sym.ty) if d.init is not None else []
        item_views = [view_of(x.ty) for x in init_items] if init_items else []
        name = sym.name
        pos = d.pos

        def declare_array(c, m):
            p = _thread_memory(c, k, name, ty)
            if d.init is not None:
                # Aggregate initialization zero-fills the elements not listed.
                c.store(p.mem, np.int64(0), np.zeros(whole.width, dtype=whole.dtype), m, whole, pos)
                for off, f, view in zip(offsets, init_fns, item_views, strict=True):
                    c.store(p.mem, np.int64(off), f(c, m), m, view, pos)
        return declare_array

    def s_If(self, s: ast.If):
        cond = self.expr(s.cond)
        then, j1 = self.stmt(s.then)
        other, j2 = self.stmt(s.other) if s.other is not None else (None, False)
        then = then or (lambda c, m: None)

        def run_if(c, m):
            k = cond(c, m)
            if np.ndim(k) == 0:
                if k:
                    then(c, m)
                elif other is not None:
                    other(c, m)
                return
            mt = and_mask(c, m, k)
            if mt.any():
                then(c, mt)
            if other is not None:
                mf = andnot_mask(c, m, k)
                if mf.any():
                    other(c, mf)
        return run_if, j1 or j2

    def _loop(self, s, init, cond, step, body, test_first=True):
        pos = s.pos
        cost = self._step_cost()  # the loop's own condition and increment, paid every iteration
        costed = self.cost  # the instrumented variant counts every iteration as a statement

        def run_loop(c, m):
            if init is not None:
                init(c, m)
            outer = c.loop
            st = LoopState(pos, outer, m)
            c.loop = st
            first = True
            try:
                while True:
                    if cond is not None and (test_first or not first):
                        k = cond(c, m)
                        if np.ndim(k) == 0:
                            if not k:
                                break
                        else:
                            m = and_mask(c, m, k)
                            if not m.any():
                                break
                    first = False
                    st.cont = None
                    st.active = m  # this iteration's threads (a barrier in the body asks who left)
                    if c.stepper is not None:
                        c.stepper.before(c, pos, m)
                    if costed:
                        c.cost.statement(pos, m)
                    if body is not None:
                        body(c, m)
                    # Lanes that broke out or returned leave the loop; 'continue' lanes rejoin.
                    dead = st.brk
                    if c.frame.ret is not None:
                        dead = c.frame.ret if dead is None else (dead | c.frame.ret)
                    if dead is not None:
                        m = ~dead if m is None else (m & ~dead)
                        if not m.any():
                            break
                    st.cont = None
                    if step is not None:
                        step(c, m)
                    st.active = m
                    c.step(pos, cost)
            finally:
                c.loop = outer
        return run_loop

    def s_For(self, s: ast.For):
        # The initializer is shown as part of the loop's own step, not as a step of its own.
        init = getattr(self, "s_" + type(s.init).__name__)(s.init)[0] if s.init is not None else None
        cond = self.expr(s.cond) if s.cond is not None else None
        step = self.expr(s.step) if s.step is not None else None
        body, _ = self.stmt(s.body)
        return self._loop(s, init, cond, step, body), _has_return(s.body)

    def s_While(self, s: ast.While):
        body, _ = self.stmt(s.body)
        return self._loop(s, None, self.expr(s.cond), None, body), _has_return(s.body)

    def s_DoWhile(self, s: ast.DoWhile):
        body, _ = self.stmt(s.body)
        return self._loop(s, None, self.expr(s.cond), None, body, test_first=False), _has_return(s.body)

    def s_Break(self, s):
        def brk(c, m):
            st = c.loop
            st.brk = (c.full() if m is None else m.copy()) if st.brk is None else (st.brk | (True if m is None else m))
        return brk, True

    def s_Continue(self, s):
        def cont(c, m):
            st = c.loop
            # Inside a switch, 'continue' belongs to the enclosing loop and also leaves the switch.
            while getattr(st, "is_switch", False):
                st.brk = _or(c, st.brk, m)
                st = st.outer
            st.cont = _or(c, st.cont, m)
        return cont, True

    def s_Return(self, s: ast.Return):
        if s.by_reference:
            return self._return_reference(s), True
        val = self.expr(s.value) if s.value is not None else None
        vec = type_ndim(s.value.ty) if s.value is not None else 0

        def ret(c, m):
            fr = c.frame
            if val is not None:
                v = val(c, m)
                fr.ret_val = v if (fr.ret_val is None and m is None) else merge(
                    m, v, fr.ret_val if fr.ret_val is not None else _zero_like(v), vec)
            fr.ret = _or(c, fr.ret, m)
        return ret, True

    def _return_reference(self, s: ast.Return):
        """A function returning a reference returns a location; lanes returning at different
        statements must designate elements of one memory object (their offsets are merged)."""
        loc = self.lvalue(s.value)
        pos = s.pos

        def ret(c, m):
            fr = c.frame
            here = loc(c, m)
            if fr.ret_val is None or m is None:
                fr.ret_val = here
            else:
                fr.ret_val = _merged_location(c, m, here, fr.ret_val, pos)
            fr.ret = _or(c, fr.ret, m)
        return ret

    def s_Switch(self, s: ast.Switch):
        value = self.expr(s.value)
        items = []
        case_values = []
        for st in s.body.stmts:
            if isinstance(st, ast.Case):
                cv = None if st.value is None else st.value.value
                if cv is not None:
                    case_values.append(cv)
                items.append(("case", cv))
            else:
                f, _ = self.stmt(st)
                if f is not None:
                    items.append(("stmt", f))
        dtype = s.value.ty.dtype

        def run_switch(c, m):
            v = value(c, m)
            st = LoopState(None, c.loop)
            st.is_switch = True
            c.loop = st
            running = np.zeros(c.n, dtype=bool)
            active = c.full() if m is None else m
            try:
                for kind, x in items:
                    if kind == "case":
                        if x is None:
                            hit = np.ones(c.n, dtype=bool)
                            for cv in case_values:
                                hit &= np.broadcast_to(v != dtype.type(cv), (c.n,))
                        else:
                            hit = np.broadcast_to(v == dtype.type(x), (c.n,))
                        running = running | (hit & active)
                        continue
                    mm = c.live(running)
                    if mm.any():
                        x(c, mm)
            finally:
                c.loop = st.outer
        return run_switch, _has_return(s.body) or _has_continue(s.body)

    def s_Case(self, s):  # pragma: no cover - handled by s_Switch
        raise CompileError("'case' outside of a switch", s.pos)


def _constant_int(e: ast.Expr | None) -> int | None:
    """The value of an integer literal or named integer constant (through conversions), else None."""
    while isinstance(e, ast.Convert | ast.Cast):
        e = e.operand
    if isinstance(e, ast.IntLit):
        return e.value
    if isinstance(e, ast.Name) and e.symbol is not None and e.symbol.kind == VarKind.CONST:
        v = e.symbol.const_value
        return v if isinstance(v, int) and not isinstance(v, bool) else None
    return None


def _or(c, a, m):
    if m is None:
        return c.full()
    return m.copy() if a is None else (a | m)


def _zero_like(v):
    return np.zeros_like(v)


def _deref(c, p: Ptr, m, view: View, pos):
    return c.load(_pointee(p, m, pos, "dereference of an uninitialised pointer"), p.off, m, view, pos)


def _pointee(p: Ptr, m, pos, uninitialised: str) -> Memory:
    """The memory an access through ``p`` by the threads of mask ``m`` reaches, or the error (at
    ``pos``) why there is none."""
    if isinstance(p, SplitPtr):
        p = p.for_threads(m, pos)
    if p.mem is None:
        raise KernelRuntimeError(uninitialised, pos)
    return p.mem


def _pointer_cast(inner, src: PointerType, dst: PointerType, pos: Pos):
    """A pointer seen as a pointer to another type: the same address, its offset counted in the
    new type's units. A cast to a wider scalar must land on a multiple of its size."""
    s_unit, d_unit = unit_of(src.pointee), unit_of(dst.pointee)
    if s_unit == d_unit:
        return inner
    if s_unit > d_unit:
        factor = np.int64(s_unit // d_unit)
        return lambda c, m: _rescaled(inner(c, m), factor, 1)
    factor = np.int64(d_unit // s_unit)

    def narrow(c, m):
        p = inner(c, m)
        if p.mem is None:
            return p
        rest = p.off % factor
        if np.any(rest):
            bad = np.broadcast_to(rest != 0, (c.n,)) & (c.full() if m is None else m)
            if bad.any():
                lane = int(np.flatnonzero(bad)[0])
                at = int(np.broadcast_to(p.off, (c.n,))[lane]) * s_unit
                c.report(FindingKind.MISALIGNED, pos, bad,
                         f"{c.lanes.label(lane)} casts a pointer to byte {at} of '{p.mem.name}' to '{dst}', which "
                         f"needs {d_unit}-byte alignment (a misaligned access is undefined on the GPU): "
                         f"{kind_entry(FindingKind.MISALIGNED).fix}",
                         buffer=p.mem.name, index=at // d_unit)
        return _rescaled(p, 1, factor)
    return narrow


def _as_pointer(loc: MemLoc) -> Ptr:
    return Ptr(loc.mem, loc.off)


def _member_offset(c, m, mem, byte, offset: int, unit: int, pos: Pos):
    """A member's offset in its own units, from its struct's byte offset; a struct placed where
    its members are misaligned (e.g. cast from a byte pointer) is reported."""
    byte = byte + offset
    if unit == 1:
        return byte
    rest = byte % unit
    if np.any(rest):
        bad = np.broadcast_to(rest != 0, (c.n,)) & (c.full() if m is None else m)
        if bad.any():
            lane = int(np.flatnonzero(bad)[0])
            at = int(np.broadcast_to(byte, (c.n,))[lane])
            c.report(FindingKind.MISALIGNED, pos, bad,
                     f"{c.lanes.label(lane)} accesses a member at byte {at} of '{mem.name}', which needs "
                     f"{unit}-byte alignment (the struct is not at an aligned address): {kind_entry(FindingKind.MISALIGNED).fix}",
                     buffer=mem.name,
                     index=at // unit)
    return byte // unit


def _merged_location(c, m, new, old, pos: Pos):
    """Where a returned reference points, per lane: ``new`` for the lanes in ``m``, else ``old``."""
    if isinstance(new, MemLoc) and isinstance(old, MemLoc) and new.mem is old.mem and new.view == old.view:
        off = np.where(m, np.broadcast_to(new.off, (c.n,)), np.broadcast_to(old.off, (c.n,)))
        return MemLoc(new.mem, off, new.view, new.pos, new.ty)
    raise KernelRuntimeError("threads return references to different objects from one function; the simulator "
                             "follows a returned reference only into one array (return a pointer instead)", pos)


def _rescaled(p: Ptr, mul, div) -> Ptr:
    off = p.off * mul // div if div != 1 else p.off * mul
    if isinstance(p, SplitPtr):
        return SplitPtr(p.mems, p.which, off)
    if p.mem is None:
        return p
    return Ptr(p.mem, off)


def _check_subscript(c, mem, k, bound, m, pos, off=0, stride=1, unit=None):
    bad = (k < 0) | (k >= bound)
    if np.ndim(bad) == 0:
        if bad:
            bad_lanes = c.full() if m is None else m
        else:
            return
    else:
        bad_lanes = bad if m is None else (bad & m)
    if np.any(bad_lanes):
        lane = int(np.flatnonzero(bad_lanes)[0])
        idx = int(k[lane] if np.ndim(k) else k)
        flat = int((off[lane] if np.ndim(off) else off) + idx * stride)
        c.report(FindingKind.OUT_OF_BOUNDS, pos, bad_lanes,
                 f"{c.lanes.label(lane)} uses index {idx} on a dimension of size {bound} of '{mem.name}' "
                 f"(element {flat} of its {mem.nbytes // (unit or mem.unit)}): check the loop bounds of this subscript",
                 buffer=mem.name, index=flat)


def _checked_component(c, k, n, m, pos):
    """A vector subscript, reported when out of range and clamped to a valid component."""
    _check_component(c, k, n, m, pos)
    return np.clip(k, 0, n - 1) if np.ndim(k) else min(max(int(k), 0), n - 1)


def _check_component(c, k, n, m, pos):
    bad = (np.asarray(k) < 0) | (np.asarray(k) >= n)
    if np.ndim(bad) == 0:
        if bad:
            c.report(FindingKind.OUT_OF_BOUNDS, pos, c.full() if m is None else m, f"vector component index {int(k)} is out of range for a {n}-vector")
        return
    lanes = bad if m is None else (bad & m)
    if lanes.any():
        lane = int(np.flatnonzero(lanes)[0])
        c.report(FindingKind.OUT_OF_BOUNDS, pos, lanes, f"{c.lanes.label(lane)} uses vector component index {int(k[lane])} "
                 f"on a {n}-vector")


def _report_div_zero(c, m, zero_b, pos, op):
    lanes = zero_b if m is None else (np.broadcast_to(zero_b, (c.n,)) & m)
    if np.ndim(lanes) == 0:
        lanes = c.full() if (lanes and m is None) else (m if lanes else None)
    if lanes is not None and np.any(lanes):
        lane = int(np.flatnonzero(lanes)[0])
        what = "division" if op == "/" else "remainder"
        c.report(FindingKind.DIVISION_BY_ZERO, pos, lanes, f"{c.lanes.label(lane)} computes an integer {what} by zero "
                 f"(undefined on the GPU; the simulator uses 0): {kind_entry(FindingKind.DIVISION_BY_ZERO).fix}")


def _bitcast(v, src: Type, dst: Type):
    s_elem = src.elem if isinstance(src, VectorType) else src
    d_elem = dst.elem if isinstance(dst, VectorType) else dst
    a = np.asarray(v)
    if s_elem == BFLOAT:
        a = (a.astype(np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint16)
    s_n = src.n if isinstance(src, VectorType) else 1
    d_n = dst.n if isinstance(dst, VectorType) else 1
    lanes = a.shape[0] if a.ndim > (1 if s_n > 1 else 0) else None
    a = np.ascontiguousarray(a.reshape((lanes if lanes is not None else 1), s_n))
    target = np.uint16 if d_elem == BFLOAT else d_elem.dtype
    out = a.view(target).reshape((lanes if lanes is not None else 1), d_n)
    if d_elem == BFLOAT:
        out = (out.astype(np.uint32) << np.uint32(16)).view(np.float32)
    if d_n == 1:
        out = out[:, 0]
    if lanes is None:
        out = out[0]
        return out if d_n > 1 else out[()]
    return out


def _flatten(value, ty):
    if isinstance(ty, ArrayType):
        out = []
        for k in range(ty.n):
            if k < len(value):
                out.extend(_flatten(value[k], ty.elem))
            else:
                out.extend([0] * units_in(ty.elem))
        return out
    return [value]


def _flatten_init(init) -> list:
    out = []
    for item in init.items:
        if isinstance(item, ast.InitList):
            out.extend(_flatten_init(item))
        else:
            out.append(item)
    return out


def _init_offsets(init, ty) -> list[int]:
    out = []
    stride = units_in(ty.elem)
    for k, item in enumerate(init.items):
        if isinstance(item, ast.InitList):
            out.extend(k * stride + o for o in _init_offsets(item, ty.elem))
        else:
            out.append(k * stride)
    return out


def _has_return(s) -> bool:
    return any(isinstance(n, ast.Return) for n in ast.walk(s))


def _has_continue(s) -> bool:
    """A 'continue' that is not inside a nested loop (so it leaves an enclosing switch)."""
    return any(isinstance(n, ast.Continue) for n in ast.walk(s, into_loops=False))


def _is_lvalue_arg(target, i) -> bool:
    return i in target.lvalue_args
