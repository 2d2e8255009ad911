"""The checker on its own: the types and conversions it decides, the symbols names resolve to,
and the errors it raises, without running anything."""

from __future__ import annotations

import pytest

from metal_puzzles.msl import CompileError
from metal_puzzles.msl.front import ast
from metal_puzzles.msl.front.ast import ConvertKind
from metal_puzzles.msl.front.checker import Checker
from metal_puzzles.msl.front.parser import Parser
from metal_puzzles.msl.front.preprocessor import Preprocessor
from metal_puzzles.msl.front.symbols import VarKind
from metal_puzzles.msl.lang.kernel_parameters import ParamRole
from metal_puzzles.msl.lang.types import FLOAT, INT, LONG, UINT, AddressSpace, PointerType, vector
from metal_puzzles.msl.library import STANDARD_LIBRARY

PARAMS = [("a", PointerType(FLOAT, AddressSpace.DEVICE, True), ParamRole.INPUT),
          ("out", PointerType(FLOAT, AddressSpace.DEVICE, False), ParamRole.OUTPUT),
          ("thread_position_in_grid", vector(UINT, 3), ParamRole.ATTRIBUTE)]


def check(src: str, header: str = ""):
    ck = Checker(STANDARD_LIBRARY)
    pp = Preprocessor()
    hp = Parser(pp.process(header, "header"))
    ck.add_header(hp.parse_translation_unit())
    b = Parser(pp.process(src, "source"), type_names=hp.type_names, template_names=hp.template_names).parse_body()
    return ck.check_kernel(b, PARAMS)


def last_expr(checked) -> ast.Expr:
    return checked.body.stmts[-1].expr


def test_usual_arithmetic_conversions_are_explicit() -> None:
    e = last_expr(check("uint u = 1u; int i = -1; u + i;"))
    assert e.ty == UINT and e.op_ty == UINT
    assert isinstance(e.right, ast.Convert) and e.right.kind == ConvertKind.CONVERT and e.right.ty == UINT


def test_subscript_index_width_and_lvalue() -> None:
    e = last_expr(check("uint i = thread_position_in_grid.x; out[i] = a[i];"))
    assert e.target.lvalue and e.target.memory and e.target.space == AddressSpace.DEVICE
    assert e.value.ty == FLOAT and e.target.index.ty == LONG  # uint indices widen to long


def test_swizzle_components_and_vector_subscript() -> None:
    checked = check("float4 v = float4(1.0f); v.wzx; v[2];")
    swz, sub = checked.body.stmts[-2].expr, checked.body.stmts[-1].expr
    assert swz.comps == [3, 2, 0] and swz.ty == vector(FLOAT, 3) and not swz.dup_swizzle
    assert sub.vector_index and sub.ty == FLOAT


def test_scalar_to_vector_is_a_splat() -> None:
    e = last_expr(check("float4 v; v = 2.0f;"))
    assert e.value.kind == ConvertKind.SPLAT


def test_symbols_of_parameters_and_locals() -> None:
    checked = check("threadgroup float tile[8]; int k; k = 1;")
    kinds = {v.name: v.kind for v in checked.params}
    # Buffer parameters are the body's own (movable) copies of the pointers MLX passes.
    assert kinds == {"a": VarKind.LOCAL, "out": VarKind.LOCAL, "thread_position_in_grid": VarKind.ATTR}
    assert all(v.mutable and v.slot is not None for v in checked.params if v.name in ("a", "out"))
    assert [v.name for v in checked.threadgroup_arrays] == ["tile"]
    k = next(v for v in checked.variables if v.name == "k")
    assert k.kind == VarKind.LOCAL and k.maybe_uninit


def test_template_function_is_instantiated_per_type() -> None:
    checked = check("twice(1); twice(1.5f); twice(2);", "template <typename T> T twice(T x) { return x + x; }")
    assert sorted(str(f.ret) for f in checked.functions) == ["float", "int"]
    assert last_expr(checked).ty == INT


def test_builtin_call_is_resolved_and_typed() -> None:
    e = last_expr(check("uint u = 2u; metal::max(1, u);"))  # the literal adapts
    assert e.target is STANDARD_LIBRARY.function("max") and e.ty == UINT and e.value_unused


@pytest.mark.parametrize("src, message", [
    ("a[0] = 1.0f;", "read-only"),
    ("out[0] = locl;", "undeclared identifier 'locl'"),
    ("float3 v = float3(1.0f); v.xx = 2.0f;", "repeated components"),
    ("int a = 1;", "parameter of the kernel"),
    ("return 1;", "a kernel returns nothing"),
    ("break;", "outside of a loop"),
    ("int i = 1; uint u = 2u; metal::max(i, u);", "ambiguous"),
])
def test_errors(src, message) -> None:
    with pytest.raises(CompileError, match=message):
        check(src)
