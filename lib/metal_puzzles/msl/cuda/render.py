"""The checked syntax tree rendered as CUDA C++: one rule per node class and per operator, in
the spirit of tinygrad's ``renderer/cstyle.py``. Every expression and statement class of
``front.ast`` has a rule or an explicit refusal (``NODE_RULES``; checked when this module is
imported), every operator of the front end's enums (``BINARY_RULES``, ``UNARY_RULES``,
``COMPOUND_HELPERS``, keyed by ``ast.BinaryOp``, ``UnaryOp`` and ``AssignOp``; likewise checked),
and a refused node is a located error: "source:12:3: error: ... is not supported on
CUDA: ...", never wrong code.

Semantics are Metal's, as the simulator runs them: the checker has made every implicit
conversion explicit (``Convert``), so each operation here is written in its own type; C's
arithmetic goes through the prelude's helpers where CUDA's would differ (signed overflow wraps,
division by zero gives 0, shift counts are masked, float to int converts as the simulator does)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np

from ..front import ast
from ..front.ast import AssignOp, BinaryOp, UnaryOp
from ..front.parser.statements import AliasStmt
from ..front.symbols import DeferredConstant, FuncInstance, Var, VarKind
from ..lang.errors import CompileError, Pos
from ..lang.types import (
    BFLOAT,
    BOOL,
    FLOAT,
    HALF,
    ArrayType,
    AtomicType,
    EnumType,
    MatrixType,
    PointerType,
    ScalarType,
    SimdgroupMatrixType,
    StructType,
    Type,
    VectorType,
    VoidType,
)
from .types import TypeNames


class BinaryForm(Enum):
    """How a binary operator is written in CUDA for scalar operands (vectors go through the
    prelude's vector operators, which call the same helpers component by component)."""

    #: C's own operator gives Metal's result in every type: comparisons and '&&', '||'.
    PLAIN = "plain"
    #: The prelude's helper for signed integers (they wrap) and floats (rounded once, never fused
    #: into a multiply-add); C's operator for unsigned ones, narrow results cast back to their type.
    WRAPPING = "wrapping"
    #: The prelude's helper on scalars: Metal's result where C's differs (division and remainder by
    #: zero, INT_MIN / -1).
    HELPER = "helper"
    #: The prelude's shift, its count masked to the operand's width (C leaves a larger count undefined).
    SHIFT = "shift"
    #: C's operator, a narrow result cast back to its type (C computes it in int).
    BITWISE = "bitwise"


@dataclass(frozen=True)
class BinaryRule:
    form: BinaryForm
    #: The prelude's function for WRAPPING, HELPER and SHIFT.
    helper: str | None = None


#: Every binary operator of the front end (``ast.BinaryOp``) and its rendering: a missing one fails
#: when this module is imported.
BINARY_RULES: dict[BinaryOp, BinaryRule] = {
    BinaryOp.ADD: BinaryRule(BinaryForm.WRAPPING, "mp_add"),
    BinaryOp.SUB: BinaryRule(BinaryForm.WRAPPING, "mp_sub"),
    BinaryOp.MUL: BinaryRule(BinaryForm.WRAPPING, "mp_mul"),
    BinaryOp.DIV: BinaryRule(BinaryForm.HELPER, "mp_div"),
    BinaryOp.MOD: BinaryRule(BinaryForm.HELPER, "mp_mod"),
    BinaryOp.SHL: BinaryRule(BinaryForm.SHIFT, "mp_shl"),
    BinaryOp.SHR: BinaryRule(BinaryForm.SHIFT, "mp_shr"),
    BinaryOp.BIT_AND: BinaryRule(BinaryForm.BITWISE),
    BinaryOp.BIT_OR: BinaryRule(BinaryForm.BITWISE),
    BinaryOp.BIT_XOR: BinaryRule(BinaryForm.BITWISE),
    BinaryOp.EQ: BinaryRule(BinaryForm.PLAIN),
    BinaryOp.NE: BinaryRule(BinaryForm.PLAIN),
    BinaryOp.LT: BinaryRule(BinaryForm.PLAIN),
    BinaryOp.GT: BinaryRule(BinaryForm.PLAIN),
    BinaryOp.LE: BinaryRule(BinaryForm.PLAIN),
    BinaryOp.GE: BinaryRule(BinaryForm.PLAIN),
    BinaryOp.LOGICAL_AND: BinaryRule(BinaryForm.PLAIN),
    BinaryOp.LOGICAL_OR: BinaryRule(BinaryForm.PLAIN),
}


class UnaryForm(Enum):
    """How a prefix operator is written in CUDA."""

    PLAIN = "plain"  # C's own operator: '+', '!', '*' (dereference), '&' (address of)
    NEGATE = "negate"  # the prelude's mp_neg for signed integers (-INT_MIN wraps), C's '-' otherwise
    BIT_NOT = "bit not"  # C's '~', a scalar's result cast back to its type (C computes it in int)
    INCREMENT = "increment"  # the prelude's helper: the operand wraps in its own type


#: Every prefix operator of the front end (``ast.UnaryOp``) and its rendering.
UNARY_RULES: dict[UnaryOp, UnaryForm] = {
    UnaryOp.PLUS: UnaryForm.PLAIN,
    UnaryOp.NOT: UnaryForm.PLAIN,
    UnaryOp.DEREF: UnaryForm.PLAIN,
    UnaryOp.ADDRESS: UnaryForm.PLAIN,
    UnaryOp.NEG: UnaryForm.NEGATE,
    UnaryOp.BIT_NOT: UnaryForm.BIT_NOT,
    UnaryOp.INC: UnaryForm.INCREMENT,
    UnaryOp.DEC: UnaryForm.INCREMENT,
}
#: '++' and '--' before and after their operand: the prelude's helpers (the value wraps in its type).
PREFIX_INCREMENTS: dict[UnaryOp, str] = {UnaryOp.INC: "mp_preinc", UnaryOp.DEC: "mp_predec"}
POSTFIX_INCREMENTS: dict[UnaryOp, str] = {UnaryOp.INC: "mp_postinc", UnaryOp.DEC: "mp_postdec"}
#: Compound assignment 'a op= b' (``ast.AssignOp``; '=' is C's own): computed in the operation's
#: type, converted back to a's, by the prelude's helper.
COMPOUND_HELPERS: dict[AssignOp, str] = {
    AssignOp.ADD: "mp_add_eq", AssignOp.SUB: "mp_sub_eq", AssignOp.MUL: "mp_mul_eq", AssignOp.DIV: "mp_div_eq",
    AssignOp.MOD: "mp_mod_eq", AssignOp.BIT_AND: "mp_and_eq", AssignOp.BIT_OR: "mp_or_eq",
    AssignOp.BIT_XOR: "mp_xor_eq", AssignOp.SHL: "mp_shl_eq", AssignOp.SHR: "mp_shr_eq",
}


def missing_operator_rules() -> list[str]:
    """The front end's operators (binary, prefix, postfix, assignment) with no rule here."""
    missing = [f"binary '{op.value}'" for op in BinaryOp if op not in BINARY_RULES]
    missing += [f"prefix '{op.value}'" for op in UnaryOp if op not in UNARY_RULES]
    missing += [f"prefix '{op.value}'" for op in UnaryOp
                if UNARY_RULES.get(op) is UnaryForm.INCREMENT and op not in PREFIX_INCREMENTS]
    missing += [f"postfix '{op.value}'" for op in UnaryOp if op.is_increment and op not in POSTFIX_INCREMENTS]
    missing += [f"assignment '{op.value}'" for op in AssignOp if op is not AssignOp.ASSIGN and op not in COMPOUND_HELPERS]
    missing += [f"binary '{op.value}' (its prelude function)" for op, rule in BINARY_RULES.items()
                if (rule.form in (BinaryForm.WRAPPING, BinaryForm.HELPER, BinaryForm.SHIFT)) != (rule.helper is not None)]
    return missing


class Unsupported(CompileError):
    """A construct with no faithful CUDA form (a located compile error)."""


def unsupported(what: str, why: str, pos: Pos) -> Unsupported:
    return Unsupported(f"{what} is not supported on CUDA: {why}", pos)


class Renderer:
    """Renders one kernel's checked tree (and the header functions it calls) as CUDA C++.

    ``kernel_level``: a 'return' in the kernel body itself leaves the body (a jump to its end,
    so the partial-threadgroup guard still meets every barrier), not the function."""

    def __init__(self, builtin_rule: Callable[[Renderer, ast.Call], str],
                 scalar_inputs: set[str] | None = None, shape_params: set[str] | None = None) -> None:
        self.types = TypeNames()
        self.builtin_rule = builtin_rule
        #: Names of 0-d inputs: MLX's cuda_kernel passes them as pointers; Metal as references.
        self.scalar_inputs = scalar_inputs or set()
        #: Names of shape and strides parameters: read through mp_ptr (Shape in MLX, a pointer in the unit).
        self.shape_params = shape_params or set()
        #: Strides parameters: int64_t in MLX (long on Linux), read as the long long the translation uses.
        self.long_strides: set[str] = set()
        #: Buffers MLX declares with another spelling of the same type (int64_t is long, the
        #: translation's is long long): read through a cast to the translation's pointer type.
        self.pointer_casts: dict[str, str] = {}
        self.functions: dict[int, tuple[str, FuncInstance]] = {}
        self.function_order: list[int] = []
        self.const_arrays: dict[int, tuple[str, Var]] = {}
        self.uses_barriers = False
        self.uses_simd = False
        self.in_function: FuncInstance | None = None
        self.shared_bytes = 0

    # ------------------------------------------------------------------ helpers
    def ctype(self, ty: Type, pos: Pos) -> str:
        if isinstance(ty, SimdgroupMatrixType):
            self.uses_simd = True
        return self.types.ctype(ty, pos)

    def declare(self, ty: Type, name: str, pos: Pos) -> str:
        inner = ty
        while isinstance(inner, ArrayType):
            inner = inner.elem
        self.ctype(inner, pos)  # refuses what has no CUDA form
        return self.types.declare(ty, name, pos)

    def _array_type(self, ty: Type, pos: Pos) -> str:
        """A pointer to an array type, spelt: 'float(*)[4][2]'."""
        dims = ""
        while isinstance(ty, ArrayType):
            dims += f"[{ty.n}]"
            ty = ty.elem
        return f"{self.ctype(ty, pos)}(*){dims}"

    def convert(self, text: str, src: Type, dst: Type, pos: Pos) -> str:
        """``text`` (of type ``src``) as a value of type ``dst``, converted as C and the simulator do."""
        if src == dst:
            return text
        if isinstance(dst, ScalarType) and isinstance(src, ScalarType):
            return f"mp_cvt<{self.ctype(dst, pos)}, {self.ctype(src, pos)}>({text})"
        if isinstance(dst, ScalarType) and isinstance(src, EnumType):
            return f"mp_cvt<{self.ctype(dst, pos)}, int>({text})"
        if isinstance(dst, VectorType) and isinstance(src, VectorType) and dst.n == src.n:
            if src.packed != dst.packed and src.elem == dst.elem:
                return f"mp_unpack({text})" if src.packed else f"mp_pack({text})"
            inner = f"mp_unpack({text})" if src.packed else text
            out = f"mp_cvt_vec<{self.ctype(dst.elem, pos)}>({inner})"
            return f"mp_pack({out})" if dst.packed else out
        if isinstance(dst, VectorType) and isinstance(src, ScalarType):
            return f"mp_splat<{self.ctype(dst.elem, pos)}, {dst.n}>({self.convert(text, src, dst.elem, pos)})"
        if isinstance(dst, MatrixType) and isinstance(src, MatrixType) and (dst.cols, dst.rows) == (src.cols, src.rows):
            return f"mp_cvt_mat<{self.ctype(dst.elem, pos)}>({text})"
        if isinstance(dst, PointerType) and isinstance(src, PointerType):
            return f"(({self.ctype(dst, pos)})({text}))"
        if isinstance(dst, ScalarType) and isinstance(src, PointerType):
            if dst == BOOL:
                return f"(({text}) != nullptr)"
            return f"(({self.ctype(dst, pos)})(unsigned long long)({text}))"
        if isinstance(dst, StructType) and src == dst:
            return text
        raise unsupported(f"a conversion from '{src}' to '{dst}'", "the translator has no rule for it", pos)

    # ------------------------------------------------------------------ expressions
    def expr(self, e: ast.Expr) -> str:
        rule = EXPR_RULES.get(type(e))
        if rule is None:
            raise unsupported(f"the expression '{type(e).__name__}'", "the translator has no rule for it", e.pos)
        return rule(self, e)

    def x_IntLit(self, e: ast.IntLit) -> str:
        return self.int_literal(e.value, e.ty, e.pos)

    def int_literal(self, value: int, ty: Type, pos: Pos) -> str:
        if not isinstance(ty, ScalarType):
            raise unsupported(f"an integer literal of type '{ty}'", "unexpected type", pos)
        if ty.is_float:
            return self.float_literal(float(value), ty, pos)
        if ty == BOOL:
            return "true" if value else "false"
        value = int(np.array(value).astype(ty.dtype)) if ty.bits < 64 or value < 0 else value
        if ty.bits == 64:
            text = f"{value & 0xFFFFFFFFFFFFFFFF}ull"
            return text if not ty.signed else f"((long long){text})"
        if ty.name == "int":
            return str(value) if value != -(2**31) else "(-2147483647 - 1)"
        if ty.name == "uint":
            return f"{value}u"
        return f"(({self.ctype(ty, pos)}){value})"

    def float_literal(self, value: float, ty: Type, pos: Pos) -> str:
        assert isinstance(ty, ScalarType)
        with np.errstate(over="ignore"):
            stored = np.float32(value) if ty != HALF else np.float32(np.float16(value))
        if ty == BFLOAT:
            from ..lang.lane_values import round_bfloat
            stored = np.float32(round_bfloat(np.float32(value)))
        bits = int(np.array(stored, dtype=np.float32).view(np.uint32))
        if np.isfinite(stored):
            f = f"{float(stored).hex()}f"
            if f.startswith("-"):
                f = f"({f})"
        else:
            f = f"__uint_as_float({bits:#x}u)"
        return f if ty == FLOAT else f"mp_cvt<{self.ctype(ty, pos)}, float>({f})"

    def x_FloatLit(self, e: ast.FloatLit) -> str:
        return self.float_literal(e.value, e.ty, e.pos)

    def x_BoolLit(self, e: ast.BoolLit) -> str:
        return "true" if e.value else "false"

    def x_Name(self, e: ast.Name) -> str:
        sym = e.symbol
        if not isinstance(sym, Var):
            raise unsupported(f"the name '{e.ident}'", "it names no variable the translator knows", e.pos)
        if sym.kind == VarKind.CONST:
            return self.constant(sym, e.pos)
        if sym.kind == VarKind.SCALAR_INPUT and sym.name in self.scalar_inputs:
            return f"(*{sym.name})"
        if sym.name in self.pointer_casts:
            return f"(({self.pointer_casts[sym.name]}){sym.name})"
        if sym.name in self.long_strides:
            return f"((const long long*)mp_ptr({sym.name}))"
        if sym.name in self.shape_params:
            return f"mp_ptr({sym.name})"
        return ident(sym.name)

    def constant(self, sym: Var, pos: Pos) -> str:
        v = sym.const_value
        if isinstance(v, DeferredConstant):
            return self.expr(v.expr)
        if isinstance(sym.ty, ArrayType):
            key = id(sym)
            if key not in self.const_arrays:
                self.declare(sym.ty, "x", pos)
                self.const_arrays[key] = (f"mp_const_{len(self.const_arrays)}_{_safe(sym.name)}", sym)
            name = self.const_arrays[key][0]
            return f"(*reinterpret_cast<const {self._array_type(sym.ty, pos)}>(&{name}_bits))"

        if isinstance(sym.ty, ScalarType):
            if sym.ty.is_float:
                return self.float_literal(float(v), sym.ty, pos)
            return self.int_literal(int(v), sym.ty, pos)
        if isinstance(sym.ty, EnumType):
            return str(int(v))
        raise unsupported(f"the constant '{sym.name}' of type '{sym.ty}'", "the translator has no rule for it", pos)

    def const_array_definitions(self) -> list[str]:
        """Each constant array the kernel reads, as its bits (so the initializer is a constant
        expression whatever the values: NaN, infinities, half), read back through its type."""
        out = []
        for name, sym in self.const_arrays.values():
            out.append(f"__device__ const {self.types.declare(_bits_type(sym.ty), name + '_bits', sym.pos)} = "
                       f"{self._const_init(sym.const_value, sym.ty, sym.pos)};")
        return out

    def _const_init(self, value: Any, ty: Type, pos: Pos) -> str:
        if isinstance(ty, ArrayType):
            items = list(value) + [0] * (ty.n - len(value))
            return "{" + ", ".join(self._const_init(v, ty.elem, pos) for v in items) + "}"
        if isinstance(ty, ScalarType):
            if ty == BFLOAT:
                from ..lang.lane_values import round_bfloat
                bits = int(np.array(np.float32(round_bfloat(np.float32(value)))).view(np.uint32)) >> 16
            elif ty.is_float:
                bits = int(np.array(value, dtype=ty.dtype).view(f"u{ty.size}"))
            else:
                bits = int(np.array(value).astype(ty.dtype).view(f"u{ty.size}"))
            return f"{bits:#x}u"
        raise unsupported(f"a constant array of '{ty}'", "the translator has no rule for it", pos)

    def x_Unary(self, e: ast.Unary) -> str:
        inner = self.expr(e.operand)
        form = UNARY_RULES[e.op]
        if form is UnaryForm.INCREMENT:
            return f"{PREFIX_INCREMENTS[e.op]}({inner})"
        if form is UnaryForm.NEGATE:
            if isinstance(e.ty, ScalarType) and e.ty.is_int and e.ty.signed:
                return f"mp_neg<{self.ctype(e.ty, e.pos)}>({inner})"
            return f"(-{inner})"
        if form is UnaryForm.BIT_NOT and isinstance(e.ty, ScalarType):
            return f"(({self.ctype(e.ty, e.pos)})~{inner})"
        return f"({e.op.value}{inner})"

    def x_Postfix(self, e: ast.Postfix) -> str:
        return f"{POSTFIX_INCREMENTS[e.op]}({self.expr(e.operand)})"

    def x_Binary(self, e: ast.Binary) -> str:
        op = e.op.value
        if e.matrix_op is not None:  # the prelude's matrix operators, in the simulator's order of operations
            return f"({self.expr(e.left)} {op} {self.expr(e.right)})"
        left, right = self.expr(e.left), self.expr(e.right)
        rule = BINARY_RULES[e.op]
        lt, rt = e.left.ty, e.right.ty
        if isinstance(lt, PointerType) or isinstance(rt, PointerType):
            if rule.form is BinaryForm.HELPER or rule.form is BinaryForm.SHIFT or e.op is BinaryOp.MUL:
                raise unsupported(f"'{op}' on a pointer", "not C", e.pos)
            return f"({left} {op} {right})"
        op_ty = e.op_ty if e.op_ty is not None else lt
        scalar = op_ty if isinstance(op_ty, ScalarType) else None
        if rule.form is BinaryForm.PLAIN:
            return f"({left} {op} {right})"
        if rule.form is BinaryForm.SHIFT:
            if isinstance(lt, VectorType):  # the prelude's vector operators mask each count
                return f"({left} {op} {right})"
            return f"{rule.helper}({left}, {right})"
        if rule.form is BinaryForm.HELPER:
            if scalar is not None:
                return f"{rule.helper}<{self.ctype(scalar, e.pos)}>({left}, {right})"
            return f"({left} {op} {right})"  # vectors: the prelude's operators call the same helpers
        if rule.form is BinaryForm.WRAPPING:
            if scalar is not None and (scalar.is_float or (scalar.is_int and scalar.signed)):
                # Signed integers wrap; floats round after the operation, never fused (see the prelude).
                return f"{rule.helper}<{self.ctype(scalar, e.pos)}>({left}, {right})"
            if scalar is not None and scalar.is_int and scalar.bits < 32:
                return f"(({self.ctype(scalar, e.pos)})({left} {op} {right}))"
            return f"({left} {op} {right})"
        assert rule.form is BinaryForm.BITWISE
        if scalar is not None and scalar != BOOL:
            return f"(({self.ctype(scalar, e.pos)})({left} {op} {right}))"
        return f"({left} {op} {right})"

    def x_Assign(self, e: ast.Assign) -> str:
        op = e.op.value
        if isinstance(e.target, ast.Member) and len(e.target.comps) > 1:
            base = self.expr(e.target.base)
            idx = ", ".join(str(c) for c in e.target.comps)
            value = self.expr(e.value)
            binary = e.op.binary
            if binary is not None:
                if not isinstance(e.target.base, ast.Name):  # its base is read twice: only a plain name
                    raise unsupported(f"'{op}' on a swizzle of several components of this expression",
                                      "write it as 'v.xy = v.xy + w'", e.pos)
                target_ty = e.target.ty
                assert isinstance(target_ty, VectorType)
                if isinstance(e.value.ty, ScalarType):
                    value = f"mp_splat<{self.ctype(target_ty.elem, e.pos)}, {target_ty.n}>({value})"
                value = f"(mp_swz<{idx}>({base}) {binary.value} {value})"
            return f"mp_swz_set<{idx}>({base}, {value})"
        target, value = self.expr(e.target), self.expr(e.value)
        if e.op is AssignOp.ASSIGN or isinstance(e.target.ty, MatrixType):  # a matrix's 'a op= b': the checker made the value 'a op b'
            return f"({target} = {value})"
        if isinstance(e.target.ty, PointerType):
            return f"({target} {op} {value})"
        op_ty = e.op_ty if e.op_ty is not None else e.target.ty
        return f"{COMPOUND_HELPERS[e.op]}<{self.ctype(op_ty, e.pos)}>({target}, {value})"

    def x_Ternary(self, e: ast.Ternary) -> str:
        return f"({self.expr(e.cond)} ? {self.expr(e.then)} : {self.expr(e.other)})"

    def x_Call(self, e: ast.Call) -> str:
        target = e.target
        if isinstance(target, FuncInstance):
            name = self.function_name(target)
            args = []
            for p, a in zip(target.params, e.args, strict=True):
                text = self.expr(a)
                # A reference parameter given a value (a member function called on a temporary)
                # binds to that value, materialised, as the simulator does.
                args.append(f"mp_lvalue({text})" if p.kind == VarKind.REF and not a.lvalue else text)
            return f"{name}({', '.join(args)})"
        return self.builtin_rule(self, e)

    def function_name(self, inst: FuncInstance) -> str:
        key = id(inst)
        if key not in self.functions:
            self.functions[key] = (f"mp_fn{len(self.functions)}_{_safe(inst.name)}", inst)
            self.function_order.append(key)
        return self.functions[key][0]

    def x_Construct(self, e: ast.Construct) -> str:
        ty = e.ty
        if isinstance(ty, MatrixType):
            return self._matrix(e, ty)
        if isinstance(ty, SimdgroupMatrixType):  # every element one value
            a = e.args[0]
            return f"mp_sg_fill<{self.ctype(ty.elem, e.pos)}>({self.convert(self.expr(a), a.ty, ty.elem, a.pos)})"
        if not isinstance(ty, VectorType):
            self.ctype(ty, e.pos)  # refuses what has no CUDA form with its reason
            raise unsupported(f"constructing a '{ty}'", "the translator has no rule for it", e.pos)
        elem = self.ctype(ty.elem, e.pos)
        parts = []
        for a in e.args:
            text = self.expr(a)
            if isinstance(a.ty, VectorType):
                if a.ty.packed:
                    text = f"mp_unpack({text})"
                if a.ty.elem != ty.elem:
                    text = f"mp_cvt_vec<{elem}>({text})"
            elif isinstance(a.ty, ScalarType):
                text = self.convert(text, a.ty, ty.elem, a.pos)
            parts.append(text)
        if e.splat:
            made = f"mp_splat<{elem}, {ty.n}>({parts[0]})"
        else:
            made = f"mp_make<{elem}, {ty.n}>({', '.join(parts)})"
        return f"mp_pack({made})" if ty.packed else made

    def _matrix(self, e: ast.Construct, ty: MatrixType) -> str:
        """floatCxR(...): from a scalar (its diagonal), from columns, or from C*R scalars."""
        elem = self.ctype(ty.elem, e.pos)
        shape = f"{elem}, {ty.cols}, {ty.rows}"
        if e.splat:
            a = e.args[0]
            return f"mp_mat_diagonal<{shape}>({self.convert(self.expr(a), a.ty, ty.elem, a.pos)})"
        if len(e.args) == 1 and isinstance(e.args[0].ty, MatrixType):  # half3x3(m): converted element by element
            a = e.args[0]
            return self.convert(self.expr(a), a.ty, ty, a.pos)
        if isinstance(e.args[0].ty, VectorType):
            column = VectorType(ty.elem, ty.rows)
            cols = [self.convert(self.expr(a), a.ty, column, a.pos) for a in e.args]
            return f"mp_mat_columns<{shape}>({', '.join(cols)})"
        values = [self.convert(self.expr(a), a.ty, ty.elem, a.pos) for a in e.args]
        return f"mp_mat_scalars<{shape}>({', '.join(values)})"

    def x_Cast(self, e: ast.Cast) -> str:
        src, dst = e.operand.ty, e.ty
        inner = self.expr(e.operand)
        if isinstance(dst, VoidType):
            return f"((void)({inner}))"
        if e.style == ast.CastStyle.AS_TYPE and not isinstance(dst, PointerType):
            return f"mp_as<{self.ctype(dst, e.pos)}>({inner})"
        if isinstance(dst, PointerType):
            return f"(({self.ctype(dst, e.pos)})({inner}))"
        return self.convert(inner, src, dst, e.pos)

    def x_Index(self, e: ast.Index) -> str:
        if e.matrix_index:
            return f"{self.expr(e.base)}.col[{self.expr(e.index)}]"
        base, index = self.expr(e.base), self.expr(e.index)
        if e.vector_index:
            return f"{base}.c[{index}]"
        return f"{base}[{index}]"

    def x_Member(self, e: ast.Member) -> str:
        base = self.expr(e.base)
        if e.field is not None:
            return f"{base}{'->' if e.arrow else '.'}{e.name}"
        if e.comps:
            if e.arrow:
                base = f"(*{base})"
            if isinstance(e.base.ty, VectorType) and e.base.ty.packed:
                base_vec = base if len(e.comps) == 1 else f"mp_unpack({base})"
            else:
                base_vec = base
            if len(e.comps) == 1:
                return f"{base}.c[{e.comps[0]}]"
            return f"mp_swz<{', '.join(str(c) for c in e.comps)}>({base_vec})"
        raise unsupported(f"the member '.{e.name}'", "the translator has no rule for it", e.pos)

    def x_Comma(self, e: ast.Comma) -> str:
        return "(" + ", ".join(self.expr(x) for x in e.exprs) + ")"

    def x_InitList(self, e: ast.InitList) -> str:
        return "{" + ", ".join(self.expr(x) for x in e.items) + "}"

    def x_SizeOf(self, e: ast.SizeOf) -> str:  # the checker folds sizeof into a constant
        raise unsupported("'sizeof'", "the checker should have folded it", e.pos)

    def x_Convert(self, e: ast.Convert) -> str:
        inner = self.expr(e.operand)
        kind = e.kind
        if kind in (ast.ConvertKind.DECAY, ast.ConvertKind.LOAD):
            return inner
        if kind == ast.ConvertKind.PTR:
            return f"(({self.ctype(e.ty, e.pos)})({inner}))"
        return self.convert(inner, e.operand.ty, e.ty, e.pos)

    def x_StructInit(self, e: ast.StructInit) -> str:
        """A struct built from an initializer list: zero bytes, then each part at its offset."""
        sty = self.ctype(e.ty, e.pos)
        parts = []
        for k, (offset, x) in enumerate(e.parts):
            parts.append(f"{{ {self.ctype(x.ty, x.pos)} mp_p{k} = {self.expr(x)}; "
                         f"memcpy((char*)&mp_s + {offset}, &mp_p{k}, sizeof(mp_p{k})); }}")
        return f"([&]() {{ {sty} mp_s; memset(&mp_s, 0, sizeof(mp_s)); {' '.join(parts)} return mp_s; }}())"

    def x_TemporaryObject(self, e: ast.TemporaryObject) -> str:
        """'P(1, 2)' as a value: a hidden object, its constructor run on it, read as an lvalue
        (a member function may be called on it) that lives to the end of the full expression."""
        var = e.var
        name = ident(var.name)
        sty = self.ctype(var.ty, e.pos)
        return f"mp_lvalue([&]() {{ {sty} {name}; {self.expr(e.construct)}; return {name}; }}())"

    def refuse(self, e: ast.Node) -> str:
        raise unsupported(f"'{type(e).__name__}'", REFUSED_NODES[type(e)], e.pos)

    # ------------------------------------------------------------------ statements
    def stmt(self, s: ast.Stmt, indent: int) -> list[str]:
        rule = STMT_RULES.get(type(s))
        if rule is None:
            raise unsupported(f"the statement '{type(s).__name__}'", "the translator has no rule for it", s.pos)
        return rule(self, s, indent)

    def s_Block(self, s: ast.Block, indent: int) -> list[str]:
        pad = "  " * indent
        out = [pad + "{"]
        for st in s.stmts:
            out.extend(self.stmt(st, indent + 1))
        out.append(pad + "}")
        return out

    def s_Decl(self, s: ast.Decl, indent: int) -> list[str]:
        pad = "  " * indent
        out = []
        for d in s.declarators:
            sym = d.symbol
            if sym is None:
                raise unsupported(f"the declaration of '{d.name}'", "the checker bound no variable to it", d.pos)
            if sym.kind == VarKind.CONST:
                continue  # a compile-time constant: its uses are written as its value
            ty = sym.ty
            shared = sym.space is not None and str(sym.space) == "threadgroup"
            name = ident(sym.name)
            if sym.kind == VarKind.REF:
                assert d.init is not None
                const = "" if sym.mutable else "const "
                out.append(f"{pad}{const}{self.ctype(ty, d.pos)}& {name} = {self.expr(d.init)};")
                continue
            text = self.declare(ty, name, d.pos)
            if shared:
                self.uses_shared(ty)
                out.append(f"{pad}__shared__ {text};")
            elif d.init is not None:
                out.append(f"{pad}{text} = {self.expr(d.init)};")
            else:
                out.append(f"{pad}{text};")
            if d.construct is not None:  # 'P p(1, 2);': the constructor runs on the new object
                out.append(f"{pad}{self.expr(d.construct)};")
        return out

    def uses_shared(self, ty: Type) -> None:
        from ..lang.types import size_of
        self.shared_bytes += size_of(ty)

    def s_ExprStmt(self, s: ast.ExprStmt, indent: int) -> list[str]:
        return ["  " * indent + self.expr(s.expr) + ";"]

    def s_If(self, s: ast.If, indent: int) -> list[str]:
        pad = "  " * indent
        out = [f"{pad}if ({self.expr(s.cond)})"]
        out.extend(self._sub(s.then, indent))
        if s.other is not None:
            out.append(f"{pad}else")
            out.extend(self._sub(s.other, indent))
        return out

    def _sub(self, s: ast.Stmt, indent: int) -> list[str]:
        if isinstance(s, ast.Block):
            return self.s_Block(s, indent)
        return ["  " * indent + "{", *self.stmt(s, indent + 1), "  " * indent + "}"]

    def s_For(self, s: ast.For, indent: int) -> list[str]:
        pad = "  " * indent
        out = [pad + "{"]
        if s.init is not None:
            out.extend(self.stmt(s.init, indent + 1))
        cond = self.expr(s.cond) if s.cond is not None else ""
        step = self.expr(s.step) if s.step is not None else ""
        out.append(f"{pad}  for (; {cond}; {step})")
        out.extend(self._sub(s.body, indent + 1))
        out.append(pad + "}")
        return out

    def s_While(self, s: ast.While, indent: int) -> list[str]:
        return [f"{'  ' * indent}while ({self.expr(s.cond)})", *self._sub(s.body, indent)]

    def s_DoWhile(self, s: ast.DoWhile, indent: int) -> list[str]:
        pad = "  " * indent
        return [f"{pad}do", *self._sub(s.body, indent), f"{pad}while ({self.expr(s.cond)});"]

    def s_Switch(self, s: ast.Switch, indent: int) -> list[str]:
        return [f"{'  ' * indent}switch ({self.expr(s.value)})", *self.s_Block(s.body, indent)]

    def s_Case(self, s: ast.Case, indent: int) -> list[str]:
        pad = "  " * max(indent - 1, 0)
        return [f"{pad}default:" if s.value is None else f"{pad}case {self.expr(s.value)}:"]

    def s_Break(self, s: ast.Break, indent: int) -> list[str]:
        return ["  " * indent + "break;"]

    def s_Continue(self, s: ast.Continue, indent: int) -> list[str]:
        return ["  " * indent + "continue;"]

    def s_Return(self, s: ast.Return, indent: int) -> list[str]:
        pad = "  " * indent
        if self.in_function is None:  # the kernel body: to its end, where the guard meets the barriers
            return [f"{pad}goto mp_done;"]
        if s.value is None:
            return [f"{pad}return;"]
        return [f"{pad}return {self.expr(s.value)};"]

    def s_Empty(self, s: ast.Empty, indent: int) -> list[str]:
        return []

    def s_Nothing(self, s: ast.Stmt, indent: int) -> list[str]:
        return []  # checked at compile time (static_assert, using namespace): nothing runs

    def s_LocalTypeDef(self, s: ast.LocalTypeDef, indent: int) -> list[str]:
        """A struct or union defined in a function: defined at file scope (through its type, as
        every struct is), its variables declared here."""
        return self.s_Decl(s.decl, indent) if s.decl is not None else []

    def s_Refused(self, s: ast.Stmt, indent: int) -> list[str]:
        raise unsupported(f"'{type(s).__name__}'", REFUSED_NODES[type(s)], s.pos)

    # ------------------------------------------------------------------ header functions
    def function_definitions(self) -> tuple[list[str], list[str]]:
        """(prototypes, definitions) of every header function the kernel calls, directly or not."""
        protos: list[str] = []
        defs: list[str] = []
        done = 0
        while done < len(self.function_order):  # rendering a body may find more functions
            key = self.function_order[done]
            done += 1
            name, inst = self.functions[key]
            proto = self._prototype(name, inst)
            protos.append(proto + ";")
            saved = self.in_function
            self.in_function = inst
            try:
                body = self.s_Block(inst.body, 0)
            finally:
                self.in_function = saved
            defs.extend([proto, *body, ""])
        return protos, defs

    def _prototype(self, name: str, inst: FuncInstance) -> str:
        pos = inst.pos or Pos("header", 1, 1)
        if inst.ret_ref:
            ret = f"{'const ' if inst.ret_const else ''}{self.ctype(inst.ret, pos)}&"
        else:
            ret = self.ctype(inst.ret, pos)
        params = []
        for p in inst.params:
            pname = ident(p.name)
            if p.kind == VarKind.REF:
                params.append(f"{'' if p.mutable else 'const '}{self.ctype(p.ty, pos)}& {pname}")
            elif isinstance(p.ty, ArrayType):
                params.append(self.declare(p.ty, pname, pos))
            else:
                params.append(f"{self.ctype(p.ty, pos)} {pname}")
        return f"__device__ {ret} {name}({', '.join(params)})"

    def struct_definitions(self) -> list[str]:
        out: list[str] = []
        seen: set[str] = set()
        for name, ty in list(self.types.structs.items()):
            self._struct(name, ty, seen, out)
        return out

    def _struct(self, name: str, ty: StructType, seen: set[str], out: list[str]) -> None:
        if name in seen:
            return
        seen.add(name)
        pos = Pos("header", 1, 1)
        fields = []
        for f in ty.fields:
            inner = f.ty
            while isinstance(inner, ArrayType):
                inner = inner.elem
            if isinstance(inner, StructType):
                from .types import struct_name
                self._struct(struct_name(inner), inner, seen, out)
            fields.append(f"  {self.declare(f.ty, f.name, pos)};")
        union = len(ty.fields) > 1 and all(f.offset == 0 for f in ty.fields)  # every member at offset 0
        out.append(f"{'union' if union else 'struct'} alignas({ty.align}) {name} {{")
        out.extend(fields)
        out.append("};")


def _bits_type(ty: Type) -> Type:
    """The same array shape of unsigned integers as wide as its elements."""
    from ..lang.types import UCHAR, UINT, ULONG, USHORT
    if isinstance(ty, ArrayType):
        return ArrayType(_bits_type(ty.elem), ty.n)
    assert isinstance(ty, ScalarType)
    return {1: UCHAR, 2: USHORT, 4: UINT, 8: ULONG}[ty.size]


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in name)


