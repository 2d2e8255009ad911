"""Recursive-descent parser for kernel bodies (statement lists) and headers (top-level
declarations: helper functions, templates, constant globals, type aliases)."""

from __future__ import annotations

from ..lang.errors import CompileError, Pos, did_you_mean
from ..lang.metal_namespace import strip_metal_namespace
from ..lang.types import SCALAR_ALIASES, AddressSpace, lookup_builtin_type
from . import ast
from .ast import CastStyle
from .lexer import Token
from .literals import parse_char, parse_number

ADDRESS_SPACES = ("device", "constant", "threadgroup", "thread", "threadgroup_imageblock", "ray_data", "object_data")
QUALIFIERS = ("const", "volatile", "static", "constexpr", "inline", "METAL_FUNC", "thread_local", "__attribute__")
# Names that take explicit template arguments in expressions: f<T>(x).
BUILTIN_TEMPLATE_NAMES = {
    "static_cast", "reinterpret_cast", "const_cast", "as_type", "numeric_limits", "metal::numeric_limits",
    "vec", "atomic", "Limits", "metal::vec", "make_filled_simdgroup_matrix", "metal::make_filled_simdgroup_matrix",
    "declval", "metal::declval",
}
TEMPLATE_TYPE_NAMES = {"vec", "atomic", "metal::vec", "metal::atomic", "array", "metal::array", "simdgroup_matrix",
                       "metal::simdgroup_matrix"}
# <metal_type_traits>' constant-carrying types, declared in library/std_types.py.
for _name in ("integral_constant", "bool_constant", "true_type", "false_type"):
    TEMPLATE_TYPE_NAMES |= {_name, "metal::" + _name}
# <metal_type_traits>: the traits that name types, and those that give values ('is_same_v<T, U>',
# 'is_same<T, U>::value'); their meaning is the checker's and the library's.
TYPE_TRAIT_TYPES = ("enable_if_t", "conditional_t", "remove_cv_t", "remove_const_t", "remove_volatile_t",
                    "remove_reference_t", "remove_cvref_t", "decay_t", "make_signed_t", "make_unsigned_t")
TYPE_TRAIT_VALUES = ("is_same", "is_floating_point", "is_integral", "is_signed", "is_unsigned", "is_arithmetic",
                     "is_scalar", "is_vector", "is_pointer")
for _name in TYPE_TRAIT_TYPES:
    TEMPLATE_TYPE_NAMES |= {_name, "metal::" + _name}
for _name in TYPE_TRAIT_VALUES:
    BUILTIN_TEMPLATE_NAMES |= {_name, _name + "_v", "metal::" + _name, "metal::" + _name + "_v"}

#: Words that may precede a constructor's name.
CONSTRUCTOR_PREFIXES = ("constexpr", "inline", "METAL_FUNC", "explicit")

_COMMON_TYPES = {
    "float", "half", "bfloat", "int", "uint", "short", "ushort", "char", "uchar", "long", "ulong", "bool",
    "float2", "float3", "float4", "half2", "half3", "half4", "int2", "int3", "int4", "uint2", "uint3", "uint4",
    "size_t", "int32_t", "uint32_t", "int64_t", "uint64_t", "auto",
}

#: Operators a struct may overload (besides '[]'), as the simulator runs them.
OVERLOADABLE_OPERATORS = ("+", "-", "*", "/", "%", "^", "&", "|", "~", "!", "<", ">", "<=", ">=", "==", "!=",
                          "<<", ">>", "+=", "-=", "*=", "/=", "%=", "^=", "&=", "|=", "<<=", ">>=")
