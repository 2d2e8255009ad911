"""Resolving type names and constant expressions (array sizes, template arguments)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from ...lang.errors import CompileError, Pos, did_you_mean
from ...lang.metal_namespace import strip_metal_namespace
from ...lang.types import (
    BOOL,
    FLOAT,
    INT,
    SCALARS,
    UINT,
    VOID,
    AddressSpace,
    ArrayType,
    AtomicType,
    EnumType,
    PointerType,
    ScalarType,
    SimdgroupMatrixType,
    StructType,
    Type,
    VoidType,
    lookup_builtin_type,
    vector,
)
from .. import ast
from ..constexpr import NotConstant, evaluate
from ..symbols import DeferredConstant, Var, VarKind
from .checker_state import CheckerPart, CheckerState
from .entries import (
    AliasTemplateEntry,
    ArgumentBufferEntry,
    NameEntry,
    Scope,
    ScopeEntry,
    StructTemplateEntry,
    TypeEntry,
    TypePackEntry,
    VariableTemplateEntry,
    template_value_entry,
)
from .helpers import callee_name, cast_const, flatten_items


class SubstitutionFailure(CompileError):
    """A type that cannot be formed for a template's arguments (``enable_if_t<false>``): in a
    function template's signature it removes that template from the candidates (SFINAE)."""


#: How deeply constexpr function calls may nest while evaluated (C++ compilers allow ~512).
MAX_CONSTEXPR_DEPTH = 256

#: The one-type traits that name a type ('remove_cv_t<T>'), resolved by ``_type_transform``.
TYPE_TRANSFORMS = ("remove_cv_t", "remove_const_t", "remove_volatile_t", "remove_reference_t", "remove_cvref_t",
                   "decay_t", "make_signed_t", "make_unsigned_t")
_INTEGER_PAIRS = (("char", "uchar"), ("short", "ushort"), ("int", "uint"), ("long", "ulong"))
MAKE_SIGNED = {name: signed for pair in _INTEGER_PAIRS for signed in pair[:1] for name in pair}
MAKE_UNSIGNED = {name: unsigned for pair in _INTEGER_PAIRS for unsigned in pair[1:] for name in pair}


