"""Semantic analysis: resolves names, computes the type of every expression, instantiates
header function templates, and makes every implicit conversion explicit (``ast.Convert``),
so the executor never has to guess C's conversion rules."""

from __future__ import annotations

import copy
from functools import lru_cache
from typing import Any

from ...lang.errors import BUILTIN_POS, CompileError, Pos
from ...lang.kernel_parameters import ParamRole
from ...lang.types import BOOL, INT, LONG, VOID, AddressSpace, PointerType, ScalarType, Type
from .. import ast
from ..parser import Parser
from ..preprocessor import Preprocessor
from ..symbols import Var, VarKind
from .calls import Calls
from .checker_state import CheckedKernel, CheckerState, FunctionContext, Library
from .conversions import Conversions
from .declarations import Declarations
from .entries import ArgumentBufferEntry, Scope, TypeEntry, VariableTemplateEntry
from .expressions import Expressions
from .helpers import addressed_names
from .matrix_expressions import Matrices
from .namespaces import NamespaceLookup
from .operators import OperatorOverloads
from .packs import PackExpansions
from .statements import Statements
from .struct_templates import StructTemplates
from .structs import Structs
from .typenames import TypeResolution


@lru_cache(maxsize=4)
def _library_types(source: str) -> ast.TranslationUnit:
    return Parser(Preprocessor().process(source, "<metal_stdlib>")).parse_translation_unit()


