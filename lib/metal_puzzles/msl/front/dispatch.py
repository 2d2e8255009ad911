"""Visitor tables: how the checker and the code generator find the handler of a syntax-tree node.

Each visitor (the checker's expressions and statements, the code generator's) declares a table
from node class to handler, built once when its module is imported. ``dispatch_table`` refuses a
table that leaves a node class without a handler (or lists a class that is not a node), so a node
added to the tree without its handlers fails at import, never in a learner's kernel; and because
the handlers are named in the table, not built from strings, mypy follows every dispatch."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from . import ast

NodeT = TypeVar("NodeT", bound=ast.Node)
HandlerT = TypeVar("HandlerT")


def node_classes(base: type[NodeT]) -> list[type[NodeT]]:
    """Every class derived from ``base`` that is defined so far, however indirectly (the parser's
    own statement among them once it is imported)."""
    found: list[type[NodeT]] = []
    todo = [base]
    while todo:
        for sub in todo.pop().__subclasses__():
            todo.append(sub)
            found.append(sub)
    return found


def dispatch_table(visitor: str, base: type[NodeT], handlers: Mapping[type[NodeT], HandlerT],
                   never: Mapping[type[NodeT], str] | None = None) -> dict[type[NodeT], HandlerT]:
    """``handlers`` as a visitor's table, checked complete: every node class under ``base`` has a
    handler, or is one the visitor never sees (``never``: node class -> why)."""
    never = never or {}
    nodes = set(node_classes(base))
    missing = sorted(c.__name__ for c in nodes - handlers.keys() - never.keys())
    if missing:
        raise TypeError(f"{visitor}: no handler for {', '.join(missing)} (each {base.__name__} node needs one)")
    strays = sorted(c.__name__ for c in (handlers.keys() | never.keys()) - nodes)
    if strays:
        raise TypeError(f"{visitor}: {', '.join(strays)} is not a {base.__name__} node")
    both = sorted(c.__name__ for c in handlers.keys() & never.keys())
    if both:
        raise TypeError(f"{visitor}: {', '.join(both)} has a handler and is declared never seen")
    return dict(handlers)
