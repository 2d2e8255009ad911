"""Name lookup through namespaces, as C++ does it.

The parser flattens namespace blocks: every declaration inside one carries its qualified name
('c10::metal::max') and the namespace it was declared in. Looking a name up from code in
namespace ``a::b`` tries block scopes first, then ``a::b::name``, ``a::name`` and ``name``
(with the namespaces that ``using namespace`` directives name at each level), so an inner
declaration hides an outer one. ``::name`` starts from the global namespace. Names the
simulator's library provides (``max``, ``metal::max``, ``::metal::max``) are tried last, as
declarations of the global ``metal`` namespace.
"""

from __future__ import annotations

from ...lang.errors import CompileError, Pos
from ...lang.metal_namespace import METAL_NAMESPACE
from .. import ast
from .checker_state import CheckerPart, CheckerState
from .entries import Scope, ScopeEntry


class NamespaceLookup(CheckerPart):
    def __init__(self, chk: CheckerState) -> None:
        super().__init__(chk)
        # Every namespace the header declares ('a', 'a::b'), and the namespaces 'using namespace'
        # makes visible in each.
        self.namespaces: set[str] = set()
        self.using: dict[tuple[str, ...], list[str]] = {}

    def declare_namespace(self, path: tuple[str, ...]) -> None:
        """Record namespace ``path`` and each namespace enclosing it as known."""
        for k in range(1, len(path) + 1):
            self.namespaces.add("::".join(path[:k]))

    def use_namespace(self, directive: ast.UsingNamespace) -> None:
        """``using namespace X;``: X's names become visible where the directive is written."""
        target = self._resolve_namespace(directive.target, directive.namespace, directive.pos)
        targets = self.using.setdefault(directive.namespace, [])
        if target not in targets:
            targets.append(target)

    def _resolve_namespace(self, written: str, where: tuple[str, ...], pos: Pos) -> str:
        if written.startswith("::"):
            candidates = [written[2:]]
        else:
            candidates = ["::".join(where[:k] + (written,)) for k in range(len(where), -1, -1)]
        for cand in candidates:
            if cand in self.namespaces:
                return cand
        if candidates[-1] == METAL_NAMESPACE or candidates[-1].startswith(METAL_NAMESPACE + "::"):
            return candidates[-1]
        raise CompileError(f"unknown namespace '{written}'", pos)

    def qualified_candidates(self, name: str) -> list[str]:
        """The qualified names ``name`` may denote from the current namespace, innermost first."""
        if name.startswith("::"):
            bare = name[2:]
            return [bare] + [f"{target}::{bare}" for target in self.using.get((), ())]
        out = []
        ns = self.chk.namespace
        for k in range(len(ns), -1, -1):
            level = ns[:k]
            out.append("::".join(level + (name,)))
            out.extend(f"{target}::{name}" for target in self.using.get(level, ()))
        return out

    def lookup_name(self, name: str) -> ScopeEntry | None:
        """What ``name`` denotes (a ``Var``, a ``TypeEntry``, a member...: ``entries.ScopeEntry``): block scopes
        first, then declarations at namespace scope from the current namespace outwards."""
        if not self.chk.namespace and not self.using and "::" not in name:
            return self.chk.scope.lookup(name)  # the common case: one chain of scopes ending at the globals
        scope: Scope | None = self.chk.scope
        if "::" not in name:
            while scope is not None and scope is not self.chk.globals:
                if name in scope.names:
                    return scope.names[name]
                scope = scope.parent
        for cand in self.qualified_candidates(name):
            if cand in self.chk.globals.names:
                return self.chk.globals.names[cand]
        return None

    def find_function(self, name: str) -> list[ast.FuncDef] | None:
        """The header functions ``name`` names (an overload set of one namespace), or None."""
        if not self.chk.namespace and not self.using and "::" not in name:
            return self.chk.func_defs.get(name)
        for cand in self.qualified_candidates(name):
            defs = self.chk.func_defs.get(cand)
            if defs:
                return defs
        return None

    def enter_namespace(self, path: tuple[str, ...]) -> tuple[str, ...]:
        """Check what follows as written in namespace ``path``; returns the namespace to restore."""
        saved = self.chk.namespace
        self.chk.namespace = path
        return saved
