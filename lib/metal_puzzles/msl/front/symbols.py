"""Symbols the checker resolves names to, shared with the executor."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...compat import StrEnum
from ..lang.errors import Pos
from ..lang.kernel_parameters import ParamRole
from ..lang.types import AddressSpace, Type

if TYPE_CHECKING:
    from .ast import Expr


class VarKind(StrEnum):
    """Where a named object lives, which decides how the executor reads and writes it."""

    LOCAL = "local"  # thread-private scalar, vector or pointer in a frame slot (a register); buffer parameters too
    ARRAY = "array"  # thread-private or threadgroup array, in a Memory object
    TGVAR = "tgvar"  # a threadgroup scalar or vector (one per threadgroup)
    MEMVAR = "memvar"  # a local whose address is taken: it lives in thread-private memory
    SCALAR_INPUT = "scalar_input"  # a 0-d input passed by constant reference
    ATTR = "attr"  # a thread attribute such as thread_position_in_grid
    CONST = "const"  # a compile-time constant (template value, constant global with a known value)
    REF = "ref"  # a reference bound to the caller's lvalue


@dataclass(frozen=True)
class DeferredConstant:
    """The value of a program-scope constant that is not a number the checker folds (a struct,
    a vector...): its checked initializer, which the executor evaluates where the name is read."""

    expr: Expr


@dataclass(eq=False)
class Var:
    """A named object: local variable, parameter, kernel buffer, thread attribute, constant..."""

    name: str
    ty: Type
    kind: VarKind
    pos: Pos
    slot: int | None = None
    #: A constant's value: a number, a list of them (an array), or a ``DeferredConstant``.
    const_value: Any = None
    mutable: bool = True
    space: AddressSpace | None = None  # for arrays and variables in memory
    #: A local declared without an initializer: reads are checked for an assigned value.
    maybe_uninit: bool = False
    #: For kernel parameters: what the generated signature passes in it.
    role: ParamRole | None = None


@dataclass(eq=False)
class FuncInstance:
    """A header function instantiated for concrete (template) types, type-checked."""

    name: str
    params: list[Var]
    ret: Type
    body: Any  # ast.Block
    nslots: int = 0
    pos: Pos | None = None
    #: A function returning a reference ('device T& at(...)'): a call designates the object it
    #: returns (an lvalue), in this address space, read-only if ``ret_const``.
    ret_ref: bool = False
    ret_space: AddressSpace = AddressSpace.THREAD
    ret_const: bool = False
