"""What a name in the checker's scopes stands for.

A name is bound either to a ``symbols.Var`` (a variable, parameter or constant the executor
reads) or to one of the entries below, which name something else: a type, a template, a pack,
a member of the struct whose member function is being checked. Each kind is a small frozen
dataclass, so a use site asks ``isinstance(entry, TypeEntry)`` and reads ``entry.type``, and
mypy sees which kinds a lookup can return (``ScopeEntry``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...lang.errors import Pos
from ...lang.types import INT, StructField, StructType, Type
from .. import ast
from ..symbols import Var, VarKind


class NameEntry:
    """Base of every entry that is not a variable: such a name cannot be read as a value."""

    __slots__ = ()


@dataclass(frozen=True)
class TypeEntry(NameEntry):
    """A name for a type: a struct, an enumeration, an alias, a template's type parameter."""

    type: Type


@dataclass(frozen=True)
class AliasTemplateEntry(NameEntry):
    """An alias template ('template <typename T> using opmath_t = ...;'), resolved at each use
    with its arguments; a member alias template sees the names of the struct it is declared in
    (``declared_in``)."""

    alias: ast.TypeAlias
    declared_in: Scope | None = None


@dataclass(frozen=True)
class StructTemplateEntry(NameEntry):
    """A struct template's name; ``key`` is its qualified name in the StructTemplates part's ``struct_templates``."""

    key: str


@dataclass(frozen=True)
class VariableTemplateEntry(NameEntry):
    """A variable template ('template <typename T> constexpr T pi_v = ...'), instantiated at each use."""

    decl: ast.GlobalDecl


@dataclass(frozen=True)
class ArgumentBufferEntry(NameEntry):
    """A struct whose members carry '[[id(n)]]' (an argument buffer): declared, so a shader that
    has one compiles, and refused where a kernel or variable uses it."""

    struct: ast.StructDef
    declared: Pos  # where its first '[[id(n)]]' is


@dataclass(frozen=True)
class TypePackEntry(NameEntry):
    """A type parameter pack ('typename... Args') and the types it stands for."""

    types: tuple[Type, ...]


@dataclass(frozen=True)
class ParameterPackEntry(NameEntry):
    """A function parameter pack ('const Args&... rest') of ``length`` parameters."""

    length: int


@dataclass(frozen=True)
class MemberEntry(NameEntry):
    """A data member named without 'this->' inside a member function."""

    field: StructField


@dataclass(frozen=True)
class MethodEntry(NameEntry):
    """A member function named without 'this->' inside a member function of ``struct``."""

    name: str
    struct: StructType


@dataclass(frozen=True)
class FunctionArgumentEntry(NameEntry):
    """A function pointer parameter inside its function: it stands for the overload set its
    call site named."""

    functions: list[ast.FuncDef]


#: Everything a scope binds a name to.
ScopeEntry = (Var | TypeEntry | AliasTemplateEntry | StructTemplateEntry | VariableTemplateEntry | ArgumentBufferEntry
              | TypePackEntry | ParameterPackEntry | MemberEntry | MethodEntry | FunctionArgumentEntry)


def template_value_entry(name: str, value: Type | int, pos: Pos) -> TypeEntry | Var:
    """The entry a template parameter is bound to for its argument: a type, or an int constant."""
    if isinstance(value, Type):
        return TypeEntry(value)
    return Var(name, INT, VarKind.CONST, pos, const_value=int(value), mutable=False)


def named_type(entry: ScopeEntry | None) -> Type | None:
    """The type ``entry`` names, if it is a ``TypeEntry``."""
    return entry.type if isinstance(entry, TypeEntry) else None


def named_struct(entry: ScopeEntry | None) -> StructType | None:
    """The struct ``entry`` names, if it names one."""
    ty = named_type(entry)
    return ty if isinstance(ty, StructType) else None


class Scope:
    """One level of names (a block, a function, a struct, a template's arguments) and the level
    around it."""

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
