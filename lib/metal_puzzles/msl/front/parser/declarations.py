"""Top-level declarations: namespaces, functions and function templates, global variables and
variable templates, aliases and enumerations, template and function parameter lists."""

from __future__ import annotations

from typing import Any

from ...lang.errors import CompileError, Pos
from .. import ast
from ..lexer import EOF, ID, Token
from .cursor import TokenCursor
from .vocabulary import add_suffixes


class Declarations(TokenCursor):
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
            if self.tok.kind == EOF:
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
        if self.tok.kind == ID:
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
                add_suffixes(self.template_names, item.name)
        elif isinstance(item, ast.StructDef):
            item.name = prefix + item.name
            item.namespace = ns
            for method in item.methods:
                method.namespace = ns
            add_suffixes(self.type_names, item.name)
            if item.template_params or item.specialization is not None:
                add_suffixes(self.template_names, item.name)
        elif isinstance(item, ast.StaticAssert):
            item.namespace = ns
        elif isinstance(item, ast.EnumDef):
            item.name = prefix + item.name
            item.namespace = ns
            add_suffixes(self.type_names, item.name)
        elif isinstance(item, ast.TypeAlias):
            item.name = prefix + item.name
            item.namespace = ns
            add_suffixes(self.type_names, item.name)
            if item.template_params:
                add_suffixes(self.template_names, item.name)
        elif isinstance(item, ast.GlobalDecl):
            item.namespace = ns
            for d in item.decl.declarators:
                d.name = prefix + d.name
                if item.template_params:
                    add_suffixes(self.template_names, d.name)
        return item

    def parse_template_params(self) -> list[ast.TemplateParam]:
        self.expect("<", "after 'template'")
        params: list[ast.TemplateParam] = []
        while not self.tok.is_op(">"):
            t = self.tok
            # An unnamed parameter only constrains the template ('typename = enable_if_t<...>').
            unnamed = f"<template parameter {len(params) + 1}>"
            if self.tok.text in ("typename", "class") and self.peek().is_op("..."):
                self.advance()
                self.advance()
                pack = self.expect_ident("a parameter pack's name")
                if not self.tok.is_op(">"):
                    raise CompileError("a template parameter pack must be the last template parameter in the "
                                       "simulator", self.tok.pos)
                params.append(ast.TemplateParam(t.pos, pack.text, "type", pack=True))
                self.type_names.add(pack.text)
                continue
            if self.tok.is_op("..."):
                raise CompileError("only type parameter packs ('typename... Args') are supported by the simulator",
                                   self.tok.pos)
            default: Any = None
            if self.accept_word("typename", "class"):
                name = self.advance().text if self.tok.kind == ID else unnamed
                if self.accept("="):
                    default = self.parse_type_spec()
                params.append(ast.TemplateParam(t.pos, name, "type", default))
                self.type_names.add(name)
            else:
                spec = self.parse_type_spec()
                if self.tok.is_op("..."):
                    raise CompileError("only type parameter packs ('typename... Args') are supported by the "
                                       "simulator", self.tok.pos)
                name = self.advance().text if self.tok.kind == ID else unnamed
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
                while not self.tok.is_op(";") and self.tok.kind != EOF:
                    self.advance()
                self.expect(";")
                return None
            spec = self.parse_type_spec()
            self.expect(";", "after the alias")
            self.type_names.add(name.text)
            return ast.TypeAlias(name.pos, name.text, spec)
        if self.tok.kind == ID and self.tok.text == "struct" and (self.peek().is_op("{") or self.peek(2).is_op("{")):
            raise CompileError("'typedef struct { ... } Name;' is not supported by the simulator; define the "
                               "struct as 'struct Name { ... };' (C++ needs no typedef)", self.tok.pos)
        spec = self.parse_type_spec()  # typedef
        name = self.expect_ident("a typedef name")
        self.expect(";", "after the typedef")
        self.type_names.add(name.text)
        return ast.TypeAlias(name.pos, name.text, spec)

    def parse_top_level(self) -> ast.Node | None:
        self._skip_attributes()
        t = self.tok
        if t.is_op(";"):
            self.advance()
            return None
        if t.kind == ID and t.text in ("using", "typedef"):
            return self.parse_alias()
        if t.kind == ID and t.text == "namespace":
            raise CompileError("namespaces in the header are not supported by the simulator", t.pos)
        if t.kind == ID and t.text == "struct":
            return self.parse_struct()
        if t.kind == ID and t.text == "enum":
            return self.parse_enum()
        if t.kind == ID and t.text == "union" and self.peek().kind == ID and self.peek(2).is_op("{", ";"):
            return self.parse_struct()
        if t.kind == ID and t.text in ("class", "union"):
            raise CompileError(f"'{t.text}' definitions are not supported by the simulator (a 'struct' with "
                               "members and member functions is, and a named 'union')", t.pos)
        if t.kind == ID and t.text == "static_assert":
            return self.parse_static_assert()
        template_params: list[ast.TemplateParam] = []
        saved_types = set(self.type_names)
        is_template = self.accept_word("template") is not None
        if is_template:
            template_params = self.parse_template_params()
            if self.tok.kind == ID and self.tok.text == "class":
                raise CompileError("class templates are not supported by the simulator (struct templates are)",
                                   self.tok.pos)
            if self.tok.kind == ID and self.tok.text in ("struct", "union"):
                try:
                    return self.parse_struct(template_params)
                finally:
                    self._forget_template_params(saved_types, template_params)
        return self._function_or_variable(t, is_template, template_params, saved_types)

    def _forget_template_params(self, saved_types: set[str], template_params: list[ast.TemplateParam]) -> None:
        """The template's parameters name types only inside the declaration they head."""
        self.type_names = saved_types | {n for n in self.type_names if n not in {p.name for p in template_params}}

    def _function_or_variable(self, t: Token, is_template: bool, template_params: list[ast.TemplateParam],
                              saved_types: set[str]) -> ast.Node | None:
        """After any 'template <...>': an alias template, a function (a kernel, a function template,
        an explicit specialisation) or a global variable (a variable template)."""
        is_kernel = False
        while self.tok.is_op("[") and self.peek().is_op("["):
            if self.peek(2).text == "kernel":
                is_kernel = True
            self._skip_attributes()
        if self.accept_word("kernel"):
            is_kernel = True
        if self.tok.kind == ID and self.tok.text in ("using", "typedef") and template_params:
            alias = self.parse_alias()
            if not isinstance(alias, ast.TypeAlias):
                raise CompileError("expected an alias template ('template <typename T> using Name = ...;')", t.pos)
            alias.template_params = template_params
            self.template_names.add(alias.name)
            self._forget_template_params(saved_types, template_params)
            return alias
        start_i = self.i
        spec = self.parse_type_spec()
        if self.tok.kind == ID and self.tok.text == "kernel":
            self.advance()  # 'void kernel f(...)': Metal takes the specifier after the return type too
            is_kernel = True
        # A function has '(' after its name; anything else is a global variable.
        if self.tok.text == "operator" and self.tok.kind == ID:
            self._operator_name()
        name: Token | None = None
        specialization: list | None = None
        if self.tok.kind == ID and self.peek().is_op("("):
            name = self.advance()
        elif (is_template and not template_params and self.tok.kind == ID and self.peek().is_op("<")
                and self.tok.text in self.template_names):
            # An explicit specialisation of a function template: 'template <> float2 one<float2>()'.
            name = self.advance()
            specialization = self.parse_template_args()
            if not self.tok.is_op("("):
                raise CompileError(f"expected '(' after the specialisation '{name.text}<...>'", self.tok.pos)
        if name is not None:
            return self._function_definition(name, spec, start_i, is_kernel, template_params, saved_types,
                                             specialization)
        self.i = start_i
        decl = self.parse_declaration()
        if template_params:
            if len(decl.declarators) != 1:
                raise CompileError("a variable template declares one variable", decl.declarators[1].pos)
            self.template_names.add(decl.declarators[0].name)
            self._forget_template_params(saved_types, template_params)
        return ast.GlobalDecl(t.pos, decl, template_params=template_params)

    def _function_definition(self, name: Token, spec: ast.TypeSpec, start_i: int, is_kernel: bool,
                             template_params: list[ast.TemplateParam], saved_types: set[str],
                             specialization: list | None) -> ast.FuncDef | None:
        """A function from its '(' (the return type and name read); None for a prototype."""
        self.advance()  # '('
        params = self.parse_params()
        self._skip_attributes()
        while self.accept_word("const", "noexcept", "thread", "device", "constant"):
            pass
        if template_params:
            self.template_names.add(name.text)
        if self.accept(";"):
            self._forget_template_params(saved_types, template_params)
            return None  # a prototype; the definition follows
        body = self.parse_function_body(params)
        for p in template_params:
            if p.name not in saved_types:
                self.type_names.discard(p.name)
        constexpr = any(tok.text == "constexpr" for tok in self.toks[start_i:self.i])
        return ast.FuncDef(name.pos, name.text, spec, params, body, template_params, is_kernel,
                           constexpr=constexpr, specialization=specialization)

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
            if self.tok.kind == EOF:
                raise CompileError(f"expected '}}' to close enumeration '{name.text}'", start.pos)
            ident = self.expect_ident("an enumerator name")
            value = self.parse_ternary() if self.accept("=") else None
            enumerators.append(ast.Enumerator(ident.pos, ident.text, value))
            if not self.accept(","):
                self.expect("}", "to close the enumeration")
                break
        if self.tok.kind == ID:
            raise CompileError("declaring variables in an enumeration's definition is not supported; declare them "
                               "separately", self.tok.pos)
        self.expect(";", "after the enumeration")
        self.type_names.add(name.text)
        return ast.EnumDef(name.pos, name.text, enumerators, underlying, scoped)

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
            if self.tok.kind == ID:
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

    def _function_pointer_param(self, start: Pos, ret: ast.TypeSpec) -> ast.Param:
        """'T (*op)(T, T)' in a parameter list, from its '('."""
        self.advance()  # '('
        self.advance()  # '*'
        name = self.expect_ident("the function pointer parameter's name").text
        self.expect(")", "after the function pointer's name")
        self.expect("(", "to open the function pointer's parameter types")
        return ast.Param(start, name, ret, function_params=self.parse_params())
