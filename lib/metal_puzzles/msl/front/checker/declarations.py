"""Declarations: program-scope constants, locals, arrays (thread and threadgroup), references."""

from __future__ import annotations

import copy
from typing import Any

from ...lang.errors import CompileError
from ...lang.types import (
    AddressSpace,
    ArrayType,
    AtomicType,
    PointerType,
    ScalarType,
    StructType,
    VectorType,
    VoidType,
    size_of,
)
from .. import ast
from ..constexpr import NotConstant
from ..symbols import DeferredConstant, Var, VarKind
from .checker_state import CheckerPart
from .helpers import cast_const, regroup

#: Largest thread-private array the simulator accepts (it allocates one copy per thread).
MAX_THREAD_ARRAY_BYTES = 64 * 1024


class Declarations(CheckerPart):
    def global_decl(self, decl: ast.Decl) -> None:
        for d in decl.declarators:
            if d.type_spec.name == "auto":  # 'constant constexpr auto n = 64;': the initializer's type
                if d.init is None or isinstance(d.init, ast.InitList):
                    raise CompileError("'auto' needs an initializer to deduce the type from", d.pos)
                ty = self.chk.conversions.rvalue(self.chk.exprs.expr(copy.deepcopy(d.init))).ty  # checked again below, as written
            else:
                ty = self.chk.types.resolve_type(d.type_spec, init=d.init)
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
                    d.init = regroup(d.init, ty)
                value = self._const_array(d.init, ty)
            elif isinstance(ty, StructType):
                value = DeferredConstant(self.chk.structs.initial_value(d.init, ty))
            elif isinstance(ty, ScalarType):
                init = self.chk.exprs.expr(d.init)
                try:
                    v = self.chk.types.const_value(self.chk.conversions.convert(init, ty, "initialization"))
                except NotConstant:
                    raise CompileError(f"initializer of constant '{d.name}' is not a compile-time constant",
                                       d.init.pos) from None
                value = cast_const(v, ty)
            else:
                init = self.chk.conversions.convert(self.chk.exprs.expr(d.init), ty, "initialization")
                value = DeferredConstant(init)
            var = Var(d.name, ty, VarKind.CONST, d.pos, const_value=value, mutable=False)
            d.symbol = var
            self.chk.scope.names[d.name] = var

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
                e = self.chk.conversions.convert(self.chk.exprs.expr(item), ty.elem, "initialization")
                try:
                    out.append(cast_const(self.chk.types.const_value(e), ty.elem))
                except NotConstant:
                    raise CompileError("array constant elements must be compile-time constants", item.pos) from None
        return out

    def new_slot(self) -> int:
        assert self.chk.func is not None
        self.chk.func.nslots += 1
        return self.chk.func.nslots - 1

    def local_decl(self, decl: ast.Decl) -> None:
        for d in decl.declarators:
            spec = d.type_spec
            ty = self._local_type(d)
            if spec.reference:
                self._local_reference(d, ty)
                continue
            ctor_args: list[ast.Expr] | None = None
            if isinstance(ty, ArrayType) or (spec.space == AddressSpace.THREADGROUP and not isinstance(ty, PointerType)):
                var = self._local_array(d, ty)
            elif (spec.space == AddressSpace.CONSTANT or (decl.constexpr and d.init is not None)) and not (
                    isinstance(d.init, ast.InitList) and isinstance(ty, StructType)):
                # A local constant: evaluate once, like a global (a struct's braces are built below).
                var = self._local_constant(d, ty)
            elif isinstance(ty, StructType):
                var, ctor_args = self._local_struct(d, ty)
            else:
                var = self._local_variable(d, ty)
            self._declare_local(d, var)
            if isinstance(ty, StructType) and var.kind == VarKind.MEMVAR and ctor_args is not None:
                d.construct = self.chk.structs.construct_into(ast.Name(d.pos, d.name), ty, ctor_args, d.pos)

    def _local_type(self, d: ast.Declarator) -> Any:
        """A local's type: as written, or for 'auto' its initializer's (checked here, once)."""
        spec = d.type_spec
        if spec.name != "auto":
            return self.chk.types.resolve_type(spec, init=d.init)
        if d.init is None or isinstance(d.init, ast.InitList):
            raise CompileError("'auto' needs an initializer to deduce the type from", d.pos)
        d.init = self.chk.conversions.rvalue(self.chk.exprs.expr(d.init))
        return d.init.ty

    def _local_reference(self, d: ast.Declarator, ty: Any) -> None:
        """'thread T& r = x;': a name for an lvalue of the same type, in scope at once."""
        spec = d.type_spec
        if d.init is None:
            raise CompileError(f"reference '{d.name}' must be initialized", d.pos)
        target = self.chk.exprs.expr(d.init) if d.init.ty is None else d.init
        if not target.lvalue:
            raise CompileError(f"cannot bind reference '{d.name}' to a temporary value", d.init.pos)
        if target.ty != ty:
            raise CompileError(f"reference '{d.name}' of type '{ty}' cannot refer to a '{target.ty}'",
                               d.init.pos)
        d.init = target
        var = Var(d.name, ty, VarKind.REF, d.pos, slot=self.new_slot(),
                  mutable=not spec.const and not target.const_mem)
        d.symbol = var
        self.chk.scope.names[d.name] = var

    def _local_array(self, d: ast.Declarator, ty: Any) -> Var:
        """A thread or threadgroup array, or a threadgroup variable (kernel body only, no initializer)."""
        space = d.type_spec.space or AddressSpace.THREAD
        if space not in (AddressSpace.THREAD, AddressSpace.THREADGROUP):
            raise CompileError(f"arrays inside a kernel must be 'thread' or 'threadgroup' (found '{space}')",
                               d.pos)
        if isinstance(ty, VoidType):  # 'threadgroup void t;' has no size to allocate
            raise CompileError(f"cannot declare a variable of type '{ty}'", d.pos)
        kind = VarKind.ARRAY if isinstance(ty, ArrayType) else VarKind.TGVAR
        var = Var(d.name, ty, kind, d.pos, slot=self.new_slot(), space=space)
        if space == AddressSpace.THREADGROUP:
            if not self.chk.func or not self.chk.func.is_kernel:
                raise CompileError("threadgroup variables can only be declared in the kernel body", d.pos)
            if d.init is not None:
                raise CompileError("threadgroup variables cannot have an initializer", d.init.pos)
            self.chk.threadgroup_arrays.append(var)
        if space == AddressSpace.THREAD and size_of(ty) > MAX_THREAD_ARRAY_BYTES:
            raise CompileError(
                f"thread-private array '{d.name}' takes {size_of(ty)} bytes "
                f"per thread; the simulator allows {MAX_THREAD_ARRAY_BYTES // 1024} KiB (a GPU thread's private "
                "memory is small): use threadgroup or device memory for large data", d.pos)
        if d.init is not None:
            d.init = self._array_init(d.init, ty)
        return var

    def _local_constant(self, d: ast.Declarator, ty: Any) -> Var:
        """A 'constant' or 'constexpr' local: its value when the initializer is a constant
        expression, else a read-only local initialized at run time."""
        spec = d.type_spec
        if d.init is None:
            raise CompileError(f"constant '{d.name}' must be initialized", d.pos)
        if isinstance(d.init, ast.InitList) and isinstance(ty, VectorType):  # 'constexpr uint2 k = {1, 2};'
            init = self.chk.conversions.convert(self.chk.exprs.construct(ast.Construct(d.init.pos, spec, d.init.items), ty), ty,
                                "initialization")
        else:
            init = self.chk.conversions.convert(self.chk.exprs.expr(d.init), ty, "initialization")
        try:
            value = cast_const(self.chk.types.const_value(init), ty)
            var = Var(d.name, ty, VarKind.CONST, d.pos, const_value=value, mutable=False)
        except NotConstant:
            var = Var(d.name, ty, VarKind.LOCAL, d.pos, slot=self.new_slot(), mutable=False)
            d.init = init
        return var

    def _local_struct(self, d: ast.Declarator, ty: StructType) -> tuple[Var, list[ast.Expr] | None]:
        """A struct variable, and the arguments of the constructor that builds it in place (None
        when it has no constructor call: an initializer, default member values or nothing)."""
        spec = d.type_spec
        # Struct variables live in thread memory: members are places in it.
        if spec.space in (AddressSpace.DEVICE, AddressSpace.CONSTANT):
            raise CompileError(f"'{spec.space}' variables must be pointers or references", d.pos)
        var = Var(d.name, ty, VarKind.MEMVAR, d.pos, slot=self.new_slot(), mutable=not spec.const,
                  space=AddressSpace.THREAD)
        ctor_args = self._constructor_arguments(d, ty)
        if ctor_args is not None:
            # Built in place by its constructor, once the name is in scope (see local_decl).
            d.init = None
        elif d.init is not None:
            d.init = self.chk.structs.initial_value(d.init, ty)
        elif self.chk.structs.has_defaults(ty):
            d.init = self.chk.structs.struct_init(None, ty, d.pos)
        elif spec.const:
            raise CompileError(f"const variable '{d.name}' must be initialized", d.pos)
        return var, ctor_args

    def _local_variable(self, d: ast.Declarator, ty: Any) -> Var:
        """A scalar, vector or pointer local (a register, or thread memory when its address is taken)."""
        spec = d.type_spec
        if isinstance(ty, VoidType | AtomicType):
            raise CompileError(f"cannot declare a variable of type '{ty}'", d.pos)
        if spec.space in (AddressSpace.DEVICE, AddressSpace.CONSTANT) and not isinstance(ty, PointerType):
            raise CompileError(f"'{spec.space}' variables must be pointers or references", d.pos)
        kind = VarKind.MEMVAR if d.name in self.chk.addressed else VarKind.LOCAL
        # For pointers, 'const T*' protects the pointee; the variable is const only as 'T* const'.
        const_var = spec.pointers[-1][1] if isinstance(ty, PointerType) and spec.pointers else spec.const
        var = Var(d.name, ty, kind, d.pos, slot=self.new_slot(), mutable=not const_var, space=AddressSpace.THREAD)
        if d.init is not None:
            d.init = self._scalar_init(d.init, spec, ty)
        elif not var.mutable:
            raise CompileError(f"const variable '{d.name}' must be initialized", d.pos)
        if not var.mutable and isinstance(ty, ScalarType) and ty.is_int and d.init is not None:
            # A const integral variable initialized by a constant expression is one itself
            # (C++): usable as an array size. It still runs as a read-only local.
            try:
                var.const_value = cast_const(self.chk.types.const_value(d.init), ty)
            except NotConstant:
                pass
        elif kind == VarKind.LOCAL:
            var.maybe_uninit = True
        return var

    def _scalar_init(self, init: ast.Expr, spec: ast.TypeSpec, ty: Any) -> ast.Expr:
        """A scalar, vector or pointer local's initializer, converted to its type ('= e', '{e}', '{}')."""
        if not isinstance(init, ast.InitList):
            checked = init if init.ty is not None else self.chk.exprs.expr(init)
            return self.chk.conversions.convert(checked, ty, "initialization")
        if isinstance(ty, VectorType):
            return self.chk.conversions.convert(self.chk.exprs.construct(ast.Construct(init.pos, spec, init.items), ty), ty, "initialization")
        if len(init.items) == 1:
            return self.chk.conversions.convert(self.chk.exprs.expr(init.items[0]), ty, "initialization")
        if not init.items:
            zero = self.chk.conversions.convert(ast.IntLit(init.pos, 0), ty, "initialization")
            return self.chk.exprs.expr(zero) if zero.ty is None else zero
        raise CompileError("too many initializers for a scalar", init.pos)

    def _declare_local(self, d: ast.Declarator, var: Var) -> None:
        """Put a checked local in scope (a name declared twice in one scope is an error) and in the
        function's list of variables."""
        d.symbol = var
        if self.chk.func is not None:
            self.chk.func.variables.append(var)
        prev = self.chk.scope.names.get(d.name)
        if isinstance(prev, Var):
            first = (f"a parameter of the kernel that MLX generates ({prev.role})" if prev.role is not None
                     else f"first declared at line {prev.pos.line}")
            raise CompileError(f"redefinition of '{d.name}' ({first})", d.pos)
        self.chk.scope.names[d.name] = var

    def _constructor_arguments(self, d: ast.Declarator, st: StructType) -> list[ast.Expr] | None:
        """For a struct with constructors, the arguments of the one a declaration calls: 'P p;'
        (none), 'P p(a, b);', 'P p{a, b};', 'P p = {a, b};', 'P p = P(a, b);' (C++17 builds it in
        place); None for a struct without constructors or a copy ('P q = p;')."""
        if not self.chk.structs.has_constructors(st):
            return None
        init = d.init
        if init is None:
            return []
        if isinstance(init, ast.InitList):
            return list(init.items)
        if (isinstance(init, ast.Construct) and not init.type_spec.member and not init.type_spec.pointers
                and self.chk.types.resolve_type(init.type_spec) == st):
            if len(init.args) == 1 and not isinstance(init.args[0], ast.InitList):
                arg = self.chk.exprs.expr(init.args[0])
                if self.chk.conversions.rvalue(arg).ty == st:
                    d.init = arg  # 'P q(p);': a copy
                    return None
                init.args[0] = arg
            return list(init.args)
        return None

    def _array_init(self, init: ast.Expr, ty: ArrayType) -> ast.InitList:
        if not isinstance(init, ast.InitList):
            raise CompileError("arrays must be initialized with a {...} list", init.pos)
        if isinstance(ty.elem, ArrayType) and init.items and not any(isinstance(x, ast.InitList) for x in init.items):
            init = regroup(init, ty)
        if len(init.items) > ty.n:
            raise CompileError(f"too many initializers for an array of {ty.n}", init.pos)
        items: list[ast.Expr] = []
        for item in init.items:
            if isinstance(ty.elem, ArrayType):
                items.append(self._array_init(item, ty.elem))
            else:
                items.append(self.chk.structs.initial_value(item, ty.elem))
        out = ast.InitList(init.pos, items)
        out.ty = ty
        return out