class Checker(CheckerState):
    """Checks a kernel: the header's declarations first (``add_header``), template arguments
    (``bind_template``), then the body with the generated parameters (``check_kernel``).

    A composition: the shared state (``CheckerState``) and one part per concept, each reaching
    the others through the interface it is declared under (``interfaces.py``)."""

    def __init__(self, library: Library) -> None:
        super().__init__(library)
        self.types = TypeResolution(self)
        self.lookup = NamespaceLookup(self)
        self.templates = StructTemplates(self)
        self.packs = PackExpansions(self)
        self.decls = Declarations(self)
        self.stmts = Statements(self)
        self.conversions = Conversions(self)
        self.exprs = Expressions(self)
        self.calls = Calls(self)
        self.structs = Structs(self)
        self.matrices = Matrices(self)
        self.operators = OperatorOverloads(self)
        # The standard library's class templates (metal::array), as if <metal_stdlib> declared them.
        self.add_header(copy.deepcopy(_library_types(library.types_source())))

    def add_header(self, tu: ast.TranslationUnit) -> None:
        for item in tu.items:
            self.lookup.declare_namespace(getattr(item, "namespace", ()))
        for item in tu.items:
            # Declarations are checked from their own namespace (a global's initializer, an alias).
            self.namespace = getattr(item, "namespace", ())
            self._add_header_item(item)
        self.namespace = ()

    def _add_header_item(self, item: ast.Node) -> None:
        if isinstance(item, ast.FuncDef):
            if item.is_kernel:
                raise CompileError("kernel functions cannot be defined in the header; the kernel body is "
                                   "the 'source' string", item.pos)
            if item.specialization is not None:
                self.func_specializations.setdefault(item.name, []).append(item)
            else:
                self.func_defs.setdefault(item.name, []).append(item)
        elif isinstance(item, ast.TypeAlias):
            self.types.declare_alias(item)
        elif isinstance(item, ast.EnumDef):
            self._declare_enum(item)
        elif isinstance(item, ast.StructDef) and item.argument_buffer is not None:
            self.globals.names[item.name] = ArgumentBufferEntry(item, item.argument_buffer)
        elif isinstance(item, ast.StructDef):
            if item.template_params or item.specialization is not None:
                self.templates.declare_struct_template(item)
            else:
                self.structs.declare_struct(item)
        elif isinstance(item, ast.GlobalDecl) and item.template_params:
            self.globals.names[item.decl.declarators[0].name] = VariableTemplateEntry(item)
        elif isinstance(item, ast.GlobalDecl):
            self.decls.global_decl(item.decl)
        elif isinstance(item, ast.UsingNamespace):
            self.lookup.use_namespace(item)
        elif isinstance(item, ast.StaticAssert):
            self.types.static_assert(item)
        else:  # pragma: no cover - parser only produces the above
            raise CompileError("unsupported declaration in header", item.pos)

    def _declare_enum(self, item: ast.EnumDef) -> None:
        """An enumeration is its underlying integer type (int unless written) and its enumerators
        constants of it: 'E::A' always, and 'A' in the enclosing namespace for an unscoped enum.
        The values are C++'s; what the simulator does not enforce is a scoped enum's refusal of
        implicit conversions to and from integers (it accepts them)."""
        underlying = INT if item.underlying is None else self.types.resolve_type(item.underlying)
        if not (isinstance(underlying, ScalarType) and underlying.is_int):
            raise CompileError(f"the underlying type of enumeration '{item.name}' must be an integer type, "
                               f"not '{underlying}'", item.pos)
        self.globals.names[item.name] = TypeEntry(underlying)
        enclosing = "::".join(item.namespace)
        value = -1
        # Inside the braces the enumerators before are named without qualification ('Last = First + 9').
        saved_scope = self.scope
        self.scope = body_scope = Scope(self.globals)
        try:
            for e in item.enumerators:
                value = self.types.const_int(e.value, "enumerator value") if e.value is not None else value + 1
                body_scope.names[e.name] = self._enumerator(item, e, underlying, value, enclosing)
        finally:
            self.scope = saved_scope

    def _enumerator(self, item: ast.EnumDef, e: ast.Enumerator, underlying: ScalarType, value: int,
                    enclosing: str) -> Var:
        """Declare one enumerator, a constant of the underlying type, under its names."""
        low, high = ((-(2 ** (underlying.bits - 1)), 2 ** (underlying.bits - 1) - 1) if underlying.signed
                     else (0, 2 ** underlying.bits - 1))
        if not low <= value <= high:
            raise CompileError(f"enumerator value {value} does not fit '{underlying}'", e.pos)
        const = Var(e.name, underlying, VarKind.CONST, e.pos, const_value=value, mutable=False)
        self.globals.names[f"{item.name}::{e.name}"] = const
        if not item.scoped:
            self.globals.names[f"{enclosing}::{e.name}" if enclosing else e.name] = const
        return const

    def bind_template(self, name: str, value: Any, pos: Pos, scope: Scope | None = None) -> None:
        """Bind a kernel's template parameter: in the globals (MLX's template arguments, which the
        body and the header see) or in ``scope`` (a whole shader's kernel template)."""
        names = (scope or self.globals).names
        if isinstance(value, Type):
            names[name] = TypeEntry(value)
        elif isinstance(value, bool):
            names[name] = Var(name, BOOL, VarKind.CONST, pos, const_value=value, mutable=False)
        else:
            ty = INT if -(2**31) <= int(value) < 2**31 else LONG
            names[name] = Var(name, ty, VarKind.CONST, pos, const_value=int(value), mutable=False)

    def check_kernel(self, body: ast.Block, params: list[tuple[str, Type, ParamRole]],
                     outer: Scope | None = None) -> CheckedKernel:
        """Check the kernel body with the generated parameters in scope (name, type, what it
        carries). ``outer``: a scope between the globals and the body's (a whole shader's
        template arguments, seen by the kernel and not by the helpers it calls)."""
        self.func = FunctionContext(VOID, is_kernel=True)
        self.threadgroup_arrays = []
        self.scope = Scope(outer or self.globals)
        self.addressed = addressed_names(body)
        pvars = []
        for name, ty, role in params:
            if isinstance(ty, PointerType):
                # A pointer parameter is the body's own copy of the pointer (C++): it may be moved
                # ('out += n;', 'x++'); what it points to keeps its constness.
                var = Var(name, ty, VarKind.LOCAL, BUILTIN_POS, slot=self.decls.new_slot(), mutable=True, role=role,
                          space=AddressSpace.THREAD)
                self.scope.names[name] = var
                pvars.append(var)
                continue
            if role == ParamRole.ATTRIBUTE:
                kind = VarKind.ATTR
            else:  # a 0-d input or an ndim, passed by constant reference (a whole kernel's 'device T&': writable)
                kind = VarKind.SCALAR_INPUT
            var = Var(name, ty, kind, BUILTIN_POS, mutable=role == ParamRole.OUTPUT, role=role,
                      space=AddressSpace.DEVICE if role == ParamRole.OUTPUT else None)
            self.scope.names[name] = var
            pvars.append(var)
        self.stmts.stmt_block_contents(body)
        checked = CheckedKernel(body, pvars, self.func.nslots, self.threadgroup_arrays,
                                list(self.instances.values()), self.func.variables)
        self.func = None
        return checked


__all__ = ["Checker", "CheckedKernel", "CheckerState", "FunctionContext", "Library", "Scope"]