_ASSIGN_OPS = ("=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "|=", "^=")
_BINARY_PRECEDENCE = [
    ("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", ">", "<=", ">="),
    ("<<", ">>"), ("+", "-"), ("*", "/", "%"),
]
#: Each binary operator's precedence: its index in _BINARY_PRECEDENCE (higher binds tighter).
_BINARY_LEVEL = {op: level for level, ops in enumerate(_BINARY_PRECEDENCE) for op in ops}


#: Parentheses, operators and blocks nest at most this deep (recursive descent uses the stack).
MAX_NESTING = 64


class Parser:
    def __init__(self, tokens: list[Token], type_names: set[str] | None = None,
                 template_names: set[str] | None = None) -> None:
        self.depth = 0
        end = tokens[-1].pos if tokens else Pos("source", 1, 1)
        self.toks = tokens + [Token("eof", "", Pos(end.file, end.line, end.col + 1))]
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

    # ------------------------------------------------------------------ helpers
    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def peek(self, k: int = 1) -> Token:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def advance(self) -> Token:
        t = self.toks[self.i]
        # The end of input is never passed: an error reported after it still has a token to point at.
        if t.kind != "eof":
            self.i += 1
        return t

    def accept(self, *ops: str) -> Token | None:
        if self.tok.kind == "op" and self.tok.text in ops:
            return self.advance()
        return None

    def accept_word(self, *words: str) -> Token | None:
        if self.tok.kind == "id" and self.tok.text in words:
            return self.advance()
        return None

    def expect(self, op: str, what: str | None = None) -> Token:
        if self.tok.is_op(op):
            return self.advance()
        # '>>' closing two template argument lists at once.
        if op == ">" and self.tok.is_op(">>"):
            t = self.tok
            self.toks[self.i] = Token("op", ">", Pos(t.pos.file, t.pos.line, t.pos.col + 1))
            return Token("op", ">", t.pos)
        self.error_expected(f"'{op}'" + (f" {what}" if what else ""))

    def error_expected(self, what: str):
        t = self.tok
        got = "end of input" if t.kind == "eof" else f"'{t.text}'"
        # A missing ';' is reported at the end of the previous token, as compilers do.
        if what.startswith("';'") and self.i > 0:
            prev = self.toks[self.i - 1]
            pos = Pos(prev.pos.file, prev.pos.line, prev.pos.col + len(prev.text))
            raise CompileError(f"expected {what}", pos)
        raise CompileError(f"expected {what}, found {got}", t.pos)

    def expect_ident(self, what: str = "identifier") -> Token:
        if self.tok.kind == "id":
            return self.advance()
        self.error_expected(what)

    # --------------------------------------------------------------- type names
    def _qualified_name_at(self, k: int) -> tuple[str, int]:
        """Read a possibly ::-qualified identifier starting at token offset k; return (name, length).
        A name written from the global namespace ('::metal::max') keeps its leading '::'."""
        parts = []
        n = 0
        rooted = self.peek(k).is_op("::") and self.peek(k + 1).kind == "id"
        if rooted:
            n += 1
        while self.peek(k + n).kind == "id":
            parts.append(self.peek(k + n).text)
            n += 1
            if self.peek(k + n).is_op("::") and self.peek(k + n + 1).kind == "id":
                n += 1
                continue
            break
        name = "::".join(parts)
        return ("::" + name if rooted else name), n

    def is_type_name(self, name: str) -> bool:
        if name in self.hidden_type_names:
            return False
        name = name.removeprefix("::")
        if name in ("auto", "decltype"):
            return True
        if name in self.type_names or name in TEMPLATE_TYPE_NAMES:
            return True
        base = strip_metal_namespace(name)
        return lookup_builtin_type(base) is not None or base in SCALAR_ALIASES

    def starts_type(self, k: int = 0) -> bool:
        t = self.peek(k)
        if t.is_op("::"):
            return self.is_type_name(self._qualified_name_at(k)[0])
        if t.kind != "id":
            return False
        if t.text in ADDRESS_SPACES or t.text in QUALIFIERS or t.text in ("unsigned", "signed", "typename"):
            return True
        name, _ = self._qualified_name_at(k)
        return self.is_type_name(name)

    def looks_like_declaration(self) -> bool:
        t = self.tok
        if t.kind != "id" and not t.is_op("::"):
            return False
        if t.text in ("decltype", "typename"):  # 'typename S<T>::type x = ...;'
            return True
        if t.text in ADDRESS_SPACES or t.text in QUALIFIERS or t.text in ("unsigned", "signed"):
            return True
        name, n = self._qualified_name_at(0)
        if not self.is_type_name(name):
            return False
        nxt = self.peek(n)
        if nxt.kind == "id":
            return True
        if nxt.is_op("<"):
            return not self._starts_static_member_call()
        if nxt.is_op("*", "&", "&&"):
            return True
        # 'float (*op)(float, float) = add;' reads as a declaration, to be refused precisely.
        return nxt.is_op("(") and self.peek(n + 1).is_op("*") and self.peek(n + 2).kind == "id" \
            and self.peek(n + 3).is_op(")")

    # ------------------------------------------------------------------- types
    def parse_type_spec(self) -> ast.TypeSpec:
        """Qualifiers, a base type, then '*' and '&' parts (not the declarator name)."""
        start = self.tok.pos
        const = False
        space = None
        while True:
            t = self.tok
            if t.kind != "id":
                break
            if t.text == "const" or t.text == "volatile":
                const = const or t.text == "const"
                self.advance()
            elif t.text in ADDRESS_SPACES:
                space = _address_space(t)
                self.advance()
            elif t.text in ("static", "constexpr", "inline", "METAL_FUNC", "thread_local", "typename"):
                self.advance()
            elif t.text == "__attribute__":
                self.advance()
                self._skip_balanced("(", ")")
            else:
                break
        name, args, member = self._parse_base_type()
        while self.tok.kind == "id" and self.tok.text in ("const", "volatile") + ADDRESS_SPACES:
            t = self.advance()
            if t.text == "const":
                const = True
            elif t.text in ADDRESS_SPACES:
                space = _address_space(t)
        spec = ast.TypeSpec(start, name, args, const, space, member=member)
        self._parse_pointer_parts(spec)
        return spec

    def _parse_pointer_parts(self, spec: ast.TypeSpec) -> None:
        while True:
            if self.accept("*"):
                pconst = False
                pspace = None
                while self.tok.kind == "id" and self.tok.text in ("const", "volatile", "restrict", "__restrict") + ADDRESS_SPACES:
                    w = self.advance()
                    if w.text == "const":
                        pconst = True
                    elif w.text in ADDRESS_SPACES:
                        pspace = _address_space(w)
                spec.pointers.append((pspace, pconst))
            elif self.tok.is_op("&") or self.tok.is_op("&&"):
                self.advance()
                spec.reference = True
            else:
                break

    def _parse_base_type(self) -> tuple[str, list, list[str]]:
        """The base type's name, its template arguments and, after them, a member type path
        ('OpMath<T>::type' gives 'OpMath', [T], ['type'])."""
        t = self.tok
        if t.kind != "id" and not (t.is_op("::") and self.peek().kind == "id"):
            self.error_expected("a type")
        if t.text in ("unsigned", "signed"):
            sign = self.advance().text
            if self.tok.kind == "id" and self.tok.text in ("char", "short", "int", "long"):
                base = self.advance().text
                if base in ("short", "long") and self.tok.kind == "id" and self.tok.text == "int":
                    self.advance()
                if sign == "unsigned":
                    return {"char": "uchar", "short": "ushort", "int": "uint", "long": "ulong"}[base], [], []
                return base, [], []
            return ("uint" if sign == "unsigned" else "int"), [], []
        if t.text == "decltype":
            # decltype(expr): the type of an expression, worked out by the checker.
            self.advance()
            self.expect("(", "after 'decltype'")
            expr = self.parse_expression()
            self.expect(")", "to close decltype")
            return "decltype", [expr], []
        if t.text == "struct" and self.peek().kind == "id":  # an elaborated 'struct Name'
            self.advance()
            t = self.tok
        name, n = self._qualified_name_at(0)
        if n == 0:
            self.error_expected("a type")
        if not self.is_type_name(name):
            raise CompileError(f"unknown type name '{name}'", t.pos)
        self.i += n
        if name in ("short", "long") and self.tok.kind == "id" and self.tok.text == "int":
            self.advance()
        args: list = []
        member: list[str] = []
        bare = name.removeprefix("::")
        if self.tok.is_op("<") and (bare in TEMPLATE_TYPE_NAMES or bare in self.template_names):
            args = self.parse_template_args()
            while self.tok.is_op("::") and self.peek().kind == "id":
                self.advance()
                member.append(self.advance().text)
        return name, args, member

    def parse_template_args(self) -> list:
        self.expect("<")
        args: list = []
        if self.accept(">"):
            return args
        while True:
            if self.starts_type():
                args.append(self.parse_type_spec())
            else:
                args.append(self.parse_ternary(no_gt=True))
            if self.accept(","):
                continue
            self.expect(">", "to close the template argument list")
            return args

    def _skip_balanced(self, open_: str, close: str) -> None:
        self.expect(open_)
        depth = 1
        while depth:
            t = self.advance()
            if t.kind == "eof":
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
            if first is None and self.peek().kind == "id":
                first = self.peek().text
            self._skip_balanced("[", "]")
            self.expect("]")
        return first

    # -------------------------------------------------------------- statements
    def parse_body(self) -> ast.Block:
        """A kernel body: statements up to the end of input."""
        start = self.tok.pos
        stmts = []
        while self.tok.kind != "eof":
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
            if self.tok.kind == "eof":
                raise CompileError("expected '}' to close this block", start)
            stmts.append(self.parse_statement())
        self.advance()
        return ast.Block(start, stmts)

    def _nest(self) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise CompileError(f"the kernel is nested too deeply here (more than {MAX_NESTING} levels of "
                               "parentheses, operators or blocks); split the expression or the block", self.tok.pos)

    def parse_statement(self) -> ast.Stmt:
        self._nest()
        try:
            return self._statement()
        finally:
            self.depth -= 1

    def _statement(self) -> ast.Stmt:
        t = self.tok
        self._skip_attributes()
        if t.is_op("{"):
            return self.parse_block()
        if t.is_op(";"):
            self.advance()
            return ast.Empty(t.pos)
        if t.kind == "id":
            kw = t.text
            if kw == "if":
                self.advance()
                self.expect("(", "after 'if'")
                cond = self.parse_condition()
                self.expect(")", "after the if condition")
                then = self.parse_statement()
                other = self.parse_statement() if self.accept_word("else") else None
                return ast.If(t.pos, cond, then, other)
            if kw == "for":
                self.advance()
                self.expect("(", "after 'for'")
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
            if kw == "while":
                self.advance()
                self.expect("(", "after 'while'")
                cond = self.parse_condition()
                self.expect(")", "after the while condition")
                return ast.While(t.pos, cond, self.parse_statement())
            if kw == "do":
                self.advance()
                body = self.parse_statement()
                if not self.accept_word("while"):
                    self.error_expected("'while' after the do-loop body")
                self.expect("(", "after 'while'")
                cond = self.parse_expression()
                self.expect(")", "after the do-while condition")
                self.expect(";", "after do-while")
                return ast.DoWhile(t.pos, body, cond)
            if kw == "switch":
                self.advance()
                self.expect("(", "after 'switch'")
                value = self.parse_expression()
                self.expect(")", "after the switch value")
                body = self.parse_statement()
                if not isinstance(body, ast.Block):
                    body = ast.Block(body.pos, [body])
                return ast.Switch(t.pos, value, body)
            if kw == "case":
                self.advance()
                value = self.parse_ternary()
                self.expect(":", "after the case value")
                return ast.Case(t.pos, value)
            if kw == "default" and self.peek().is_op(":"):
                self.advance()
                self.advance()
                return ast.Case(t.pos, None)
            if kw == "break":
                self.advance()
                self.expect(";", "after 'break'")
                return ast.Break(t.pos)
            if kw == "continue":
                self.advance()
                self.expect(";", "after 'continue'")
                return ast.Continue(t.pos)
            if kw == "return":
                self.advance()
                value = None if self.tok.is_op(";") else self.parse_expression()
                self.expect(";", "after the return statement")
                return ast.Return(t.pos, value)
            if kw == "static_assert":
                return self.parse_static_assert()
            if kw in ("goto",):
                raise CompileError("'goto' is not supported by the simulator", t.pos)
            if kw == "struct" and self.peek().kind == "id" and self.peek().text in self.type_names \
                    and not self.peek(2).is_op("{"):
                return self.parse_declaration()  # 'struct Name x;' names a struct declared in the header
            if kw in ("struct", "union") and (self.peek().is_op("{") or (self.peek().kind == "id"
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
                return _AliasStmt(item)
            if self.looks_like_declaration():
                return self.parse_declaration()
            nxt = self.peek()
            if nxt.kind == "id" and (self.peek(2).is_op("=", ";", "[", ",") or self.peek(2).kind == "eof"):
                # 'flaot x = 1;' : two identifiers in a row can only be a declaration.
                names = set(self.type_names) | _COMMON_TYPES
                raise CompileError(f"unknown type name '{kw}'" + did_you_mean(kw, names), t.pos)
        if t.is_op("::") and self.looks_like_declaration():
            return self.parse_declaration()  # '::ns::Type x = ...;'
        expr = self.parse_expression()
        self.expect(";", "after expression")
        return ast.ExprStmt(t.pos, expr)

    def parse_static_assert(self) -> ast.StaticAssert:
        start = self.advance().pos  # 'static_assert'
        self.expect("(", "after 'static_assert'")
        condition = self.parse_assignment()
        message = ""
        if self.accept(","):
            if self.tok.kind != "str":
                self.error_expected("a string literal as the static_assert message")
            message = self.advance().text[1:-1]
            while self.tok.kind == "str":  # adjacent literals join, as macros that stringify write them
                message += self.advance().text[1:-1]
        self.expect(")", "to close static_assert")
        self.expect(";", "after static_assert")
        return ast.StaticAssert(start, condition, message)

    def parse_condition(self) -> ast.Expr:
        # 'if (T x = e)' declarations in conditions are rare in kernels; not supported.
        if self.looks_like_declaration():
            raise CompileError("declarations inside a condition are not supported", self.tok.pos)
        return self.parse_expression()

    def parse_declaration(self, allow_no_init: bool = True) -> ast.Decl:
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
        if self.tok.is_op("{"):
            start = self.advance().pos
            items = []
            while not self.tok.is_op("}"):
                items.append(self.parse_initializer())
                if not self.accept(","):
                    break
            self.expect("}", "to close the initializer list")
            return ast.InitList(start, items)
        return self.parse_assignment()

    # ------------------------------------------------------------- expressions
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
        if self.tok.kind == "op" and self.tok.text in _ASSIGN_OPS:
            op = self.advance()
            self._nest()  # 'a = b = c = ...' nests to the right: each one is a level
            try:
                value = self.parse_initializer() if self.tok.is_op("{") else self.parse_assignment()
            finally:
                self.depth -= 1
            return ast.Assign(op.pos, op.text, left, value)
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
        """Binary operators of precedence ``level`` (an index into _BINARY_PRECEDENCE) or tighter,
        all left-associative. Precedence climbing: one call per operator, not one per level for
        every operand (an operand alone used to cost ten nested calls)."""
        left = self.parse_unary()
        while True:
            t = self.tok
            op_level = _BINARY_LEVEL.get(t.text) if t.kind == "op" else None
            if op_level is None or op_level < level or (no_gt and t.text in (">", ">>")):
                return left
            op = self.advance()
            right = self.parse_binary(op_level + 1, no_gt)
            left = ast.Binary(op.pos, op.text, left, right)

    def parse_unary(self) -> ast.Expr:
        self._nest()
        try:
            return self._unary()
        finally:
            self.depth -= 1

    def _unary(self) -> ast.Expr:
        t = self.tok
        if t.kind == "op" and t.text in ("-", "+", "!", "~", "*", "&", "++", "--"):
            self.advance()
            return ast.Unary(t.pos, t.text, self.parse_unary())
        if t.is_op("(") and self.starts_type(1) and not self._is_functional_cast_in_parens():
            self.advance()
            spec = self.parse_type_spec()
            self.expect(")", "to close the cast")
            return ast.Cast(t.pos, spec, self.parse_unary(), CastStyle.C)
        if t.kind == "id" and t.text in ("sizeof", "alignof"):
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
            elif t.is_op("++", "--"):
                self.advance()
                e = ast.Postfix(t.pos, t.text, e)
            else:
                return e

    def parse_call_args(self) -> list[ast.Expr]:
        args = []
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
        if t.kind == "num":
            self.advance()
            return parse_number(t)
        if t.kind == "op" and t.text == "(":
            self.advance()
            e = self.parse_expression()
            self.expect(")", "to close the parenthesis")
            return e
        if t.kind == "op" and t.text == "{":
            return self.parse_initializer()
        if t.is_op("[") and not self.peek().is_op("["):
            raise CompileError("lambda expressions ('[...](...) { ... }', Metal 3.2) are not supported by the "
                               "simulator; write a helper function, or a struct with an operator(), instead", t.pos)
        if t.kind in ("str", "char"):
            if t.kind == "char":
                self.advance()
                return parse_char(t)
            raise CompileError("string literals are not supported in kernels", t.pos)
        if t.kind == "id" or (t.is_op("::") and self.peek().kind == "id"):
            if t.text in ("true", "false"):
                self.advance()
                return ast.BoolLit(t.pos, t.text == "true")
            if t.text in ("static_cast", "reinterpret_cast", "const_cast", "as_type", "bit_cast"):
                self.advance()
                self.expect("<", f"after '{t.text}'")
                spec = self.parse_type_spec()
                self.expect(">", "to close the cast type")
                self.expect("(", "after the cast type")
                operand = self.parse_expression()
                self.expect(")", "to close the cast")
                style = CastStyle.AS_TYPE if t.text == "bit_cast" else CastStyle(t.text)
                return ast.Cast(t.pos, spec, operand, style)
            name, n = self._qualified_name_at(0)
            if self.is_type_name(name) and name not in ("vec", "atomic"):
                # Functional cast / constructor: float(x), float4(a, b), uint2{1, 2}
                type_name, args, member = self._parse_base_type()
                if member and not self.tok.is_op("(", "{"):
                    # 'S<T>::value': without 'typename' a member of a template's instance is a value.
                    return ast.Name(t.pos, f"{type_name}<>::{'::'.join(member)}", args)
                spec = ast.TypeSpec(t.pos, type_name, args, member=member)
                if self.accept("("):
                    return ast.Construct(t.pos, spec, self.parse_call_args())
                if self.tok.is_op("{"):
                    init = self.parse_initializer()
                    return ast.Construct(t.pos, spec, init.items)
                self.error_expected("'(' after the type name (a functional cast)")
            self.i += n
            targs = None
            if self.tok.is_op("<") and (name.removeprefix("::") in self.template_names
                                        or name.split("::")[-1] in self.template_names):
                targs = self.parse_template_args()
                # numeric_limits<float>::max  — a qualified name after template args
                while self.tok.is_op("::") and self.peek().kind == "id":
                    self.advance()
                    name += "<>::" + self.advance().text
            return ast.Name(t.pos, name, targs)
        self.error_expected("an expression")

    # --------------------------------------------------------------- top level
    def parse_translation_unit(self) -> ast.TranslationUnit:
        start = self.tok.pos
        return ast.TranslationUnit(start, self._parse_declarations(None))

    def _parse_declarations(self, opened: Token | None) -> list[ast.Node]:
        """Top-level declarations up to the end of input, or up to the '}' closing the namespace
        opened at ``opened``. Namespace blocks are flattened: their items carry qualified names."""
        items: list[ast.Node] = []
        while True:
            if opened is not None and self.accept("}"):
                return items
            if self.tok.kind == "eof":
                if opened is None:
                    return items
                raise CompileError("expected '}' to close this namespace", opened.pos)
            if self.tok.text == "namespace" or (self.tok.text == "inline" and self.peek().text == "namespace"):
                items.extend(self.parse_namespace())
                continue
            item = self.parse_top_level()
            if item is not None:
                items.append(self._qualify(item))

    def parse_namespace(self) -> list[ast.Node]:
        """``namespace a { ... }``, ``namespace a::b { ... }``; an anonymous or inline namespace's
        names are found from the enclosing one, so they stay in it."""
        inline = self.accept_word("inline") is not None
        self.advance()  # 'namespace'
        path: tuple[str, ...] = ()
        if self.tok.kind == "id":
            name, n = self._qualified_name_at(0)
            path = () if inline else tuple(name.split("::"))
            self.i += n
        if self.tok.is_op("="):
            raise CompileError("namespace aliases ('namespace x = y;') are not supported by the simulator",
                               self.tok.pos)
        opened = self.expect("{", "to open the namespace")
        self._nest()
        saved = self.namespace
        self.namespace = saved + path
        try:
            return self._parse_declarations(opened)
        finally:
            self.namespace = saved
            self.depth -= 1

    def _qualify(self, item: ast.Node) -> ast.Node:
        """Give an item declared inside a namespace its qualified name, and make the parser know
        the name by every suffix it can be written with ('a::b::T', 'b::T', 'T')."""
        ns = self.namespace
        if not ns:
            return item
        prefix = "::".join(ns) + "::"
        if isinstance(item, ast.FuncDef):
            item.name = prefix + item.name
            item.namespace = ns
            if item.template_params:
                _add_suffixes(self.template_names, item.name)
        elif isinstance(item, ast.StructDef):
            item.name = prefix + item.name
            item.namespace = ns
            for method in item.methods:
                method.namespace = ns
            _add_suffixes(self.type_names, item.name)
            if item.template_params or item.specialization is not None:
                _add_suffixes(self.template_names, item.name)
        elif isinstance(item, ast.StaticAssert):
            item.namespace = ns
        elif isinstance(item, ast.EnumDef):
            item.name = prefix + item.name
            item.namespace = ns
            _add_suffixes(self.type_names, item.name)
        elif isinstance(item, ast.TypeAlias):
            item.name = prefix + item.name
            item.namespace = ns
            _add_suffixes(self.type_names, item.name)
            if item.template_params:
                _add_suffixes(self.template_names, item.name)
        elif isinstance(item, ast.GlobalDecl):
            item.namespace = ns
            for d in item.decl.declarators:
                d.name = prefix + d.name
                if item.template_params:
                    _add_suffixes(self.template_names, d.name)
        return item

    def parse_template_params(self) -> list[ast.TemplateParam]:
        self.expect("<", "after 'template'")
        params = []
        while not self.tok.is_op(">"):
            t = self.tok
            # An unnamed parameter only constrains the template ('typename = enable_if_t<...>').
            unnamed = f"<template parameter {len(params) + 1}>"
            if self.tok.text in ("typename", "class") and self.peek().is_op("..."):
                self.advance()
                self.advance()
                name = self.expect_ident("a parameter pack's name")
                if not self.tok.is_op(">"):
                    raise CompileError("a template parameter pack must be the last template parameter in the "
                                       "simulator", self.tok.pos)
                params.append(ast.TemplateParam(t.pos, name.text, "type", pack=True))
                self.type_names.add(name.text)
                continue
            if self.tok.is_op("..."):
                raise CompileError("only type parameter packs ('typename... Args') are supported by the simulator",
                                   self.tok.pos)
            if self.accept_word("typename", "class"):
                name = self.advance().text if self.tok.kind == "id" else unnamed
                default = None
                if self.accept("="):
                    default = self.parse_type_spec()
                params.append(ast.TemplateParam(t.pos, name, "type", default))
                self.type_names.add(name)
            else:
                spec = self.parse_type_spec()
                if self.tok.is_op("..."):
                    raise CompileError("only type parameter packs ('typename... Args') are supported by the "
                                       "simulator", self.tok.pos)
                name = self.advance().text if self.tok.kind == "id" else unnamed
                default = self.parse_ternary(no_gt=True) if self.accept("=") else None
                params.append(ast.TemplateParam(t.pos, name, spec.name, default, spec))
            if not self.accept(","):
                break
        self.expect(">", "to close the template parameter list")
        return params

    def parse_alias(self) -> ast.TypeAlias | ast.UsingNamespace | None:
        t = self.advance()
        if t.text == "using":
            if self.accept_word("namespace"):
                target, n = self._qualified_name_at(0)
                if not n:
                    self.error_expected("a namespace name after 'using namespace'")
                self.i += n
                self.expect(";", "after 'using namespace'")
                return ast.UsingNamespace(t.pos, target, self.namespace)
            name = self.expect_ident("an alias name")
            if not self.accept("="):
                # 'using metal::foo;' declarations just bring names in scope.
                while not self.tok.is_op(";") and self.tok.kind != "eof":
                    self.advance()
                self.expect(";")
                return None
            spec = self.parse_type_spec()
            self.expect(";", "after the alias")
            self.type_names.add(name.text)
            return ast.TypeAlias(name.pos, name.text, spec)
        if self.tok.kind == "id" and self.tok.text == "struct" and (self.peek().is_op("{") or self.peek(2).is_op("{")):
            raise CompileError("'typedef struct { ... } Name;' is not supported by the simulator; define the "
                               "struct as 'struct Name { ... };' (C++ needs no typedef)", self.tok.pos)
        spec = self.parse_type_spec()  # typedef
        name = self.expect_ident("a typedef name")
        self.expect(";", "after the typedef")
        self.type_names.add(name.text)
        return ast.TypeAlias(name.pos, name.text, spec)

    def parse_top_level(self) -> ast.Node | None:
        t = self.tok
        self._skip_attributes()
        if t.is_op(";"):
            self.advance()
            return None
        if t.kind == "id" and t.text in ("using", "typedef"):
            return self.parse_alias()
        if t.kind == "id" and t.text == "namespace":
            raise CompileError("namespaces in the header are not supported by the simulator", t.pos)
        if t.kind == "id" and t.text == "struct":
            return self.parse_struct()
        if t.kind == "id" and t.text == "enum":
            return self.parse_enum()
        if t.kind == "id" and t.text == "union" and self.peek().kind == "id" and self.peek(2).is_op("{", ";"):
            return self.parse_struct()
        if t.kind == "id" and t.text in ("class", "union"):
            raise CompileError(f"'{t.text}' definitions are not supported by the simulator (a 'struct' with "
                               "members and member functions is, and a named 'union')", t.pos)
        if t.kind == "id" and t.text == "static_assert":
            return self.parse_static_assert()
        template_params: list[ast.TemplateParam] = []
        saved_types = set(self.type_names)
        is_template = self.accept_word("template")
        if is_template:
            template_params = self.parse_template_params()
            if self.tok.kind == "id" and self.tok.text == "class":
                raise CompileError("class templates are not supported by the simulator (struct templates are)",
                                   self.tok.pos)
            if self.tok.kind == "id" and self.tok.text in ("struct", "union"):
                try:
                    return self.parse_struct(template_params)
                finally:
                    self.type_names = saved_types | {n for n in self.type_names
                                                     if n not in {p.name for p in template_params}}
        is_kernel = False
        while self.tok.is_op("[") and self.peek().is_op("["):
            if self.peek(2).text == "kernel":
                is_kernel = True
            self._skip_attributes()
        if self.accept_word("kernel"):
            is_kernel = True
        if self.tok.kind == "id" and self.tok.text in ("using", "typedef") and template_params:
            alias = self.parse_alias()
            if not isinstance(alias, ast.TypeAlias):
                raise CompileError("expected an alias template ('template <typename T> using Name = ...;')", t.pos)
            alias.template_params = template_params
            self.template_names.add(alias.name)
            # The parameters name types only inside the alias.
            self.type_names = saved_types | {n for n in self.type_names if n not in {p.name for p in template_params}}
            return alias
        start_i = self.i
        spec = self.parse_type_spec()
        if self.tok.kind == "id" and self.tok.text == "kernel":
            self.advance()  # 'void kernel f(...)': Metal takes the specifier after the return type too
            is_kernel = True
        # A function has '(' after its name; anything else is a global variable.
        if self.tok.text == "operator" and self.tok.kind == "id":
            self._operator_name()
        name: Token | None = None
        specialization: list | None = None
        if self.tok.kind == "id" and self.peek().is_op("("):
            name = self.advance()
        elif (is_template and not template_params and self.tok.kind == "id" and self.peek().is_op("<")
                and self.tok.text in self.template_names):
            # An explicit specialisation of a function template: 'template <> float2 one<float2>()'.
            name = self.advance()
            specialization = self.parse_template_args()
            if not self.tok.is_op("("):
                raise CompileError(f"expected '(' after the specialisation '{name.text}<...>'", self.tok.pos)
        if name is not None:
            self.advance()  # '('
            params = self.parse_params()
            self._skip_attributes()
            while self.accept_word("const", "noexcept", "thread", "device", "constant"):
                pass
            if template_params:
                self.template_names.add(name.text)
            if self.accept(";"):
                self.type_names = saved_types | {a for a in self.type_names if a not in {p.name for p in template_params}}
                return None  # a prototype; the definition follows
            body = self.parse_function_body(params)
            for p in template_params:
                if p.name not in saved_types:
                    self.type_names.discard(p.name)
            constexpr = any(tok.text == "constexpr" for tok in self.toks[start_i:self.i])
            return ast.FuncDef(name.pos, name.text, spec, params, body, template_params, is_kernel,
                               constexpr=constexpr, specialization=specialization)
        self.i = start_i
        decl = self.parse_declaration()
        if template_params:
            if len(decl.declarators) != 1:
                raise CompileError("a variable template declares one variable", decl.declarators[1].pos)
            self.template_names.add(decl.declarators[0].name)
            self.type_names = saved_types | {n for n in self.type_names if n not in {p.name for p in template_params}}
        return ast.GlobalDecl(t.pos, decl, template_params=template_params)

    def parse_enum(self) -> ast.EnumDef:
        """``enum [class|struct] Name [: type] { A [= constant], ... };`` at namespace scope."""
        start = self.advance()  # 'enum'
        scoped = self.accept_word("class", "struct") is not None
        name = self.expect_ident("an enumeration name")
        underlying = None
        if self.accept(":"):
            underlying = self.parse_type_spec()
        if self.tok.is_op(";"):
            raise CompileError("an enumeration needs its enumerators here ('enum class E { A, B };'): the "
                               "simulator has no opaque enum declarations", self.tok.pos)
        self.expect("{", "to open the enumeration")
        enumerators: list[ast.Enumerator] = []
        while not self.accept("}"):
            if self.tok.kind == "eof":
                raise CompileError(f"expected '}}' to close enumeration '{name.text}'", start.pos)
            ident = self.expect_ident("an enumerator name")
            value = self.parse_ternary() if self.accept("=") else None
            enumerators.append(ast.Enumerator(ident.pos, ident.text, value))
            if not self.accept(","):
                self.expect("}", "to close the enumeration")
                break
        if self.tok.kind == "id":
            raise CompileError("declaring variables in an enumeration's definition is not supported; declare them "
                               "separately", self.tok.pos)
        self.expect(";", "after the enumeration")
        self.type_names.add(name.text)
        return ast.EnumDef(name.pos, name.text, enumerators, underlying, scoped)

    def parse_struct(self, template_params: list[ast.TemplateParam] | None = None, *,
                     local: bool = False) -> ast.StructDef | None:
        """``struct Name { members and member functions };``, a struct template
        (``template <typename T> struct Name``) or a specialisation of one
        (``template <> struct Name<half>``, ``template <typename T> struct Name<vec<T, 2>>``)."""
        start = self.advance()  # 'struct' or 'union'
        union = start.text == "union"
        if local and not self.tok.kind == "id":
            # An anonymous type in a function body, named where it is written.
            name = Token("id", f"(anonymous {start.text} at line {start.pos.line})", start.pos)
        else:
            name = self.expect_ident(f"a {start.text} name")
        is_template = template_params is not None
        if union and is_template:
            raise CompileError("union templates are not supported by the simulator", start.pos)
        if is_template:
            self.template_names.add(name.text)
        specialization = self.parse_template_args() if is_template and self.tok.is_op("<") else None
        if self.accept(";"):
            self.type_names.add(name.text)
            return None  # a forward declaration
        if self.tok.is_op(":"):
            raise CompileError("struct inheritance is not supported by the simulator", self.tok.pos)
        self.expect("{", "to open the struct definition")
        self.type_names.add(name.text)  # usable inside, e.g. as a member function's return type
        outer_type_names = set(self.type_names)
        fields: list[ast.Declarator] = []
        argument_buffer: Pos | None = None
        methods: list[ast.FuncDef] = []
        member_types: list[ast.TypeAlias] = []
        static_members: list[ast.Declarator] = []
        constructors: list[ast.FuncDef] = []
        while not self.accept("}"):
            t = self.tok
            if t.kind == "eof":
                raise CompileError(f"expected '}}' to close struct '{name.text}'", start.pos)
            if self.accept(";"):
                continue
            if t.kind == "id" and t.text in ("public", "private", "protected") and self.peek().is_op(":"):
                self.advance()
                self.advance()
                continue
            if t.kind == "id" and t.text in ("using", "typedef") and not self.peek().text == "namespace":
                alias = self.parse_alias()
                if isinstance(alias, ast.TypeAlias):
                    member_types.append(alias)
                    _add_suffixes(self.type_names, f"{name.text}::{alias.name}")
                continue
            static_method = t.kind == "id" and t.text == "static" and self._starts_member_function()
            if t.kind == "id" and t.text == "static" and not static_method and any(
                    self.peek(k).text in ("constexpr", "const") for k in (1, 2)):
                decl = self.parse_declaration()
                for d in decl.declarators:
                    if d.init is None:
                        raise CompileError(f"static member '{d.name}' needs an initializer here (the simulator "
                                           "has no out-of-class definitions)", d.pos)
                    d.type_spec.const = True
                static_members.extend(decl.declarators)
                continue
            method_template: list[ast.TemplateParam] | None = None
            if t.kind == "id" and t.text == "template" and self.peek().is_op("<"):
                # A member function template ('template <typename T> T operator()(T a, T b)'),
                # as every PyTorch elementwise functor declares.
                self.advance()
                method_template = self.parse_template_params()
                t = self.tok
                if t.kind == "id" and t.text in ("using", "typedef"):
                    # A member alias template ('template <typename U> using ret_type = vec2type_t<U>;').
                    alias = self.parse_alias()
                    if not isinstance(alias, ast.TypeAlias):
                        raise CompileError("expected a member alias template ('template <typename U> using Name "
                                           "= ...;')", t.pos)
                    alias.template_params = method_template
                    member_types.append(alias)
                    self.template_names.add(alias.name)
                    _add_suffixes(self.template_names, f"{name.text}::{alias.name}")
                    continue
                static_method = t.kind == "id" and t.text == "static" and self._starts_member_function()
                if t.kind == "id" and t.text in ("static", "struct", "template", "friend") and not static_method:
                    raise CompileError("only member functions may be templates inside a struct in the simulator "
                                       f"(a member template starting '{t.text}' is not supported)", t.pos)
            if t.kind == "id" and t.text == "static" and not static_method:
                raise CompileError("'static' inside a struct is supported on member functions and on 'static "
                                   "constexpr' / 'static const' data members with an initializer", t.pos)
            if t.kind == "id" and t.text in ("template", "friend", "virtual", "using", "typedef"):
                raise CompileError(f"'{t.text}' inside a struct is not supported by the simulator (data members "
                                   "and member functions are)", t.pos)
            if self._starts_constructor(name.text):
                if method_template is not None:
                    raise CompileError("constructor templates are not supported by the simulator", t.pos)
                constructors.append(self._parse_constructor(name.text))
                continue
            if t.is_op("~"):
                raise CompileError("destructors are not supported by the simulator", t.pos)
            self._skip_attributes()
            method_start = self.i
            spec = self.parse_type_spec()
            if self.tok.kind == "id" and self.tok.text == "operator":
                self._operator_name()
            if self.tok.kind == "id" and self.peek().is_op("("):
                fname = self.advance()
                self.advance()
                params = self.parse_params()
                const_method = False
                while self.tok.kind == "id" and self.tok.text in ("const", "noexcept", "thread", "device",
                                                                  "constant", "threadgroup"):
                    # Advance first: 'const const' must not stop the loop from moving on.
                    qualifier = self.advance().text
                    const_method = const_method or qualifier == "const"
                if static_method and const_method:
                    raise CompileError(f"static member function '{fname.text}' cannot be 'const' (it has no "
                                       "object)", fname.pos)
                body = self.parse_function_body(params)
                prefix = {tok.text for tok in self.toks[method_start:self.i] if tok.kind == "id"} & {"constexpr"}
                methods.append(ast.FuncDef(fname.pos, fname.text, spec, params, body, const_method=const_method,
                                           template_params=method_template or [], static=static_method,
                                           constexpr=bool(prefix)))
                continue
            if method_template is not None:
                raise CompileError("only member functions may be templates inside a struct in the simulator "
                                   "(a data member cannot be a template)", t.pos)
            first = True
            while True:
                member_spec = spec if first else ast.TypeSpec(spec.pos, spec.name, spec.args, spec.const, spec.space,
                                                                 member=spec.member)
                if not first:
                    self._parse_pointer_parts(member_spec)
                first = False
                mname = self.expect_ident("a member name")
                member_spec = ast.TypeSpec(member_spec.pos, member_spec.name, member_spec.args, member_spec.const,
                                           member_spec.space, list(member_spec.pointers), member_spec.reference, [],
                                           member_spec.member)
                while self.tok.is_op("[") and not self.peek().is_op("["):
                    self.advance()
                    member_spec.array_dims.append(self.parse_expression())
                    self.expect("]", "to close the array size")
                if self.tok.is_op("[") and self.peek().is_op("[") and self.peek(2).text == "id":
                    argument_buffer = argument_buffer or self.tok.pos
                    self._skip_attributes()
                if self.tok.is_op("["):
                    raise CompileError(f"attributes on struct members ([[{self.peek(2).text}]]) are not supported by "
                                       "the simulator", self.tok.pos)
                init = None
                if self.accept("="):
                    init = self.parse_initializer()
                elif self.tok.is_op("{"):
                    init = self.parse_initializer()
                fields.append(ast.Declarator(mname.pos, mname.text, member_spec, init))
                if not self.accept(","):
                    break
            self.expect(";", "after the member declaration")
        # A member type is named 'S::type' outside the struct: its bare name leaves scope with the
        # struct, so a variable called 'type' after it is a variable, as in C++.
        self.type_names -= {alias.name for alias in member_types} - outer_type_names
        if self.tok.kind == "id" and not local:
            raise CompileError("declaring variables in a struct definition is not supported; declare them "
                               "separately", self.tok.pos)
        if not local:
            self.expect(";", "after the struct definition")
        return ast.StructDef(name.pos, name.text, fields, methods, template_params=list(template_params or []),
                             specialization=specialization, member_types=member_types,
                             static_members=static_members, constructors=constructors,
                             argument_buffer=argument_buffer, union=union)

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

    def _starts_static_member_call(self) -> bool:
        """Whether the statement starts 'S<T>::f(' (a call of a static member function of a
        struct template's instance), not a declaration; looked at without consuming anything."""
        saved = self.i
        try:
            _, _, member = self._parse_base_type()
            return bool(member) and self.tok.is_op("(")
        except CompileError:
            return False
        finally:
            self.i = saved

    def _refuse_function_pointer(self) -> None:
        """A function pointer variable ('T (*op)(T, T) = add;'): a precise error at the '(' (only
        parameters may be function pointers in the simulator; a functor type passed as a template
        parameter does the same job)."""
        if self.tok.is_op("(") and self.peek().is_op("*"):
            raise CompileError("function pointers are supported by the simulator only as function parameters "
                               "whose argument names a function; pass the operation as a functor type instead "
                               "('template <typename Op> ... Op()(a, b)')", self.tok.pos)

    def _function_pointer_param(self, start: Pos, ret: ast.TypeSpec) -> ast.Param:
        """'T (*op)(T, T)' in a parameter list, from its '('."""
        self.advance()  # '('
        self.advance()  # '*'
        name = self.expect_ident("the function pointer parameter's name").text
        self.expect(")", "after the function pointer's name")
        self.expect("(", "to open the function pointer's parameter types")
        return ast.Param(start, name, ret, function_params=self.parse_params())

    def _starts_constructor(self, struct_name: str) -> bool:
        k = 0
        while self.peek(k).kind == "id" and self.peek(k).text in CONSTRUCTOR_PREFIXES:
            k += 1
        return self.peek(k).kind == "id" and self.peek(k).text == struct_name and self.peek(k + 1).is_op("(")

    def _parse_constructor(self, struct_name: str) -> ast.FuncDef:
        """``[constexpr|inline|METAL_FUNC|explicit] Name(params) [: member(args), ...] { body }``."""
        while self.tok.text in CONSTRUCTOR_PREFIXES:
            self.advance()
        name = self.advance()
        self.advance()  # '('
        params = self.parse_params()
        while self.accept_word("noexcept", "thread"):
            pass
        inits: list[ast.MemberInit] = []
        if self.accept(":"):
            while True:
                member = self.expect_ident("a member name in the constructor's initializer list")
                if self.tok.is_op("{"):
                    inits.append(ast.MemberInit(member.pos, member.text, self.parse_initializer().items, True))
                else:
                    self.expect("(", f"after '{member.text}' in the member initializer list")
                    inits.append(ast.MemberInit(member.pos, member.text, self.parse_call_args()))
                if not self.accept(","):
                    break
        if self.accept(";"):
            raise CompileError(f"constructor '{struct_name}' needs its body here (the simulator has no out-of-class "
                               "definitions)", name.pos)
        body = self.parse_function_body(params)
        return ast.FuncDef(name.pos, struct_name, ast.TypeSpec(name.pos, "void"), params, body, member_inits=inits)

    def _starts_member_function(self) -> bool:
        """Whether the member declaration at the current token declares a function (its name is
        followed by '('), looked at without consuming anything."""
        saved = self.i
        try:
            self.parse_type_spec()
            if self.tok.kind == "id" and self.tok.text == "operator":
                return True
            return self.tok.kind == "id" and self.peek().is_op("(")
        except CompileError:
            return False
        finally:
            self.i = saved

    def _operator_name(self) -> None:
        """Read 'operator+' (or 'operator[]', 'operator+=', ...) as one identifier token, the
        function's name, so that what follows parses as any function's parameters."""
        start = self.advance()  # 'operator'
        t = self.tok
        if t.is_op("[") and self.peek().is_op("]"):
            self.advance()
            symbol = "[]"
        elif t.is_op("(") and self.peek().is_op(")"):
            # The call operator: a functor's 'operator()(...)', called as 'f(a, b)'.
            self.advance()
            symbol = "()"
        elif t.kind == "op" and t.text in OVERLOADABLE_OPERATORS:
            symbol = t.text
        else:
            raise CompileError("the simulator supports overloading the arithmetic, bitwise, comparison, compound "
                               "assignment, unary, '[]' and '()' operators, not this one", t.pos)
        self.toks[self.i] = Token("id", "operator" + symbol, start.pos)

    def parse_params(self) -> list[ast.Param]:
        """A parameter list after its '(', through the closing ')'."""
        params: list[ast.Param] = []
        if self.accept(")"):
            return params
        if self.tok.text == "void" and self.peek().is_op(")"):
            self.advance()
            self.advance()
            return params
        while True:
            start = self.tok.pos
            spec = self.parse_type_spec()
            if self.tok.is_op("(") and self.peek().is_op("*"):
                params.append(self._function_pointer_param(start, spec))
                if self.accept(","):
                    continue
                self.expect(")", "to close the parameter list")
                return params
            pack = self.accept("...")  # 'const Args&... rest'
            name = None
            if self.tok.kind == "id":
                name = self.advance().text
            while self.tok.is_op("[") and not self.peek().is_op("["):
                self.advance()
                spec.array_dims.append(None if self.tok.is_op("]") else self.parse_expression())
                self.expect("]")
            attribute = self._skip_attributes()
            default = self.parse_assignment() if self.accept("=") else None
            params.append(ast.Param(start, name, spec, default, attribute, pack=bool(pack)))
            if self.accept(","):
                continue
            self.expect(")", "to close the parameter list")
            return params


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


def _add_suffixes(names: set[str], qualified: str) -> None:
    parts = qualified.split("::")
    for k in range(len(parts)):
        names.add("::".join(parts[k:]))


class _AliasStmt(ast.Stmt):
    """A type alias declared inside a function body."""

    def __init__(self, alias: ast.TypeAlias) -> None:
        super().__init__(alias.pos)
        self.alias = alias


AliasStmt = _AliasStmt


def _address_space(tok: Token) -> AddressSpace:
    try:
        return AddressSpace(tok.text)
    except ValueError:
        raise CompileError(f"the '{tok.text}' address space is not supported by the simulator (device, constant, "
                           "threadgroup and thread are)", tok.pos) from None
