"""Expressions: the type of every operator, name, subscript, swizzle, cast and constructor."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...lang.errors import CompileError, Pos, did_you_mean
from ...lang.kernel_parameters import METAL_ATTRIBUTES, ParamRole
from ...lang.metal_namespace import is_metal_qualified, strip_metal_namespace
from ...lang.types import (
    BOOL,
    CHAR,
    FLOAT,
    HALF,
    INT,
    LONG,
    MEM_FLAGS,
    MEMORY_ORDER,
    SCALARS,
    UINT,
    ULONG,
    AddressSpace,
    ArrayType,
    AtomicType,
    EnumType,
    MatrixType,
    MemFlags,
    PointerType,
    ScalarType,
    SimdgroupMatrixType,
    StructType,
    Type,
    VectorType,
    VoidType,
    align_of,
    is_arith,
    promote,
    scalar_of,
    size_of,
    usual_arithmetic,
    vector,
    with_elem,
)
from .. import ast
from ..ast import AssignOp, BinaryOp, CastStyle, UnaryOp
from ..dispatch import dispatch_table
from ..symbols import Var, VarKind
from .checker_state import CheckerPart
from .entries import (
    FunctionArgumentEntry,
    MemberEntry,
    MethodEntry,
    NameEntry,
    ParameterPackEntry,
    VariableTemplateEntry,
)
from .helpers import designates_part_of, start_pos, typed_placeholder

SWIZZLE_SETS = ("xyzw", "rgba")

#: Metal's enum constants, accepted with or without their 'mem_flags::' / 'metal::' prefixes.
ENUM_CONSTANTS = {
    "mem_flags::mem_none": (MEM_FLAGS, MemFlags.NONE), "mem_flags::mem_device": (MEM_FLAGS, MemFlags.DEVICE),
    "mem_flags::mem_threadgroup": (MEM_FLAGS, MemFlags.THREADGROUP),
    "mem_flags::mem_texture": (MEM_FLAGS, MemFlags.TEXTURE),
    "mem_flags::mem_threadgroup_imageblock": (MEM_FLAGS, MemFlags.THREADGROUP_IMAGEBLOCK),
    "mem_flags::mem_object_data": (MEM_FLAGS, MemFlags.OBJECT_DATA),
    "memory_order_relaxed": (MEMORY_ORDER, 0), "memory_order::memory_order_relaxed": (MEMORY_ORDER, 0),
    "memory_order_seq_cst": (MEMORY_ORDER, 5), "memory_order_acquire": (MEMORY_ORDER, 2),
    "memory_order_release": (MEMORY_ORDER, 3), "memory_order_acq_rel": (MEMORY_ORDER, 4),
}


class Expressions(CheckerPart):
    def expr(self, e: ast.Expr) -> ast.Expr:
        handler = EXPRESSION_HANDLERS.get(type(e))
        if handler is None:  # a node in NEVER_CHECKED
            raise CompileError(f"unsupported expression ({type(e).__name__})", e.pos)
        out = handler(self, e)
        assert out.ty is not None, type(e).__name__
        return out

    def e_IntLit(self, e: ast.IntLit) -> ast.Expr:
        v = e.value
        s = e.suffix.replace("ll", "l")
        if e.radix == 0:  # a character literal
            e.ty = SCALARS["char"]
        elif "u" in s:
            e.ty = UINT if (v < 2**32 and "l" not in s) else ULONG
        elif "l" in s:
            e.ty = LONG if v < 2**63 else ULONG
        elif e.radix == 10:
            e.ty = INT if v < 2**31 else (LONG if v < 2**63 else ULONG)
        else:
            e.ty = INT if v < 2**31 else UINT if v < 2**32 else LONG if v < 2**63 else ULONG
        if v >= 2**64:
            raise CompileError("integer literal is too large", e.pos)
        return e

    def e_FloatLit(self, e: ast.FloatLit) -> ast.Expr:
        # Metal has no double: an unsuffixed floating literal is a float.
        e.ty = HALF if e.suffix == "h" else FLOAT
        return e

    def e_BoolLit(self, e: ast.BoolLit) -> ast.Expr:
        e.ty = BOOL
        return e

    def e_Name(self, e: ast.Name) -> ast.Expr:
        name = e.ident
        sym = self.chk.lookup.lookup_name(name)
        if isinstance(sym, VariableTemplateEntry):
            sym = self.chk.types.variable_instance(sym.decl, e.template_args, e.pos)
        if sym is None and e.template_args is not None:
            sym = self.chk.types.template_struct_constant(name, e.template_args, e.pos)
        if sym is None and is_metal_qualified(name):
            sym = self.chk.scope.lookup(strip_metal_namespace(name))
        if sym is None and e.template_args is None:
            sym = self.chk.templates.member_through_type_name(name, e.pos)
        if isinstance(sym, Var):
            e.symbol = sym
            e.ty = sym.ty
            e.lvalue = sym.kind in (VarKind.LOCAL, VarKind.ARRAY, VarKind.REF, VarKind.TGVAR, VarKind.MEMVAR)
            if sym.kind in (VarKind.ARRAY, VarKind.TGVAR, VarKind.MEMVAR):
                e.space = sym.space
            if sym.kind in (VarKind.TGVAR, VarKind.MEMVAR):
                e.memory = True
            if sym.kind in (VarKind.TGVAR, VarKind.MEMVAR, VarKind.LOCAL, VarKind.REF) and not sym.mutable:
                e.const_mem = True
            if sym.kind == VarKind.SCALAR_INPUT:  # a 'constant T&' argument (or a whole kernel's 'device T&')
                e.lvalue = e.memory = True
                e.const_mem = not sym.mutable
                e.space = sym.space or AddressSpace.CONSTANT
            return e
        if isinstance(sym, MemberEntry):
            return self.chk.structs.member_name(e)
        if isinstance(sym, MethodEntry):
            raise CompileError(f"'{name}' is a member function; did you forget the parentheses '()'?", e.pos)
        if isinstance(sym, ParameterPackEntry):
            raise self.chk.packs.unexpanded_pack_error(name, e.pos)
        if isinstance(sym, FunctionArgumentEntry):
            raise CompileError(f"'{name}' is a function pointer parameter: the simulator supports calling it and "
                               "passing it on as an argument, not using it as a value", e.pos)
        if isinstance(sym, NameEntry):  # a type, a template or a type pack
            raise CompileError(f"'{name}' is a type, not a value", e.pos)
        name = name.removeprefix("::")  # what is left are the library's names: '::metal::x' is 'metal::x'
        enum = ENUM_CONSTANTS.get(strip_metal_namespace(name)) or ENUM_CONSTANTS.get("mem_flags::" + name)
        if enum is not None:
            e.ty = enum[0]
            e.symbol = Var(name, enum[0], VarKind.CONST, e.pos, const_value=enum[1], mutable=False)
            return e
        const = self.chk.library.constant(name, e.template_args, self.chk)
        if const is not None:
            ty, value = const
            e.ty = ty
            e.symbol = Var(name, ty, VarKind.CONST, e.pos, const_value=value, mutable=False)
            return e
        if self.chk.library.function(name) is not None or self.chk.lookup.find_function(name) is not None:
            raise CompileError(f"'{name}' is a function; did you forget the parentheses '()'?", e.pos)
        owner = self._output_of(name)
        if owner is not None:  # 'dx_shape' for an output dx: no near name fits, the cause is the rule
            raise CompileError(f"use of undeclared identifier '{name}': '{owner}' is an output, and outputs get no "
                               f"{name[len(owner):]} (only inputs have _shape, _strides and _ndim); take the size "
                               "from an input's shape or from a constant", e.pos)
        raise CompileError(f"use of undeclared identifier '{name}'" + did_you_mean(name, self._value_candidates()),
                           e.pos)

    def _output_of(self, name: str) -> str | None:
        """The output whose _shape, _strides or _ndim ``name`` asks for, or None."""
        for suffix in ("_shape", "_strides", "_ndim"):
            if name.endswith(suffix):
                owner = self.chk.scope.lookup(name.removesuffix(suffix))
                if isinstance(owner, Var) and owner.role == ParamRole.OUTPUT:
                    return owner.name
        return None

    def _value_candidates(self) -> set[str]:
        names = {k for k, v in self.chk.types.all_scope_items() if isinstance(v, Var)}
        return (names | set(self.chk.func_defs) | {name for name, _ in METAL_ATTRIBUTES}
                | self.chk.library.constant_names())

    def e_Unary(self, e: ast.Unary) -> ast.Expr:
        op = e.op
        if op.is_increment:
            e.operand = self.expr(e.operand)
            self.require_modifiable(e.operand)
            t = e.operand.ty
            if not (isinstance(t, ScalarType | VectorType | PointerType)) or t == BOOL:
                raise CompileError(f"cannot apply '{op}' to a value of type '{t}'", e.pos)
            self.no_void_arithmetic(t, op, e.pos)
            e.ty = t
            return e
        if op == UnaryOp.ADDRESS:
            e.operand = self.expr(e.operand)
            if not e.operand.lvalue:
                raise CompileError("cannot take the address of a temporary value", e.pos)
            if not e.operand.memory and not isinstance(e.operand.ty, ArrayType):
                raise CompileError("cannot take the address of this value", e.pos)
            space = e.operand.space or AddressSpace.THREAD
            const = e.operand.const_mem
            e.ty = PointerType(e.operand.ty, space, const)
            return e
        if op == UnaryOp.DEREF:
            if isinstance(e.operand, ast.Name) and e.operand.ident == "this":
                # The simulator binds 'this' to the object itself (a reference): '*this' is that object.
                return self.expr(e.operand)
            e.operand = self.chk.conversions.rvalue(self.expr(e.operand))
            t = e.operand.ty
            if not isinstance(t, PointerType):
                raise CompileError(f"cannot dereference a value of type '{t}'", e.pos)
            self.no_void_access(t, "dereference", e.pos)
            e.ty = t.pointee
            e.lvalue = True
            e.memory = True
            e.space = t.space
            e.const_mem = t.const
            return e
        operand = self.expr(e.operand)
        if isinstance(operand.ty, StructType):
            return self.chk.operators.overloaded_operator(e.pos, op, [operand])
        e.operand = self.chk.conversions.rvalue(operand)
        t = e.operand.ty
        if isinstance(t, MatrixType):
            return self.chk.matrices.matrix_unary(e, t)
        if op == UnaryOp.NOT:
            if isinstance(t, VectorType):
                e.operand = self.chk.conversions.convert(e.operand, vector(BOOL, t.n), "'!'")
                e.ty = vector(BOOL, t.n)
            else:
                e.operand = self.chk.conversions.to_bool(e.operand)
                e.ty = BOOL
            return e
        if not is_arith(t):
            raise CompileError(f"invalid argument type '{t}' to unary '{op}'", e.pos)
        if op == UnaryOp.BIT_NOT and scalar_of(t).is_float:
            raise CompileError(f"invalid argument type '{t}' to unary '~' (integers only)", e.pos)
        rt = with_elem(t, promote(scalar_of(t))) if scalar_of(t).kind != "float" else t
        e.operand = self.chk.conversions.convert(e.operand, rt, f"unary '{op}'")
        e.ty = rt
        return e

    def e_Postfix(self, e: ast.Postfix) -> ast.Expr:
        e.operand = self.expr(e.operand)
        self.require_modifiable(e.operand)
        t = e.operand.ty
        if not isinstance(t, ScalarType | VectorType | PointerType) or t == BOOL:
            raise CompileError(f"cannot apply '{e.op}' to a value of type '{t}'", e.pos)
        self.no_void_arithmetic(t, e.op, e.pos)
        e.ty = t
        return e

    def require_modifiable(self, e: ast.Expr) -> None:
        start = start_pos(e)
        if isinstance(e, ast.Name) and isinstance(e.symbol, Var) and e.symbol.kind == VarKind.SCALAR_INPUT \
                and not e.symbol.mutable:
            raise CompileError(f"cannot assign to '{e.ident}': it is a read-only reference to constant memory "
                               f"('constant {e.ty}&'); copy it into a local variable first", start)
        if not e.lvalue:
            raise CompileError("expression is not assignable", start)
        if isinstance(e, ast.Name) and isinstance(e.symbol, Var) and not e.symbol.mutable:
            raise CompileError(f"cannot assign to '{e.ident}': it is read-only (const)", start)
        if e.const_mem:
            read_only: dict[AddressSpace | None, str] = {
                AddressSpace.DEVICE: "a 'const device' buffer (MLX's inputs are 'const')",
                AddressSpace.CONSTANT: "'constant' memory"}
            what = read_only.get(e.space, "a const object")
            raise CompileError(f"cannot assign to {what}: it is read-only", start)
        if isinstance(e.ty, ArrayType):
            raise CompileError("arrays cannot be assigned as a whole; assign their elements", e.pos)
        if isinstance(e.ty, AtomicType):
            raise CompileError("atomic objects can only be changed with atomic_* functions", e.pos)
        if isinstance(e, ast.Member) and e.dup_swizzle:
            raise CompileError("cannot assign to a swizzle with repeated components", e.pos)

    def arith_result(self, op: str, l: ast.Expr, r: ast.Expr, pos: Pos) -> Type:
        lt, rt = l.ty, r.ty
        if not is_arith(lt) or not is_arith(rt):
            raise CompileError(f"invalid operands to binary '{op}' ('{lt}' and '{rt}')", pos)
        if isinstance(lt, VectorType) and isinstance(rt, VectorType):
            if lt.n != rt.n or lt.elem != rt.elem:
                raise CompileError(f"invalid operands to binary '{op}' ('{lt}' and '{rt}'): vector types must match",
                                   pos)
            return vector(lt.elem, lt.n)
        if isinstance(lt, VectorType):
            return vector(lt.elem, lt.n)
        if isinstance(rt, VectorType):
            return vector(rt.elem, rt.n)
        return usual_arithmetic(lt, rt)

    def e_Binary(self, e: ast.Binary) -> ast.Expr:
        op = e.op
        l, r = self.expr(e.left), self.expr(e.right)
        if isinstance(l.ty, StructType) or isinstance(r.ty, StructType):
            return self.chk.operators.overloaded_operator(e.pos, op, [l, r])
        l, r = self.chk.conversions.rvalue(l), self.chk.conversions.rvalue(r)
        lt, rt = l.ty, r.ty
        if isinstance(lt, EnumType) and lt == rt and op in (BinaryOp.BIT_OR, BinaryOp.BIT_AND):
            e.left, e.right = l, r
            e.ty = lt
            e.op_ty = INT
            return e
        if op.is_logical:
            if isinstance(lt, VectorType) or isinstance(rt, VectorType):
                raise CompileError(f"'{op}' needs scalar operands; use all()/any() for vectors", e.pos)
            e.left, e.right = self.chk.conversions.to_bool(l), self.chk.conversions.to_bool(r)
            e.ty = BOOL
            return e
        # Pointer arithmetic and comparison.
        if isinstance(lt, PointerType) or isinstance(rt, PointerType):
            return self._pointer_binary(e, l, r)
        if isinstance(lt, MatrixType) or isinstance(rt, MatrixType):
            return self.chk.matrices.matrix_binary(e, l, r)
        if op.is_shift:
            if not (is_arith(lt) and is_arith(rt)) or scalar_of(lt).is_float or scalar_of(rt).is_float:
                raise CompileError(f"invalid operands to binary '{op}' ('{lt}' and '{rt}'): integers only", e.pos)
            if isinstance(lt, VectorType) or isinstance(rt, VectorType):
                res = self.arith_result(op, l, r, e.pos)
                e.left, e.right = self.chk.conversions.convert(l, res, op), self.chk.conversions.convert(r, res, op)
            else:
                res = promote(lt)
                e.left = self.chk.conversions.convert(l, res, op)
                e.right = self.chk.conversions.convert(r, promote(rt), op)
            e.op_ty = res
            e.ty = res
            return e
        res = self.arith_result(op, l, r, e.pos)
        elem = scalar_of(res)
        if (op == BinaryOp.MOD or op.is_bitwise) and elem.is_float:
            hint = "; use fmod() for floating-point remainder" if op == BinaryOp.MOD else ""
            raise CompileError(f"invalid operands to binary '{op}' ('{lt}' and '{rt}'){hint}", e.pos)
        if op.is_bitwise and elem == BOOL:
            pass
        elif elem.kind != "float" and not isinstance(res, VectorType):
            res = with_elem(res, promote(elem))
        e.left, e.right = self.chk.conversions.convert(l, res, f"'{op}'"), self.chk.conversions.convert(r, res, f"'{op}'")
        e.op_ty = res
        if op.is_comparison:
            e.ty = vector(BOOL, res.n) if isinstance(res, VectorType) else BOOL
        else:
            e.ty = res
        return e

    def _pointer_binary(self, e: ast.Binary, l: ast.Expr, r: ast.Expr) -> ast.Expr:
        op = e.op
        lt, rt = l.ty, r.ty
        if op in (BinaryOp.ADD, BinaryOp.SUB):
            for t in (lt, rt):
                self.no_void_arithmetic(t, op, e.pos)
        if op in (BinaryOp.ADD, BinaryOp.SUB) and isinstance(lt, PointerType) and isinstance(rt, ScalarType) and rt.is_int:
            e.left, e.right = l, self.chk.conversions.convert(r, LONG, "pointer arithmetic")
            e.ty = lt
            return e
        if op == BinaryOp.ADD and isinstance(rt, PointerType) and isinstance(lt, ScalarType) and lt.is_int:
            e.left, e.right = r, self.chk.conversions.convert(l, LONG, "pointer arithmetic")
            e.ty = rt
            return e
        if isinstance(lt, PointerType) and isinstance(rt, PointerType):
            if lt.pointee != rt.pointee:
                raise CompileError(f"'{op}' on pointers to different types ('{lt}' and '{rt}')", e.pos)
            e.left, e.right = l, r
            if op == BinaryOp.SUB:
                e.ty = LONG
                return e
            if op.is_comparison:
                e.ty = BOOL
                return e
        raise CompileError(f"invalid operands to binary '{op}' ('{lt}' and '{rt}')", e.pos)

    def e_Assign(self, e: ast.Assign) -> ast.Expr:
        target = self.expr(e.target)
        self.require_modifiable(target)
        e.target = target
        tt = target.ty
        if isinstance(e.value, ast.InitList):
            if isinstance(tt, VectorType | StructType | MatrixType) and e.op == AssignOp.ASSIGN:
                e.value = self.chk.structs.initial_value(e.value, tt)
            else:
                raise CompileError("brace initializers can only be assigned to vectors, matrices and structs",
                                   e.value.pos)
        value = self.expr(e.value)
        if isinstance(tt, StructType) and e.op != AssignOp.ASSIGN:
            return self.chk.operators.overloaded_operator(e.pos, e.op, [target, value])
        value = self.chk.conversions.rvalue(value)
        op = e.op.binary
        if op is None:  # '='
            e.value = self.chk.conversions.convert(value, tt, "assignment")
            e.ty = tt
            return e
        if isinstance(tt, PointerType):
            if op not in (BinaryOp.ADD, BinaryOp.SUB) or not (isinstance(value.ty, ScalarType) and value.ty.is_int):
                raise CompileError(f"invalid operands to '{e.op}' on a pointer", e.pos)
            self.no_void_arithmetic(tt, e.op, e.pos)
            e.value = self.chk.conversions.convert(value, LONG, "pointer arithmetic")
            e.op_ty = None
            e.ty = tt
            return e
        # Evaluate 'a op= b' as 'a = (type of a)(a op b)'.
        fake = self.e_Binary(ast.Binary(e.pos, op, typed_placeholder(target), value))
        if isinstance(tt, MatrixType):
            if fake.ty != tt:
                raise CompileError(f"invalid compound assignment '{e.op}' to '{tt}' (the result is '{fake.ty}')",
                                   e.pos)
            e.value, e.op_ty = fake, None  # the whole 'a op b', with a read in place
            e.ty = tt
            return e
        assert isinstance(fake, ast.Binary)  # an operator on non-struct, non-matrix operands stays one
        e.op_ty = fake.op_ty
        e.value = fake.right
        if isinstance(tt, VectorType) and not isinstance(fake.ty, VectorType):
            raise CompileError(f"invalid compound assignment to '{tt}'", e.pos)
        if isinstance(tt, ScalarType) and isinstance(fake.ty, VectorType):
            raise CompileError(f"cannot assign a vector result to scalar '{tt}'", e.pos)
        e.ty = tt
        return e

    def e_Ternary(self, e: ast.Ternary) -> ast.Expr:
        e.cond = self.chk.stmts.condition(e.cond)
        a = self.chk.conversions.rvalue(self.expr(e.then))
        b = self.chk.conversions.rvalue(self.expr(e.other))
        if a.ty == b.ty:
            e.ty = a.ty
        elif is_arith(a.ty) and is_arith(b.ty):
            e.ty = self.arith_result("?:", a, b, e.pos)
        elif isinstance(a.ty, PointerType) and isinstance(b.ty, PointerType) and a.ty.pointee == b.ty.pointee \
                and a.ty.space == b.ty.space:
            e.ty = PointerType(a.ty.pointee, a.ty.space, a.ty.const or b.ty.const)
        else:
            raise CompileError(f"incompatible operand types in '?:' ('{a.ty}' and '{b.ty}')", e.pos)
        e.then, e.other = self.chk.conversions.convert(a, e.ty, "'?:'"), self.chk.conversions.convert(b, e.ty, "'?:'")
        return e

    def e_Comma(self, e: ast.Comma) -> ast.Expr:
        e.exprs = [self.chk.conversions.rvalue(self.expr(x)) for x in e.exprs]
        e.ty = e.exprs[-1].ty
        return e

    def e_Index(self, e: ast.Index) -> ast.Expr:
        base = self.expr(e.base)
        if isinstance(base.ty, StructType):
            return self.chk.operators.overloaded_operator(e.pos, "[]", [base, self.expr(e.index)])
        idx = self.chk.conversions.rvalue(self.expr(e.index))
        if not (isinstance(idx.ty, ScalarType) and idx.ty.kind in ("int", "bool")):
            raise CompileError(f"array subscript is not an integer (it is '{idx.ty}')", e.index.pos)
        bt = base.ty
        if isinstance(bt, MatrixType):
            return self.chk.matrices.matrix_column(e, base, idx)
        if isinstance(bt, VectorType):
            e.base = base
            e.index = self.chk.conversions.convert(idx, promote(idx.ty), "subscript")
            e.ty = bt.elem
            e.vector_index = True
            designates_part_of(e, base)
            return e
        if isinstance(bt, ArrayType):
            e.base = base
            e.ty = bt.elem
            e.space = base.space or AddressSpace.THREAD
            e.const_mem = base.const_mem or (isinstance(base, ast.Name) and not base.symbol.mutable
                                             and base.symbol.kind == VarKind.CONST)
        elif isinstance(bt, PointerType):
            self.no_void_access(bt, "subscript", e.pos)
            e.base = base
            e.ty = bt.pointee
            e.space = bt.space
            e.const_mem = bt.const
        else:
            raise CompileError(f"subscripted value is not an array, pointer or vector (it is '{bt}')", e.pos)
        e.index = self.chk.conversions.convert(idx, LONG if (idx.ty.bits > 32 or idx.ty == UINT) else INT, "subscript")
        e.lvalue = True
        e.memory = True
        return e

    def e_Member(self, e: ast.Member) -> ast.Expr:
        if e.arrow:
            return self.chk.structs.struct_member(e)
        base = self.expr(e.base)
        bt = base.ty
        if isinstance(bt, StructType):
            return self.chk.structs.struct_member(e, base)
        if not isinstance(bt, VectorType):
            raise CompileError(f"member reference base type '{bt}' is not a vector or struct", e.pos)
        comps = []
        name = e.name
        chosen = next((s for s in SWIZZLE_SETS if name[0] in s), None)
        if chosen is None or any(c not in chosen for c in name) or len(name) > 4:
            raise CompileError(f"invalid vector swizzle '.{name}' on '{bt}'", e.pos)
        for c in name:
            k = chosen.index(c)
            if k >= bt.n:
                raise CompileError(f"vector component '.{c}' is out of range for '{bt}'", e.pos)
            comps.append(k)
        e.base = base
        e.comps = comps
        e.ty = bt.elem if len(comps) == 1 else vector(bt.elem, len(comps))
        e.dup_swizzle = len(set(comps)) != len(comps)
        designates_part_of(e, base)
        if isinstance(base, ast.Name) and isinstance(base.symbol, Var) and not base.symbol.mutable:
            e.const_mem = True
        return e

    @staticmethod
    def no_void_access(t: PointerType, what: str, pos: Pos) -> None:
        """A 'void*' holds an address but no type to read there (PyTorch's strided kernels cast it
        to a typed pointer at a byte offset first)."""
        if isinstance(t.pointee, VoidType):
            raise CompileError(f"cannot {what} a '{t}': a void pointer has no element type; cast it to a typed "
                               f"pointer first, e.g. static_cast<{PointerType(FLOAT, t.space, t.const)}>(...)", pos)

    @staticmethod
    def no_void_arithmetic(t: Type, op: str, pos: Pos) -> None:
        if isinstance(t, PointerType) and isinstance(t.pointee, VoidType):
            raise CompileError(f"arithmetic '{op}' on a '{t}': a void pointer has no element size; cast it to "
                               f"'{PointerType(CHAR, t.space, t.const)}' to move by bytes", pos)

    def e_Call(self, e: ast.Call) -> ast.Expr:
        return self.chk.calls.check_call(e)

    def e_Cast(self, e: ast.Cast) -> ast.Expr:
        ty = self.chk.types.resolve_type(e.type_spec)
        operand = self.chk.conversions.rvalue(self.expr(e.operand))
        src = operand.ty
        e.ty = ty
        if e.style == CastStyle.AS_TYPE and isinstance(ty, PointerType) and isinstance(src, PointerType):
            e.style = CastStyle.REINTERPRET  # as_type of a pointer: the same address, another pointee type
        if e.style == CastStyle.AS_TYPE:
            if not (is_arith(ty) and is_arith(src)):
                # Only arithmetic types have sizes to compare ('mem_flags' has none here).
                raise CompileError(f"as_type<{ty}> needs a scalar or vector value of the same size (got '{src}')",
                                   e.pos)
            if size_of(ty) != size_of(src):
                raise CompileError(f"as_type<{ty}> needs a value of the same size (got '{src}', "
                                   f"{size_of(src)} vs {size_of(ty)} bytes)", e.pos)
            e.operand = operand
            return e
        if isinstance(ty, PointerType):
            if not isinstance(src, PointerType):
                raise CompileError(f"cannot cast '{src}' to pointer type '{ty}'", e.pos)
            if src.space != ty.space:
                hint = ""
                if src.space == AddressSpace.CONSTANT and ty.space == AddressSpace.DEVICE:
                    hint = ("; MLX passes inputs with fewer than 8 elements as 'constant' pointers, so cast to "
                            f"a 'constant' pointer (e.g. '{PointerType(ty.pointee, AddressSpace.CONSTANT, ty.const)}')")
                raise CompileError(f"cannot cast between address spaces ('{src}' to '{ty}'){hint}", e.pos)
            e.operand = operand
            return e
        if isinstance(ty, MatrixType) and isinstance(src, MatrixType):
            if (ty.cols, ty.rows) != (src.cols, src.rows):
                raise CompileError(f"cannot cast '{src}' to '{ty}': the shapes differ", e.pos)
            e.operand = operand
            return e
        if isinstance(ty, VectorType) and isinstance(src, VectorType):
            if ty.n != src.n:
                raise CompileError(f"cannot cast '{src}' to '{ty}': sizes differ", e.pos)
            e.operand = operand
            return e
        if isinstance(ty, ScalarType | VectorType) and is_arith(src):
            if isinstance(src, VectorType) and isinstance(ty, ScalarType):
                raise CompileError(f"cannot cast vector '{src}' to scalar '{ty}'", e.pos)
            e.operand = operand
            return e
        if isinstance(ty, ScalarType) and isinstance(src, PointerType | EnumType):
            e.operand = operand
            return e
        if isinstance(ty, VoidType):
            e.operand = operand
            return e
        raise CompileError(f"cannot cast '{src}' to '{ty}'", e.pos)

    def e_TemporaryObject(self, e: ast.TemporaryObject) -> ast.Expr:
        return e  # made checked by temporary_object; checked again as a compound assignment's operand

    def e_Construct(self, e: ast.Construct) -> ast.Expr:
        spec = e.type_spec
        if len(spec.member) == 1 and spec.args:
            # 'Max<T>::apply(a, b)': a static member function of a struct template's instance.
            owner = self.chk.types.resolve_type(ast.TypeSpec(spec.pos, spec.name, spec.args))
            name = spec.member[0]
            if isinstance(owner, StructType) and any(m.name == name for m in self.chk.struct_defs[owner].methods):
                call = ast.Call(e.pos, ast.Name(spec.pos, name), self.chk.packs.expand_packs(e.args, e.pos))
                return self.chk.structs.static_call(call, owner, name)
        ty = self.chk.types.resolve_type(e.type_spec)
        return self.construct(e, ty)

    def construct(self, e: ast.Construct, ty: Type) -> ast.Expr:
        if isinstance(ty, MatrixType):
            return self.chk.matrices.matrix_construct(e, ty)
        if isinstance(ty, SimdgroupMatrixType):
            if len(e.args) > 1:
                raise CompileError(f"'{ty}(...)' takes one value to fill the matrix with", e.pos)
            value = self.expr(e.args[0]) if e.args else self.expr(ast.IntLit(e.pos, 0))
            e.args = [self.chk.conversions.convert(self.chk.conversions.rvalue(value), ty.elem, "matrix fill value")]
            e.ty, e.splat = ty, True
            return e
        if isinstance(ty, StructType):
            if len(e.args) == 1 and not isinstance(e.args[0], ast.InitList):
                arg = self.expr(e.args[0])
                if arg.ty == ty:
                    return arg  # a copy
                e.args[0] = arg
            if self.chk.structs.has_constructors(ty):
                return self.chk.structs.temporary_object(ty, e.args, e.pos)
            return self.chk.structs.struct_init(ast.InitList(e.pos, list(e.args)), ty, e.pos)
        args = [self.chk.conversions.rvalue(self.expr(a)) for a in e.args]
        if isinstance(ty, ScalarType):
            if len(args) == 0:
                lit = ast.IntLit(e.pos, 0)
                self.e_IntLit(lit)
                return self.chk.conversions.convert(lit, ty, "value-initialization")
            if len(args) != 1:
                raise CompileError(f"'{ty}(...)' takes one argument", e.pos)
            if not isinstance(args[0].ty, ScalarType | EnumType):
                raise CompileError(f"cannot convert '{args[0].ty}' to '{ty}'", e.pos)
            cast = ast.Cast(e.pos, e.type_spec, args[0], CastStyle.C)
            cast.ty = ty
            return cast
        if isinstance(ty, VectorType):
            if len(args) == 1 and isinstance(args[0].ty, ScalarType):
                e.args = [self.chk.conversions.convert(args[0], ty.elem, "vector constructor")]
                e.ty = ty
                e.splat = True
                return e
            if len(args) == 1 and isinstance(args[0].ty, VectorType) and args[0].ty.n == ty.n:
                cast = ast.Cast(e.pos, e.type_spec, args[0], CastStyle.C)
                cast.ty = ty
                return cast
            total = 0
            conv = []
            for a in args:
                if isinstance(a.ty, VectorType):
                    total += a.ty.n
                    conv.append(self.chk.conversions.make_convert(a, vector(ty.elem, a.ty.n)) if a.ty.elem != ty.elem else a)
                elif isinstance(a.ty, ScalarType):
                    total += 1
                    conv.append(self.chk.conversions.convert(a, ty.elem, "vector constructor"))
                else:
                    raise CompileError(f"invalid argument of type '{a.ty}' to '{ty}(...)'", a.pos)
            if len(args) == 0:
                lit = ast.IntLit(e.pos, 0)
                self.e_IntLit(lit)
                e.args = [self.chk.conversions.convert(lit, ty.elem, "vector constructor")]
                e.ty = ty
                e.splat = True
                return e
            if total != ty.n:
                raise CompileError(f"'{ty}(...)' needs {ty.n} components, got {total}", e.pos)
            e.args = conv
            e.ty = ty
            e.splat = False
            return e
        raise CompileError(f"cannot construct a value of type '{ty}'", e.pos)

    def e_SizeOf(self, e: ast.SizeOf) -> ast.Expr:
        if isinstance(e.target, ast.TypeSpec):
            t = self.chk.types.resolve_type(e.target)
        else:
            t = self.expr(e.target).ty
        what = "alignof" if e.align else "sizeof"
        if isinstance(t, VoidType | EnumType):  # no object of such a type has a size
            raise CompileError(f"invalid application of '{what}' to '{t}'", e.pos)
        lit = ast.IntLit(e.pos, align_of(t) if e.align else size_of(t), "ul")
        lit.ty = ULONG
        return lit

    def e_InitList(self, e: ast.InitList) -> ast.Expr:
        raise CompileError("a brace-enclosed list is only allowed as an initializer", e.pos)

    def e_Convert(self, e: ast.Convert) -> ast.Expr:
        return e


#: Expression nodes the checker never sees (node class -> why).
NEVER_CHECKED: dict[type[ast.Expr], str] = {
    ast.PackExpansion: "expanded by expand_packs in call and constructor arguments before they are checked; one "
                       "left anywhere else is refused by Expressions.expr's own error",
    ast.StructInit: "built by the checker from an initializer list it has already checked (structs.py), "
                    "never checked again",
}

#: The checker's handler of each expression node (the node's own class, not a base).
EXPRESSION_HANDLERS: dict[type[ast.Expr], Callable[[Expressions, Any], ast.Expr]] = dispatch_table(
    "the checker's expressions", ast.Expr, {
        ast.IntLit: Expressions.e_IntLit, ast.FloatLit: Expressions.e_FloatLit, ast.BoolLit: Expressions.e_BoolLit,
        ast.Name: Expressions.e_Name, ast.Unary: Expressions.e_Unary, ast.Postfix: Expressions.e_Postfix,
        ast.Binary: Expressions.e_Binary, ast.Assign: Expressions.e_Assign, ast.Ternary: Expressions.e_Ternary,
        ast.Comma: Expressions.e_Comma, ast.Index: Expressions.e_Index, ast.Member: Expressions.e_Member,
        ast.Call: Expressions.e_Call, ast.Cast: Expressions.e_Cast, ast.TemporaryObject: Expressions.e_TemporaryObject,
        ast.Construct: Expressions.e_Construct, ast.SizeOf: Expressions.e_SizeOf,
        ast.InitList: Expressions.e_InitList, ast.Convert: Expressions.e_Convert,
    }, never=NEVER_CHECKED)
