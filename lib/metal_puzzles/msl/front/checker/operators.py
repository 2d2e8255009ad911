"""Operators on structs: C++ calls the overloaded operator a header declares.

``a + b`` with a struct operand calls the left operand's member ``operator+`` (with ``b``)
when the struct declares one, else a free ``operator+(a, b)`` found from the current namespace
outwards or in the namespace of a struct operand's type (C++'s argument-dependent lookup, which
lets 'cx::C' values use the operators namespace 'cx' declares); the same for unary operators (``-a``: ``a.operator-()`` or ``operator-(a)``),
compound assignment (``a += b``: ``operator+=``, which C++ never makes out of ``+``) and
subscripts (``a[i]``: the member ``operator[]``). Without a declared operator the expression
is an error, as in C++.
"""

from __future__ import annotations

from ...lang.errors import CompileError, Pos
from ...lang.types import StructType
from .. import ast
from .checker_state import CheckerPart


class OperatorOverloads(CheckerPart):
    def overloaded_operator(self, pos: Pos, op: str, operands: list[ast.Expr]) -> ast.Expr:
        """The call of the operator that ``op`` on these (checked) operands denotes; at least
        one operand is a struct."""
        name = "operator" + op
        first = operands[0]
        if isinstance(first.ty, StructType) and any(m.name == name for m in self.chk.struct_defs[first.ty].methods):
            call = ast.Call(pos, ast.Member(pos, first, name, False), operands[1:])
            return self.chk.structs.method_call(call, first, first.ty)
        defs = list(self.chk.lookup.find_function(name) or [])
        for x in operands:  # argument-dependent lookup: the operand types' own namespaces
            if isinstance(x.ty, StructType) and "::" in x.ty.name:
                namespace = x.ty.name.rsplit("::", 1)[0]
                defs += [d for d in self.chk.func_defs.get(f"{namespace}::{name}", []) if d not in defs]
        if defs and op != "[]":
            call = ast.Call(pos, ast.Name(pos, name), operands)
            return self.chk.calls.call_header_function(call, defs)
        types = " and ".join(f"'{x.ty}'" for x in operands)
        kind = "subscript" if op == "[]" else ("unary" if len(operands) == 1 else "binary")
        raise CompileError(f"invalid operand{'s' if len(operands) > 1 else ''} to {kind} '{op}' ({types}): "
                           f"no '{name}' is declared for them", pos)
