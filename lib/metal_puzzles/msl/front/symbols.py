"""Symbols the checker resolves names to, shared with the executor."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..lang.errors import Pos
from ..lang.types import Type


@dataclass(eq=False)
class Var:
    """A named object: local variable, parameter, kernel buffer, thread attribute, constant...

    kind:
      'local'   thread-private scalar/vector/pointer, stored in a frame slot
      'array'   thread-private or threadgroup array, stored in a Memory object
      'buffer'  a kernel input/output buffer parameter (pointer to device/constant memory)
      'scalar_input' a 0-d input passed by constant reference
      'attr'    a thread attribute such as thread_position_in_grid
      'const'   a compile-time constant (template value, constant global with known value)
      'ref'     a reference parameter bound to the caller's lvalue
    """

    name: str
    ty: Type
    kind: str
    pos: Pos
    slot: int | None = None
    const_value: Any = None
    mutable: bool = True
    space: str | None = None  # for arrays: 'thread' or 'threadgroup'
    extra: dict = field(default_factory=dict)


@dataclass(eq=False)
class FuncInstance:
    """A header function instantiated for concrete (template) types, type-checked."""

    name: str
    params: list[Var]
    ret: Type
    body: Any  # ast.Block
    nslots: int = 0
    pos: Pos | None = None
    compiled: Any = None  # filled by the executor
