"""Calls: builtins (checked by the library) and header functions (overloads, template argument deduction, instantiation)."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Set as AbstractSet
from typing import Any

from ...lang.errors import CompileError, Pos, did_you_mean
from ...lang.metal_namespace import strip_metal_namespace
from ...lang.types import (
    BFLOAT,
    FLOAT,
    HALF,
    INT,
    SIMD_VOTE,
    AddressSpace,
    ArrayType,
    AtomicType,
    PointerType,
    ScalarType,
    SimdgroupMatrixType,
    StructType,
    Type,
    VectorType,
)
from .. import ast
from ..constexpr import NotConstant
from ..symbols import FuncInstance, Var, VarKind
from .checker_state import CheckerPart, CheckerState
from .entries import (
    FunctionArgumentEntry,
    MethodEntry,
    ParameterPackEntry,
    Scope,
    TypeEntry,
    template_value_entry,
)
from .helpers import addressed_names, callee_name, designates_part_of
from .packs import element_name, rename
from .typenames import SubstitutionFailure

#: Function instances being checked inside each other (a chain of calls through functions not yet
#: checked, or template recursion). Deeper chains could not run anyway: the executor stops a
#: thread's calls at 64 deep (executor/codegen/calls.py's MAX_CALL_DEPTH). Bounding them here keeps the
#: checker's recursion (dozens of Python frames a level) off Python's limit, and stops a variadic
#: template that instantiates itself with a longer pack at every level (seconds per level).
MAX_INSTANTIATION_DEPTH = 64


class Calls(CheckerPart):
    def __init__(self, chk: CheckerState) -> None:
        super().__init__(chk)
        # The header functions being instantiated, innermost last (their nesting is bounded).
        self.instantiating: list[str] = []
        # Functions taking function pointers, as made for the functions a call site names: by
        # (the declaration's id, those functions' names), so each is instantiated once.
        self.function_argument_defs: dict[tuple, ast.FuncDef] = {}

    def check_call(self, e: ast.Call) -> ast.Expr:
        if e.target is not None and e.ty is not None:
            # Checked already (a compound assignment checks its operand again as 'a op b'): a
            # static member call's object-less form ('S<T>::f') could not be looked up twice.
            return e
        e.args = self.chk.packs.expand_packs(e.args, e.pos)
        if isinstance(e.func, ast.Member):
            target = e.func.base
            if e.func.arrow and not (isinstance(target, ast.Name) and target.ident == "this"):
                target = ast.Unary(e.func.pos, ast.UnaryOp.DEREF, target)
            base = self.chk.exprs.expr(target)
            if isinstance(base.ty, StructType):
                return self.chk.structs.method_call(e, base, base.ty)
            if isinstance(base.ty, SimdgroupMatrixType) and e.func.name == "thread_elements" and not e.args:
                # This thread's two elements: a vec<T, 2> that is a part of the matrix (assignable).
                b = self.chk.library.function("simdgroup_matrix.thread_elements")
                assert b is not None  # the library's own member function
                e.target = b
                e.ty = b.check(self.chk, e, [base], None)
                designates_part_of(e, base)
                return e
            base = self.chk.conversions.rvalue(base)
            if base.ty == SIMD_VOTE and e.func.name in ("all", "any") and not e.args:
                b = self.chk.library.function("simd_vote." + e.func.name)
                assert b is not None  # the library's own member functions
                e.func = ast.Name(e.func.pos, "simd_vote." + e.func.name)
                e.target = b
                e.args = [base]
                e.ty = b.check(self.chk, e, [base], None)
                return e
            raise CompileError(f"member functions are not supported on '{base.ty}'", e.pos)
        if not isinstance(e.func, ast.Name):
            callee = self.chk.exprs.expr(e.func)
            if isinstance(callee.ty, StructType):
                # 'declval<F>()(x)', 'F()(x)': a functor value's 'operator()'.
                e.func = ast.Member(e.func.pos, callee, "operator()", False)
                return self.chk.structs.method_call(e, callee, callee.ty)
            raise CompileError("only named functions and functor objects can be called", e.pos)
        name = e.func.ident
        if strip_metal_namespace(name) == "declval" and self.chk.lookup.lookup_name(name) is None:
            return self._declval(e)
        sym = self.chk.lookup.lookup_name(name)
        if isinstance(sym, Var):
            if isinstance(sym.ty, StructType):
                # 'f(a, b)' on a functor object calls its 'operator()', as in C++.
                e.func = ast.Member(e.func.pos, e.func, "operator()", False)
                return self.check_call(e)
            raise CompileError(f"'{name}' is a variable, not a function", e.pos)
        if isinstance(sym, MethodEntry):
            return self.chk.structs.member_function_call(e)
        if isinstance(sym, FunctionArgumentEntry):  # 'op(a, b)' with 'T (*op)(T, T)'
            return self.call_header_function(e, sym.functions)
        static = self.chk.structs.static_member_functions(name)
        if static is not None:  # 'S::f(x)', 'F::apply(a, b)'
            folded = self._fold_constexpr_call(e, static[0])
            return folded if folded is not None else self.chk.structs.static_call(e, *static)
        plain = strip_metal_namespace(name)
        defs = self.chk.lookup.find_function(name) or self.chk.func_defs.get(plain)
        if defs and any(d.constexpr for d in defs):
            folded = self._fold_constexpr_call(e)
            if folded is not None:
                return folded
        if defs:
            return self.call_header_function(e, defs)
        b = self.chk.library.function(name.removeprefix("::"))
        if b is None:
            cands = set(self.chk.func_defs) | self.chk.library.function_names()
            raise CompileError(f"use of undeclared function '{name}'" + did_you_mean(plain, cands), e.func.pos)
        args = []
        for a in e.args:
            if isinstance(a, ast.InitList):
                raise CompileError("brace lists cannot be passed to builtin functions", a.pos)
            args.append(self.chk.exprs.expr(a))
        e.target = b
        e.ty = b.check(self.chk, e, args, callee_name(e).template_args)
        return e

    def _declval(self, e: ast.Call) -> ast.Expr:
        """``metal::declval<T>()``: a value of type T that is never computed, so only an
        unevaluated operand (decltype) may use it, as in C++."""
        targs = callee_name(e).template_args or []
        if len(targs) != 1 or not isinstance(targs[0], ast.TypeSpec) or e.args:
            raise CompileError("declval takes one type and no arguments ('metal::declval<T>()')", e.pos)
        if not self.chk.unevaluated_depth:
            raise CompileError("metal::declval<T>() may only be used in an unevaluated operand such as "
                               "decltype(...): it has no value to compute", e.pos)
        e.ty = self.chk.types.resolve_type(targs[0])
        return e

    def _fold_constexpr_call(self, e: ast.Call, owner: StructType | None = None) -> ast.Expr | None:
        """A constexpr function (or static constexpr member function of ``owner``) called with
        constant arguments is its value, computed now (as C++ compilers do; it also lets a
        recursive constexpr function run, which Metal could not)."""
        try:
            value = self.chk.types.const_call(e)
        except NotConstant:
            return None
        if owner is not None:
            fd, _ = self.chk.types.constexpr_static_method(e)
            saved_scope, self.chk.scope = self.chk.scope, Scope(self.chk.globals)
            self.chk.templates.struct_members_scope(owner, self.chk.scope)
            try:
                ty = self.chk.types.resolve_type(fd.ret)
            finally:
                self.chk.scope = saved_scope
        else:
            fd = next(d for d in self.chk.lookup.find_function(callee_name(e).ident) or []
                      if d.constexpr and len(d.params) == len(e.args))
            saved_namespace = self.chk.lookup.enter_namespace(fd.namespace)
            try:
                ty = self.chk.types.resolve_type(fd.ret)
            finally:
                self.chk.namespace = saved_namespace
        if not isinstance(ty, ScalarType):
            return None
        lit: ast.Expr
        if ty.is_bool:
            lit = ast.BoolLit(e.pos, bool(value))
        elif ty.is_float:
            lit = ast.FloatLit(e.pos, float(value))
        else:
            lit = ast.IntLit(e.pos, int(value))
        lit.ty = ty
        return lit

    def call_header_function(self, e: ast.Call, defs: list[ast.FuncDef]) -> ast.Expr:
        if any(p.function_params is not None for fd in defs for p in fd.params):
            defs = self.with_function_arguments(e, defs)
        # An overloaded operator's operands come checked already (checking is not repeatable).
        args = [a if a.ty is not None else self.chk.exprs.expr(a) for a in e.args]
        explicit = [self.chk.types.resolve_type(t) if isinstance(t, ast.TypeSpec) else self.chk.types.const_int(t, "template argument")
                    for t in (callee_name(e).template_args or [])]
        fd, binding = self.choose_overload(callee_name(e).ident, e.pos, defs, args, explicit)
        explicit_spec = self._explicit_specialization(fd, binding)
        inst = (self._instantiate(explicit_spec, {}, e.pos) if explicit_spec is not None
                else self._instantiate(fd, binding, e.pos))
        converted = []
        for p, a in zip(inst.params, args, strict=False):
            if p.kind == VarKind.REF:
                if not a.lvalue:
                    raise CompileError(f"cannot bind a temporary to reference parameter '{p.name}'", a.pos)
                if a.ty != p.ty:
                    raise CompileError(f"reference parameter '{p.name}' has type '{p.ty}', argument has '{a.ty}'",
                                       a.pos)
                if p.mutable:
                    self.chk.exprs.require_modifiable(a)
                converted.append(a)
            else:
                converted.append(self.chk.conversions.convert(a, p.ty, f"argument '{p.name}' of '{fd.name}'"))
        # Default arguments.
        for p, fp in list(zip(inst.params, fd.params, strict=False))[len(args):]:
            if fp.default is None:
                raise CompileError(f"too few arguments to '{fd.name}'", e.pos)
            converted.append(self.chk.conversions.convert(self.chk.exprs.expr(fp.default), p.ty, "default argument"))
        e.args = converted
        e.target = inst
        e.ty = inst.ret
        self.chk.mark_reference_result(e, inst)
        return e

    def with_function_arguments(self, e: ast.Call, defs: list[ast.FuncDef]) -> list[ast.FuncDef]:
        """A call of functions with function pointer parameters ('T (*op)(T, T)'): each such
        argument must name a function (known when compiling, as Metal's compiler inlines it);
        the result is each overload made for those functions, without those parameters, and the
        call keeps only its other arguments. Overloads must take function pointers at the same
        positions."""
        positions = {tuple(k for k, p in enumerate(fd.params) if p.function_params is not None) for fd in defs}
        if len(positions) != 1:
            raise CompileError(f"the overloads of '{defs[0].name}' take function pointers at different positions; "
                               "the simulator needs them at the same ones", e.pos)
        (where,) = positions
        if where and where[-1] >= len(e.args):
            missing = defs[0].params[where[-1]].name
            raise CompileError(f"too few arguments to '{defs[0].name}': the function pointer '{missing}' needs one",
                               e.pos)
        made = []
        for fd in defs:
            named = {fd.params[k].name or f"#{k}": self._function_named_by(e.args[k], fd.params[k], fd.name)
                     for k in where}
            key = (id(fd), tuple((k, v[0].name) for k, v in named.items()))
            if key not in self.function_argument_defs:
                self.function_argument_defs[key] = dataclasses.replace(
                    fd, params=[p for p in fd.params if p.function_params is None], function_arguments=named)
            made.append(self.function_argument_defs[key])
        e.args = [a for k, a in enumerate(e.args) if k not in where]
        return made

    def _function_named_by(self, arg: ast.Expr, param: ast.Param, callee: str) -> list[ast.FuncDef]:
        """The header functions an argument for function pointer ``param`` names ('add', '&add',
        or a function pointer parameter of the caller passed on)."""
        target = arg.operand if isinstance(arg, ast.Unary) and arg.op == ast.UnaryOp.ADDRESS else arg
        found = None
        if isinstance(target, ast.Name) and not target.template_args:
            sym = self.chk.lookup.lookup_name(target.ident)
            if isinstance(sym, FunctionArgumentEntry):
                found = sym.functions
            elif sym is None:
                found = self.chk.lookup.find_function(target.ident) or self.chk.func_defs.get(target.ident.removeprefix("::"))
        if not found:
            raise CompileError(f"argument '{param.name}' of '{callee}' is a function pointer: the simulator needs the "
                               "name of a function declared in the source here", arg.pos)
        arity = len(param.function_params or [])
        if not any(len(f.params) == arity and not any(q.pack for q in f.params) for f in found):
            raise CompileError(f"'{found[0].name}' does not take {arity} argument(s), as the function pointer "
                               f"'{param.name}' of '{callee}' does", arg.pos)
        return found

    def choose_overload(self, name: str, pos: Pos, defs: list[ast.FuncDef], args: list[ast.Expr],
                        explicit: list) -> tuple[ast.FuncDef, dict]:
        """The declaration among ``defs`` that a call with these (checked) arguments picks, and
        its template parameters' values: templates whose arguments cannot be deduced or whose
        signature does not form (SFINAE) drop out; of several left, an exact match of argument
        types wins, a parameter written with a concrete type before a deduced one."""
        errors = []
        candidates = []
        for fd in defs:
            try:
                binding = self._deduce(fd, args, explicit, pos)
                candidates.append((fd, binding))
            except CompileError as err:
                errors.append(err.message)
        if not candidates:
            detail = errors[0] if errors else "no matching function"
            raise CompileError(f"no matching function for call to '{name}': {detail}", pos)
        if len(candidates) == 1:
            return candidates[0]
        # Overload resolution: the candidates whose parameters take every argument, ranked per
        # argument (an exact type before a conversion); one that is at least as good for every
        # argument and better for one wins.
        ranked = []
        for fd, binding in candidates:
            ranks = self._conversion_ranks(fd, binding, args)
            if ranks is not None:
                ranked.append((fd, binding, ranks))
        if not ranked:
            raise CompileError(f"no matching function for call to '{name}': no overload takes arguments of "
                               f"types {', '.join(repr(str(self.chk.conversions.rvalue(a).ty)) for a in args)}", pos)
        best = [c for c in ranked if not any(_better(o[2], c[2]) for o in ranked if o is not c)]
        if len(best) > 1:
            # A parameter written with a concrete type is more specialized than a deduced one.
            def deduced(c: tuple[ast.FuncDef, dict, list[int]]) -> int:
                names = {t.name for t in c[0].template_params}
                return sum(1 for p in c[0].params if p.type_spec.name in names or any(
                    isinstance(a, ast.TypeSpec) and a.name in names or isinstance(a, ast.Name) and a.ident in names
                    for a in p.type_spec.args))
            fewest = min(deduced(c) for c in best)
            best = [c for c in best if deduced(c) == fewest]
        if len(best) > 1:
            raise CompileError(f"call to '{name}' is ambiguous", pos)
        return best[0][0], best[0][1]

    def _conversion_ranks(self, fd: ast.FuncDef, binding: dict, args: list[ast.Expr]) -> list[int] | None:
        """How well each argument matches its parameter in this candidate: 0 the same type, 1 an
        promotion, 2 another implicit conversion, 3 a scalar made a vector (``_conversion_rank``); None when some argument converts to no parameter type (the address
        space of a pointer, a reference to another type...)."""
        saved = self.chk.scope
        saved_namespace = self.chk.lookup.enter_namespace(fd.namespace)
        self.chk.scope = Scope(self.chk.globals)
        for k, v in binding.items():
            if isinstance(v, list):  # a type pack
                continue
            self.chk.scope.names[k] = TypeEntry(v) if isinstance(v, Type) else Var(k, INT, VarKind.CONST, fd.pos,
                                                                             const_value=v)
        try:
            ranks = []
            for p, a in zip(fd.params, args, strict=False):
                if p.pack:
                    break
                try:
                    want = self.param_type(p.type_spec)
                except CompileError:
                    return None
                got = self.chk.conversions.rvalue(a).ty
                if want == got:
                    ranks.append(0)
                    continue
                if p.type_spec.reference and not p.type_spec.const:
                    return None  # a non-const reference binds only its own type
                try:
                    self.chk.conversions.convert(a, want, "argument")
                except CompileError:
                    return None
                ranks.append(_conversion_rank(got, want))
            return ranks
        finally:
            self.chk.scope = saved
            self.chk.namespace = saved_namespace

    def _explicit_specialization(self, fd: ast.FuncDef, binding: dict) -> ast.FuncDef | None:
        """The explicit specialisation of function template ``fd`` ('template <> T f<float>()')
        whose template arguments are the ones the call bound, if one was declared."""
        if not fd.template_params:
            return None
        bound = [binding[tp.name] for tp in fd.template_params]
        for spec in self.chk.func_specializations.get(fd.name, []):
            saved_namespace = self.chk.lookup.enter_namespace(spec.namespace)
            try:
                values = [self.chk.types.resolve_type(a) if isinstance(a, ast.TypeSpec)
                          else self.chk.types.const_int(a, "template argument") for a in spec.specialization or []]
            finally:
                self.chk.namespace = saved_namespace
            if len(values) != len(bound):
                raise CompileError(f"the specialisation of '{fd.name}' gives {len(values)} template argument(s), "
                                   f"the template takes {len(bound)}", spec.pos)
            if values == bound:
                return spec
        return None

    def _deduce(self, fd: ast.FuncDef, args: list[ast.Expr], explicit: list, pos: Pos) -> dict:
        if fd.params and fd.params[-1].pack:
            return self._deduce_variadic(fd, args, explicit, pos)
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
            given = set(binding)  # explicit template arguments: the call's arguments convert to them
            for p, a in zip(fd.params, args, strict=False):
                self.match_type_spec(p.type_spec, self.chk.conversions.rvalue(a).ty, tparams, binding, given)
            self._complete_binding(fd, binding, pos)
        return binding

    def _deduce_variadic(self, fd: ast.FuncDef, args: list[ast.Expr], explicit: list, pos: Pos) -> dict:
        """A function template whose last parameter is a pack ('T first, Args... rest'): the
        arguments after the leading parameters give the pack's types, one each."""
        *leading, pack_param = fd.params
        if len(args) < len(leading):
            raise CompileError(f"'{fd.name}' takes at least {len(leading)} argument(s), {len(args)} given", pos)
        tparams = {tp.name: tp for tp in fd.template_params}
        pack = tparams.get(pack_param.type_spec.name)
        if pack is None or not pack.pack or pack_param.type_spec.pointers or pack_param.type_spec.args:
            raise CompileError(f"the parameter pack '{pack_param.name}' of '{fd.name}' must be declared as "
                               "'Args... name' or 'const Args&... name' with 'Args' the template's type pack", pos)
        binding: dict[str, Any] = {}
        for tp, val in zip(fd.template_params, explicit, strict=False):
            if not tp.pack:
                binding[tp.name] = val
        given = set(binding)
        for p, a in zip(leading, args, strict=False):
            self.match_type_spec(p.type_spec, self.chk.conversions.rvalue(a).ty, tparams, binding, given)
        binding[pack.name] = [self.chk.conversions.rvalue(a).ty for a in args[len(leading):]]
        self._complete_binding(fd, binding, pos)
        return binding

    def _complete_binding(self, fd: ast.FuncDef, binding: dict, pos: Pos) -> None:
        """Default template arguments, worked out in order from the arguments before them (and
        from the template's namespace); then the signature must form with the binding: an
        'enable_if_t' that names no type in a parameter's type, a value parameter's type or the
        return type makes the template no candidate (SFINAE)."""
        saved_scope = self.chk.scope
        saved_namespace = self.chk.lookup.enter_namespace(fd.namespace)
        self.chk.scope = Scope(self.chk.globals)
        try:
            for tp in fd.template_params:
                if tp.name not in binding:
                    if tp.default is None:
                        raise CompileError(f"could not deduce template argument '{tp.name}'", pos)
                    binding[tp.name] = (self.chk.types.resolve_type(tp.default) if tp.kind == "type"
                                        else self.chk.types.const_int(tp.default, "template argument"))
                self.bind_template_param(tp.name, binding[tp.name], fd.pos)
                if tp.type_spec is not None:
                    self.chk.types.resolve_type(tp.type_spec)
            for spec in [p.type_spec for p in fd.params if not p.pack] + [fd.ret]:
                try:
                    self.chk.types.resolve_type(spec)
                except SubstitutionFailure:
                    raise
                except CompileError:
                    pass  # reported where the chosen function is instantiated
        finally:
            self.chk.scope = saved_scope
            self.chk.namespace = saved_namespace

    def bind_template_param(self, name: str, value: Any, pos: Pos) -> None:
        if isinstance(value, list):  # a type parameter pack's types
            self.chk.packs.bind_type_pack(name, value)
            return
        self.chk.scope.names[name] = template_value_entry(name, value, pos)

    def match_type_spec(self, spec: ast.TypeSpec, actual: Type, tparams: dict, binding: dict,
               given: AbstractSet[str] = frozenset()) -> None:
        """Deduce template parameters from one argument's type: ``T`` in 'T', 'device T*',
        'thread T pos[N]' (an array parameter is a pointer to its elements); two arguments that
        deduce different types for one parameter make the template no candidate, as in C++."""
        t = actual
        levels = len(spec.pointers) + (1 if spec.array_dims else 0)
        for _ in range(levels):
            if not isinstance(t, PointerType):
                return
            t = t.pointee
        for _ in spec.array_dims[1:]:  # 'T a[][4]': a pointer to arrays of 4
            if not isinstance(t, ArrayType):
                return
            t = t.elem
        if spec.name in tparams and tparams[spec.name].kind == "type" and not spec.args:
            if spec.name not in binding:
                binding[spec.name] = t
            elif spec.name not in given and binding[spec.name] != t:
                raise CompileError(f"deduced conflicting types for template parameter '{spec.name}' "
                                   f"('{binding[spec.name]}' and '{t}')", spec.pos)
        elif (strip_metal_namespace(spec.name) == "atomic" and isinstance(t, AtomicType)
              and len(spec.args) == 1 and isinstance(spec.args[0], ast.TypeSpec)
              and spec.args[0].name in tparams and spec.args[0].name not in binding):
            binding[spec.args[0].name] = t.elem  # 'device atomic<A>* data' (c10/metal/atomic.h)
        elif strip_metal_namespace(spec.name) == "vec" and isinstance(t, VectorType) and len(spec.args) == 2:
            a0, a1 = spec.args
            if isinstance(a0, ast.TypeSpec) and a0.name in tparams and a0.name not in binding:
                binding[a0.name] = t.elem
            if isinstance(a1, ast.Name) and a1.ident in tparams and a1.ident not in binding:
                binding[a1.ident] = t.n

    def _pack_param_vars(self, p: ast.Param, types: list) -> list[Var]:
        """A function parameter pack's parameters, one per type of its pack, named for
        expansion ('rest...' becomes 'rest#0, rest#1')."""
        out = []
        for k in range(len(types)):
            spec = copy.deepcopy(p.type_spec)
            rename(spec, {p.type_spec.name: element_name(p.type_spec.name, k)})
            name = element_name(p.name, k) if p.name else None
            out.append(self.param_var(ast.Param(p.pos, name, spec)))
        if p.name:
            self.chk.scope.names[p.name] = ParameterPackEntry(len(types))
        return out

    def param_type(self, spec: ast.TypeSpec) -> Type:
        """A parameter's type: an array parameter, sized ('float a[4]') or not ('float a[]'), is a
        pointer to its first element, as in C."""
        if spec.array_dims and spec.array_dims[0] is None:
            elem = ast.TypeSpec(spec.pos, spec.name, spec.args, spec.const, spec.space, list(spec.pointers), False,
                                spec.array_dims[1:], spec.member)
            return PointerType(self.chk.types.resolve_type(elem), spec.space or AddressSpace.THREAD, spec.const)
        ty = self.chk.types.resolve_type(spec)
        if isinstance(ty, ArrayType):
            ty = PointerType(ty.elem, spec.space or AddressSpace.THREAD, spec.const)
        return ty

    def param_var(self, p: ast.Param) -> Var:
        """A function parameter as a variable of the function being instantiated (in scope)."""
        pty = self.param_type(p.type_spec)
        if p.type_spec.reference:
            # A reference into 'constant' memory is read-only whether or not it says 'const'.
            read_only = p.type_spec.const or p.type_spec.space == AddressSpace.CONSTANT
            var = Var(p.name or "_", pty, VarKind.REF, p.pos, slot=self.chk.decls.new_slot(), mutable=not read_only)
            var.space = p.type_spec.space or AddressSpace.THREAD
        elif isinstance(pty, StructType):
            # A struct passed by value is the callee's own copy, in its thread memory like any struct variable.
            var = Var(p.name or "_", pty, VarKind.MEMVAR, p.pos, slot=self.chk.decls.new_slot(), mutable=not p.type_spec.const,
                      space=AddressSpace.THREAD)
        else:
            var = Var(p.name or "_", pty, VarKind.LOCAL, p.pos, slot=self.chk.decls.new_slot(), mutable=not p.type_spec.const)
        if p.name:
            self.chk.scope.names[p.name] = var
        return var

    def _instantiate(self, fd: ast.FuncDef, binding: dict, pos: Pos) -> FuncInstance:
        key = (id(fd), tuple(sorted((k, str(v)) for k, v in binding.items())))
        # A recursive call finds the instance still being checked (its key is recorded first):
        # Metal (MSL 2.4 on) compiles recursion, and the executor bounds its depth at run time.
        if key in self.chk.instances:
            return self.chk.instances[key]
        if len(self.instantiating) >= MAX_INSTANTIATION_DEPTH:
            if binding:  # 'g(t..., 1)' in a variadic g instantiates a longer g at every level, forever
                raise CompileError(f"recursive template instantiation exceeded maximum depth of "
                                   f"{MAX_INSTANTIATION_DEPTH} (instantiating '{fd.name}'; the simulator's bound, "
                                   "clang's is 1024)", pos)
            raise CompileError(f"'{fd.name}' is called more than {MAX_INSTANTIATION_DEPTH} calls deep (each function "
                               "calls the next): more than a kernel may nest calls in the simulator", pos)
        body = copy.deepcopy(fd.body)
        saved_scope, saved_func, saved_addr = self.chk.scope, self.chk.func, self.chk.addressed
        saved_namespace = self.chk.lookup.enter_namespace(fd.namespace)
        try:
            self.chk.addressed = addressed_names(body)
            self.chk.scope = Scope(self.chk.globals)
            for k, v in binding.items():
                self.bind_template_param(k, v, fd.pos)
            for k, functions in fd.function_arguments.items():
                self.chk.scope.names[k] = FunctionArgumentEntry(functions)
            ret = self.chk.types.resolve_type(fd.ret)
            self.chk.func = self.chk.function_context(ret, fd.ret)
            params = []
            for p in fd.params:
                if p.pack:
                    params += self._pack_param_vars(p, binding[p.type_spec.name])
                else:
                    params.append(self.param_var(p))
            return self.check_instance(key, fd.name, params, ret, body, fd.pos,
                                        (saved_scope, saved_func, saved_addr))
        finally:
            self.chk.namespace = saved_namespace

    def check_instance(self, key: tuple, name: str, params: list[Var], ret: Type, body: ast.Block, pos: Pos,
                        saved: tuple) -> FuncInstance:
        """Check a function body in the scope prepared for it, record the instance under ``key``
        (first, so that the body's own calls find it), and give back the caller's scope ``saved``."""
        inst = FuncInstance(name, params, ret, body, pos=pos)
        if self.chk.func is not None and self.chk.func.ret_ref:
            inst.ret_ref, inst.ret_space, inst.ret_const = True, self.chk.func.ret_space, self.chk.func.ret_const
        self.chk.instances[key] = inst
        self.instantiating.append(name)
        try:
            self.chk.stmts.stmt_block_contents(body)
        finally:
            self.instantiating.pop()
        assert self.chk.func is not None  # the caller made the function's context
        inst.nslots = self.chk.func.nslots
        self.chk.scope, self.chk.func, self.chk.addressed = saved
        return inst


def _better(a: list[int], b: list[int]) -> bool:
    """Whether ranks ``a`` beat ``b``: no argument worse, at least one better."""
    return all(x <= y for x, y in zip(a, b, strict=False)) and any(x < y for x, y in zip(a, b, strict=False))


def _conversion_rank(got: Type, want: Type) -> int:
    """1 for a promotion (bool, char, short to int; half or bfloat to float, as clang ranks
    OpenCL's and Metal's half), 3 for a scalar made a vector (a splat: ranked below any scalar
    conversion, so 'log1p(half)' picks 'log1p(float)' over 'log1p(float2)'), 2 for the rest."""
    if isinstance(want, VectorType) and isinstance(got, ScalarType):
        return 3
    if want == INT and isinstance(got, ScalarType) and not got.is_float and got.bits < 32:
        return 1
    if want == FLOAT and got in (HALF, BFLOAT):
        return 1
    return 2
