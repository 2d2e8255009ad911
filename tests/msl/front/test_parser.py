"""The parser on its own: the tree it builds, C precedence, declarations and its errors."""

from __future__ import annotations

import pytest

from metal_puzzles.msl import CompileError
from metal_puzzles.msl.front import ast
from metal_puzzles.msl.front.ast import CastStyle
from metal_puzzles.msl.front.parser import Parser
from metal_puzzles.msl.front.preprocessor import Preprocessor
from metal_puzzles.msl.lang.types import AddressSpace


def body(src: str, type_names: set[str] | None = None) -> ast.Block:
    return Parser(Preprocessor().process(src, "source"), type_names=type_names).parse_body()


def expr(src: str) -> ast.Expr:
    (stmt,) = body(src + ";").stmts
    assert isinstance(stmt, ast.ExprStmt)
    return stmt.expr


def show(e) -> str:
    """The tree as fully parenthesised text."""
    if isinstance(e, ast.Binary):
        return f"({show(e.left)} {e.op} {show(e.right)})"
    if isinstance(e, ast.Assign):
        return f"({show(e.target)} {e.op} {show(e.value)})"
    if isinstance(e, ast.Unary):
        return f"({e.op}{show(e.operand)})"
    if isinstance(e, ast.Ternary):
        return f"({show(e.cond)} ? {show(e.then)} : {show(e.other)})"
    if isinstance(e, ast.Index):
        return f"{show(e.base)}[{show(e.index)}]"
    if isinstance(e, ast.Name):
        return e.ident
    if isinstance(e, ast.IntLit):
        return str(e.value)
    return type(e).__name__


@pytest.mark.parametrize("src, tree", [
    ("a + b * c", "(a + (b * c))"),
    ("a - b - c", "((a - b) - c)"),
    ("a << 1 + b", "(a << (1 + b))"),
    ("a & b == c", "(a & (b == c))"),
    ("a || b && c", "(a || (b && c))"),
    ("x = y = z", "(x = (y = z))"),
    ("c ? a : b ? d : e", "(c ? a : (b ? d : e))"),
    ("-a[i] * *p", "((-a[i]) * (*p))"),
    ("out[i] += a[i] >> 2", "(out[i] += (a[i] >> 2))"),
])
def test_c_precedence_and_associativity(src, tree) -> None:
    assert show(expr(src)) == tree


def test_declaration_with_address_space_array_and_initializer() -> None:
    (decl,) = body("threadgroup float tile[4][8];").stmts
    assert isinstance(decl, ast.Decl)
    (d,) = decl.declarators
    assert d.name == "tile" and d.type_spec.name == "float" and d.type_spec.space == AddressSpace.THREADGROUP
    assert [dim.value for dim in d.type_spec.array_dims] == [4, 8]


def test_pointer_declarator_keeps_qualifiers() -> None:
    (decl,) = body("const device float* p = a + 1;").stmts
    spec = decl.declarators[0].type_spec
    assert spec.const and spec.space == AddressSpace.DEVICE and len(spec.pointers) == 1


def test_casts_of_every_style() -> None:
    assert expr("(float)x").style == CastStyle.C
    assert expr("static_cast<int>(x)").style == CastStyle.STATIC
    assert expr("as_type<uint>(x)").style == CastStyle.AS_TYPE
    assert isinstance(expr("float4(x)"), ast.Construct)


def test_template_type_names_make_declarations() -> None:
    (stmt,) = body("T x = 1;", type_names={"T"}).stmts
    assert isinstance(stmt, ast.Decl)


def test_control_flow_statements() -> None:
    stmts = body("for (uint i = 0; i < n; i++) { if (i) continue; } while (k) k--; do { k++; } while (k < 3);").stmts
    assert [type(s).__name__ for s in stmts] == ["For", "While", "DoWhile"]


def test_translation_unit_of_a_header() -> None:
    tu = Parser(Preprocessor().process(
        "constant float SCALE = 2.0f;\ntemplate <typename T> T twice(T x) { return x * SCALE; }", "header"),
        ).parse_translation_unit()
    kinds = [type(i).__name__ for i in tu.items]
    assert kinds == ["GlobalDecl", "FuncDef"] and tu.items[1].template_params[0].name == "T"


def test_missing_semicolon_points_just_after_the_statement() -> None:
    with pytest.raises(CompileError) as err:
        body("int a = 1\nint b = 2;")
    assert (err.value.line, err.value.col) == (1, 10) and "';'" in err.value.message  # as clang does


def test_unsupported_address_space_is_named() -> None:
    with pytest.raises(CompileError, match="ray_data"):
        body("ray_data float x;")