class TypeResolution(CheckerPart):
    def __init__(self, chk: CheckerState) -> None:
        super().__init__(chk)
        # The constexpr functions being evaluated, innermost last (their nesting is bounded).
        self.constexpr_calls: list[str] = []
        # Variable template instances, by (template, argument values).
        self.variable_instances: dict[tuple, Any] = {}

    def declare_alias(self, item: ast.TypeAlias) -> None:
        if item.template_params:
            # Resolved at each use, with its arguments ('opmath_t<half>').
            self.chk.scope.names[item.name] = AliasTemplateEntry(item)
            return
        self.chk.scope.names[item.name] = TypeEntry(self.resolve_type(item.type_spec))

    def _alias_instance(self, alias: ast.TypeAlias, spec: ast.TypeSpec, declared_in: Scope | None = None) -> Type:
        """The type an alias template names for the arguments written in ``spec`` (missing
        trailing arguments take their defaults, which may use the earlier ones); a member alias
        template sees the names of the struct it is declared in (``declared_in``)."""
        params = alias.template_params
        if params and params[-1].pack:
            return self._variadic_alias_instance(alias, spec)
        if len(spec.args) > len(params):
            raise CompileError(f"alias template '{alias.name}' takes {len(params)} template argument(s), "
                               f"{len(spec.args)} given", spec.pos)
        values: list[Any] = []
        for k, p in enumerate(params):
            arg = spec.args[k] if k < len(spec.args) else None
            if arg is None and p.default is None:
                raise CompileError(f"alias template '{alias.name}' needs a value for '{p.name}'", spec.pos)
            if arg is not None:  # the caller's arguments, in the caller's scope
                values.append(self._template_argument(p, arg, alias.name))
            else:
                values.append(None)
        saved_scope, saved_namespace = self.chk.scope, self.chk.namespace
        self.chk.scope, self.chk.namespace = Scope(declared_in or self.chk.globals), alias.namespace
        try:
            for p, value in zip(params, values, strict=True):
                if value is None:  # a default, in the alias's own scope with the earlier arguments
                    value = self._template_argument(p, p.default, alias.name)
                self.chk.scope.names[p.name] = template_value_entry(p.name, value, alias.pos)
            return self.resolve_type(alias.type_spec)
        finally:
            self.chk.scope, self.chk.namespace = saved_scope, saved_namespace

    def _variadic_alias_instance(self, alias: ast.TypeAlias, spec: ast.TypeSpec) -> Type:
        """An alias template ending in a type pack ('template <typename F, typename... Args>
        using result_of = ...'): the arguments after the leading ones are the pack's types."""
        *leading, pack = alias.template_params
        if len(spec.args) < len(leading):
            raise CompileError(f"alias template '{alias.name}' takes at least {len(leading)} template "
                               f"argument(s), {len(spec.args)} given", spec.pos)
        values = [self._template_argument(p, arg, alias.name) for p, arg in zip(leading, spec.args, strict=False)]
        pack_types = []
        for arg in spec.args[len(leading):]:
            if not isinstance(arg, ast.TypeSpec):
                raise CompileError(f"the pack '{pack.name}' of alias template '{alias.name}' takes types", spec.pos)
            pack_types.append(self.resolve_type(arg))
        saved_scope, saved_namespace = self.chk.scope, self.chk.namespace
        self.chk.scope, self.chk.namespace = Scope(self.chk.globals), alias.namespace
        try:
            for p, value in zip(leading, values, strict=True):
                self.chk.scope.names[p.name] = template_value_entry(p.name, value, alias.pos)
            self.chk.packs.bind_type_pack(pack.name, pack_types)
            return self.resolve_type(alias.type_spec)
        finally:
            self.chk.scope, self.chk.namespace = saved_scope, saved_namespace

    def variable_instance(self, item: ast.GlobalDecl, args: Any, pos: Pos) -> Var:
        """The constant a variable template gives for these template arguments (one per list)."""
        declarator = item.decl.declarators[0]
        if args is None:
            raise CompileError(f"variable template '{declarator.name}' needs template arguments", pos)
        params = item.template_params
        if len(args) > len(params):
            raise CompileError(f"variable template '{declarator.name}' takes {len(params)} template argument(s), "
                               f"{len(args)} given", pos)
        values = [self._template_argument(p, a, declarator.name) for p, a in zip(params, args, strict=False)]
        saved_scope, saved_namespace = self.chk.scope, self.chk.lookup.enter_namespace(item.namespace)
        self.chk.scope = Scope(self.chk.globals)
        try:
            for k, p in enumerate(params):
                if k >= len(values):
                    if p.default is None:
                        raise CompileError(f"variable template '{declarator.name}' needs a value for '{p.name}'",
                                           pos)
                    values.append(self._template_argument(p, p.default, declarator.name))
                value = values[k]
                self.chk.scope.names[p.name] = template_value_entry(p.name, value, pos)
            key = (id(item), tuple(values))
            if key not in self.variable_instances:
                decl = copy.deepcopy(item.decl)
                name = f"{declarator.name}<{', '.join(str(v) for v in values)}>"
                decl.declarators[0].name = name
                self.chk.decls.global_decl(decl)
                self.variable_instances[key] = self.chk.scope.names[name]
            return self.variable_instances[key]
        finally:
            self.chk.scope, self.chk.namespace = saved_scope, saved_namespace

    def _template_argument(self, param: ast.TemplateParam, arg: Any, template: str) -> Type | int:
        if param.kind == "type":
            if not isinstance(arg, ast.TypeSpec):
                raise CompileError(f"template parameter '{param.name}' of '{template}' is a type", arg.pos)
            return self.resolve_type(arg)
        return self.const_int(arg, f"template argument '{param.name}' of '{template}'")

    def resolve_type(self, spec: ast.TypeSpec, default_space: AddressSpace = AddressSpace.THREAD, init: Any = None) -> Type:
        base = self._resolve_base(spec)
        ty = base
        for pspace, _pointer_const in spec.pointers:
            # The address space written before the type qualifies the first pointee.
            space = spec.space if ty is base and spec.space else (pspace or default_space)
            const = spec.const if ty is base else False
            ty = PointerType(ty, space, const)
        if spec.array_dims and isinstance(ty, VoidType):
            raise CompileError("array has incomplete element type 'void'", spec.pos)
        for k, dim in enumerate(reversed(spec.array_dims)):
            if dim is None:
                if k == len(spec.array_dims) - 1 and isinstance(init, ast.InitList):
                    inner = 1
                    t = ty
                    while isinstance(t, ArrayType):
                        inner *= t.n
                        t = t.elem
                    flat = len(flatten_items(init))
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
        if name == "decltype":
            # The type of the expression (a copy is checked: nothing of it is evaluated).
            self.chk.unevaluated_depth += 1
            try:
                expr = self.chk.conversions.rvalue(self.chk.exprs.expr(copy.deepcopy(spec.args[0])))
            finally:
                self.chk.unevaluated_depth -= 1
            if isinstance(expr.ty, VoidType | EnumType):
                raise CompileError(f"decltype of an expression of type '{expr.ty}' cannot declare anything",
                                   spec.pos)
            return expr.ty
        found = self.chk.lookup.lookup_name(name)
        if isinstance(found, TypeEntry):
            return found.type
        if isinstance(found, AliasTemplateEntry):
            return self._alias_instance(found.alias, spec, found.declared_in)
        if isinstance(found, TypePackEntry):
            raise self.chk.packs.unexpanded_pack_error(name, spec.pos)
        if isinstance(found, ArgumentBufferEntry):
            declared = found.declared
            raise CompileError(f"'{name}' is an argument buffer (its members carry [[id(n)]], line {declared.line}): "
                               "the simulator does not support argument buffers (structs of buffer pointers); "
                               "pass each buffer as a kernel parameter of its own", spec.pos)
        if isinstance(found, StructTemplateEntry):
            if not spec.args:
                raise CompileError(f"struct template '{name}' needs template arguments ('{name}<...>')", spec.pos)
            st = self.chk.templates.struct_instance(found.key, spec.args, spec.pos)
            if not spec.member:
                return st
            entry = self.chk.templates.static_member_entry(st, spec.member, spec.pos)
            if not isinstance(entry, TypeEntry):
                raise CompileError(f"'{st.name}::{spec.member[0]}' is a constant, not a type", spec.pos)
            return entry.type
        plain = strip_metal_namespace(name)
        if plain in ("enable_if_t", "conditional_t"):
            return self._type_trait(plain, spec)
        if plain in TYPE_TRANSFORMS:
            return self._type_transform(plain, spec)
        if plain in ("vec",):
            if len(spec.args) != 2:
                raise CompileError("vec<T, N> takes a type and a size", spec.pos)
            elem = self.resolve_type(spec.args[0])
            n = self.const_int(spec.args[1], "vector size")
            if not isinstance(elem, ScalarType) or n not in (2, 3, 4):
                raise CompileError(f"invalid vector type vec<{elem}, {n}>", spec.pos)
            return vector(elem, n)
        if plain == "simdgroup_matrix":
            if len(spec.args) != 3:
                raise CompileError("simdgroup_matrix<T, 8, 8> takes a type and two sizes", spec.pos)
            elem = self.resolve_type(spec.args[0])
            dims = [self.const_int(a, "matrix size") for a in spec.args[1:]]
            if not (isinstance(elem, ScalarType) and elem.name in ("float", "half", "bfloat")) or dims != [8, 8]:
                raise CompileError(f"simdgroup matrices are 8x8 of float, half or bfloat, not <{elem}, "
                                   f"{dims[0]}, {dims[1]}>", spec.pos)
            return SimdgroupMatrixType(elem)
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

    def static_assert(self, s: ast.StaticAssert) -> None:
        """Evaluate the condition now; false is a compile error with the assertion's message."""
        if not self.const_int(s.condition, "static_assert condition"):
            detail = f": {s.message}" if s.message else ""
            raise CompileError(f"static assertion failed{detail}", s.pos)

    def template_struct_constant(self, name: str, template_args: Any, pos: Pos) -> Var | None:
        """``S<T>::value``: a static constant of a struct template's instance, or None when
        ``name`` is no such thing."""
        if "<>::" not in name:
            return None
        base, member = name.split("<>::", 1)
        key = self.chk.templates.template_struct_named(base)
        if key is None:
            return None
        entry = self.chk.templates.static_member_entry(self.chk.templates.struct_instance(key, template_args, pos), member.split("::"), pos)
        if not isinstance(entry, Var):
            raise CompileError(f"'{base}<...>::{member}' is a type, not a value", pos)
        return entry

    def _type_trait(self, trait: str, spec: ast.TypeSpec) -> Type:
        """``enable_if_t<B, T = void>`` is T when B holds, else no type (a substitution failure:
        the function template whose signature names it is not a candidate);
        ``conditional_t<B, T, F>`` is T or F."""
        arity = (1, 2) if trait == "enable_if_t" else (3,)
        if len(spec.args) not in arity:
            raise CompileError(f"'{trait}' takes {' or '.join(map(str, arity))} template arguments, "
                               f"{len(spec.args)} given", spec.pos)
        for arg in spec.args[1:]:
            if not isinstance(arg, ast.TypeSpec):
                raise CompileError(f"'{trait}' takes a type after its condition", arg.pos)
        holds = self.const_int(spec.args[0], f"condition of '{trait}'")
        if trait == "conditional_t":
            return self.resolve_type(spec.args[1] if holds else spec.args[2])
        if not holds:
            raise SubstitutionFailure("'enable_if_t' condition is false, so it names no type", spec.pos)
        return self.resolve_type(spec.args[1]) if len(spec.args) == 2 else VOID

    def _type_transform(self, trait: str, spec: ast.TypeSpec) -> Type:
        """``remove_cv_t<T>``, ``remove_reference_t<T>``, ``decay_t<T>``, ``make_unsigned_t<T>``...:
        the simulator's types carry no cv-qualifier or reference (those belong to declarations),
        so the removing traits give T's type; ``decay_t`` turns an array into a pointer to its
        first element; ``make_signed_t`` / ``make_unsigned_t`` map an integer type to its kind of
        the same width.
        """
        if len(spec.args) != 1 or not isinstance(spec.args[0], ast.TypeSpec):
            raise CompileError(f"'{trait}' takes one type argument", spec.pos)
        ty = self.resolve_type(spec.args[0])
        if trait == "decay_t" and isinstance(ty, ArrayType):
            return PointerType(ty.elem, spec.args[0].space or AddressSpace.THREAD, spec.args[0].const)
        if trait in ("make_signed_t", "make_unsigned_t"):
            table = MAKE_SIGNED if trait == "make_signed_t" else MAKE_UNSIGNED
            target = table.get(ty.name) if isinstance(ty, ScalarType) else None
            if target is None:
                raise CompileError(f"'{trait}' needs an integer type other than bool, not '{ty}'", spec.pos)
            return SCALARS[target]
        return ty

    def _type_candidates(self) -> set[str]:
        names = {k for k, v in self.all_scope_items() if isinstance(v, NameEntry)}
        return names | set(SCALARS) | {f"{e}{n}" for e in ("float", "half", "int", "uint") for n in (2, 3, 4)}

    def all_scope_items(self) -> Iterator[tuple[str, ScopeEntry]]:
        s: Scope | None = self.chk.scope
        while s is not None:
            yield from s.names.items()
            s = s.parent

    def const_int(self, expr: Any, what: str) -> int:
        if isinstance(expr, ast.TypeSpec):
            raise CompileError(f"expected a constant for the {what}, found a type", expr.pos)
        try:
            value = evaluate(expr, self._const_lookup, self._const_size_of, self.const_call)
        except NotConstant:
            raise CompileError(f"{what} must be a compile-time constant", expr.pos) from None
        if isinstance(value, float):
            raise CompileError(f"{what} must be an integer", expr.pos)
        return int(value)

    def const_call(self, e: ast.Call | ast.Construct) -> int | float:
        """A call of a (non-template) ``constexpr`` function whose body is ``return expr;`` (C++11's
        form), evaluated with its arguments' values; anything else is not a constant here.
        ``S::f()`` and ``S<T>::f()`` (a Construct naming a member) call a static constexpr member."""
        owner: StructType | None = None
        if isinstance(e, ast.Construct):
            fd, owner = self._constexpr_member_of_instance(e)
        elif not isinstance(e.func, ast.Name) or e.func.template_args:
            raise NotConstant("call")
        elif self.chk.structs.static_member_functions(e.func.ident) is not None:
            fd, owner = self.constexpr_static_method(e)
        else:
            defs = [d for d in (self.chk.lookup.find_function(e.func.ident) or []) if d.constexpr and not d.template_params
                    and len(d.params) == len(e.args)]
            if len(defs) != 1:
                raise NotConstant("call")
            fd = defs[0]
        body = fd.body.stmts if fd.body is not None else []
        if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
            raise NotConstant("call")
        if len(self.constexpr_calls) >= MAX_CONSTEXPR_DEPTH:
            raise CompileError(f"constexpr evaluation of '{fd.name}' nests more than {MAX_CONSTEXPR_DEPTH} calls "
                               "deep", e.pos)
        args = [self.const_value(a) for a in e.args]
        saved_scope, saved_namespace = self.chk.scope, self.chk.lookup.enter_namespace(fd.namespace)
        self.chk.scope = Scope(self.chk.globals)
        if owner is not None:  # a static member function sees its struct's types, constants, template arguments
            self.chk.templates.struct_members_scope(owner, self.chk.scope)
        self.constexpr_calls.append(fd.name)
        try:
            for p, value in zip(fd.params, args, strict=True):
                ty = self.resolve_type(p.type_spec)
                self.chk.scope.names[p.name or "_"] = Var(p.name or "_", ty, VarKind.CONST, p.pos,
                                                      const_value=cast_const(value, ty), mutable=False)
            return cast_const(self.const_value(body[0].value), self.resolve_type(fd.ret))
        finally:
            self.constexpr_calls.pop()
            self.chk.scope, self.chk.namespace = saved_scope, saved_namespace

    def _constexpr_member_of_instance(self, e: ast.Construct) -> tuple[ast.FuncDef, StructType]:
        spec = e.type_spec
        if len(spec.member) != 1 or not spec.args:
            raise NotConstant("call")
        owner = self.resolve_type(ast.TypeSpec(spec.pos, spec.name, spec.args))
        if not isinstance(owner, StructType):
            raise NotConstant("call")
        return self._single_static_constexpr(owner, spec.member[0], len(e.args))

    def constexpr_static_method(self, e: ast.Call) -> tuple[ast.FuncDef, StructType]:
        """The one 'static constexpr' member function (not a template) that ``S::f(args)`` names
        with this many arguments, and its struct; NotConstant when there is none."""
        found = self.chk.structs.static_member_functions(callee_name(e).ident)
        if found is None:
            raise NotConstant("call")
        return self._single_static_constexpr(*found, len(e.args))

    def _single_static_constexpr(self, st: StructType, name: str, nargs: int) -> tuple[ast.FuncDef, StructType]:
        defs = [m for m in self.chk.struct_defs[st].methods if m.name == name and m.static and m.constexpr
                and not m.template_params and len(m.params) == nargs]
        if len(defs) != 1:
            raise NotConstant("call")
        return defs[0], st

    def const_value(self, expr: ast.Expr) -> int | float:
        return evaluate(expr, self._const_lookup, self._const_size_of, self.const_call)

    def _const_size_of(self, e: ast.SizeOf) -> int:
        # The checker's sizeof on a copy: the expression stays unchecked for its own later check.
        size = self.chk.exprs.expr(copy.deepcopy(e))
        assert isinstance(size, ast.IntLit)  # e_SizeOf folds it
        return size.value

    def _const_lookup(self, name: str, pos: Pos, template_args: Any = None) -> Any:
        found = self.chk.lookup.lookup_name(name)
        if isinstance(found, VariableTemplateEntry):
            var = self.variable_instance(found.decl, template_args, pos)
            if var.const_value is None or isinstance(var.const_value, list | DeferredConstant):
                raise NotConstant(name)
            return var.const_value
        if template_args is not None:  # a trait such as is_same_v<T, float>, or Limits<T>::max
            member = self.template_struct_constant(name, template_args, pos)
            if member is not None:
                if member.const_value is None:
                    raise NotConstant(name)
                return member.const_value
            const = self.chk.library.constant(name.removeprefix("::"), template_args, self.chk)
            if const is None:
                raise NotConstant(name)
            return const[1] if isinstance(const[1], float) else int(const[1])
        sym = self.chk.lookup.lookup_name(name)
        if sym is None:
            sym = self.chk.templates.member_through_type_name(name, pos)
        if isinstance(sym, Var) and sym.const_value is not None and not isinstance(sym.const_value, list | DeferredConstant):
            v = sym.const_value
            return float(v) if isinstance(v, float) else int(v)
        if sym is None:  # <metal_math>'s NAN, INFINITY, M_PI_F..., usable at program scope too
            const = self.chk.library.constant(name.removeprefix("::"), None, self.chk)
            if const is not None and not isinstance(const[1], list):
                return float(const[1]) if isinstance(const[1], float) else int(const[1])
        if sym is None and self.chk.scope.lookup(name.split("::")[-1]) is None:
            raise CompileError(f"use of undeclared identifier '{name}'" + did_you_mean(name, self.chk.scope.all_names()), pos)
        raise NotConstant(name)
