"""Operators are read once into enums (issue 38): the parser gives every operator node a
``BinaryOp``, ``UnaryOp`` or ``AssignOp``, and precedence, typing, folding, arithmetic and cost are
keyed by them. Their values are the operators' text, so code that still compares with strings
(``e.op == "+"``) keeps working while it moves to the enums."""

from __future__ import annotations

import pytest

from metal_puzzles.msl.counting.op_kinds import OpKind, binary_kind
from metal_puzzles.msl.executor.codegen.arithmetic import arith_fn
from metal_puzzles.msl.front import ast
from metal_puzzles.msl.front.ast import AssignOp, BinaryOp, UnaryOp
from metal_puzzles.msl.front.parser import Parser
from metal_puzzles.msl.front.parser.vocabulary import BINARY_LEVEL, BINARY_PRECEDENCE
from metal_puzzles.msl.front.preprocessor import Preprocessor
from metal_puzzles.msl.lang.types import FLOAT, INT


def body(src: str) -> ast.Block:
    return Parser(Preprocessor().process(src, "source")).parse_body()


def expr(src: str) -> ast.Expr:
    stmt = body(src + ";").stmts[0]
    assert isinstance(stmt, ast.ExprStmt)
    return stmt.expr


@pytest.mark.parametrize("op", list(BinaryOp))
def test_each_binary_operator_is_parsed_into_its_enum(op: BinaryOp) -> None:
    e = expr(f"a {op.value} b")
    assert isinstance(e, ast.Binary) and e.op is op


@pytest.mark.parametrize("op", list(AssignOp))
def test_each_assignment_operator_is_parsed_into_its_enum(op: AssignOp) -> None:
    e = expr(f"a {op.value} b")
    assert isinstance(e, ast.Assign) and e.op is op
    assert op.binary is None if op is AssignOp.ASSIGN else op.binary is BinaryOp(op.value[:-1])


@pytest.mark.parametrize("text", ["-", "+", "!", "~", "*", "&", "++", "--"])
def test_each_prefix_operator_is_parsed_into_its_enum(text: str) -> None:
    e = expr(f"{text}a")
    assert isinstance(e, ast.Unary) and e.op is UnaryOp(text)


def test_postfix_increments_are_unary_enums() -> None:
    inc, dec = expr("a++"), expr("a--")
    assert isinstance(inc, ast.Postfix) and inc.op is UnaryOp.INC and inc.op.is_increment
    assert isinstance(dec, ast.Postfix) and dec.op is UnaryOp.DEC


def test_precedence_is_keyed_by_the_enum_and_covers_every_operator() -> None:
    assert set(BINARY_LEVEL) == set(BinaryOp) and sum(len(ops) for ops in BINARY_PRECEDENCE) == len(BinaryOp)
    e = expr("a || b && c | d ^ e & f == g < h << i + j * k")
    ops = []
    while isinstance(e, ast.Binary):  # each operator binds tighter than the one before: right-nested
        ops.append(e.op)
        e = e.right
    assert ops == [ops_[0] for ops_ in BINARY_PRECEDENCE]
    assert expr("a - b - c").left.op is BinaryOp.SUB  # left-associative


def test_the_enums_compare_and_hash_as_their_text() -> None:
    """During the transition a string comparison, a string-keyed lookup and a message still work."""
    assert BinaryOp.LOGICAL_AND == "&&" and {"&&": 1}[BinaryOp.LOGICAL_AND] == 1
    assert f"'{UnaryOp.BIT_NOT}'" == "'~'" and str(AssignOp.SHL) == "<<="


def test_properties_group_the_operators() -> None:
    assert {op for op in BinaryOp if op.is_comparison} == {BinaryOp(t) for t in ("==", "!=", "<", ">", "<=", ">=")}
    assert {op for op in BinaryOp if op.is_logical} == {BinaryOp.LOGICAL_AND, BinaryOp.LOGICAL_OR}
    assert {op for op in BinaryOp if op.is_bitwise} == {BinaryOp.BIT_AND, BinaryOp.BIT_OR, BinaryOp.BIT_XOR}
    assert {op for op in BinaryOp if op.is_shift} == {BinaryOp.SHL, BinaryOp.SHR}
    assert {op for op in UnaryOp if op.is_increment} == {UnaryOp.INC, UnaryOp.DEC}


def test_arithmetic_and_cost_are_keyed_by_the_enum() -> None:
    assert arith_fn(BinaryOp.SUB, INT)(7, 9) == -2
    assert binary_kind(BinaryOp.MUL, FLOAT) is OpKind.FLOAT_MUL
    assert binary_kind(BinaryOp.LT, FLOAT) is OpKind.FLOAT_OTHER
    assert binary_kind(BinaryOp.MOD, INT, divisor=8) is OpKind.INT_ADD  # a mask
