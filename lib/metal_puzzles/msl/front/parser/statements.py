"""Statements: blocks, control flow, declarations with their declarators and initializers, and
the types and aliases a function body may define."""

from __future__ import annotations

from ...lang.errors import CompileError, Pos, did_you_mean, warn_compile
from .. import ast
from ..lexer import EOF, ID, STR, Token
from .cursor import TokenCursor
from .vocabulary import COMMON_TYPES, STATEMENT_ATTRIBUTES


class AliasStmt(ast.Stmt):
    """A type alias declared inside a function body."""

    def __init__(self, alias: ast.TypeAlias) -> None:
        super().__init__(alias.pos)
        self.alias = alias


class Statements(TokenCursor):
    def parse_body(self) -> ast.Block:
        """A kernel body: statements up to the end of input."""
        start = self.tok.pos
        stmts = []
        while self.tok.kind != EOF:
            stmts.append(self.parse_statement())
        return ast.Block(start, stmts)

    def parse_function_body(self, params: list[ast.Param]) -> ast.Block:
        """A function's body, where its parameters' names hide any type of the same name."""
        hidden = {p.name for p in params if p.name and self.is_type_name(p.name)}
        saved = self.hidden_type_names
        self.hidden_type_names = saved | hidden
        try:
            return self.parse_block()
        finally:
            self.hidden_type_names = saved

    def parse_block(self) -> ast.Block:
        start = self.expect("{").pos
        stmts = []
        while not self.tok.is_op("}"):
            if self.tok.kind == EOF:
                raise CompileError("expected '}' to close this block", start)
            stmts.append(self.parse_statement())
        self.advance()
        return ast.Block(start, stmts)

    def parse_statement(self) -> ast.Stmt:
        self._nest()
        try:
            return self._statement()
        finally:
            self.depth -= 1

    def _statement(self) -> ast.Stmt:
        self._statement_attributes()
        t = self.tok
        if t.is_op("{"):
            return self.parse_block()
        if t.is_op(";"):
            self.advance()
            return ast.Empty(t.pos)
        if t.kind == ID:
            stmt = self._keyword_statement(t)
            if stmt is None:
                stmt = self._declaration_statement(t)
            if stmt is not None:
                return stmt
        if t.is_op("::") and self.looks_like_declaration():
            return self.parse_declaration()  # '::ns::Type x = ...;'
        expr = self.parse_expression()
        self.expect(";", "after expression")
        return ast.ExprStmt(t.pos, expr)

    def _statement_attributes(self) -> None:
        """Skip the attributes a statement, label or declaration begins with ('[[likely]] if ...'):
        they change nothing it computes. An unscoped one clang does not know ('[[unroll]]', HLSL's)
        is ignored with clang's warning; scoped ones ('[[clang::nomerge]]') are vendors', not ours
        to judge."""
        start = self.i
        self._skip_attributes()
        toks = self.toks[start:self.i + 1]
        depth = 0
        for prev, tok, nxt in zip(toks, toks[1:], toks[2:], strict=False):  # each token with its neighbours
            depth += prev.is_op("[", "(", "{") - prev.is_op("]", ")", "}")
            is_name = depth == 2 and tok.kind == ID and prev.is_op("[", ",") and not nxt.is_op("::")
            if is_name and tok.text not in STATEMENT_ATTRIBUTES and tok.text != "using":
                warn_compile(f"unknown attribute '{tok.text}' ignored", tok.pos)

    def _keyword_statement(self, t: Token) -> ast.Stmt | None:
        """A statement its keyword introduces (control flow, static_assert), or None."""
        kw = t.text
        if kw == "if":
            return self._if(t)
        if kw == "for":
            return self._for(t)
        if kw == "while":
            return self._while(t)
        if kw == "do":
            return self._do_while(t)
        if kw == "switch":
            return self._switch(t)
        if kw == "case":
            self.advance()
            label = self.parse_ternary()
            self.expect(":", "after the case value")
            return ast.Case(t.pos, label)
        if kw == "default" and self.peek().is_op(":"):
            self.advance()
            self.advance()
            return ast.Case(t.pos, None)
        if kw in ("break", "continue"):
            self.advance()
            self.expect(";", f"after '{kw}'")
            return ast.Break(t.pos) if kw == "break" else ast.Continue(t.pos)
        if kw == "return":
            self.advance()
            value = None if self.tok.is_op(";") else self.parse_expression()
            self.expect(";", "after the return statement")
            return ast.Return(t.pos, value)
        if kw == "static_assert":
            return self.parse_static_assert()
        if kw == "goto":
            raise CompileError("'goto' is not supported by the simulator", t.pos)
        return None

    def _if(self, t: Token) -> ast.If:
        self.advance()
        self.expect("(", "after 'if'")
        cond = self.parse_condition()
        self.expect(")", "after the if condition")
        then = self.parse_statement()
        other = self.parse_statement() if self.accept_word("else") else None
        return ast.If(t.pos, cond, then, other)

    def _for(self, t: Token) -> ast.For:
        self.advance()
        self.expect("(", "after 'for'")
        init: ast.Stmt | None
        if self.accept(";"):
            init = None
        elif self.looks_like_declaration():
            init = self.parse_declaration()
        else:
            init = ast.ExprStmt(self.tok.pos, self.parse_expression())
            self.expect(";", "after the for-loop initializer")
        cond = None if self.tok.is_op(";") else self.parse_condition()
        self.expect(";", "after the for-loop condition")
        step = None if self.tok.is_op(")") else self.parse_expression()
        self.expect(")", "to close the for-loop header")
        return ast.For(t.pos, init, cond, step, self.parse_statement())

    def _while(self, t: Token) -> ast.While:
        self.advance()
        self.expect("(", "after 'while'")
        cond = self.parse_condition()
        self.expect(")", "after the while condition")
        return ast.While(t.pos, cond, self.parse_statement())

    def _do_while(self, t: Token) -> ast.DoWhile:
        self.advance()
        body = self.parse_statement()
        if not self.accept_word("while"):
            self.error_expected("'while' after the do-loop body")
        self.expect("(", "after 'while'")
        cond = self.parse_expression()
        self.expect(")", "after the do-while condition")
        self.expect(";", "after do-while")
        return ast.DoWhile(t.pos, body, cond)

    def _switch(self, t: Token) -> ast.Switch:
        self.advance()
        self.expect("(", "after 'switch'")
        value = self.parse_expression()
        self.expect(")", "after the switch value")
        body = self.parse_statement()
        if not isinstance(body, ast.Block):
            body = ast.Block(body.pos, [body])
        return ast.Switch(t.pos, value, body)

    def _declaration_statement(self, t: Token) -> ast.Stmt | None:
        """A declaration, a local type or an alias starting at the word ``t``; None for an
        expression statement. Two names in a row that do not declare anything are an unknown type."""
        kw = t.text
        if kw == "struct" and self.peek().kind == ID and self.peek().text in self.type_names \
                and not self.peek(2).is_op("{"):
            return self.parse_declaration()  # 'struct Name x;' names a struct declared in the header
        if kw in ("struct", "union") and (self.peek().is_op("{") or (self.peek().kind == ID
                                                                      and self.peek(2).is_op("{"))):
            return self._parse_local_type()
        if kw in ("class", "enum"):
            raise CompileError(f"'{kw}' definitions inside a kernel body are not supported; define the type "
                               "in the header", t.pos)
        if kw == "using" or kw == "typedef":
            item = self.parse_alias()
            if item is None or isinstance(item, ast.UsingNamespace):
                # 'using metal::max;' declares no alias, 'using namespace metal;' widens lookup.
                return ast.Empty(t.pos) if item is None else item
            return AliasStmt(item)
        if self.looks_like_declaration():
            return self.parse_declaration()
        nxt = self.peek()
        if nxt.kind == ID and (self.peek(2).is_op("=", ";", "[", ",") or self.peek(2).kind == EOF):
            # 'flaot x = 1;' : two identifiers in a row can only be a declaration.
            names = set(self.type_names) | COMMON_TYPES
            raise CompileError(f"unknown type name '{kw}'" + did_you_mean(kw, names), t.pos)
        return None

    def parse_static_assert(self) -> ast.StaticAssert:
        start = self.advance().pos  # 'static_assert'
        self.expect("(", "after 'static_assert'")
        condition = self.parse_assignment()
        message = ""
        if self.accept(","):
            if self.tok.kind != STR:
                self.error_expected("a string literal as the static_assert message")
            message = self.advance().text[1:-1]
            while self.tok.kind == STR:  # adjacent literals join, as macros that stringify write them
                message += self.advance().text[1:-1]
        self.expect(")", "to close static_assert")
        self.expect(";", "after static_assert")
        return ast.StaticAssert(start, condition, message)

    def parse_condition(self) -> ast.Expr:
        # 'if (T x = e)' declarations in conditions are rare in kernels; not supported.
        if self.looks_like_declaration():
            raise CompileError("declarations inside a condition are not supported", self.tok.pos)
        return self.parse_expression()

    def parse_declaration(self) -> ast.Decl:
        start = self.tok.pos
        static = self.tok.text == "static"
        constexpr = any(self.peek(k).text == "constexpr" for k in range(3))
        base = self.parse_type_spec()
        return self._parse_declarators(start, base, static, constexpr)

    def _parse_declarators(self, start: Pos, base: ast.TypeSpec, static: bool = False,
                           constexpr: bool = False) -> ast.Decl:
        """The declarators after a declaration's type, to the ';'."""
        declarators = []
        first = True
        while True:
            if first:
                spec = base
            else:
                spec = ast.TypeSpec(base.pos, base.name, base.args, base.const, base.space, member=base.member)
                self._parse_pointer_parts(spec)
            first = False
            self._refuse_function_pointer()
            name_tok = self.expect_ident("a variable name")
            spec = ast.TypeSpec(spec.pos, spec.name, spec.args, spec.const, spec.space,
                                list(spec.pointers), spec.reference, [], spec.member)
            while self.accept("["):
                if self.accept("]"):
                    spec.array_dims.append(None)
                    continue
                spec.array_dims.append(self.parse_expression())
                self.expect("]", "to close the array size")
            self._skip_attributes()
            init = None
            if self.accept("="):
                init = self.parse_initializer()
            elif self.tok.is_op("{"):
                init = self.parse_initializer()
            elif self.tok.is_op("(") and not spec.array_dims:
                # Direct initialization: float x(1.0f);
                p = self.advance().pos
                args = self.parse_call_args()
                _refuse_vexing_parse(name_tok.text, args, p)
                init = ast.Construct(p, ast.TypeSpec(spec.pos, spec.name, spec.args, member=spec.member), args)
            declarators.append(ast.Declarator(name_tok.pos, name_tok.text, spec, init))
            if self.accept(","):
                continue
            self.expect(";", "after the declaration")
            return ast.Decl(start, declarators, static, constexpr)


    def parse_initializer(self) -> ast.Expr:
        return self.parse_init_list() if self.tok.is_op("{") else self.parse_assignment()

    def parse_init_list(self) -> ast.InitList:
        """'{a, b, {c, d}}', from its '{'."""
        start = self.advance().pos
        items = []
        while not self.tok.is_op("}"):
            items.append(self.parse_initializer())
            if not self.accept(","):
                break
        self.expect("}", "to close the initializer list")
        return ast.InitList(start, items)

    def _parse_local_type(self) -> ast.LocalTypeDef:
        """'union { uint i; half h[2]; } val;' or 'struct P { float x, y; };' in a function body."""
        start = self.tok.pos
        struct = self.parse_struct(local=True)
        assert struct is not None
        if struct.constructors or struct.methods:
            raise CompileError("a type defined in a function body may have data members only in the simulator "
                               "(define member functions in the header)", struct.pos)
        if self.accept(";"):
            return ast.LocalTypeDef(start, struct)
        return ast.LocalTypeDef(start, struct, self._parse_declarators(start, ast.TypeSpec(start, struct.name)))

    def _refuse_function_pointer(self) -> None:
        """A function pointer variable ('T (*op)(T, T) = add;'): a precise error at the '(' (only
        parameters may be function pointers in the simulator; a functor type passed as a template
        parameter does the same job)."""
        if self.tok.is_op("(") and self.peek().is_op("*"):
            raise CompileError("function pointers are supported by the simulator only as function parameters "
                               "whose argument names a function; pass the operation as a functor type instead "
                               "('template <typename Op> ... Op()(a, b)')", self.tok.pos)


def _refuse_vexing_parse(name: str, args: list[ast.Expr], pos: Pos) -> None:
    """'P p();' and 'P p(float(i));' declare functions in C++ (its 'most vexing parse'), not
    variables: a precise error rather than a variable C++ would not make."""
    if not args:
        raise CompileError(f"'{name}()' declares a function in C++, not a variable; write '{name};' (or "
                           f"'{name}{{}}') for a default-initialised variable", pos)
    if all(isinstance(a, ast.Construct) and len(a.args) == 1 and isinstance(a.args[0], ast.Name)
           and not a.args[0].template_args and "::" not in a.args[0].ident for a in args):
        raise CompileError(f"this declares '{name}' as a function in C++ (each 'T(x)' reads as a parameter "
                           f"'T x'), not a variable; write '{name}{{...}}' or '= Type(...)' instead", pos)
