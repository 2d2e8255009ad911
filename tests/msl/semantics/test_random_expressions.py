"""Randomised integer expressions checked against an independent model of C++ integer
semantics written here from the standard's rules: integral promotion, the usual arithmetic
conversions, wrap-around of unsigned types, truncating division, shifts, and conversions
modulo 2**bits. Expressions whose evaluation would be undefined behaviour (signed overflow,
division by zero, out-of-range shifts, shifting negative values left) are discarded before
they reach the simulator.

One kernel evaluates a whole batch, so many expressions cost one simulation.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from .conftest import run


@dataclass(frozen=True)
class CType:
    """An integer type: its MSL name, width, signedness and conversion rank."""

    name: str
    bits: int
    signed: bool
    rank: int

    @property
    def lo(self) -> int:
        return -(1 << (self.bits - 1)) if self.signed else 0

    @property
    def hi(self) -> int:
        return (1 << (self.bits - 1)) - 1 if self.signed else (1 << self.bits) - 1

    def wrap(self, v: int) -> int:
        """Convert an integer to this type (modulo 2**bits, two's complement)."""
        v &= (1 << self.bits) - 1
        if self.signed and v >= 1 << (self.bits - 1):
            v -= 1 << self.bits
        return v


BOOL = CType("bool", 1, False, 0)
CHAR = CType("char", 8, True, 1)
UCHAR = CType("uchar", 8, False, 1)
SHORT = CType("short", 16, True, 2)
USHORT = CType("ushort", 16, False, 2)
INT = CType("int", 32, True, 3)
UINT = CType("uint", 32, False, 3)
LONG = CType("long", 64, True, 4)
ULONG = CType("ulong", 64, False, 4)
TYPES = [CHAR, UCHAR, SHORT, USHORT, INT, UINT, LONG, ULONG]
UNSIGNED_OF = {INT: UINT, LONG: ULONG}


class UB(Exception):
    """The expression's evaluation would be undefined behaviour."""


def promote(t: CType) -> CType:
    """Integral promotion: everything narrower than int becomes int (int holds all values)."""
    return INT if t.rank < INT.rank else t


def common(a: CType, b: CType) -> CType:
    """The usual arithmetic conversions for two integer types."""
    a, b = promote(a), promote(b)
    if a == b:
        return a
    if a.signed == b.signed:
        return a if a.rank > b.rank else b
    s, u = (a, b) if a.signed else (b, a)
    if u.rank >= s.rank:
        return u
    if s.bits > u.bits:  # the signed type represents every value of the unsigned one
        return s
    return UNSIGNED_OF[s]


def checked(t: CType, v: int) -> int:
    """Result of an arithmetic operation in type t: unsigned wraps, signed overflow is UB."""
    if t.signed:
        if not t.lo <= v <= t.hi:
            raise UB
        return v
    return t.wrap(v)


class Expr:
    """A generated expression: its source text and a function giving (type, value)."""

    def __init__(self, text: str, ev: Callable[[], tuple[Any, Any]]) -> None:
        self.text = text
        self.ev = ev


def binary(op: str, x: Expr, y: Expr) -> Expr:
    def ev() -> tuple[CType, int]:
        ta, a = x.ev()
        tb, b = y.ev()
        if op in ("&&", "||"):
            r = (a != 0 and b != 0) if op == "&&" else (a != 0 or b != 0)
            return BOOL, int(r)
        if op in ("<<", ">>"):
            t = promote(ta)
            if b < 0 or b >= t.bits:
                raise UB
            if op == ">>":
                return t, a >> b
            if a < 0 or (t.signed and (a << b) > t.hi):
                raise UB
            return t, t.wrap(a << b)
        t = common(ta, tb)
        a, b = t.wrap(a), t.wrap(b)
        if op == "+":
            return t, checked(t, a + b)
        if op == "-":
            return t, checked(t, a - b)
        if op == "*":
            return t, checked(t, a * b)
        if op in ("/", "%"):
            if b == 0 or (t.signed and a == t.lo and b == -1):
                raise UB
            q = abs(a) // abs(b)
            q = q if (a >= 0) == (b >= 0) else -q
            return t, q if op == "/" else a - b * q
        if op == "&":
            return t, t.wrap(a & b)
        if op == "|":
            return t, t.wrap(a | b)
        if op == "^":
            return t, t.wrap(a ^ b)
        cmp = {"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b, "==": a == b, "!=": a != b}[op]
        return BOOL, int(cmp)

    return Expr(f"({x.text} {op} {y.text})", ev)


def unary(op: str, x: Expr) -> Expr:
    def ev() -> tuple[CType, int]:
        t, a = x.ev()
        if op == "!":
            return BOOL, int(a == 0)
        t = promote(t)
        if op == "-":
            return t, checked(t, -a)
        return t, t.wrap(~a)  # ~

    return Expr(f"({op}{x.text})", ev)


def cast(t: CType, x: Expr) -> Expr:
    def ev() -> tuple[CType, int]:
        _, a = x.ev()
        return t, t.wrap(a)

    return Expr(f"(({t.name}){x.text})", ev)


def ternary(c: Expr, x: Expr, y: Expr) -> Expr:
    def ev() -> tuple[CType, int]:
        _, cv = c.ev()
        tx, ty = x.ev()[0], y.ev()[0]  # both arms are evaluated by the model only for types
        t = tx if tx == ty else common(tx, ty)
        _, v = (x if cv != 0 else y).ev()
        return t, t.wrap(v)

    return Expr(f"({c.text} ? {x.text} : {y.text})", ev)


BIN_OPS = ["+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "<", ">", "<=", ">=", "==", "!=",
           "&&", "||"]


def gen(rng: random.Random, variables: list[tuple[str, CType, int]], depth: int) -> Expr:
    """A random expression over the declared variables and small literals."""
    if depth == 0 or rng.random() < 0.2:
        if rng.random() < 0.7:
            name, t, v = rng.choice(variables)
            return Expr(name, lambda t=t, v=v: (t, v))
        lit = rng.choice([0, 1, 2, 3, 5, 7, 31, 100, 255, 1000])
        if rng.random() < 0.3:
            return Expr(f"{lit}u", lambda lit=lit: (UINT, lit))
        return Expr(str(lit), lambda lit=lit: (INT, lit))
    kind = rng.random()
    if kind < 0.6:
        return binary(rng.choice(BIN_OPS), gen(rng, variables, depth - 1), gen(rng, variables, depth - 1))
    if kind < 0.75:
        return unary(rng.choice(["-", "~", "!"]), gen(rng, variables, depth - 1))
    if kind < 0.9:
        return cast(rng.choice(TYPES), gen(rng, variables, depth - 1))
    return ternary(gen(rng, variables, depth - 1), gen(rng, variables, depth - 1),
                   gen(rng, variables, depth - 1))


def make_batch(seed: int, n: int) -> tuple[str, list[int]]:
    """Kernel source computing n random expressions, and their expected values mod 2**64."""
    rng = random.Random(seed)
    variables = []
    decls = []
    for k, t in enumerate(TYPES * 2):
        v = rng.randint(max(t.lo, -(1 << 40)), min(t.hi, 1 << 40))
        if rng.random() < 0.3:
            v = rng.choice([t.lo, t.hi, 0, -1 if t.signed else 1])
        name = f"v{k}"
        variables.append((name, t, v))
        literal = f"{v}" if t.signed else f"{v}u" if t.bits <= 32 else f"{v}ul"
        if t == LONG and v == LONG.lo:
            literal = "(-9223372036854775807 - 1)"
        decls.append(f"{t.name} {name} = {literal};")
    lines, expected = [], []
    while len(expected) < n:
        e = gen(rng, variables, rng.randint(1, 4))
        try:
            _, v = e.ev()
        except UB:
            continue
        lines.append(f"out[{len(expected)}] = (ulong)({e.text});")
        expected.append(v % (1 << 64))
    return "\n".join(decls + lines), expected


@pytest.mark.parametrize("seed", range(8))
def test_random_integer_expressions(seed: int) -> None:
    """80 random integer expressions per seed evaluate exactly as C++ specifies."""
    src, expected = make_batch(seed, 80)
    got = run(src, out=((len(expected),), "uint64")).outputs[0].tolist()
    bad = [(line, e, g) for line, e, g in zip(src.splitlines()[16:], expected, got, strict=True) if e != g]
    assert not bad, f"{len(bad)} mismatches, first: {bad[0]}"


# ------------------------------------------------------------------ floating point

FLOAT, HALF = "float", "half"


def f_round(kind: str, v: float) -> float:
    """Round an exact (float64) value to float32 or binary16."""
    with np.errstate(over="ignore", invalid="ignore"):
        return float(np.float32(v)) if kind == FLOAT else float(np.float16(v))


def f_binary(op: str, x: Expr, y: Expr) -> Expr:
    def ev() -> tuple[str, float]:
        ta, a = x.ev()
        tb, b = y.ev()
        if ta == "int" and tb == "int":
            if op == "/" and (b == 0 or abs(a) // abs(b) != abs(a) / abs(b)):
                raise UB  # keep integer division exact to stay well clear of surprises
            v = {"+": a + b, "-": a - b, "*": a * b, "/": int(a / b) if b else 0}[op]
            if not -(2**31) <= v < 2**31:
                raise UB
            return "int", v
        # usual arithmetic conversions: float beats half beats int
        t = FLOAT if FLOAT in (ta, tb) else HALF
        a, b = f_round(t, a), f_round(t, b)
        with np.errstate(divide="ignore", invalid="ignore"):
            # Sums and products of float32/half values are exact in float64; a float64
            # quotient rounds once more, which cannot change the float32/half result
            # except in cases rarer than 2**-29 (double rounding), far beyond these tests.
            exact = {"+": a + b, "-": a - b, "*": a * b}.get(op)
            if exact is None:
                exact = float(np.float64(a) / np.float64(b))
        return t, f_round(t, exact)

    return Expr(f"({x.text} {op} {y.text})", ev)


def f_gen(rng: random.Random, variables: list, depth: int) -> Expr:
    """A random float/half/int arithmetic expression."""
    if depth == 0 or rng.random() < 0.2:
        name, t, v = rng.choice(variables)
        return Expr(name, lambda t=t, v=v: (t, v))
    if rng.random() < 0.85:
        return f_binary(rng.choice("+-*/"), f_gen(rng, variables, depth - 1), f_gen(rng, variables, depth - 1))
    inner = f_gen(rng, variables, depth - 1)
    target = rng.choice([FLOAT, HALF])

    def ev(inner: Expr = inner, target: str = target) -> tuple[str, float]:
        _, v = inner.ev()
        return target, f_round(target, v)

    return Expr(f"(({target}){inner.text})", ev)


def make_float_batch(seed: int, n: int) -> tuple[str, list[float]]:
    """Kernel source computing n random float/half/int expressions, and expected float32 results."""
    rng = random.Random(1000 + seed)
    variables, decls = [], []
    for k in range(4):
        fv = float(np.float32(rng.uniform(-100, 100)))
        hv = float(np.float16(rng.uniform(-50, 50)))
        iv = rng.randint(-20, 20)
        variables += [(f"f{k}", FLOAT, fv), (f"h{k}", HALF, hv), (f"i{k}", "int", iv)]
        decls += [f"float f{k} = as_type<float>({int(np.float32(fv).view(np.uint32))}u);",
                  f"half h{k} = as_type<half>(ushort({int(np.float16(hv).view(np.uint16))}));",
                  f"int i{k} = {iv};"]
    lines, expected = [], []
    while len(expected) < n:
        e = f_gen(rng, variables, rng.randint(1, 4))
        try:
            t, v = e.ev()
        except UB:
            continue
        lines.append(f"out[{len(expected)}] = (float)({e.text});")
        expected.append(f_round(FLOAT, v))
    return "\n".join(decls + lines), expected


@pytest.mark.parametrize("seed", range(6))
def test_random_float_half_expressions(seed: int) -> None:
    """60 random float/half/int expressions per seed: each operation rounds to its type."""
    src, expected = make_float_batch(seed, 60)
    got = run(src, out=((len(expected),), "float32")).outputs[0].tolist()
    lines = src.splitlines()[12:]
    bad = [(line, e, g) for line, e, g in zip(lines, expected, got, strict=True)
           if not (e == g or (np.isnan(e) and np.isnan(g)))]
    assert not bad, f"{len(bad)} mismatches, first: {bad[0]}"
