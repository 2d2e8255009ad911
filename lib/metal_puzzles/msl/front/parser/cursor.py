"""The parser's position in the token list and what every part of it shares: reading, accepting
and expecting tokens, errors that say what was expected, the nesting bound and the names known
to denote types and templates."""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

from ...lang.errors import CompileError, Pos
from .. import ast
from ..lexer import EOF, ID, OP, Token
from .vocabulary import BUILTIN_TEMPLATE_NAMES, MAX_NESTING


class TokenCursor:
    """The state the parser's parts (types, expressions, statements, structs, top level) share,
    and the token-level reading they all use."""

    def __init__(self, tokens: list[Token], type_names: set[str] | None = None,
                 template_names: set[str] | None = None) -> None:
        self.depth = 0
        end = tokens[-1].pos if tokens else Pos("source", 1, 1)
        self.toks = tokens + [Token(EOF, "", Pos(end.file, end.line, end.col + 1))]
        self.i = 0
        # Names that denote types (typedefs, template parameters) besides builtins.
        self.type_names: set[str] = set(type_names or ())
        self.template_names: set[str] = set(template_names or ()) | BUILTIN_TEMPLATE_NAMES
        # Unqualified type names that the parameters of the function being parsed hide in its body
        # ('const float array[]' makes 'array[0]' an element, not a use of metal::array).
        self.hidden_type_names: set[str] = set()
        # The namespace being parsed ('namespace a { namespace b {' gives ('a', 'b')): names declared
        # here are qualified with it.
        self.namespace: tuple[str, ...] = ()

    if TYPE_CHECKING:
        # The parts call one another (a type holds expressions, an expression holds types, a
        # struct holds functions): declared here for the type checker, defined by the part named.
        def parse_type_spec(self) -> ast.TypeSpec: ...  # type_specs

        def _parse_pointer_parts(self, spec: ast.TypeSpec) -> None: ...  # type_specs

        def _parse_base_type(self) -> tuple[str, list, list[str]]: ...  # type_specs

        def parse_template_args(self) -> list: ...  # type_specs

        def is_type_name(self, name: str) -> bool: ...  # type_specs

        def starts_type(self, k: int = 0) -> bool: ...  # type_specs

        def looks_like_declaration(self) -> bool: ...  # type_specs

        def _qualified_name_at(self, k: int) -> tuple[str, int]: ...  # type_specs

        def parse_expression(self) -> ast.Expr: ...  # expressions

        def parse_assignment(self) -> ast.Expr: ...  # expressions

        def parse_ternary(self, no_gt: bool = False) -> ast.Expr: ...  # expressions

        def parse_call_args(self) -> list[ast.Expr]: ...  # expressions

        def parse_initializer(self) -> ast.Expr: ...  # statements

        def parse_init_list(self) -> ast.InitList: ...  # statements

        def parse_declaration(self) -> ast.Decl: ...  # statements

        def _parse_declarators(self, start: Pos, base: ast.TypeSpec, static: bool = False,
                               constexpr: bool = False) -> ast.Decl: ...  # statements

        def parse_static_assert(self) -> ast.StaticAssert: ...  # statements

        def parse_function_body(self, params: list[ast.Param]) -> ast.Block: ...  # statements

        def parse_struct(self, template_params: list[ast.TemplateParam] | None = None, *,
                         local: bool = False) -> ast.StructDef | None: ...  # structs

        def _operator_name(self) -> None: ...  # structs

        def parse_params(self) -> list[ast.Param]: ...  # declarations

        def parse_template_params(self) -> list[ast.TemplateParam]: ...  # declarations

        def parse_alias(self) -> ast.TypeAlias | ast.UsingNamespace | None: ...  # declarations

    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def peek(self, k: int = 1) -> Token:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def advance(self) -> Token:
        t = self.toks[self.i]
        # The end of input is never passed: an error reported after it still has a token to point at.
        if t.kind != EOF:
            self.i += 1
        return t

    def accept(self, *ops: str) -> Token | None:
        if self.tok.kind == OP and self.tok.text in ops:
            return self.advance()
        return None

    def accept_word(self, *words: str) -> Token | None:
        if self.tok.kind == ID and self.tok.text in words:
            return self.advance()
        return None

    def expect(self, op: str, what: str | None = None) -> Token:
        if self.tok.is_op(op):
            return self.advance()
        # '>>' closing two template argument lists at once.
        if op == ">" and self.tok.is_op(">>"):
            t = self.tok
            self.toks[self.i] = Token(OP, ">", Pos(t.pos.file, t.pos.line, t.pos.col + 1))
            return Token(OP, ">", t.pos)
        self.error_expected(f"'{op}'" + (f" {what}" if what else ""))

    def error_expected(self, what: str) -> NoReturn:
        t = self.tok
        got = "end of input" if t.kind == EOF else f"'{t.text}'"
        # A missing ';' is reported at the end of the previous token, as compilers do.
        if what.startswith("';'") and self.i > 0:
            prev = self.toks[self.i - 1]
            pos = Pos(prev.pos.file, prev.pos.line, prev.pos.col + len(prev.text))
            raise CompileError(f"expected {what}", pos)
        raise CompileError(f"expected {what}, found {got}", t.pos)

    def expect_ident(self, what: str = "identifier") -> Token:
        if self.tok.kind == ID:
            return self.advance()
        self.error_expected(what)

    def _nest(self) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise CompileError(f"the kernel is nested too deeply here (more than {MAX_NESTING} levels of "
                               "parentheses, operators or blocks); split the expression or the block", self.tok.pos)

    def _skip_balanced(self, open_: str, close: str) -> None:
        self.expect(open_)
        depth = 1
        while depth:
            t = self.advance()
            if t.kind == EOF:
                self.error_expected(f"'{close}'")
            if t.is_op(open_):
                depth += 1
            elif t.is_op(close):
                depth -= 1

    def _skip_attributes(self) -> str | None:
        """Skip [[...]] attributes; return the first one's name ('buffer' for [[buffer(0)]])."""
        first = None
        while self.tok.is_op("[") and self.peek().is_op("["):
            self.advance()
            if first is None and self.peek().kind == ID:
                first = self.peek().text
            self._skip_balanced("[", "]")
            self.expect("]")
        return first
