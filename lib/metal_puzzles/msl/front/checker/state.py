"""The checker's shared state and its results."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ...lang.types import (
    AddressSpace,
    StructType,
    Type,
)
from .. import ast
from ..symbols import FuncInstance, Var
from .entries import ScopeEntry

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ...lang.errors import CompileError, Pos
    from ...lang.types import MatrixType
    from ..ast import ConvertKind


class Scope:
    def __init__(self, parent: Scope | None = None) -> None:
        self.parent = parent
        self.names: dict[str, ScopeEntry] = {}

    def lookup(self, name: str) -> ScopeEntry | None:
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


class Library(Protocol):
    """The builtin functions and constants the checker resolves names against (the simulator's
    standard library, ``msl.library``, passed in so the front end does not depend on it)."""

    def function(self, name: str) -> Any: ...

    def constant(self, name: str, template_args: Any, checker: Any) -> tuple[Type, Any] | None: ...

    def function_names(self) -> set[str]: ...

    def types_source(self) -> str:
        """MSL source of the library's class templates (metal::array), declared in every program."""
        ...


class CheckerState:
    """What the checker's parts share while checking: scopes, the function being checked, the
    header's functions and their instances, and the library of builtins."""

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
        self.instantiating: list[str] = []
        # Names whose address is taken ('&x'): such locals live in thread memory, not registers.
        self.addressed: set[str] = set()
        # The header's structs, with their definitions (default member initializers, member functions).
        self.structs: dict = {}
        # Namespaces: the one being checked, every one the header declares ('a', 'a::b'), and
        # the namespaces 'using namespace' makes visible in each.
        self.namespace: tuple[str, ...] = ()
        self.namespaces: set[str] = set()
        self.using: dict[tuple[str, ...], list[str]] = {}
        # Struct templates by qualified name (struct_templates.StructTemplate), and each struct's
        # member types and static constants by name.
        self.struct_templates: dict[str, Any] = {}
        self.struct_members: dict[StructType, dict[str, ScopeEntry]] = {}
        # The constexpr functions being evaluated, innermost last (their nesting is bounded).
        self.constexpr_calls: list[str] = []
        # How deep the checker is inside an unevaluated operand (decltype): only there may
        # 'metal::declval<T>()' stand for a value of type T.
        self.unevaluated_depth = 0
        # Variable template instances, by (template, argument values).
        self.variable_instances: dict[tuple, Any] = {}
        # Functions taking function pointers, as made for the functions a call site names: by
        # (the declaration's id, those functions' names), so each is instantiated once.
        self.function_argument_defs: dict[tuple, ast.FuncDef] = {}

    def function_context(self, ret: Type, ret_spec: ast.TypeSpec) -> FunctionContext:
        """The context a function body is checked in, from its resolved return type and the return
        type as written (a reference return: 'device T& at(...)')."""
        if not ret_spec.reference:
            return FunctionContext(ret)
        return FunctionContext(ret, ret_ref=True, ret_space=ret_spec.space or AddressSpace.THREAD,
                               ret_const=ret_spec.const)

    # The methods the mixins call on each other, as each mixin declares them (the checker is
    # one class made of them, ``Checker`` in __init__.py). Declared here for the type checker
    # only, so that each mixin is checked against the others' signatures; at run time the
    # class that defines a method is the one that provides it.
    if TYPE_CHECKING:
        # Calls
        def _bind_template_param(self, name: str, value: Any, pos: Pos) -> None: ...
        def _call_header_function(self, e: ast.Call, defs: list[ast.FuncDef]) -> ast.Expr: ...
        def _check_instance(self, key: tuple, name: str, params: list[Var], ret: Type, body: ast.Block, pos: Pos, saved: tuple) -> FuncInstance: ...
        def _match(self, spec: ast.TypeSpec, actual: Type, tparams: dict, binding: dict, given: set = ...) -> None: ...
        def choose_overload(self, name: str, pos: Pos, defs: list[ast.FuncDef], args: list[ast.Expr], explicit: list) -> tuple[ast.FuncDef, dict]: ...
        def param_var(self, p: ast.Param) -> Var: ...
        def with_function_arguments(self, e: ast.Call, defs: list[ast.FuncDef]) -> list[ast.FuncDef]: ...
        # Conversions
        def _mk_convert(self, e: ast.Expr, ty: Type, kind: ConvertKind = ...) -> ast.Expr: ...
        def convert(self, e: ast.Expr, ty: Type, context: str) -> ast.Expr: ...
        def rvalue(self, e: ast.Expr) -> ast.Expr: ...
        def to_bool(self, e: ast.Expr) -> ast.Expr: ...
        # Declarations
        def _global_decl(self, decl: ast.Decl) -> None: ...
        def local_decl(self, decl: ast.Decl) -> None: ...
        def new_slot(self) -> int: ...
        # Expressions
        def _construct(self, e: ast.Construct, ty: Type) -> ast.Expr: ...
        def expr(self, e: ast.Expr) -> ast.Expr: ...
        def require_modifiable(self, e: ast.Expr) -> None: ...
        # Matrices
        def matrix_binary(self, e: ast.Binary, l: ast.Expr, r: ast.Expr) -> ast.Expr: ...
        def matrix_column(self, e: ast.Index, base: ast.Expr, idx: ast.Expr) -> ast.Expr: ...
        def matrix_construct(self, e: ast.Construct, ty: MatrixType) -> ast.Expr: ...
        def matrix_unary(self, e: ast.Unary, t: Type) -> ast.Expr: ...
        # NamespaceLookup
        def enter_namespace(self, path: tuple[str, ...]) -> tuple[str, ...]: ...
        def find_function(self, name: str) -> list[ast.FuncDef] | None: ...
        def lookup_name(self, name: str) -> ScopeEntry | None: ...
        def use_namespace(self, directive: ast.UsingNamespace) -> None: ...
        # OperatorOverloads
        def overloaded_operator(self, pos: Pos, op: str, operands: list[ast.Expr]) -> ast.Expr: ...
        # PackExpansions
        def bind_type_pack(self, name: str, types: list[Type]) -> None: ...
        def expand_packs(self, args: list[ast.Expr], pos: Pos) -> list[ast.Expr]: ...
        def unexpanded_pack_error(self, name: str, pos: Pos) -> CompileError: ...
        # Statements
        def condition(self, e: ast.Expr) -> ast.Expr: ...
        def stmt_block_contents(self, block: ast.Block) -> None: ...
        # StructTemplates
        def member_through_type_name(self, name: str, pos: Pos) -> ScopeEntry | None: ...
        def record_struct_members(self, item: ast.StructDef, st: StructType, members: dict[str, ScopeEntry]) -> None: ...
        def resolve_struct_members(self, item: ast.StructDef, scope: Scope) -> dict[str, ScopeEntry]: ...
        def static_member_entry(self, st: StructType, member: list[str], pos: Pos) -> ScopeEntry: ...
        def struct_instance(self, key: str, args: list[Any], pos: Pos) -> StructType: ...
        def struct_members_scope(self, st: StructType, scope: Scope) -> None: ...
        def template_struct_named(self, name: str) -> str | None: ...
        # Structs
        def _declare_struct(self, item: ast.StructDef) -> None: ...
        def construct_into(self, target: ast.Name, st: StructType, args: list[ast.Expr], pos: Pos) -> ast.Expr: ...
        def has_constructors(self, st: StructType) -> bool: ...
        def has_defaults(self, st: StructType) -> bool: ...
        def initial_value(self, item: ast.Expr, ty: Type) -> ast.Expr: ...
        def member_function_call(self, e: ast.Call) -> ast.Expr: ...
        def member_name(self, e: ast.Name) -> ast.Expr: ...
        def method_call(self, e: ast.Call, base: ast.Expr | None, st: StructType) -> ast.Expr: ...
        def static_call(self, e: ast.Call, st: StructType, name: str) -> ast.Expr: ...
        def static_member_functions(self, name: str) -> tuple[StructType, str] | None: ...
        def struct_init(self, init: ast.InitList | None, st: StructType, pos: Pos) -> ast.StructInit: ...
        def struct_member(self, e: ast.Member, base: ast.Expr | None = ...) -> ast.Expr: ...
        def temporary_object(self, st: StructType, args: list[ast.Expr], pos: Pos) -> ast.Expr: ...
        # TypeResolution
        def _all_scope_items(self) -> Iterator[tuple[str, ScopeEntry]]: ...
        def _const_call(self, e: ast.Call | ast.Construct) -> int | float: ...
        def _const_value(self, expr: ast.Expr) -> int | float: ...
        def _declare_alias(self, item: ast.TypeAlias) -> None: ...
        def const_int(self, expr: Any, what: str) -> int: ...
        def constexpr_static_method(self, e: ast.Call) -> tuple[ast.FuncDef, StructType]: ...
        def resolve_type(self, spec: ast.TypeSpec, default_space: AddressSpace = ..., init: Any = ...) -> Type: ...
        def static_assert(self, s: ast.StaticAssert) -> None: ...
        def template_struct_constant(self, name: str, template_args: Any, pos: Pos) -> Var | None: ...
        def variable_instance(self, item: ast.GlobalDecl, args: Any, pos: Pos) -> Var: ...

    @staticmethod
    def mark_reference_result(e: ast.Expr, inst: FuncInstance) -> None:
        """A call of a function returning a reference designates the object it returns."""
        if inst.ret_ref:
            e.lvalue = True
            e.memory = inst.ret_space != AddressSpace.THREAD
            e.space = inst.ret_space
            e.const_mem = inst.ret_const
