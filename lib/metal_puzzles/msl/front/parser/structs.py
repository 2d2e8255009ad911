"""Structs and unions: struct templates and their specialisations, data members, static
constants, member types, member functions and their templates, constructors and operators."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...lang.errors import CompileError, Pos
from .. import ast
from ..lexer import EOF, ID, OP, Token
from .cursor import TokenCursor
from .vocabulary import CONSTRUCTOR_PREFIXES, OVERLOADABLE_OPERATORS, add_suffixes


@dataclass
class _StructBody:
    """What a struct's braces declare, gathered member by member."""

    fields: list[ast.Declarator] = field(default_factory=list)
    methods: list[ast.FuncDef] = field(default_factory=list)
    member_types: list[ast.TypeAlias] = field(default_factory=list)
    static_members: list[ast.Declarator] = field(default_factory=list)
    constructors: list[ast.FuncDef] = field(default_factory=list)
    #: Where the first '[[id(n)]]' member is: the struct is an argument buffer.
    argument_buffer: Pos | None = None


class Structs(TokenCursor):
    def parse_struct(self, template_params: list[ast.TemplateParam] | None = None, *,
                     local: bool = False) -> ast.StructDef | None:
        """``struct Name { members and member functions };``, a struct template
        (``template <typename T> struct Name``) or a specialisation of one
        (``template <> struct Name<half>``, ``template <typename T> struct Name<vec<T, 2>>``)."""
        start = self.advance()  # 'struct' or 'union'
        union = start.text == "union"
        if local and not self.tok.kind == ID:
            # An anonymous type in a function body, named where it is written.
            name = Token(ID, f"(anonymous {start.text} at line {start.pos.line})", start.pos)
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
        body = _StructBody()
        while not self.accept("}"):
            if self.tok.kind == EOF:
                raise CompileError(f"expected '}}' to close struct '{name.text}'", start.pos)
            self._struct_member(name, body)
        # A member type is named 'S::type' outside the struct: its bare name leaves scope with the
        # struct, so a variable called 'type' after it is a variable, as in C++.
        self.type_names -= {alias.name for alias in body.member_types} - outer_type_names
        if self.tok.kind == ID and not local:
            raise CompileError("declaring variables in a struct definition is not supported; declare them "
                               "separately", self.tok.pos)
        if not local:
            self.expect(";", "after the struct definition")
        return ast.StructDef(name.pos, name.text, body.fields, body.methods,
                             template_params=list(template_params or []), specialization=specialization,
                             member_types=body.member_types, static_members=body.static_members,
                             constructors=body.constructors, argument_buffer=body.argument_buffer, union=union)

    def _struct_member(self, name: Token, body: _StructBody) -> None:
        """One member declaration of struct ``name``, added to ``body``."""
        t = self.tok
        if self.accept(";"):
            return
        if t.kind == ID and t.text in ("public", "private", "protected") and self.peek().is_op(":"):
            self.advance()
            self.advance()
            return
        if t.kind == ID and t.text in ("using", "typedef") and not self.peek().text == "namespace":
            alias = self.parse_alias()
            if isinstance(alias, ast.TypeAlias):
                body.member_types.append(alias)
                add_suffixes(self.type_names, f"{name.text}::{alias.name}")
            return
        static_method = t.kind == ID and t.text == "static" and self._starts_member_function()
        if t.kind == ID and t.text == "static" and not static_method and any(
                self.peek(k).text in ("constexpr", "const") for k in (1, 2)):
            self._static_data_members(body)
            return
        method_template: list[ast.TemplateParam] | None = None
        if t.kind == ID and t.text == "template" and self.peek().is_op("<"):
            # A member function template ('template <typename T> T operator()(T a, T b)'),
            # as every PyTorch elementwise functor declares.
            self.advance()
            method_template = self.parse_template_params()
            t = self.tok
            if t.kind == ID and t.text in ("using", "typedef"):
                self._member_alias_template(name, method_template, body)
                return
            static_method = t.kind == ID and t.text == "static" and self._starts_member_function()
            if t.kind == ID and t.text in ("static", "struct", "template", "friend") and not static_method:
                raise CompileError("only member functions may be templates inside a struct in the simulator "
                                   f"(a member template starting '{t.text}' is not supported)", t.pos)
        self._refuse_unsupported_member(t, static_method)
        if self._starts_constructor(name.text):
            if method_template is not None:
                raise CompileError("constructor templates are not supported by the simulator", t.pos)
            body.constructors.append(self._parse_constructor(name.text))
            return
        if t.is_op("~"):
            raise CompileError("destructors are not supported by the simulator", t.pos)
        self._skip_attributes()
        method_start = self.i
        spec = self.parse_type_spec()
        if self.tok.kind == ID and self.tok.text == "operator":
            self._operator_name()
        if self.tok.kind == ID and self.peek().is_op("("):
            body.methods.append(self._member_function(spec, method_start, method_template, static_method))
            return
        if method_template is not None:
            raise CompileError("only member functions may be templates inside a struct in the simulator "
                               "(a data member cannot be a template)", t.pos)
        self._data_members(spec, body)

    def _static_data_members(self, body: _StructBody) -> None:
        """'static constexpr T name = value;' (or 'static const'): a constant of the struct."""
        decl = self.parse_declaration()
        for d in decl.declarators:
            if d.init is None:
                raise CompileError(f"static member '{d.name}' needs an initializer here (the simulator "
                                   "has no out-of-class definitions)", d.pos)
            d.type_spec.const = True
        body.static_members.extend(decl.declarators)

    def _member_alias_template(self, name: Token, method_template: list[ast.TemplateParam],
                               body: _StructBody) -> None:
        """A member alias template ('template <typename U> using ret_type = vec2type_t<U>;'),
        after its template parameters."""
        t = self.tok
        alias = self.parse_alias()
        if not isinstance(alias, ast.TypeAlias):
            raise CompileError("expected a member alias template ('template <typename U> using Name "
                               "= ...;')", t.pos)
        alias.template_params = method_template
        body.member_types.append(alias)
        self.template_names.add(alias.name)
        add_suffixes(self.template_names, f"{name.text}::{alias.name}")

    @staticmethod
    def _refuse_unsupported_member(t: Token, static_method: bool) -> None:
        """A precise error for a member the simulator does not have ('static' data without an
        initializer, friends, virtual functions, nested templates and aliases of other kinds)."""
        if t.kind == ID and t.text == "static" and not static_method:
            raise CompileError("'static' inside a struct is supported on member functions and on 'static "
                               "constexpr' / 'static const' data members with an initializer", t.pos)
        if t.kind == ID and t.text in ("template", "friend", "virtual", "using", "typedef"):
            raise CompileError(f"'{t.text}' inside a struct is not supported by the simulator (data members "
                               "and member functions are)", t.pos)

    def _member_function(self, spec: ast.TypeSpec, method_start: int,
                         method_template: list[ast.TemplateParam] | None, static_method: bool) -> ast.FuncDef:
        """A member function from its name (its return type ``spec`` read, from token ``method_start``)."""
        fname = self.advance()
        self.advance()
        params = self.parse_params()
        const_method = False
        while self.tok.kind == ID and self.tok.text in ("const", "noexcept", "thread", "device",
                                                          "constant", "threadgroup"):
            # Advance first: 'const const' must not stop the loop from moving on.
            qualifier = self.advance().text
            const_method = const_method or qualifier == "const"
        if static_method and const_method:
            raise CompileError(f"static member function '{fname.text}' cannot be 'const' (it has no "
                               "object)", fname.pos)
        body = self.parse_function_body(params)
        prefix = {tok.text for tok in self.toks[method_start:self.i] if tok.kind == ID} & {"constexpr"}
        return ast.FuncDef(fname.pos, fname.text, spec, params, body, const_method=const_method,
                           template_params=method_template or [], static=static_method,
                           constexpr=bool(prefix))

    def _data_members(self, spec: ast.TypeSpec, body: _StructBody) -> None:
        """'T a, *b, c[4] = {...};': data members after their type ``spec``, to the ';'."""
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
                body.argument_buffer = body.argument_buffer or self.tok.pos
                self._skip_attributes()
            if self.tok.is_op("["):
                raise CompileError(f"attributes on struct members ([[{self.peek(2).text}]]) are not supported by "
                                   "the simulator", self.tok.pos)
            init = None
            if self.accept("="):
                init = self.parse_initializer()
            elif self.tok.is_op("{"):
                init = self.parse_initializer()
            body.fields.append(ast.Declarator(mname.pos, mname.text, member_spec, init))
            if not self.accept(","):
                break
        self.expect(";", "after the member declaration")

    def _starts_constructor(self, struct_name: str) -> bool:
        k = 0
        while self.peek(k).kind == ID and self.peek(k).text in CONSTRUCTOR_PREFIXES:
            k += 1
        return self.peek(k).kind == ID and self.peek(k).text == struct_name and self.peek(k + 1).is_op("(")

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
                    inits.append(ast.MemberInit(member.pos, member.text, self.parse_init_list().items, True))
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
            if self.tok.kind == ID and self.tok.text == "operator":
                return True
            return self.tok.kind == ID and self.peek().is_op("(")
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
        elif t.kind == OP and t.text in OVERLOADABLE_OPERATORS:
            symbol = t.text
        else:
            raise CompileError("the simulator supports overloading the arithmetic, bitwise, comparison, compound "
                               "assignment, unary, '[]' and '()' operators, not this one", t.pos)
        self.toks[self.i] = Token(ID, "operator" + symbol, start.pos)