#: Names a Metal kernel may use that mean something else in CUDA C++.
_CUDA_RESERVED = {"this", "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "new", "delete", "class",
                  "private", "public", "protected", "virtual", "friend", "operator", "template", "typename",
                  "namespace", "try", "catch", "throw", "explicit", "mutable", "export", "register", "asm"}


def ident(name: str) -> str:
    """A variable's name as CUDA C++ can take it: as written when it can, else made one
    ('this' of a member function, a hidden temporary 'P temporary@3:5', a CUDA built-in name)."""
    if name in _CUDA_RESERVED or name.startswith("mp_"):
        return f"mp_{name}_"
    if name.isidentifier() and name.isascii():
        return name
    return f"mp_v_{_safe(name)}"


#: Node classes with no CUDA form yet, and why (a located error names the construct and this).
REFUSED_NODES: dict[type, str] = {
    ast.PackExpansion: "parameter packs are not translated yet",
}

EXPR_RULES: dict[type, Callable[[Renderer, Any], str]] = {
    ast.IntLit: Renderer.x_IntLit,
    ast.FloatLit: Renderer.x_FloatLit,
    ast.BoolLit: Renderer.x_BoolLit,
    ast.Name: Renderer.x_Name,
    ast.Unary: Renderer.x_Unary,
    ast.Postfix: Renderer.x_Postfix,
    ast.Binary: Renderer.x_Binary,
    ast.Assign: Renderer.x_Assign,
    ast.Ternary: Renderer.x_Ternary,
    ast.Call: Renderer.x_Call,
    ast.Construct: Renderer.x_Construct,
    ast.Cast: Renderer.x_Cast,
    ast.Index: Renderer.x_Index,
    ast.Member: Renderer.x_Member,
    ast.Comma: Renderer.x_Comma,
    ast.InitList: Renderer.x_InitList,
    ast.SizeOf: Renderer.x_SizeOf,
    ast.Convert: Renderer.x_Convert,
    ast.TemporaryObject: Renderer.x_TemporaryObject,
    ast.StructInit: Renderer.x_StructInit,
    ast.PackExpansion: Renderer.refuse,
}

