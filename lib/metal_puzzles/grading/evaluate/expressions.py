"""Expressions: literals, names, containers, f-strings, operators and comparisons of known
values, subscripts and attributes; an expression not modelled is unknown."""

from __future__ import annotations

import ast
import functools
from typing import Any

from .known_values import (
    COMPARISONS,
    IPYTHON_METHODS,
    LIST_MUTATORS,
    MAX_STRING,
    NAMESPACE_CHANGERS,
    NAMESPACE_HANDLES,
    OPERATOR_SIGNS,
    OPERATORS,
    PACKAGE_NAMES,
    STR_METHODS,
    WIDE_NUMBER,
    BoundMethod,
    Builtin,
    KList,
    Module,
    Problem,
    Unknown,
    from_python,
    plain,
    same_value,
    size_of,
    to_python,
)
from .machine import Machine
from .notebook_state import Scope
from .syntax import KIND_NAMES, quote


class Expressions(Machine):
    def eval(self, node: ast.expr, scope: Scope) -> Any:
        self.tick()
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            return self.unmodelled_expression(node, scope)
        return method(node, scope)

    def unmodelled_expression(self, node: ast.expr, scope: Scope) -> Unknown:
        """An expression the evaluator does not follow (a comprehension, a lambda, a dict...):
        names it binds (the walrus) become unknown, functions it mentions may be called by it."""
        why = self.unknown(f"`{quote(node)}` (a {KIND_NAMES.get(type(node).__name__, 'construct')} the "
                           "grader does not evaluate)", node.lineno)
        self.builds_out_of_sight(node, f"a {KIND_NAMES.get(type(node).__name__, 'construct')}")
        self.call_mentioned_functions(node, scope)
        for sub in ast.walk(node):
            if isinstance(sub, ast.NamedExpr) and isinstance(sub.target, ast.Name):
                self.store(sub.target.id, why, scope)
        return why

    def expr_Constant(self, node: ast.Constant, scope: Scope) -> Any:
        v = node.value
        if isinstance(v, str | int | float | bool | bytes) or v is None:
            return v
        return self.unknown("a constant", node.lineno)

    def expr_Name(self, node: ast.Name, scope: Scope) -> Any:
        if node.id == "__builtins__":  # exec, setattr ... by another name
            self.escaped = self.unknown("__builtins__, through which any variable can change", node.lineno)
            self.taint(self.escaped)
        return self.load(node.id, scope, node.lineno)

    def expr_NamedExpr(self, node: ast.NamedExpr, scope: Scope) -> Any:
        value = self.eval(node.value, scope)
        self.assign(node.target, value, scope)
        return value

    def expr_Tuple(self, node: ast.Tuple | ast.List, scope: Scope) -> Any:
        out: list[Any] = []
        for elt in node.elts:
            if isinstance(elt, ast.Starred):
                items = self.iterate(self.eval(elt.value, scope))
                if items is None:
                    return self.unknown("a starred item the grader cannot expand", node.lineno)
                out += items
            else:
                out.append(self.eval(elt, scope))
        return KList(out) if isinstance(node, ast.List) else tuple(out)

    expr_List = expr_Tuple

    def expr_JoinedStr(self, node: ast.JoinedStr, scope: Scope) -> Any:
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
                continue
            assert isinstance(value, ast.FormattedValue)  # a JoinedStr holds nothing else
            formatted = self.formatted(value, scope)
            if isinstance(formatted, Unknown):
                return formatted
            parts.append(formatted)
        return self.bounded("".join(parts), node.lineno)

    def formatted(self, node: ast.FormattedValue, scope: Scope) -> Any:
        value = self.eval(node.value, scope)
        spec = self.eval(node.format_spec, scope) if node.format_spec is not None else ""
        if not plain(value):
            return value if isinstance(value, Unknown) else self.unknown(
                f"an f-string of {quote(node.value)}", node.lineno)
        if isinstance(spec, Unknown):
            return spec
        if not isinstance(spec, str) or WIDE_NUMBER.search(spec):
            return self.unknown("an f-string whose format is too wide", node.lineno)
        py = to_python(value)
        if node.conversion == ord("r"):
            py = repr(py)
        elif node.conversion == ord("s"):
            py = str(py)
        elif node.conversion == ord("a"):
            py = ascii(py)
        try:
            return format(py, spec)
        except (ValueError, TypeError):
            return self.raised(node.lineno)

    def expr_BinOp(self, node: ast.BinOp, scope: Scope) -> Any:
        # A long chain ("a" + "b" + ...) nests to the left: walk it without recursion.
        chain = [node]
        while isinstance(chain[-1].left, ast.BinOp):
            chain.append(chain[-1].left)
        value = self.eval(chain[-1].left, scope)
        for link in reversed(chain):
            self.tick()
            value = self.binop(link.op, value, self.eval(link.right, scope), link.lineno)
        return value

    def binop(self, op: ast.operator, left: Any, right: Any, lineno: int) -> Any:
        for side in (left, right):
            if isinstance(side, Unknown):
                return side
        if not (plain(left) and plain(right)):
            return self.unknown(f"a '{type(op).__name__}' of values the grader does not compute", lineno)
        a, b = to_python(left), to_python(right)
        size = size_of(op, a, b)
        if size is None:
            return self.unknown(f"a '{OPERATOR_SIGNS.get(type(op), type(op).__name__)}' the grader does not "
                                "compute", lineno)
        if size > MAX_STRING:
            return self.unknown("a string longer than the grader keeps", lineno)
        if isinstance(op, ast.Mod) and isinstance(a, str) and WIDE_NUMBER.search(a):
            return self.unknown("a '%' format that is too wide", lineno)
        try:
            result = OPERATORS[type(op)](a, b)
        except (TypeError, ValueError, ZeroDivisionError, OverflowError, KeyError):
            return self.raised(lineno)
        return self.bounded(from_python(result), lineno)

    def bounded(self, value: Any, lineno: int) -> Any:
        if isinstance(value, str) and len(value) > MAX_STRING:
            return self.unknown("a string longer than the grader keeps", lineno)
        return value

    def expr_UnaryOp(self, node: ast.UnaryOp, scope: Scope) -> Any:
        value = self.eval(node.operand, scope)
        if isinstance(node.op, ast.Not):
            truth = self.truth(value)
            return self.unknown(f"'not' of {quote(node.operand)}", node.lineno) if truth is None else not truth
        if isinstance(value, int | float) and not isinstance(value, bool) and isinstance(node.op, ast.USub | ast.UAdd):
            return -value if isinstance(node.op, ast.USub) else value
        return value if isinstance(value, Unknown) else self.unknown("a unary operation", node.lineno)

    def expr_BoolOp(self, node: ast.BoolOp, scope: Scope) -> Any:
        """``a and b``/``a or b``: later operands run only when earlier ones decide nothing."""
        is_and = isinstance(node.op, ast.And)
        result = self.eval(node.values[0], scope)
        for i, operand in enumerate(node.values[1:], start=1):
            truth = self.truth(result)
            if truth is not None:
                if truth is not is_and:
                    return result
                result = self.eval(operand, scope)
                continue
            why = self._depends(result, "and" if is_and else "or", node.lineno)
            rest = ast.BoolOp(op=node.op, values=node.values[i:]) if len(node.values) - i > 1 else node.values[i]
            ast.copy_location(rest, node)
            self.fork_paths([functools.partial(self.eval, rest, scope), lambda: None], why)
            return why
        return result

    def expr_IfExp(self, node: ast.IfExp, scope: Scope) -> Any:
        test = self.eval(node.test, scope)
        truth = self.truth(test)
        if truth is True:
            return self.eval(node.body, scope)
        if truth is False:
            return self.eval(node.orelse, scope)
        why = self._depends(test, "if ... else", node.lineno)
        results: list[Any] = []
        self.fork_paths([lambda: results.append(self.eval(node.body, scope)),
                         lambda: results.append(self.eval(node.orelse, scope))], why)
        return results[0] if len(results) == 2 and same_value(results[0], results[1]) else why

    def expr_Compare(self, node: ast.Compare, scope: Scope) -> Any:
        left = self.eval(node.left, scope)
        for op, right_node in zip(node.ops, node.comparators, strict=False):
            right = self.eval(right_node, scope)
            result = self.compare(op, left, right, node.lineno)
            if result is not True:
                return result
            left = right
        return True

    def compare(self, op: ast.cmpop, left: Any, right: Any, lineno: int) -> Any:
        for side in (left, right):
            if isinstance(side, Unknown):
                return side
        if isinstance(op, ast.Is | ast.IsNot):
            if any(v is None or isinstance(v, bool) for v in (left, right)):
                same = type(left) is type(right) and left == right
                return same if isinstance(op, ast.Is) else not same
            return self.unknown("an 'is' comparison of objects", lineno)
        if not (plain(left) and plain(right)):
            return self.unknown("a comparison of objects the grader does not compare", lineno)
        try:
            return bool(COMPARISONS[type(op)](to_python(left), to_python(right)))
        except TypeError:
            return self.raised(lineno)

    def expr_Subscript(self, node: ast.Subscript, scope: Scope) -> Any:
        value = self.eval(node.value, scope)
        index = self.eval(node.slice, scope)
        if isinstance(value, Unknown):
            return value
        if isinstance(value, str | tuple) and (isinstance(index, int) and not isinstance(index, bool)
                                               or isinstance(index, slice)):
            try:
                result = value[index]
            except IndexError:
                return self.raised(node.lineno)
            return KList(result) if isinstance(value, KList) and isinstance(index, slice) else result
        return index if isinstance(index, Unknown) else self.unknown(f"the item {quote(node)}", node.lineno)

    def expr_Slice(self, node: ast.Slice, scope: Scope) -> Any:
        parts = [self.eval(p, scope) if p is not None else None for p in (node.lower, node.upper, node.step)]
        if all(p is None or isinstance(p, int) and not isinstance(p, bool) for p in parts):
            return slice(*parts)
        return next((p for p in parts if isinstance(p, Unknown)), self.unknown("a slice", node.lineno))

    def expr_Attribute(self, node: ast.Attribute, scope: Scope) -> Any:
        owner = self.eval(node.value, scope)
        name = node.attr
        if name in NAMESPACE_CHANGERS or name == "get_ipython":
            return Builtin(name)  # builtins.exec, IPython.get_ipython ...: the same callables
        if name in NAMESPACE_HANDLES or isinstance(owner, Builtin) and owner.name == "ipython" and \
                name not in IPYTHON_METHODS:
            self.escaped = self.unknown(f"`{quote(node)}`, through which any variable of the notebook "
                                        "can change", node.lineno)
            self.taint(self.escaped)
            return self.escaped
        if isinstance(owner, Module) and owner.name == "__main__":
            return self.st.frames[0].get(name, self.unknown(f"__main__.{name}", node.lineno))
        if isinstance(owner, Module) and owner.name in self.patched:
            return self.unknown(f"{quote(node)} of a module the notebook changed", node.lineno)
        if isinstance(owner, Module):
            if owner.name == "textwrap" and name in ("dedent", "indent"):
                return Builtin(f"textwrap.{name}")
            if owner.name == "inspect" and name == "cleandoc":
                return Builtin("inspect.cleandoc")
            if name in PACKAGE_NAMES:
                return Builtin(name)
            return self.unknown(f"{quote(node)}", node.lineno)
        if name in PACKAGE_NAMES and isinstance(owner, Unknown):
            return Builtin(name)  # metal_puzzles.host.kernel.MetalKernel through a module the grader did not follow
        if isinstance(owner, str) and name in STR_METHODS or isinstance(owner, KList) and name in LIST_MUTATORS:
            return BoundMethod(owner, name, node.value)
        if isinstance(owner, Problem):  # problem.fn is the function; its methods call it
            return owner.function if name == "fn" else BoundMethod(owner, name)
        if isinstance(owner, Builtin) and owner.name == "ipython":
            return BoundMethod(owner, name)
        if isinstance(owner, Unknown):
            return owner
        return self.unknown(f"the attribute {quote(node)}", node.lineno)

    def expr_Await(self, node: ast.Await, scope: Scope) -> Any:
        return self.eval(node.value, scope)

