"""Variadic templates as shader headers use them: a type parameter pack ('typename... Args'),
a function parameter pack ('const Args&... rest') and their expansion in an argument list
('declval<Args>()...', 'f(rest...)').

A pack is bound in scope as a ``TypePackEntry`` or a ``ParameterPackEntry``; an expansion is rewritten, before its call is checked,
into one copy of the pattern per element, each naming its element under a name no source can
spell ('Args#0', 'rest#1'), which is bound to that element. C++ expands packs at
instantiation, which is when the simulator checks a template's body, so the copies are the
instantiated arguments.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterator
from typing import Any

from ...lang.errors import CompileError, Pos
from ...lang.types import Type
from .. import ast
from .checker_state import CheckerPart
from .entries import ParameterPackEntry, TypeEntry, TypePackEntry


def element_name(pack: str, index: int) -> str:
    """The name the ``index``-th element of pack ``pack`` is bound under."""
    return f"{pack}#{index}"


def _named_nodes(node: Any) -> Iterator[ast.TypeSpec | ast.Name]:
    """Every type spec and name in a tree (the places a pack's name can stand), depth first."""
    if isinstance(node, ast.TypeSpec | ast.Name):
        yield node
    if isinstance(node, list | tuple):
        for x in node:
            yield from _named_nodes(x)
    elif dataclasses.is_dataclass(node) and not isinstance(node, type):
        for f in dataclasses.fields(node):
            if f.init:
                yield from _named_nodes(getattr(node, f.name))


def _names_in(node: Any, found: set[str]) -> None:
    """Every identifier a pattern uses as a type or a value name (the candidates for packs)."""
    for n in _named_nodes(node):
        found.add(n.name if isinstance(n, ast.TypeSpec) else n.ident)


def rename(node: Any, renames: dict[str, str]) -> None:
    """Rename type and value names in place (a copy of a pattern, for one pack element)."""
    for n in _named_nodes(node):
        if isinstance(n, ast.TypeSpec) and n.name in renames:
            n.name = renames[n.name]
        elif isinstance(n, ast.Name) and n.ident in renames:
            n.ident = renames[n.ident]


class PackExpansions(CheckerPart):
    def bind_type_pack(self, name: str, types: list[Type]) -> None:
        """Bind type parameter pack ``name`` (and its elements' names) in the current scope."""
        self.chk.scope.names[name] = TypePackEntry(tuple(types))
        for k, t in enumerate(types):
            self.chk.scope.names[element_name(name, k)] = TypeEntry(t)

    def expand_packs(self, args: list[ast.Expr], pos: Pos) -> list[ast.Expr]:
        """The argument list with each ``pattern...`` replaced by its copies, one per element
        of the packs the pattern names (all of the same length, as C++ requires)."""
        if not any(isinstance(a, ast.PackExpansion) for a in args):
            return args
        out: list[ast.Expr] = []
        for a in args:
            if not isinstance(a, ast.PackExpansion):
                out.append(a)
                continue
            names: set[str] = set()
            _names_in(a.pattern, names)
            lengths: dict[str, int] = {}
            for n in sorted(names):
                entry = self.chk.lookup.lookup_name(n)
                if isinstance(entry, TypePackEntry):
                    lengths[n] = len(entry.types)
                elif isinstance(entry, ParameterPackEntry):
                    lengths[n] = entry.length
            if not lengths:
                raise CompileError("the pattern before '...' names no parameter pack", a.pos)
            if len(set(lengths.values())) > 1:
                sizes = ", ".join(f"'{n}' has {k}" for n, k in lengths.items())
                raise CompileError(f"packs expanded together must have the same length ({sizes})", a.pos)
            for k in range(next(iter(lengths.values()))):
                pattern = copy.deepcopy(a.pattern)
                rename(pattern, {n: element_name(n, k) for n in lengths})
                out.append(pattern)
        return out

    def unexpanded_pack_error(self, name: str, pos: Pos) -> CompileError:
        return CompileError(f"parameter pack '{name}' must be expanded with '...' here", pos)
