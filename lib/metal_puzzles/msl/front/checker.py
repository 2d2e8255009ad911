"""Semantic analysis: resolves names, computes the type of every expression, instantiates
header function templates, and makes every implicit conversion explicit (``ast.Convert``),
so the executor never has to guess C's conversion rules."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..abi.signature import METAL_ATTRIBUTES, ParamRole
from ..lang.errors import BUILTIN_POS, CompileError, Pos, did_you_mean
from ..lang.types import (
    BOOL,
    FLOAT,
    HALF,
    INT,
    LONG,
    MEM_FLAGS,
    MEMORY_ORDER,
    SCALARS,
    SIMD_VOTE,
    UINT,
    ULONG,
    VOID,
    AddressSpace,
    ArrayType,
    AtomicType,
    EnumType,
    PointerType,
    ScalarType,
    Type,
    VectorType,
    VoidType,
    element_count,
    is_arith,
    lookup_builtin_type,
    promote,
    scalar_of,
    size_of,
    storage_scalar,
    usual_arithmetic,
    vector,
    with_elem,
)
from . import ast
from .ast import CastStyle, ConvertKind
from .constexpr import NotConstant, evaluate
from .parser import AliasStmt
from .symbols import FuncInstance, Var, VarKind

SWIZZLE_SETS = ("xyzw", "rgba")

#: Largest thread-private array the simulator accepts (it allocates one copy per thread).
MAX_THREAD_ARRAY_BYTES = 64 * 1024

#: Metal's enum constants, accepted with or without their 'mem_flags::' / 'metal::' prefixes.
ENUM_CONSTANTS = {
    "mem_flags::mem_none": (MEM_FLAGS, 0), "mem_flags::mem_device": (MEM_FLAGS, 1),
    "mem_flags::mem_threadgroup": (MEM_FLAGS, 2), "mem_flags::mem_texture": (MEM_FLAGS, 4),
    "mem_flags::mem_threadgroup_imageblock": (MEM_FLAGS, 8), "mem_flags::mem_object_data": (MEM_FLAGS, 16),
    "memory_order_relaxed": (MEMORY_ORDER, 0), "memory_order::memory_order_relaxed": (MEMORY_ORDER, 0),
    "memory_order_seq_cst": (MEMORY_ORDER, 5), "memory_order_acquire": (MEMORY_ORDER, 2),
    "memory_order_release": (MEMORY_ORDER, 3), "memory_order_acq_rel": (MEMORY_ORDER, 4),
}


class Scope:
    def __init__(self, parent: Scope | None = None) -> None:
        self.parent = parent
        self.names: dict[str, Any] = {}

    def lookup(self, name: str) -> Any:
        s: Scope | None = self
        while s is not None:
            if name in s.names:
                return s.names[name]
            s = s.parent
        return None

    def all_names(self) -> set[str]:
        out: set[str] = set()
        s: Scope | None = self
        while s is not None:
            out |= set(s.names)
            s = s.parent
        return out


@dataclass
class FunctionContext:
    ret: Type
    nslots: int = 0
    loop_depth: int = 0
    switch_depth: int = 0
    is_kernel: bool = False
    variables: list = field(default_factory=list)  # every named local, for step-through views


@dataclass
class CheckedKernel:
    body: ast.Block
    params: list[Var]
    nslots: int
    threadgroup_arrays: list[Var] = field(default_factory=list)
    functions: list[FuncInstance] = field(default_factory=list)
    variables: list[Var] = field(default_factory=list)


def strip_const(t: Type) -> Type:
    return t


class Library(Protocol):
    """The builtin functions and constants the checker resolves names against (the simulator's
    standard library, ``msl.library``, passed in so the front end does not depend on it)."""

    def function(self, name: str) -> Any: ...

    def constant(self, name: str, template_args: Any, checker: Checker) -> tuple[Type, Any] | None: ...

    def function_names(self) -> set[str]: ...


class Checker:
    def __init__(self, library: Library) -> None:
        self.library = library
        self.globals = Scope()
        self.scope = self.globals
        self.func: FunctionContext | None = None
        self.func_defs: dict[str, list[ast.FuncDef]] = {}
        self.instances: dict[tuple, FuncInstance] = {}
        self.threadgroup_arrays: list[Var] = []
        self.instantiating: list[str] = []
        # Names whose address is taken ('&x'): such locals live in thread memory, not registers.
        self.addressed: set[str] = set()

    # ================================================================ entry points
    def add_header(self, tu: ast.TranslationUnit) -> None:
        for item in tu.items:
            if isinstance(item, ast.FuncDef):
                if item.is_kernel:
                    raise CompileError("kernel functions cannot be defined in the header; the kernel body is "
                                       "the 'source' string", item.pos)
                self.func_defs.setdefault(item.name, []).append(item)
            elif isinstance(item, ast.TypeAlias):
                self._declare_alias(item)
            elif isinstance(item, ast.GlobalDecl):
                self._global_decl(item.decl)
            else:  # pragma: no cover - parser only produces the above
                raise CompileError("unsupported declaration in header", item.pos)

    def bind_template(self, name: str, value: Any, pos: Pos) -> None:
        if isinstance(value, Type):
            self.globals.names[name] = ("type", value)
        elif isinstance(value, bool):
            self.globals.names[name] = Var(name, BOOL, VarKind.CONST, pos, const_value=value, mutable=False)
        else:
            ty = INT if -(2**31) <= int(value) < 2**31 else LONG
            self.globals.names[name] = Var(name, ty, VarKind.CONST, pos, const_value=int(value), mutable=False)

    def check_kernel(self, body: ast.Block, params: list[tuple[str, Type, ParamRole]]) -> CheckedKernel:
        """Check the kernel body with the generated parameters in scope (name, type, what it carries)."""
        self.func = FunctionContext(VOID, is_kernel=True)
        self.scope = Scope(self.globals)
        self.addressed = _addressed_names(body)
        pvars = []
        for name, ty, role in params:
            if isinstance(ty, PointerType):
                kind = VarKind.BUFFER
            elif role == ParamRole.ATTRIBUTE:
                kind = VarKind.ATTR
            else:  # a 0-d input or an ndim, passed by constant reference
                kind = VarKind.SCALAR_INPUT
            var = Var(name, ty, kind, BUILTIN_POS, mutable=False, role=role)
            self.scope.names[name] = var
            pvars.append(var)
        self.stmt_block_contents(body)
        checked = CheckedKernel(body, pvars, self.func.nslots, self.threadgroup_arrays,
                                list(self.instances.values()), self.func.variables)
        self.func = None
        return checked

    # ================================================================ types
    def _declare_alias(self, item: ast.TypeAlias) -> None:
        if item.template_params:
            raise CompileError("alias templates are not supported", item.pos)
        self.scope.names[item.name] = ("type", self.resolve_type(item.type_spec))

    def resolve_type(self, spec: ast.TypeSpec, default_space: AddressSpace = AddressSpace.THREAD, init: Any = None) -> Type:
        base = self._resolve_base(spec)
        ty = base
        for pspace, _pointer_const in spec.pointers:
            # The address space written before the type qualifies the first pointee.
            space = spec.space if ty is base and spec.space else (pspace or default_space)
            const = spec.const if ty is base else False
            if isinstance(ty, VoidType):
                raise CompileError("void pointers are not supported", spec.pos)
            ty = PointerType(ty, space, const)
        for k, dim in enumerate(reversed(spec.array_dims)):
            if dim is None:
                if k == len(spec.array_dims) - 1 and isinstance(init, ast.InitList):
                    inner = 1
                    t = ty
                    while isinstance(t, ArrayType):
                        inner *= t.n
                        t = t.elem
                    flat = len(_flatten_items(init))
                    n = len(init.items) if all(isinstance(x, ast.InitList) for x in init.items) and init.items \
                        else -(-flat // inner)
                    ty = ArrayType(ty, max(n, 1))
                    continue
                raise CompileError("array size required (or give a {...} initializer)", spec.pos)
            n = self.const_int(dim, "array size")
            if n <= 0:
                raise CompileError(f"array size must be positive (got {n})", dim.pos)
            ty = ArrayType(ty, n)
        return ty

    def _resolve_base(self, spec: ast.TypeSpec) -> Type:
        name = spec.name
        found = self.scope.lookup(name)
        if isinstance(found, tuple) and found[0] == "type":
            return found[1]
        plain = name.removeprefix("metal::")
        if plain in ("vec",):
            if len(spec.args) != 2:
                raise CompileError("vec<T, N> takes a type and a size", spec.pos)
            elem = self.resolve_type(spec.args[0])
            n = self.const_int(spec.args[1], "vector size")
            if not isinstance(elem, ScalarType) or n not in (2, 3, 4):
                raise CompileError(f"invalid vector type vec<{elem}, {n}>", spec.pos)
            return vector(elem, n)
        if plain == "atomic":
            if len(spec.args) != 1:
                raise CompileError("atomic<T> takes one type", spec.pos)
            elem = self.resolve_type(spec.args[0])
            if elem not in (INT, UINT, FLOAT, BOOL) and not (isinstance(elem, ScalarType) and elem.is_int):
                raise CompileError(f"atomic<{elem}> is not supported (use int, uint or float)", spec.pos)
            return AtomicType(elem)
        t = lookup_builtin_type(plain)
        if t is not None:
            return t
        raise CompileError(f"unknown type name '{name}'" + did_you_mean(name, self._type_candidates()), spec.pos)

    def _type_candidates(self) -> set[str]:
        names = {k for k, v in self._all_scope_items() if isinstance(v, tuple)}
        return names | set(SCALARS) | {f"{e}{n}" for e in ("float", "half", "int", "uint") for n in (2, 3, 4)}

    def _all_scope_items(self):
        s = self.scope
        while s is not None:
            yield from s.names.items()
            s = s.parent

    def const_int(self, expr: Any, what: str) -> int:
        if isinstance(expr, ast.TypeSpec):
            raise CompileError(f"expected a constant for the {what}, found a type", expr.pos)
        try:
            value = evaluate(expr, self._const_lookup)
        except NotConstant:
            raise CompileError(f"{what} must be a compile-time constant", expr.pos) from None
        if isinstance(value, float):
            raise CompileError(f"{what} must be an integer", expr.pos)
        return int(value)

    def _const_lookup(self, name: str, pos: Pos) -> Any:
        sym = self.scope.lookup(name)
        if isinstance(sym, Var) and sym.const_value is not None and not isinstance(sym.const_value, list):
            v = sym.const_value
            return float(v) if isinstance(v, float) else int(v)
        if sym is None and self.scope.lookup(name.split("::")[-1]) is None:
            raise CompileError(f"use of undeclared identifier '{name}'" + did_you_mean(name, self.scope.all_names()), pos)
        raise NotConstant(name)

    # ================================================================ declarations
    def _global_decl(self, decl: ast.Decl) -> None:
        for d in decl.declarators:
            ty = self.resolve_type(d.type_spec, init=d.init)
            space = d.type_spec.space
            if space not in (AddressSpace.CONSTANT, None) and not decl.constexpr:
                raise CompileError(f"program-scope variables must be in the 'constant' address space "
                                   f"(found '{space or 'thread'}')", d.pos)
            if space is None and not decl.constexpr and not d.type_spec.const:
                raise CompileError("program-scope variables must be declared 'constant' (e.g. "
                                   f"'constant int {d.name} = ...;')", d.pos)
            if d.init is None:
                raise CompileError(f"constant '{d.name}' must be initialized", d.pos)
            value: Any
            if isinstance(ty, ArrayType):
                if not isinstance(d.init, ast.InitList):
                    raise CompileError("array constants need a {...} initializer", d.init.pos)
                if isinstance(ty.elem, ArrayType) and not any(isinstance(x, ast.InitList) for x in d.init.items):
                    d.init = _regroup(d.init, ty)
                value = self._const_array(d.init, ty)
            elif isinstance(ty, ScalarType):
                init = self.expr(d.init)
                try:
                    v = evaluate(self.convert(init, ty, "initialization"), self._const_lookup)
                except NotConstant:
                    raise CompileError(f"initializer of constant '{d.name}' is not a compile-time constant",
                                       d.init.pos) from None
                value = _cast_const(v, ty)
            else:
                init = self.convert(self.expr(d.init), ty, "initialization")
                value = ["expr", init]
            var = Var(d.name, ty, VarKind.CONST, d.pos, const_value=value, mutable=False)
            d.symbol = var
            self.scope.names[d.name] = var

    def _const_array(self, init: ast.InitList, ty: ArrayType) -> list:
        if len(init.items) > ty.n:
            raise CompileError(f"too many initializers for an array of {ty.n}", init.pos)
        out = []
        for item in init.items:
            if isinstance(ty.elem, ArrayType):
                if not isinstance(item, ast.InitList):
                    raise CompileError("expected a nested {...} initializer", item.pos)
                out.append(self._const_array(item, ty.elem))
            else:
                e = self.convert(self.expr(item), ty.elem, "initialization")
                try:
                    out.append(_cast_const(evaluate(e, self._const_lookup), ty.elem))
                except NotConstant:
                    raise CompileError("array constant elements must be compile-time constants", item.pos) from None
        return out

    def new_slot(self) -> int:
        assert self.func is not None
        self.func.nslots += 1
        return self.func.nslots - 1

    def local_decl(self, decl: ast.Decl) -> None:
        for d in decl.declarators:
            spec = d.type_spec
            if spec.name == "auto":
                if d.init is None or isinstance(d.init, ast.InitList):
                    raise CompileError("'auto' needs an initializer to deduce the type from", d.pos)
                d.init = self.rvalue(self.expr(d.init))
                ty = d.init.ty
                for _ in spec.pointers:
                    pass
            else:
                ty = self.resolve_type(spec, init=d.init)
            if spec.reference:
                if d.init is None:
                    raise CompileError(f"reference '{d.name}' must be initialized", d.pos)
                target = self.expr(d.init) if d.init.ty is None else d.init
                if not target.lvalue:
                    raise CompileError(f"cannot bind reference '{d.name}' to a temporary value", d.init.pos)
                if target.ty != ty:
                    raise CompileError(f"reference '{d.name}' of type '{ty}' cannot refer to a '{target.ty}'",
                                       d.init.pos)
                d.init = target
                var = Var(d.name, ty, VarKind.REF, d.pos, slot=self.new_slot(),
                          mutable=not spec.const and not target.const_mem)
                d.symbol = var
                self.scope.names[d.name] = var
                continue
            if isinstance(ty, ArrayType) or (spec.space == AddressSpace.THREADGROUP and not isinstance(ty, PointerType)):
                space = spec.space or AddressSpace.THREAD
                if space not in (AddressSpace.THREAD, AddressSpace.THREADGROUP):
                    raise CompileError(f"arrays inside a kernel must be 'thread' or 'threadgroup' (found '{space}')",
                                       d.pos)
                kind = VarKind.ARRAY if isinstance(ty, ArrayType) else VarKind.TGVAR
                var = Var(d.name, ty, kind, d.pos, slot=self.new_slot(), space=space)
                if space == AddressSpace.THREADGROUP:
                    if not self.func or not self.func.is_kernel:
                        raise CompileError("threadgroup variables can only be declared in the kernel body", d.pos)
                    if d.init is not None:
                        raise CompileError("threadgroup variables cannot have an initializer", d.init.pos)
                    self.threadgroup_arrays.append(var)
                if space == AddressSpace.THREAD and element_count(ty) * storage_scalar(ty).size > MAX_THREAD_ARRAY_BYTES:
                    raise CompileError(
                        f"thread-private array '{d.name}' takes {element_count(ty) * storage_scalar(ty).size} bytes "
                        f"per thread; the simulator allows {MAX_THREAD_ARRAY_BYTES // 1024} KiB (a GPU thread's private "
                        "memory is small): use threadgroup or device memory for large data", d.pos)
                if d.init is not None:
                    d.init = self._array_init(d.init, ty)
            elif spec.space == AddressSpace.CONSTANT or (decl.constexpr and d.init is not None):
                # A local constant: evaluate once, like a global.
                if d.init is None:
                    raise CompileError(f"constant '{d.name}' must be initialized", d.pos)
                init = self.convert(self.expr(d.init), ty, "initialization")
                try:
                    value = _cast_const(evaluate(init, self._const_lookup), ty)
                    var = Var(d.name, ty, VarKind.CONST, d.pos, const_value=value, mutable=False)
                except NotConstant:
                    var = Var(d.name, ty, VarKind.LOCAL, d.pos, slot=self.new_slot(), mutable=False)
                    d.init = init
            else:
                if isinstance(ty, VoidType | AtomicType):
                    raise CompileError(f"cannot declare a variable of type '{ty}'", d.pos)
                if spec.space in (AddressSpace.DEVICE, AddressSpace.CONSTANT) and not isinstance(ty, PointerType):
                    raise CompileError(f"'{spec.space}' variables must be pointers or references", d.pos)
                kind = VarKind.MEMVAR if d.name in self.addressed else VarKind.LOCAL
                # For pointers, 'const T*' protects the pointee; the variable is const only as 'T* const'.
                const_var = spec.pointers[-1][1] if isinstance(ty, PointerType) and spec.pointers else spec.const
                var = Var(d.name, ty, kind, d.pos, slot=self.new_slot(), mutable=not const_var, space=AddressSpace.THREAD)
                if d.init is not None:
                    if isinstance(d.init, ast.InitList):
                        if isinstance(ty, VectorType):
                            d.init = self.convert(self._construct(ast.Construct(d.init.pos, spec, d.init.items), ty), ty, "initialization")
                        elif len(d.init.items) == 1:
                            d.init = self.convert(self.expr(d.init.items[0]), ty, "initialization")
                        elif not d.init.items:
                            d.init = self.convert(ast.IntLit(d.init.pos, 0), ty, "initialization")
                            d.init = self.expr(d.init) if d.init.ty is None else d.init
                        else:
                            raise CompileError("too many initializers for a scalar", d.init.pos)
                    else:
                        init = d.init if d.init.ty is not None else self.expr(d.init)
                        d.init = self.convert(init, ty, "initialization")
                elif not var.mutable:
                    raise CompileError(f"const variable '{d.name}' must be initialized", d.pos)
                elif kind == VarKind.LOCAL:
                    var.maybe_uninit = True
            d.symbol = var
            if self.func is not None:
                self.func.variables.append(var)
            if d.name in self.scope.names and isinstance(self.scope.names[d.name], Var):
                prev = self.scope.names[d.name]
                first = (f"a parameter of the kernel that MLX generates ({prev.role})" if prev.role is not None
                         else f"first declared at line {prev.pos.line}")
                raise CompileError(f"redefinition of '{d.name}' ({first})", d.pos)
            self.scope.names[d.name] = var

    def _array_init(self, init: ast.Expr, ty: ArrayType) -> ast.InitList:
        if not isinstance(init, ast.InitList):
            raise CompileError("arrays must be initialized with a {...} list", init.pos)
        if isinstance(ty.elem, ArrayType) and init.items and not any(isinstance(x, ast.InitList) for x in init.items):
            init = _regroup(init, ty)
        if len(init.items) > ty.n:
            raise CompileError(f"too many initializers for an array of {ty.n}", init.pos)
        items = []
        for item in init.items:
            if isinstance(ty.elem, ArrayType):
                items.append(self._array_init(item, ty.elem))
            else:
                items.append(self.convert(self.expr(item), ty.elem, "initialization"))
        out = ast.InitList(init.pos, items)
        out.ty = ty
        return out

    # ================================================================ statements
    def stmt_block_contents(self, block: ast.Block) -> None:
        for s in block.stmts:
            self.stmt(s)

    def stmt(self, s: ast.Stmt) -> None:
        if isinstance(s, ast.Block):
            saved = self.scope
            self.scope = Scope(saved)
            self.stmt_block_contents(s)
            self.scope = saved
        elif isinstance(s, ast.Decl):
            self.local_decl(s)
        elif isinstance(s, ast.ExprStmt):
            s.expr = self.expr(s.expr)
            if isinstance(s.expr, ast.Call):
                s.expr.value_unused = True
        elif isinstance(s, ast.If):
            s.cond = self.condition(s.cond)
            self.scoped(s.then)
            if s.other is not None:
                self.scoped(s.other)
        elif isinstance(s, ast.For):
            saved = self.scope
            self.scope = Scope(saved)
            if s.init is not None:
                self.stmt(s.init)
            if s.cond is not None:
                s.cond = self.condition(s.cond)
            if s.step is not None:
                s.step = self.expr(s.step)
            self.loop_body(s.body)
            self.scope = saved
        elif isinstance(s, ast.While):
            s.cond = self.condition(s.cond)
            self.loop_body(s.body)
        elif isinstance(s, ast.DoWhile):
            self.loop_body(s.body)
            s.cond = self.condition(s.cond)
        elif isinstance(s, ast.Switch):
            s.value = self.expr(s.value)
            vt = s.value.ty
            if not (isinstance(vt, ScalarType) and vt.kind in ("int", "bool")):
                raise CompileError(f"switch needs an integer value, not '{vt}'", s.value.pos)
            s.value = self.convert(s.value, promote(vt), "switch")
            assert self.func is not None
            self.func.switch_depth += 1
            saved = self.scope
            self.scope = Scope(saved)
            seen = set()
            for st in s.body.stmts:
                if isinstance(st, ast.Case):
                    if st.value is not None:
                        v = self.const_int(st.value, "case value")
                        if v in seen:
                            raise CompileError(f"duplicate case value {v}", st.pos)
                        seen.add(v)
                        st.value = ast.IntLit(st.value.pos, v)
                        st.value.ty = s.value.ty
                else:
                    self.stmt(st)
            self.scope = saved
            self.func.switch_depth -= 1
        elif isinstance(s, ast.Case):
            raise CompileError("'case' outside of a switch", s.pos)
        elif isinstance(s, ast.Break):
            assert self.func is not None
            if not self.func.loop_depth and not self.func.switch_depth:
                raise CompileError("'break' outside of a loop or switch", s.pos)
        elif isinstance(s, ast.Continue):
            assert self.func is not None
            if not self.func.loop_depth:
                raise CompileError("'continue' outside of a loop", s.pos)
        elif isinstance(s, ast.Return):
            assert self.func is not None
            ret = self.func.ret
            if s.value is None:
                if not isinstance(ret, VoidType):
                    raise CompileError(f"non-void function must return a value of type '{ret}'", s.pos)
            else:
                if isinstance(ret, VoidType):
                    if self.func.is_kernel:
                        raise CompileError("a kernel returns nothing: use 'return;' and write results to an "
                                           "output buffer", s.value.pos)
                    raise CompileError("void function should not return a value", s.value.pos)
                s.value = self.convert(self.expr(s.value), ret, "return")
        elif isinstance(s, ast.Empty):
            pass
        elif isinstance(s, AliasStmt):
            self._declare_alias(s.alias)
        else:  # pragma: no cover
            raise CompileError(f"unsupported statement {type(s).__name__}", s.pos)

    def scoped(self, s: ast.Stmt) -> None:
        saved = self.scope
        self.scope = Scope(saved)
        self.stmt(s)
        self.scope = saved

    def loop_body(self, s: ast.Stmt) -> None:
        assert self.func is not None
        self.func.loop_depth += 1
        self.scoped(s)
        self.func.loop_depth -= 1

    def condition(self, e: ast.Expr) -> ast.Expr:
        e = self.expr(e)
        return self.to_bool(e)

    def to_bool(self, e: ast.Expr) -> ast.Expr:
        t = e.ty
        if t == BOOL:
            return e
        if isinstance(t, ScalarType) or isinstance(t, PointerType):
            return self._mk_convert(e, BOOL)
        raise CompileError(f"value of type '{t}' is not contextually convertible to 'bool'", e.pos)

    # ================================================================ conversions
    def _mk_convert(self, e: ast.Expr, ty: Type, kind: ConvertKind = ConvertKind.CONVERT) -> ast.Expr:
        c = ast.Convert(e.pos, e, kind)
        c.ty = ty
        return c

    def rvalue(self, e: ast.Expr) -> ast.Expr:
        """Array-to-pointer decay."""
        if isinstance(e.ty, ArrayType):
            space = e.space or AddressSpace.THREAD
            return self._mk_convert(e, PointerType(e.ty.elem, space, False), ConvertKind.DECAY)
        return e

    def convert(self, e: ast.Expr, ty: Type, context: str) -> ast.Expr:
        e = self.rvalue(e)
        src = e.ty
        if src == ty:
            return e
        if isinstance(ty, ScalarType) and isinstance(src, ScalarType):
            return self._mk_convert(e, ty)
        if isinstance(ty, VectorType) and isinstance(src, ScalarType):
            return self._mk_convert(self._mk_convert(e, ty.elem) if src != ty.elem else e, ty, ConvertKind.SPLAT)
        if isinstance(ty, VectorType) and isinstance(src, VectorType):
            if ty.n == src.n and ty.elem == src.elem:
                return self._mk_convert(e, ty)  # packed <-> unpacked
            raise CompileError(f"cannot implicitly convert '{src}' to '{ty}' in {context}; "
                               f"use an explicit conversion such as {ty}(...)", e.pos)
        if isinstance(ty, PointerType) and isinstance(src, PointerType):
            if src.pointee == ty.pointee and src.space == ty.space and (ty.const or not src.const):
                return self._mk_convert(e, ty, ConvertKind.PTR)
            if src.pointee == ty.pointee and src.space == AddressSpace.CONSTANT and ty.space == AddressSpace.DEVICE:
                raise CompileError(f"cannot convert '{src}' to '{ty}' in {context}: MLX passes inputs with fewer "
                                   "than 8 elements in the 'constant' address space; declare the parameter "
                                   f"'constant {ty.pointee}*' (or a template)", e.pos)
            if src.const and not ty.const and src.pointee == ty.pointee:
                raise CompileError(f"cannot convert '{src}' to '{ty}' in {context}: it would drop 'const' "
                                   "(inputs are read-only)", e.pos)
            raise CompileError(f"cannot convert '{src}' to '{ty}' in {context}", e.pos)
        if isinstance(ty, ScalarType) and ty == BOOL and isinstance(src, PointerType):
            return self._mk_convert(e, BOOL)
        raise CompileError(f"cannot convert '{src}' to '{ty}' in {context}", e.pos)

    # ================================================================ expressions
    def expr(self, e: ast.Expr) -> ast.Expr:
        method = getattr(self, "e_" + type(e).__name__, None)
        if method is None:
            raise CompileError(f"unsupported expression ({type(e).__name__})", e.pos)
        out = method(e)
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
        sym = self.scope.lookup(name)
        if sym is None and name.startswith("metal::"):
            sym = self.scope.lookup(name.removeprefix("metal::"))
        if isinstance(sym, Var):
            e.symbol = sym
            e.ty = sym.ty
            e.lvalue = sym.kind in (VarKind.LOCAL, VarKind.ARRAY, VarKind.REF, VarKind.TGVAR, VarKind.MEMVAR)
            if sym.kind in (VarKind.ARRAY, VarKind.TGVAR, VarKind.MEMVAR):
                e.space = sym.space
            if sym.kind in (VarKind.TGVAR, VarKind.MEMVAR):
                e.memory = True
            if sym.kind in (VarKind.TGVAR, VarKind.MEMVAR, VarKind.LOCAL) and not sym.mutable:
                e.const_mem = True
            return e
        if isinstance(sym, tuple):
            raise CompileError(f"'{name}' is a type, not a value", e.pos)
        enum = ENUM_CONSTANTS.get(name.removeprefix("metal::")) or ENUM_CONSTANTS.get("mem_flags::" + name)
        if enum is not None:
            e.ty = enum[0]
            e.symbol = Var(name, enum[0], VarKind.CONST, e.pos, const_value=enum[1], mutable=False)
            return e
        const = self.library.constant(name, e.template_args, self)
        if const is not None:
            ty, value = const
            e.ty = ty
            e.symbol = Var(name, ty, VarKind.CONST, e.pos, const_value=value, mutable=False)
            return e
        if self.library.function(name) is not None or name in self.func_defs:
            raise CompileError(f"'{name}' is a function; did you forget the parentheses '()'?", e.pos)
        raise CompileError(f"use of undeclared identifier '{name}'" + did_you_mean(name, self._value_candidates()),
                           e.pos)

    def _value_candidates(self) -> set[str]:
        names = {k for k, v in self._all_scope_items() if isinstance(v, Var)}
        return names | set(self.func_defs) | {name for name, _ in METAL_ATTRIBUTES}

    def e_Unary(self, e: ast.Unary) -> ast.Expr:
        op = e.op
        if op in ("++", "--"):
            e.operand = self.expr(e.operand)
            self.require_modifiable(e.operand)
            t = e.operand.ty
            if not (isinstance(t, ScalarType | VectorType | PointerType)) or t == BOOL:
                raise CompileError(f"cannot apply '{op}' to a value of type '{t}'", e.pos)
            e.ty = t
            return e
        if op == "&":
            e.operand = self.expr(e.operand)
            if not e.operand.lvalue:
                raise CompileError("cannot take the address of a temporary value", e.pos)
            if not e.operand.memory and not isinstance(e.operand.ty, ArrayType):
                raise CompileError("cannot take the address of this value", e.pos)
            space = e.operand.space or AddressSpace.THREAD
            const = e.operand.const_mem
            e.ty = PointerType(e.operand.ty, space, const)
            return e
        if op == "*":
            e.operand = self.rvalue(self.expr(e.operand))
            t = e.operand.ty
            if not isinstance(t, PointerType):
                raise CompileError(f"cannot dereference a value of type '{t}'", e.pos)
            e.ty = t.pointee
            e.lvalue = True
            e.memory = True
            e.space = t.space
            e.const_mem = t.const
            return e
        e.operand = self.rvalue(self.expr(e.operand))
        t = e.operand.ty
        if op == "!":
            if isinstance(t, VectorType):
                e.operand = self.convert(e.operand, vector(BOOL, t.n), "'!'")
                e.ty = vector(BOOL, t.n)
            else:
                e.operand = self.to_bool(e.operand)
                e.ty = BOOL
            return e
        if not is_arith(t):
            raise CompileError(f"invalid argument type '{t}' to unary '{op}'", e.pos)
        if op == "~" and scalar_of(t).is_float:
            raise CompileError(f"invalid argument type '{t}' to unary '~' (integers only)", e.pos)
        rt = with_elem(t, promote(scalar_of(t))) if scalar_of(t).kind != "float" else t
        e.operand = self.convert(e.operand, rt, f"unary '{op}'")
        e.ty = rt
        return e

    def e_Postfix(self, e: ast.Postfix) -> ast.Expr:
        e.operand = self.expr(e.operand)
        self.require_modifiable(e.operand)
        t = e.operand.ty
        if not isinstance(t, ScalarType | VectorType | PointerType) or t == BOOL:
            raise CompileError(f"cannot apply '{e.op}' to a value of type '{t}'", e.pos)
        e.ty = t
        return e

    def require_modifiable(self, e: ast.Expr) -> None:
        start = _start_pos(e)
        if not e.lvalue:
            raise CompileError("expression is not assignable", start)
        if isinstance(e, ast.Name) and isinstance(e.symbol, Var) and not e.symbol.mutable:
            raise CompileError(f"cannot assign to '{e.ident}': it is read-only (const)", start)
        if e.const_mem:
            what = ("an input buffer (inputs are 'const')" if e.space in (AddressSpace.DEVICE, AddressSpace.CONSTANT)
                    else "a const object")
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
        l = self.rvalue(self.expr(e.left))
        r = self.rvalue(self.expr(e.right))
        lt, rt = l.ty, r.ty
        if isinstance(lt, EnumType) and lt == rt and op in ("|", "&"):
            e.left, e.right = l, r
            e.ty = lt
            e.op_ty = INT
            return e
        if op in ("&&", "||"):
            if isinstance(lt, VectorType) or isinstance(rt, VectorType):
                raise CompileError(f"'{op}' needs scalar operands; use all()/any() for vectors", e.pos)
            e.left, e.right = self.to_bool(l), self.to_bool(r)
            e.ty = BOOL
            return e
        # Pointer arithmetic and comparison.
        if isinstance(lt, PointerType) or isinstance(rt, PointerType):
            return self._pointer_binary(e, l, r)
        if op in ("<<", ">>"):
            if not (is_arith(lt) and is_arith(rt)) or scalar_of(lt).is_float or scalar_of(rt).is_float:
                raise CompileError(f"invalid operands to binary '{op}' ('{lt}' and '{rt}'): integers only", e.pos)
            if isinstance(lt, VectorType) or isinstance(rt, VectorType):
                res = self.arith_result(op, l, r, e.pos)
                e.left, e.right = self.convert(l, res, op), self.convert(r, res, op)
            else:
                res = promote(lt)
                e.left = self.convert(l, res, op)
                e.right = self.convert(r, promote(rt), op)
            e.op_ty = res
            e.ty = res
            return e
        res = self.arith_result(op, l, r, e.pos)
        elem = scalar_of(res)
        if op in ("%", "&", "|", "^") and elem.is_float:
            hint = "; use fmod() for floating-point remainder" if op == "%" else ""
            raise CompileError(f"invalid operands to binary '{op}' ('{lt}' and '{rt}'){hint}", e.pos)
        if op in ("&", "|", "^") and elem == BOOL:
            pass
        elif elem.kind != "float" and not isinstance(res, VectorType):
            res = with_elem(res, promote(elem))
        e.left, e.right = self.convert(l, res, f"'{op}'"), self.convert(r, res, f"'{op}'")
        e.op_ty = res
        if op in ("==", "!=", "<", ">", "<=", ">="):
            e.ty = vector(BOOL, res.n) if isinstance(res, VectorType) else BOOL
        else:
            e.ty = res
        return e

    def _pointer_binary(self, e: ast.Binary, l: ast.Expr, r: ast.Expr) -> ast.Expr:
        op = e.op
        lt, rt = l.ty, r.ty
        if op in ("+", "-") and isinstance(lt, PointerType) and isinstance(rt, ScalarType) and rt.is_int:
            e.left, e.right = l, self.convert(r, LONG, "pointer arithmetic")
            e.ty = lt
            return e
        if op == "+" and isinstance(rt, PointerType) and isinstance(lt, ScalarType) and lt.is_int:
            e.left, e.right = r, self.convert(l, LONG, "pointer arithmetic")
            e.ty = rt
            return e
        if isinstance(lt, PointerType) and isinstance(rt, PointerType):
            if lt.pointee != rt.pointee:
                raise CompileError(f"'{op}' on pointers to different types ('{lt}' and '{rt}')", e.pos)
            e.left, e.right = l, r
            if op == "-":
                e.ty = LONG
                return e
            if op in ("==", "!=", "<", ">", "<=", ">="):
                e.ty = BOOL
                return e
        raise CompileError(f"invalid operands to binary '{op}' ('{lt}' and '{rt}')", e.pos)

    def e_Assign(self, e: ast.Assign) -> ast.Expr:
        target = self.expr(e.target)
        self.require_modifiable(target)
        e.target = target
        tt = target.ty
        if isinstance(e.value, ast.InitList):
            if isinstance(tt, VectorType):
                e.value = self._construct(ast.Construct(e.value.pos, ast.TypeSpec(e.pos, str(tt)), e.value.items), tt)
            else:
                raise CompileError("brace initializers can only be assigned to vectors", e.value.pos)
        value = self.rvalue(self.expr(e.value))
        if e.op == "=":
            e.value = self.convert(value, tt, "assignment")
            e.ty = tt
            return e
        op = e.op[:-1]
        if isinstance(tt, PointerType):
            if op not in ("+", "-") or not (isinstance(value.ty, ScalarType) and value.ty.is_int):
                raise CompileError(f"invalid operands to '{e.op}' on a pointer", e.pos)
            e.value = self.convert(value, LONG, "pointer arithmetic")
            e.op_ty = None
            e.ty = tt
            return e
        # Evaluate 'a op= b' as 'a = (type of a)(a op b)'.
        fake = ast.Binary(e.pos, op, _typed_placeholder(target), value)
        fake = self.e_Binary(fake)
        e.op_ty = fake.op_ty
        e.value = fake.right
        if isinstance(tt, VectorType) and not isinstance(fake.ty, VectorType):
            raise CompileError(f"invalid compound assignment to '{tt}'", e.pos)
        if isinstance(tt, ScalarType) and isinstance(fake.ty, VectorType):
            raise CompileError(f"cannot assign a vector result to scalar '{tt}'", e.pos)
        e.ty = tt
        return e

    def e_Ternary(self, e: ast.Ternary) -> ast.Expr:
        e.cond = self.condition(e.cond)
        a = self.rvalue(self.expr(e.then))
        b = self.rvalue(self.expr(e.other))
        if a.ty == b.ty:
            e.ty = a.ty
        elif is_arith(a.ty) and is_arith(b.ty):
            e.ty = self.arith_result("?:", a, b, e.pos)
        elif isinstance(a.ty, PointerType) and isinstance(b.ty, PointerType) and a.ty.pointee == b.ty.pointee \
                and a.ty.space == b.ty.space:
            e.ty = PointerType(a.ty.pointee, a.ty.space, a.ty.const or b.ty.const)
        else:
            raise CompileError(f"incompatible operand types in '?:' ('{a.ty}' and '{b.ty}')", e.pos)
        e.then, e.other = self.convert(a, e.ty, "'?:'"), self.convert(b, e.ty, "'?:'")
        return e

    def e_Comma(self, e: ast.Comma) -> ast.Expr:
        e.exprs = [self.rvalue(self.expr(x)) for x in e.exprs]
        e.ty = e.exprs[-1].ty
        return e

    def e_Index(self, e: ast.Index) -> ast.Expr:
        base = self.expr(e.base)
        idx = self.rvalue(self.expr(e.index))
        if not (isinstance(idx.ty, ScalarType) and idx.ty.kind in ("int", "bool")):
            raise CompileError(f"array subscript is not an integer (it is '{idx.ty}')", e.index.pos)
        bt = base.ty
        if isinstance(bt, VectorType):
            e.base = base
            e.index = self.convert(idx, promote(idx.ty), "subscript")
            e.ty = bt.elem
            e.vector_index = True
            _designates_part_of(e, base)
            return e
        if isinstance(bt, ArrayType):
            e.base = base
            e.ty = bt.elem
            e.space = base.space or AddressSpace.THREAD
            e.const_mem = base.const_mem or (isinstance(base, ast.Name) and not base.symbol.mutable
                                             and base.symbol.kind == VarKind.CONST)
        elif isinstance(bt, PointerType):
            e.base = base
            e.ty = bt.pointee
            e.space = bt.space
            e.const_mem = bt.const
        else:
            raise CompileError(f"subscripted value is not an array, pointer or vector (it is '{bt}')", e.pos)
        e.index = self.convert(idx, LONG if (idx.ty.bits > 32 or idx.ty == UINT) else INT, "subscript")
        e.lvalue = True
        e.memory = True
        return e

    def e_Member(self, e: ast.Member) -> ast.Expr:
        base = self.expr(e.base)
        bt = base.ty
        if e.arrow:
            raise CompileError("'->' needs a pointer to a struct; structs are not supported", e.pos)
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
        _designates_part_of(e, base)
        if isinstance(base, ast.Name) and isinstance(base.symbol, Var) and not base.symbol.mutable:
            e.const_mem = True
        return e

    def e_Cast(self, e: ast.Cast) -> ast.Expr:
        ty = self.resolve_type(e.type_spec)
        operand = self.rvalue(self.expr(e.operand))
        src = operand.ty
        e.ty = ty
        if e.style == CastStyle.AS_TYPE:
            if not (is_arith(ty) and is_arith(src)) or size_of(ty) != size_of(src):
                raise CompileError(f"as_type<{ty}> needs a value of the same size (got '{src}', "
                                   f"{size_of(src)} vs {size_of(ty)} bytes)", e.pos)
            e.operand = operand
            return e
        if isinstance(ty, PointerType):
            if not isinstance(src, PointerType):
                raise CompileError(f"cannot cast '{src}' to pointer type '{ty}'", e.pos)
            if src.space != ty.space:
                raise CompileError(f"cannot cast between address spaces ('{src}' to '{ty}')", e.pos)
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

    def e_Construct(self, e: ast.Construct) -> ast.Expr:
        ty = self.resolve_type(e.type_spec)
        return self._construct(e, ty)

    def _construct(self, e: ast.Construct, ty: Type) -> ast.Expr:
        args = [self.rvalue(self.expr(a)) for a in e.args]
        if isinstance(ty, ScalarType):
            if len(args) == 0:
                lit = ast.IntLit(e.pos, 0)
                self.e_IntLit(lit)
                return self.convert(lit, ty, "value-initialization")
            if len(args) != 1:
                raise CompileError(f"'{ty}(...)' takes one argument", e.pos)
            if not isinstance(args[0].ty, ScalarType | EnumType):
                raise CompileError(f"cannot convert '{args[0].ty}' to '{ty}'", e.pos)
            cast = ast.Cast(e.pos, e.type_spec, args[0], CastStyle.C)
            cast.ty = ty
            return cast
        if isinstance(ty, VectorType):
            if len(args) == 1 and isinstance(args[0].ty, ScalarType):
                e.args = [self.convert(args[0], ty.elem, "vector constructor")]
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
                    conv.append(self._mk_convert(a, vector(ty.elem, a.ty.n)) if a.ty.elem != ty.elem else a)
                elif isinstance(a.ty, ScalarType):
                    total += 1
                    conv.append(self.convert(a, ty.elem, "vector constructor"))
                else:
                    raise CompileError(f"invalid argument of type '{a.ty}' to '{ty}(...)'", a.pos)
            if len(args) == 0:
                lit = ast.IntLit(e.pos, 0)
                self.e_IntLit(lit)
                e.args = [self.convert(lit, ty.elem, "vector constructor")]
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
            t = self.resolve_type(e.target)
        else:
            t = self.expr(e.target).ty
        lit = ast.IntLit(e.pos, size_of(t), "ul")
        lit.ty = ULONG
        return lit

    def e_InitList(self, e: ast.InitList) -> ast.Expr:
        raise CompileError("a brace-enclosed list is only allowed as an initializer", e.pos)

    def e_Convert(self, e: ast.Convert) -> ast.Expr:
        return e

    def e_Call(self, e: ast.Call) -> ast.Expr:
        if isinstance(e.func, ast.Member):
            base = self.rvalue(self.expr(e.func.base))
            if base.ty == SIMD_VOTE and e.func.name in ("all", "any") and not e.args:
                b = self.library.function("simd_vote." + e.func.name)
                e.func = ast.Name(e.func.pos, "simd_vote." + e.func.name)
                e.target = b
                e.args = [base]
                e.ty = b.check(self, e, [base], None)
                return e
            raise CompileError(f"member functions are not supported on '{base.ty}'", e.pos)
        if not isinstance(e.func, ast.Name):
            raise CompileError("only named functions can be called", e.pos)
        name = e.func.ident
        sym = self.scope.lookup(name)
        if isinstance(sym, Var):
            raise CompileError(f"'{name}' is a variable, not a function", e.pos)
        plain = name.removeprefix("metal::")
        defs = self.func_defs.get(name) or self.func_defs.get(plain)
        if defs:
            return self._call_header_function(e, defs)
        b = self.library.function(name)
        if b is None:
            cands = set(self.func_defs) | self.library.function_names()
            raise CompileError(f"use of undeclared function '{name}'" + did_you_mean(plain, cands), e.func.pos)
        args = []
        for a in e.args:
            if isinstance(a, ast.InitList):
                raise CompileError("brace lists cannot be passed to builtin functions", a.pos)
            args.append(self.expr(a))
        e.target = b
        e.ty = b.check(self, e, args, e.func.template_args)
        return e

    # ------------------------------------------------------------ header functions
    def _call_header_function(self, e: ast.Call, defs: list[ast.FuncDef]) -> ast.Expr:
        args = [self.expr(a) for a in e.args]
        explicit = [self.resolve_type(t) if isinstance(t, ast.TypeSpec) else self.const_int(t, "template argument")
                    for t in (e.func.template_args or [])]
        errors = []
        candidates = []
        for fd in defs:
            try:
                binding = self._deduce(fd, args, explicit, e.pos)
                candidates.append((fd, binding))
            except CompileError as err:
                errors.append(err.message)
        if not candidates:
            detail = errors[0] if errors else "no matching function"
            raise CompileError(f"no matching function for call to '{e.func.ident}': {detail}", e.pos)
        # Prefer an exact match of argument types.
        fd, binding = candidates[0]
        if len(candidates) > 1:
            exact = [c for c in candidates if self._exact(c[0], c[1], args)]
            if not exact:
                raise CompileError(f"call to '{e.func.ident}' is ambiguous", e.pos)
            # A parameter written with a concrete type is more specialized than a deduced one.
            exact.sort(key=lambda c: sum(1 for p in c[0].params
                                         if p.type_spec.name in {t.name for t in c[0].template_params}))
            fd, binding = exact[0]
        inst = self._instantiate(fd, binding, e.pos)
        converted = []
        for p, a in zip(inst.params, args, strict=False):
            if p.kind == VarKind.REF:
                if not a.lvalue:
                    raise CompileError(f"cannot bind a temporary to reference parameter '{p.name}'", a.pos)
                if a.ty != p.ty:
                    raise CompileError(f"reference parameter '{p.name}' has type '{p.ty}', argument has '{a.ty}'",
                                       a.pos)
                if p.mutable:
                    self.require_modifiable(a)
                converted.append(a)
            else:
                converted.append(self.convert(a, p.ty, f"argument '{p.name}' of '{fd.name}'"))
        # Default arguments.
        for p, fp in list(zip(inst.params, fd.params, strict=False))[len(args):]:
            if fp.default is None:
                raise CompileError(f"too few arguments to '{fd.name}'", e.pos)
            converted.append(self.convert(self.expr(fp.default), p.ty, "default argument"))
        e.args = converted
        e.target = inst
        e.ty = inst.ret
        return e

    def _exact(self, fd: ast.FuncDef, binding: dict, args: list[ast.Expr]) -> bool:
        saved = self.scope
        self.scope = Scope(self.globals)
        for k, v in binding.items():
            self.scope.names[k] = ("type", v) if isinstance(v, Type) else Var(k, INT, VarKind.CONST, fd.pos, const_value=v)
        try:
            return all(self.resolve_type(p.type_spec) == self.rvalue(a).ty for p, a in zip(fd.params, args, strict=False))
        finally:
            self.scope = saved

    def _deduce(self, fd: ast.FuncDef, args: list[ast.Expr], explicit: list, pos: Pos) -> dict:
        if len(args) > len(fd.params):
            raise CompileError(f"'{fd.name}' takes {len(fd.params)} argument(s), {len(args)} given", pos)
        needed = sum(1 for p in fd.params if p.default is None)
        if len(args) < needed:
            raise CompileError(f"'{fd.name}' takes at least {needed} argument(s), {len(args)} given", pos)
        binding: dict[str, Any] = {}
        tparams = {tp.name: tp for tp in fd.template_params}
        for tp, val in zip(fd.template_params, explicit, strict=False):
            binding[tp.name] = val
        if tparams:
            for p, a in zip(fd.params, args, strict=False):
                self._match(p.type_spec, self.rvalue(a).ty, tparams, binding)
            for tp in fd.template_params:
                if tp.name not in binding:
                    if tp.default is None:
                        raise CompileError(f"could not deduce template argument '{tp.name}'", pos)
                    binding[tp.name] = (self.resolve_type(tp.default) if tp.kind == "type"
                                        else self.const_int(tp.default, "template argument"))
        return binding

    def _match(self, spec: ast.TypeSpec, actual: Type, tparams: dict, binding: dict) -> None:
        t = actual
        for _ in spec.pointers:
            if not isinstance(t, PointerType):
                return
            t = t.pointee
        if spec.name in tparams and tparams[spec.name].kind == "type" and not spec.args:
            if spec.name not in binding:
                binding[spec.name] = t
        elif spec.name.removeprefix("metal::") == "vec" and isinstance(t, VectorType) and len(spec.args) == 2:
            a0, a1 = spec.args
            if isinstance(a0, ast.TypeSpec) and a0.name in tparams and a0.name not in binding:
                binding[a0.name] = t.elem
            if isinstance(a1, ast.Name) and a1.ident in tparams and a1.ident not in binding:
                binding[a1.ident] = t.n

    def _instantiate(self, fd: ast.FuncDef, binding: dict, pos: Pos) -> FuncInstance:
        key = (id(fd), tuple(sorted((k, str(v)) for k, v in binding.items())))
        if fd.name in self.instantiating:
            raise CompileError(f"recursive call to '{fd.name}': Metal does not support recursion", pos)
        if key in self.instances:
            return self.instances[key]
        body = copy.deepcopy(fd.body)
        saved_scope, saved_func, saved_addr = self.scope, self.func, self.addressed
        self.addressed = _addressed_names(body)
        self.scope = Scope(self.globals)
        for k, v in binding.items():
            if isinstance(v, Type):
                self.scope.names[k] = ("type", v)
            else:
                self.scope.names[k] = Var(k, INT, VarKind.CONST, fd.pos, const_value=int(v), mutable=False)
        ret = self.resolve_type(fd.ret)
        self.func = FunctionContext(ret)
        params = []
        for p in fd.params:
            pty = self.resolve_type(p.type_spec)
            if isinstance(pty, ArrayType):
                pty = PointerType(pty.elem, p.type_spec.space or AddressSpace.THREAD, p.type_spec.const)
            if p.type_spec.reference:
                var = Var(p.name or "_", pty, VarKind.REF, p.pos, slot=self.new_slot(), mutable=not p.type_spec.const)
                var.space = p.type_spec.space or AddressSpace.THREAD
            else:
                var = Var(p.name or "_", pty, VarKind.LOCAL, p.pos, slot=self.new_slot(), mutable=not p.type_spec.const)
            if p.name:
                self.scope.names[p.name] = var
            params.append(var)
        inst = FuncInstance(fd.name, params, ret, body, pos=fd.pos)
        self.instances[key] = inst
        self.instantiating.append(fd.name)
        try:
            self.stmt_block_contents(body)
        finally:
            self.instantiating.pop()
        if not isinstance(ret, VoidType) and not _always_returns(body):
            # C allows falling off the end (undefined); Metal warns. The executor reports it if it happens.
            pass
        inst.nslots = self.func.nslots
        self.scope, self.func, self.addressed = saved_scope, saved_func, saved_addr
        return inst


def _designates_part_of(e: ast.Expr, base: ast.Expr) -> None:
    """A component or swizzle of an object is that object's part: same lvalue-ness and memory."""
    e.lvalue = base.lvalue
    e.memory = base.memory
    e.space = base.space
    e.const_mem = base.const_mem