STMT_RULES: dict[type, Callable[[Renderer, Any, int], list[str]]] = {
    ast.Block: Renderer.s_Block,
    ast.Decl: Renderer.s_Decl,
    ast.ExprStmt: Renderer.s_ExprStmt,
    ast.If: Renderer.s_If,
    ast.For: Renderer.s_For,
    ast.While: Renderer.s_While,
    ast.DoWhile: Renderer.s_DoWhile,
    ast.Switch: Renderer.s_Switch,
    ast.Case: Renderer.s_Case,
    ast.Break: Renderer.s_Break,
    ast.Continue: Renderer.s_Continue,
    ast.Return: Renderer.s_Return,
    ast.Empty: Renderer.s_Empty,
    ast.StaticAssert: Renderer.s_Nothing,
    ast.UsingNamespace: Renderer.s_Nothing,
    ast.LocalTypeDef: Renderer.s_LocalTypeDef,
    AliasStmt: Renderer.s_Nothing,  # a type alias in a body: resolved by the checker
}


def _subclasses(cls: type) -> list[type]:
    out: list[type] = []
    children: list[type] = cls.__subclasses__()
    for child in children:
        out.append(child)
        out.extend(_subclasses(child))
    return out


def missing_rules() -> list[str]:
    """Expression and statement classes of the syntax tree (the parser's own included) with no
    rule (nor refusal) here."""
    missing = [c.__name__ for c in _subclasses(ast.Expr) if c not in EXPR_RULES]
    missing += [c.__name__ for c in _subclasses(ast.Stmt) if c not in STMT_RULES]
    return sorted(set(missing))


_MISSING = missing_rules()
if _MISSING:  # a node class added to the syntax tree needs its CUDA rule here
    raise ImportError(f"the CUDA renderer has no rule for the syntax tree's {', '.join(_MISSING)}")
_MISSING_OPERATORS = missing_operator_rules()
if _MISSING_OPERATORS:  # an operator added to the front end's enums needs its CUDA rule here
    raise ImportError(f"the CUDA renderer has no rule for the operator(s) {', '.join(_MISSING_OPERATORS)}")

__all__ = ["Renderer", "Unsupported", "EXPR_RULES", "STMT_RULES", "missing_rules", "missing_operator_rules",
           "BINARY_RULES", "UNARY_RULES", "COMPOUND_HELPERS"]
_ = (AtomicType, HALF)
