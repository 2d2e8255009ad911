"""The checker's shared state and its results."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ...lang.types import (
    AddressSpace,
    Type,
)
from .. import ast
from ..symbols import FuncInstance, Var
from .entries import Scope

if TYPE_CHECKING:
    from .interfaces import (
        CallsApi,
        ConversionsApi,
        DeclarationsApi,
        ExpressionsApi,
        MatricesApi,
        NamespaceLookupApi,
        OperatorOverloadsApi,
        PackExpansionsApi,
        StatementsApi,
        StructsApi,
        StructTemplatesApi,
        TypeResolutionApi,
    )


@dataclass
class FunctionContext:
    ret: Type
    ret_ref: bool = False  # the function returns a reference ('device T& at(...)'), of this space and constness
    ret_space: AddressSpace = AddressSpace.THREAD
    ret_const: bool = False
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


class BuiltinFunction(Protocol):
    """A builtin function as the checker sees it (``msl.library``'s ``Builtin``): its name, the
    arguments it takes as places, and its type rule."""

    name: str
    lvalue_args: tuple[int, ...]

    def check(self, ck: CheckerState, call: ast.Call, args: list[ast.Expr], targs: list[Any] | None) -> Type: ...


class Library(Protocol):
    """The builtin functions and constants the checker resolves names against (the simulator's
    standard library, ``msl.library``, passed in so the front end does not depend on it)."""

    def function(self, name: str) -> BuiltinFunction | None: ...

    def constant(self, name: str, template_args: Any, checker: CheckerState) -> tuple[Type, Any] | None: ...

    def function_names(self) -> set[str]: ...

    def constant_names(self) -> set[str]:
        """The library's named constants (UINT_MAX, INFINITY, M_PI_F, ...), for 'did you mean'."""
        ...

    def types_source(self) -> str:
        """MSL source of the library's class templates (metal::array), declared in every program."""
        ...


class CheckerState:
    """What the checker's parts share while checking: scopes, the function being checked, the
    header's functions and their instances, the library of builtins, and the parts themselves,
    each under the interface it offers the others (``interfaces.py``; ``Checker`` makes them)."""

    types: TypeResolutionApi
    decls: DeclarationsApi
    stmts: StatementsApi
    conversions: ConversionsApi
    exprs: ExpressionsApi
    calls: CallsApi
    structs: StructsApi
    matrices: MatricesApi
    lookup: NamespaceLookupApi
    operators: OperatorOverloadsApi
    templates: StructTemplatesApi
    packs: PackExpansionsApi

    def __init__(self, library: Library) -> None:
        self.library = library
        self.globals = Scope()
        self.scope = self.globals
        self.func: FunctionContext | None = None
        self.func_defs: dict[str, list[ast.FuncDef]] = {}
        #: Explicit specialisations of function templates, by the template's qualified name.
        self.func_specializations: dict[str, list[ast.FuncDef]] = {}
        self.instances: dict[tuple, FuncInstance] = {}
        self.threadgroup_arrays: list[Var] = []
        # Names whose address is taken ('&x'): such locals live in thread memory, not registers.
        self.addressed: set[str] = set()
        # The header's structs, with their definitions (default member initializers, member functions).
        self.struct_defs: dict = {}
        # The namespace being checked (each part keeps its own caches: the namespaces declared and
        # used in NamespaceLookup, struct templates in StructTemplates, ...).
        self.namespace: tuple[str, ...] = ()
        # How deep the checker is inside an unevaluated operand (decltype): only there may
        # 'metal::declval<T>()' stand for a value of type T.
        self.unevaluated_depth = 0

    def function_context(self, ret: Type, ret_spec: ast.TypeSpec) -> FunctionContext:
        """The context a function body is checked in, from its resolved return type and the return
        type as written (a reference return: 'device T& at(...)')."""
        if not ret_spec.reference:
            return FunctionContext(ret)
        return FunctionContext(ret, ret_ref=True, ret_space=ret_spec.space or AddressSpace.THREAD,
                               ret_const=ret_spec.const)

    @staticmethod
    def mark_reference_result(e: ast.Expr, inst: FuncInstance) -> None:
        """A call of a function returning a reference designates the object it returns."""
        if inst.ret_ref:
            e.lvalue = True
            e.memory = inst.ret_space != AddressSpace.THREAD
            e.space = inst.ret_space
            e.const_mem = inst.ret_const


class CheckerPart:
    """One part of the checker (expressions, calls, type names, ...): it reaches the shared state,
    and the other parts through their interfaces, by ``self.chk``, as mypy's ExpressionChecker
    reaches its TypeChecker."""

    def __init__(self, chk: CheckerState) -> None:
        self.chk = chk