def _flatten_items(init: ast.InitList) -> list:
    out = []
    for x in init.items:
        out.extend(_flatten_items(x) if isinstance(x, ast.InitList) else [x])
    return out


def _regroup(init: ast.InitList, ty: ArrayType) -> ast.InitList:
    """Brace elision: '{1, 2, 3, 4}' for 'float m[2][2]' means '{{1, 2}, {3, 4}}'."""
    flat = list(init.items)

    def build(t):
        if not isinstance(t, ArrayType):
            return flat.pop(0) if flat else None
        items = []
        for _ in range(t.n):
            if not flat:
                break
            items.append(build(t.elem))
        return ast.InitList(init.pos, [x for x in items if x is not None])
    out = build(ty)
    if flat:
        raise CompileError(f"too many initializers for '{ty}'", init.pos)
    return out


def _start_pos(e: ast.Expr) -> Pos:
    """Position of the leftmost token of an expression (where clang puts its caret)."""
    while True:
        if isinstance(e, ast.Index | ast.Member):
            e = e.base
        elif isinstance(e, ast.Binary):
            e = e.left
        elif isinstance(e, ast.Postfix):
            e = e.operand
        elif isinstance(e, ast.Convert):
            e = e.operand
        else:
            return e.pos


def _always_returns(block: ast.Block) -> bool:
    return bool(block.stmts) and isinstance(block.stmts[-1], ast.Return)


def _addressed_names(node) -> set[str]:
    """Names of variables whose address is taken ('&x', '&v.x'): they must live in memory."""
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Unary) and n.op == "&":
            inner = n.operand
            while isinstance(inner, ast.Member):
                inner = inner.base
            if isinstance(inner, ast.Name):
                out.add(inner.ident)
    return out


def _typed_placeholder(target: ast.Expr) -> ast.Expr:
    """Stand-in for the target's current value in 'a op= b' (already type-checked)."""
    ph = ast.Convert(target.pos, target, ConvertKind.LOAD)
    ph.ty = target.ty
    return ph


def _cast_const(v: Any, ty: Type) -> Any:
    if isinstance(ty, ScalarType):
        if ty.is_float:
            return float(v)
        if ty == BOOL:
            return bool(v)
        bits = ty.bits
        v = int(v) & ((1 << bits) - 1)
        if ty.signed and v >= 1 << (bits - 1):
            v -= 1 << bits
        return v
    return v


__all__ = ["Checker", "CheckedKernel", "FLOAT", "UINT"]
