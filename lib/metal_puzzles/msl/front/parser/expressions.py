"""Expressions, by precedence climbing: assignment, the conditional, binary operators, unary
operators and casts, postfix operators, and primaries (literals, names, functional casts)."""

from __future__ import annotations

from ...lang.errors import CompileError
from .. import ast
from ..ast import CastStyle
from ..lexer import CHAR, ID, NUM, OP, STR, Token
from ..literals import parse_char, parse_number
from .cursor import TokenCursor
from .vocabulary import ASSIGN_OPS, BINARY_LEVEL, BINARY_OPERATORS, POSTFIX_OPS, PREFIX_OPS


class Expressions(TokenCursor):
    def parse_expression(self) -> ast.Expr:
        first = self.parse_assignment()
        if not self.tok.is_op(","):
            return first
        exprs = [first]
        while self.accept(","):
            exprs.append(self.parse_assignment())
        return ast.Comma(first.pos, exprs)

    def parse_assignment(self) -> ast.Expr:
        left = self.parse_ternary()
        if self.tok.kind == OP and self.tok.text in ASSIGN_OPS:
            op = self.advance()
            self._nest()  # 'a = b = c = ...' nests to the right: each one is a level
            try:
                value = self.parse_initializer() if self.tok.is_op("{") else self.parse_assignment()
            finally:
                self.depth -= 1
            return ast.Assign(op.pos, ASSIGN_OPS[op.text], left, value)
        return left

    def parse_ternary(self, no_gt: bool = False) -> ast.Expr:
        cond = self.parse_binary(0, no_gt)
        if self.tok.is_op("?"):
            q = self.advance()
            self._nest()  # 'a ? b ? c ...' nests: each conditional is a level
            try:
                then = self.parse_expression()
                self.expect(":", "in the conditional expression")
                other = self.parse_assignment() if not no_gt else self.parse_ternary(no_gt)
            finally:
                self.depth -= 1
            return ast.Ternary(q.pos, cond, then, other)
        return cond

    def parse_binary(self, level: int, no_gt: bool = False) -> ast.Expr:
        """Binary operators of precedence ``level`` (an index into BINARY_PRECEDENCE) or tighter,
        all left-associative. Precedence climbing: one call per operator, not one per level for
        every operand (an operand alone used to cost ten nested calls)."""
        left = self.parse_unary()
        while True:
            t = self.tok
            op = BINARY_OPERATORS.get(t.text) if t.kind == OP else None
            if op is None or BINARY_LEVEL[op] < level or (no_gt and op in (ast.BinaryOp.GT, ast.BinaryOp.SHR)):
                return left
            self.advance()
            right = self.parse_binary(BINARY_LEVEL[op] + 1, no_gt)
            left = ast.Binary(t.pos, op, left, right)

    def parse_unary(self) -> ast.Expr:
        self._nest()
        try:
            return self._unary()
        finally:
            self.depth -= 1

    def _unary(self) -> ast.Expr:
        t = self.tok
        if t.kind == OP and t.text in PREFIX_OPS:
            self.advance()
            return ast.Unary(t.pos, PREFIX_OPS[t.text], self.parse_unary())
        if t.is_op("(") and self.starts_type(1) and not self._is_functional_cast_in_parens():
            self.advance()
            spec = self.parse_type_spec()
            self.expect(")", "to close the cast")
            return ast.Cast(t.pos, spec, self.parse_unary(), CastStyle.C)
        if t.kind == ID and t.text in ("sizeof", "alignof"):
            self.advance()
            align = t.text == "alignof"
            if self.tok.is_op("(") and self.starts_type(1):
                self.advance()
                spec = self.parse_type_spec()
                while self.accept("["):
                    spec.array_dims.append(self.parse_expression())
                    self.expect("]")
                self.expect(")")
                return ast.SizeOf(t.pos, spec, align)
            if align:
                self.expect("(", "after 'alignof' (it takes a type)")
                self.error_expected("a type")
            return ast.SizeOf(t.pos, self.parse_unary())
        return self.parse_postfix(self.parse_primary())

    def _is_functional_cast_in_parens(self) -> bool:
        """'(float(x) + 1)' starts with a type name but is not a C cast."""
        name, n = self._qualified_name_at(1)
        if not n:
            return False
        nxt = self.peek(1 + n)
        return nxt.is_op("(") or nxt.is_op("{")

    def parse_postfix(self, e: ast.Expr) -> ast.Expr:
        while True:
            t = self.tok
            if t.is_op("["):
                self.advance()
                idx = self.parse_expression()
                self.expect("]", "to close the subscript")
                e = ast.Index(t.pos, e, idx)
            elif t.is_op("("):
                self.advance()
                e = ast.Call(e.pos if isinstance(e, ast.Name) else t.pos, e, self.parse_call_args())
            elif t.is_op(".") or t.is_op("->"):
                self.advance()
                name = self.expect_ident("a member name")
                e = ast.Member(name.pos, e, name.text, t.text == "->")
            elif t.kind == OP and t.text in POSTFIX_OPS:
                self.advance()
                e = ast.Postfix(t.pos, POSTFIX_OPS[t.text], e)
            else:
                return e

    def parse_call_args(self) -> list[ast.Expr]:
        args: list[ast.Expr] = []
        if self.accept(")"):
            return args
        while True:
            args.append(self.parse_initializer() if self.tok.is_op("{") else self.parse_assignment())
            if self.tok.is_op("..."):
                args[-1] = ast.PackExpansion(self.advance().pos, args[-1])
            if self.accept(","):
                continue
            self.expect(")", "to close the argument list")
            return args

    def parse_primary(self) -> ast.Expr:
        t = self.tok
        if t.kind == NUM:
            self.advance()
            return parse_number(t)
        if t.kind == OP and t.text == "(":
            self.advance()
            e = self.parse_expression()
            self.expect(")", "to close the parenthesis")
            return e
        if t.kind == OP and t.text == "{":
            return self.parse_initializer()
        if t.is_op("[") and not self.peek().is_op("["):
            raise CompileError("lambda expressions ('[...](...) { ... }', Metal 3.2) are not supported by the "
                               "simulator; write a helper function, or a struct with an operator(), instead", t.pos)
        if t.kind in (STR, CHAR):
            if t.kind == CHAR:
                self.advance()
                return parse_char(t)
            raise CompileError("string literals are not supported in kernels", t.pos)
        if t.kind == ID or (t.is_op("::") and self.peek().kind == ID):
            return self._named_primary(t)
        self.error_expected("an expression")

    def _named_primary(self, t: Token) -> ast.Expr:
        """A primary that starts with a name: 'true', a C++ cast, a functional cast or a name."""
        if t.text in ("true", "false"):
            self.advance()
            return ast.BoolLit(t.pos, t.text == "true")
        if t.text in ("static_cast", "reinterpret_cast", "const_cast", "as_type", "bit_cast"):
            return self._named_cast(t)
        name, n = self._qualified_name_at(0)
        if self.is_type_name(name) and name not in ("vec", "atomic"):
            return self._functional_cast(t)
        self.i += n
        targs = None
        if self.tok.is_op("<") and (name.removeprefix("::") in self.template_names
                                    or name.split("::")[-1] in self.template_names):
            targs = self.parse_template_args()
            # numeric_limits<float>::max  — a qualified name after template args
            while self.tok.is_op("::") and self.peek().kind == ID:
                self.advance()
                name += "<>::" + self.advance().text
        return ast.Name(t.pos, name, targs)

    def _named_cast(self, t: Token) -> ast.Cast:
        """'static_cast<T>(e)' and its kin, 'as_type<T>(e)', 'bit_cast<T>(e)'."""
        self.advance()
        self.expect("<", f"after '{t.text}'")
        spec = self.parse_type_spec()
        self.expect(">", "to close the cast type")
        self.expect("(", "after the cast type")
        operand = self.parse_expression()
        self.expect(")", "to close the cast")
        style = CastStyle.AS_TYPE if t.text == "bit_cast" else CastStyle(t.text)
        return ast.Cast(t.pos, spec, operand, style)

    def _functional_cast(self, t: Token) -> ast.Expr:
        """A functional cast or constructor: float(x), float4(a, b), uint2{1, 2}; or 'S<T>::value'."""
        type_name, args, member = self._parse_base_type()
        if member and not self.tok.is_op("(", "{"):
            # 'S<T>::value': without 'typename' a member of a template's instance is a value.
            return ast.Name(t.pos, f"{type_name}<>::{'::'.join(member)}", args)
        spec = ast.TypeSpec(t.pos, type_name, args, member=member)
        if self.accept("("):
            return ast.Construct(t.pos, spec, self.parse_call_args())
        if self.tok.is_op("{"):
            return ast.Construct(t.pos, spec, self.parse_init_list().items)
        self.error_expected("'(' after the type name (a functional cast)")
