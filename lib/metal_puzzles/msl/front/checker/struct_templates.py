"""Struct templates, their explicit and partial specialisations, and struct members that are
types or constants (``using type = float;``, ``static constexpr int value = 4;``).

A use such as ``OpMath<half>`` instantiates the template once per argument list: an explicit
specialisation written for exactly those arguments wins, then a partial specialisation whose
pattern matches them (``template <typename T> struct S<vec<T, 2>>``; two that match are an
error: the simulator does not rank them by how specialised they are), then the primary
template (its defaults fill missing arguments, seeing the earlier ones). The instance is an
ordinary struct named ``OpMath<half>`` whose members and member functions see the template
parameters' values. ``S::type``, ``S<T>::type`` (a type) and ``S<T>::value`` (a constant)
reach a struct's member types and static constants.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from ...lang.errors import CompileError, Pos
from ...lang.types import StructType, Type
from .. import ast
from ..constexpr import NotConstant
from ..symbols import Var, VarKind
from .checker_state import CheckerPart, CheckerState
from .entries import (
    AliasTemplateEntry,
    Scope,
    ScopeEntry,
    StructTemplateEntry,
    TypeEntry,
    named_struct,
    template_value_entry,
)
from .helpers import cast_const


@dataclass
class StructTemplate:
    primary: ast.StructDef
    specializations: list[ast.StructDef] = field(default_factory=list)
    instances: dict[tuple, StructType] = field(default_factory=dict)


class StructTemplates(CheckerPart):
    def __init__(self, chk: CheckerState) -> None:
        super().__init__(chk)
        # Struct templates by qualified name, and each struct's member types and static constants by name.
        self.struct_templates: dict[str, StructTemplate] = {}
        self.struct_members: dict[StructType, dict[str, ScopeEntry]] = {}

    def declare_struct_template(self, item: ast.StructDef) -> None:
        if item.specialization is None:
            if item.name in self.struct_templates:
                raise CompileError(f"redefinition of struct template '{item.name}'", item.pos)
            self.struct_templates[item.name] = StructTemplate(item)
            self.chk.globals.names[item.name] = StructTemplateEntry(item.name)
            return
        found = self.chk.lookup.lookup_name(item.name)
        if not isinstance(found, StructTemplateEntry):
            raise CompileError(f"specialisation of '{item.name}', which is not a struct template declared before it",
                               item.pos)
        template = self.struct_templates[found.key]
        if template.instances:
            raise CompileError(f"specialisation of '{item.name}' after it was used (C++ needs it before the first "
                               "use)", item.pos)
        template.specializations.append(item)

    def struct_members_scope(self, st: StructType, scope: Scope) -> None:
        """Put what a struct's member functions see by name besides members: the template
        parameters of its template and its member types and constants."""
        definition = self.chk.struct_defs[st]
        for name, value in definition.binding.items():
            scope.names[name] = template_value_entry(name, value, definition.pos)
        for name, entry in self.struct_members.get(st, {}).items():
            scope.names[name] = entry

    def resolve_struct_members(self, item: ast.StructDef, scope: Scope) -> dict[str, ScopeEntry]:
        """Resolve a struct's member types and static constants into ``scope`` (later members,
        and the data members, see earlier ones)."""
        members: dict[str, ScopeEntry] = {}
        saved = self.chk.scope
        self.chk.scope = scope
        try:
            for alias in item.member_types:
                if alias.template_params:  # resolved at each use, seeing the struct's own names
                    members[alias.name] = self.chk.scope.names[alias.name] = AliasTemplateEntry(alias, scope)
                    continue
                members[alias.name] = self.chk.scope.names[alias.name] = TypeEntry(self.chk.types.resolve_type(alias.type_spec))
            for d in item.static_members:
                ty = self.chk.types.resolve_type(d.type_spec)
                assert d.init is not None  # the parser refuses a static member without one
                try:
                    value = cast_const(self.chk.types.const_value(d.init), ty)
                except NotConstant:
                    raise CompileError(f"static member '{d.name}' must be initialized by a constant expression",
                                       d.init.pos) from None
                members[d.name] = self.chk.scope.names[d.name] = Var(d.name, ty, VarKind.CONST, d.pos,
                                                                 const_value=value, mutable=False)
        finally:
            self.chk.scope = saved
        return members

    def record_struct_members(self, item: ast.StructDef, st: StructType, members: dict[str, ScopeEntry]) -> None:
        self.struct_members[st] = members
        if not item.binding:  # a plain struct: 'S::type', 'S::value'
            for name, entry in members.items():
                self.chk.globals.names[f"{item.name}::{name}"] = entry

    def static_member_entry(self, st: StructType, member: list[str], pos: Pos) -> ScopeEntry:
        if len(member) != 1:
            raise CompileError(f"nested member names ('{'::'.join(member)}') are not supported by the simulator",
                               pos)
        entry = self.struct_members.get(st, {}).get(member[0])
        if entry is None:
            raise CompileError(f"no member type or constant named '{member[0]}' in '{st.name}'", pos)
        return entry

    def member_through_type_name(self, name: str, pos: Pos) -> ScopeEntry | None:
        """``A::value`` where ``A`` names a struct through an alias or a template type parameter
        ('true_type::value', 'F::value'): the member's entry; None when ``A`` names no struct
        or the struct has no such member."""
        owner, sep, member = name.rpartition("::")
        if not sep or not owner:
            return None
        st = named_struct(self.chk.lookup.lookup_name(owner))
        if st is None:
            return None
        return self.struct_members.get(st, {}).get(member)

    def template_struct_named(self, name: str) -> str | None:
        """The struct template ``name`` names from here, or None."""
        found = self.chk.lookup.lookup_name(name)
        return found.key if isinstance(found, StructTemplateEntry) else None

    def struct_instance(self, key: str, args: list[Any], pos: Pos) -> StructType:
        template = self.struct_templates[key]
        values = [self.chk.types.resolve_type(a) if isinstance(a, ast.TypeSpec) else self.chk.types.const_int(a, "template argument")
                  for a in args]
        params = template.primary.template_params
        if len(values) > len(params):
            raise CompileError(f"struct template '{key}' takes {len(params)} template argument(s), {len(values)} "
                               "given", pos)
        values = self._with_defaults(template.primary, values, pos)
        cache_key = tuple(values)
        if cache_key in template.instances:
            return template.instances[cache_key]
        chosen, binding = self._choose_definition(template, values, pos)
        instance = copy.deepcopy(chosen)
        instance.name = f"{key}<{', '.join(str(v) for v in values)}>"
        instance.template_params, instance.specialization, instance.binding = [], None, binding
        saved_scope, saved_namespace = self.chk.scope, self.chk.lookup.enter_namespace(chosen.namespace)
        self.chk.scope = self._binding_scope(binding, chosen.pos)
        try:
            self.chk.structs.declare_struct(instance)
            declared = self.chk.scope.names[instance.name]
            assert isinstance(declared, TypeEntry) and isinstance(declared.type, StructType)
            st = declared.type
        finally:
            self.chk.scope, self.chk.namespace = saved_scope, saved_namespace
        template.instances[cache_key] = st
        return st

    # ------------------------------------------------------------------ choosing a definition
    def _with_defaults(self, primary: ast.StructDef, values: list[Any], pos: Pos) -> list[Any]:
        params = primary.template_params
        if len(values) == len(params):
            return values
        saved_scope, saved_namespace = self.chk.scope, self.chk.lookup.enter_namespace(primary.namespace)
        self.chk.scope = self._binding_scope(dict(zip([p.name for p in params], values, strict=False)), primary.pos)
        try:
            for p in params[len(values):]:
                if p.default is None:
                    raise CompileError(f"struct template '{primary.name}' needs a value for '{p.name}'", pos)
                value = self.chk.types.resolve_type(p.default) if p.kind == "type" else self.chk.types.const_int(p.default, "default")
                values.append(value)
                self.chk.scope.names[p.name] = template_value_entry(p.name, value, primary.pos)
        finally:
            self.chk.scope, self.chk.namespace = saved_scope, saved_namespace
        return values

    def _choose_definition(self, template: StructTemplate, values: list[Any],
                           pos: Pos) -> tuple[ast.StructDef, dict[str, Any]]:
        for spec in template.specializations:
            if not spec.template_params and self._specialization_binding(spec, values) is not None:
                return spec, {}
        partial = [(spec, binding) for spec in template.specializations if spec.template_params
                   for binding in [self._specialization_binding(spec, values)] if binding is not None]
        if len(partial) > 1:
            shown = ", ".join(str(v) for v in values)
            raise CompileError(f"more than one partial specialisation of '{template.primary.name}' matches "
                               f"<{shown}> (lines {', '.join(str(s.pos.line) for s, _ in partial)}); the simulator "
                               "does not rank partial specialisations", pos)
        if partial:
            return partial[0]
        names = [p.name for p in template.primary.template_params]
        return template.primary, dict(zip(names, values, strict=True))

    def _specialization_binding(self, spec: ast.StructDef, values: list[Any]) -> dict[str, Any] | None:
        patterns = spec.specialization or []
        if len(patterns) != len(values):
            return None
        tparams = {tp.name: tp for tp in spec.template_params}
        binding: dict[str, Any] = {}
        for pattern, value in zip(patterns, values, strict=True):
            if isinstance(pattern, ast.TypeSpec) and isinstance(value, Type):
                self.chk.calls.match_type_spec(pattern, value, tparams, binding)
            elif isinstance(pattern, ast.Name) and pattern.ident in tparams and not isinstance(value, Type):
                binding.setdefault(pattern.ident, value)
        if any(name not in binding for name in tparams):
            return None
        # The pattern, with the deduced parameters, must give exactly the arguments.
        saved_scope, saved_namespace = self.chk.scope, self.chk.lookup.enter_namespace(spec.namespace)
        self.chk.scope = self._binding_scope(binding, spec.pos)
        try:
            for pattern, value in zip(patterns, values, strict=True):
                if isinstance(pattern, ast.TypeSpec) != isinstance(value, Type):
                    return None
                got = (self.chk.types.resolve_type(pattern) if isinstance(pattern, ast.TypeSpec)
                       else self.chk.types.const_int(pattern, "specialisation argument"))
                if got != value:
                    return None
        finally:
            self.chk.scope, self.chk.namespace = saved_scope, saved_namespace
        return binding

    def _binding_scope(self, binding: dict[str, Any], pos: Pos) -> Scope:
        scope = Scope(self.chk.globals)
        for name, value in binding.items():
            scope.names[name] = template_value_entry(name, value, pos)
        return scope
