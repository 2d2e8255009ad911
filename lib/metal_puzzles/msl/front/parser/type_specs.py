"""Types as written: which names denote types, qualifiers and address spaces, a base type with
its template arguments, and the '*' and '&' parts after it."""

from __future__ import annotations

from ...lang.errors import CompileError
from ...lang.metal_namespace import strip_metal_namespace
from ...lang.types import SCALAR_ALIASES, lookup_builtin_type
from .. import ast
from ..lexer import ID
from .cursor import TokenCursor
from .vocabulary import ADDRESS_SPACES, QUALIFIERS, TEMPLATE_TYPE_NAMES, address_space


class TypeSpecs(TokenCursor):
    def _qualified_name_at(self, k: int) -> tuple[str, int]:
        """Read a possibly ::-qualified identifier starting at token offset k; return (name, length).
        A name written from the global namespace ('::metal::max') keeps its leading '::'."""
        parts = []
        n = 0
        rooted = self.peek(k).is_op("::") and self.peek(k + 1).kind == ID
        if rooted:
            n += 1
        while self.peek(k + n).kind == ID:
            parts.append(self.peek(k + n).text)
            n += 1
            if self.peek(k + n).is_op("::") and self.peek(k + n + 1).kind == ID:
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
        if t.kind != ID:
            return False
        if t.text in ADDRESS_SPACES or t.text in QUALIFIERS or t.text in ("unsigned", "signed", "typename"):
            return True
        name, _ = self._qualified_name_at(k)
        return self.is_type_name(name)

    def looks_like_declaration(self) -> bool:
        t = self.tok
        if t.kind != ID and not t.is_op("::"):
            return False
        if t.text in ("decltype", "typename"):  # 'typename S<T>::type x = ...;'
            return True
        if t.text in ADDRESS_SPACES or t.text in QUALIFIERS or t.text in ("unsigned", "signed"):
            return True
        name, n = self._qualified_name_at(0)
        if not self.is_type_name(name):
            return False
        nxt = self.peek(n)
        if nxt.kind == ID:
            return True
        if nxt.is_op("<"):
            return not self._starts_static_member_call()
        if nxt.is_op("*", "&", "&&"):
            return True
        # 'float (*op)(float, float) = add;' reads as a declaration, to be refused precisely.
        return nxt.is_op("(") and self.peek(n + 1).is_op("*") and self.peek(n + 2).kind == ID \
            and self.peek(n + 3).is_op(")")

    def parse_type_spec(self) -> ast.TypeSpec:
        """Qualifiers, a base type, then '*' and '&' parts (not the declarator name)."""
        start = self.tok.pos
        const = False
        space = None
        while True:
            t = self.tok
            if t.kind != ID:
                break
            if t.text == "const" or t.text == "volatile":
                const = const or t.text == "const"
                self.advance()
            elif t.text in ADDRESS_SPACES:
                space = address_space(t)
                self.advance()
            elif t.text in ("static", "constexpr", "inline", "METAL_FUNC", "thread_local", "typename"):
                self.advance()
            elif t.text == "__attribute__":
                self.advance()
                self._skip_balanced("(", ")")
            else:
                break
        name, args, member = self._parse_base_type()
        while self.tok.kind == ID and self.tok.text in ("const", "volatile") + ADDRESS_SPACES:
            t = self.advance()
            if t.text == "const":
                const = True
            elif t.text in ADDRESS_SPACES:
                space = address_space(t)
        spec = ast.TypeSpec(start, name, args, const, space, member=member)
        self._parse_pointer_parts(spec)
        return spec

    def _parse_pointer_parts(self, spec: ast.TypeSpec) -> None:
        while True:
            if self.accept("*"):
                pconst = False
                pspace = None
                while self.tok.kind == ID and self.tok.text in ("const", "volatile", "restrict", "__restrict") + ADDRESS_SPACES:
                    w = self.advance()
                    if w.text == "const":
                        pconst = True
                    elif w.text in ADDRESS_SPACES:
                        pspace = address_space(w)
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
        if t.kind != ID and not (t.is_op("::") and self.peek().kind == ID):
            self.error_expected("a type")
        if t.text in ("unsigned", "signed"):
            sign = self.advance().text
            if self.tok.kind == ID and self.tok.text in ("char", "short", "int", "long"):
                base = self.advance().text
                if base in ("short", "long") and self.tok.kind == ID and self.tok.text == "int":
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
        if t.text == "struct" and self.peek().kind == ID:  # an elaborated 'struct Name'
            self.advance()
            t = self.tok
        name, n = self._qualified_name_at(0)
        if n == 0:
            self.error_expected("a type")
        if not self.is_type_name(name):
            raise CompileError(f"unknown type name '{name}'", t.pos)
        self.i += n
        if name in ("short", "long") and self.tok.kind == ID and self.tok.text == "int":
            self.advance()
        args: list = []
        member: list[str] = []
        bare = name.removeprefix("::")
        if self.tok.is_op("<") and (bare in TEMPLATE_TYPE_NAMES or bare in self.template_names):
            args = self.parse_template_args()
            while self.tok.is_op("::") and self.peek().kind == ID:
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
