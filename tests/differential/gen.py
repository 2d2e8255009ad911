"""Random barrier-free MSL kernel bodies for the differential test against g++.

Every generated body is valid MSL *and* valid C++ (with ``shim.h``), and has no undefined
behaviour when compiled with ``-std=c++20 -fwrapv``, so g++ gives the one right answer for
each output bit. How the generator keeps UB out:

* signed overflow wraps (``-fwrapv``; C++20 also defines signed left shifts and narrowing
  conversions as modular), so ``+ - * ++ --`` and unary minus need no care;
* ``/`` and ``%`` on integers get a guarded divisor, ``(d == 0 || d == -1 ? 3 : d)`` (or
  ``(d == 0 ? 1 : d)`` when the division is unsigned), which rules out both division by zero
  and ``INT_MIN / -1``;
* shift counts are masked to the width of the promoted left operand (``& 31`` or ``& 63``);
* float to integer conversion only happens through an explicit cast behind a range test,
  ``f > LO && f < HI ? (int)f : 7``, whose bounds are exact floats; NaN fails the test;
* ``as_type<uint>(f)`` only when ``f == f``: NaN payloads are not portable;
* every local and array element is initialised, indices are reduced into range, loops count
  a variable the body never assigns up to a small constant, and output slots are written
  before anything reads them (``return`` is only generated after every slot is prefilled);
* an expression that has a side effect (``v++`` in an assignment, ``++v`` in a condition)
  never mentions ``v``, nor a pointer aliasing it, elsewhere unsequenced.

To do that the generator tracks C's types (integer promotion, usual arithmetic
conversions, literal types) — only so it can pick the right guard or mask. The simulator's
own semantics are what is under test, so nothing here computes values. ``render(check=True)``
wraps each node in ``chk<T>(...)`` so g++ can confirm the tracked types (see ``shim.h``).

Some kernels declare structs and helper functions in the header; some of those structs are
instances of struct templates (with an explicit specialisation that must be the one chosen),
and half of those headers put them inside nested namespaces, which the body names qualified (``k3ns::detail::k3S0``,
sometimes ``::k3ns::detail::k3S0``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

# ----------------------------------------------------------------------------------------
# Types


@dataclass(frozen=True)
class CType:
    """A scalar type as C sees it: width, signedness, conversion rank."""

    name: str
    bits: int
    signed: bool
    rank: int  # bool 0, char 1, short 2, int 3, long 4, float 9
    dtype: str  # NumPy dtype name of a buffer of this type

    @property
    def is_float(self) -> bool:
        return self.name == "float"

    @property
    def is_int(self) -> bool:
        return not self.is_float


BOOL = CType("bool", 1, False, 0, "bool")
CHAR = CType("char", 8, True, 1, "int8")
UCHAR = CType("uchar", 8, False, 1, "uint8")
SHORT = CType("short", 16, True, 2, "int16")
USHORT = CType("ushort", 16, False, 2, "uint16")
INT = CType("int", 32, True, 3, "int32")
UINT = CType("uint", 32, False, 3, "uint32")
LONG = CType("long", 64, True, 4, "int64")
ULONG = CType("ulong", 64, False, 4, "uint64")
FLOAT = CType("float", 32, True, 9, "float32")

INT_TYPES = (CHAR, UCHAR, SHORT, USHORT, INT, UINT, LONG, ULONG)
# Thread attributes besides thread_position_in_grid (all uint in a 1-D dispatch).
THREAD_ATTRIBUTES = (
    "thread_position_in_threadgroup.x",
    "threadgroup_position_in_grid.x",
    "thread_index_in_threadgroup",
)
VALUE_TYPES = (*INT_TYPES, FLOAT)
_UNSIGNED_OF = {INT: UINT, LONG: ULONG}


def promote(t: CType) -> CType:
    """Integer promotion: everything narrower than int becomes int."""
    return INT if t.is_int and t.rank < INT.rank else t


def usual(a: CType, b: CType) -> CType:
    """Usual arithmetic conversions of C (for our nine types plus bool)."""
    if a.is_float or b.is_float:
        return FLOAT
    a, b = promote(a), promote(b)
    if a == b:
        return a
    if a.signed == b.signed:
        return a if a.rank > b.rank else b
    uns, sig = (a, b) if not a.signed else (b, a)
    if uns.rank >= sig.rank:
        return uns
    if sig.bits > uns.bits:
        return sig
    return _UNSIGNED_OF[sig]


def conditional_type(a: CType, b: CType) -> CType:
    """Type of ``c ? a : b`` in C++: the common type, or the type itself when both agree."""
    return a if a == b else usual(a, b)


# Exact float bounds (exclusive) inside which truncation toward zero lands in range.
# Below a power of two the next float down is the bound, e.g. -2^31 - 256 for int.
FLOAT_CAST_BOUNDS = {
    "bool": None,
    "char": ("-129.0f", "128.0f"),
    "uchar": ("-1.0f", "256.0f"),
    "short": ("-32769.0f", "32768.0f"),
    "ushort": ("-1.0f", "65536.0f"),
    "int": ("-2147483904.0f", "2147483648.0f"),
    "uint": ("-1.0f", "4294967296.0f"),
    "long": ("-9223373136366403584.0f", "9223372036854775808.0f"),
    "ulong": ("-1.0f", "18446744073709551616.0f"),
}
# Narrow bounds are used part of the time, so that values actually fall inside.
SMALL_CAST_BOUNDS = ("-100.0f", "100.0f")
SMALL_UNSIGNED_CAST_BOUNDS = ("-0.5f", "200.5f")

# ----------------------------------------------------------------------------------------
# Expressions

PRIMARY = 16
UNARY = 15
TERNARY = 3
BINARY_PREC = {
    "*": 13, "/": 13, "%": 13,
    "+": 12, "-": 12,
    "<<": 11, ">>": 11,
    "<": 10, "<=": 10, ">": 10, ">=": 10,
    "==": 9, "!=": 9,
    "&": 8, "^": 7, "|": 6, "&&": 5, "||": 4,
}  # fmt: skip


class Expr:
    """An expression node: knows its C type, precedence and the variables it mentions."""

    ctype: CType
    prec: int = PRIMARY
    names: frozenset[str] = frozenset()
    size: int = 1

    def raw(self, check: bool) -> str:
        raise NotImplementedError

    def render(self, min_prec: int = 0, check: bool = False) -> str:
        """Text of the node, parenthesised only when C precedence requires it."""
        text, prec = self.raw(check), self.prec
        if check and not isinstance(self, Leaf):
            text, prec = f"chk<{self.ctype.name}>({text})", PRIMARY
        return text if prec >= min_prec else f"({text})"


@dataclass
class Leaf(Expr):
    text: str
    ctype: CType
    names: frozenset[str] = frozenset()

    def raw(self, check: bool) -> str:
        return self.text


@dataclass
class Index(Expr):
    buffer: str
    index: Expr
    ctype: CType
    names: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        self.names = self.names | self.index.names
        self.size = self.index.size + 1

    def raw(self, check: bool) -> str:
        return f"{self.buffer}[{self.index.render(0, check)}]"


@dataclass
class Unary(Expr):
    op: str  # - + ! ~ ++ --
    operand: Expr
    ctype: CType

    def __post_init__(self) -> None:
        self.prec = UNARY
        self.names = self.operand.names
        self.size = self.operand.size + 1

    def raw(self, check: bool) -> str:
        inner = self.operand.render(UNARY, check)
        # "- -x" and "+ +x" must not lex as "--x" / "++x".
        sep = " " if inner[:1] in "+-" else ""
        return f"{self.op}{sep}{inner}"


@dataclass
class Postfix(Expr):
    op: str  # ++ --
    operand: Expr
    ctype: CType

    def __post_init__(self) -> None:
        self.names = self.operand.names
        self.size = 2

    def raw(self, check: bool) -> str:
        return f"{self.operand.render(PRIMARY, check)}{self.op}"


@dataclass
class Binary(Expr):
    op: str
    left: Expr
    right: Expr
    ctype: CType

    def __post_init__(self) -> None:
        self.prec = BINARY_PREC[self.op]
        self.names = self.left.names | self.right.names
        self.size = self.left.size + self.right.size + 1

    def raw(self, check: bool) -> str:
        left = self.left.render(self.prec, check)
        right = self.right.render(self.prec + 1, check)
        return f"{left} {self.op} {right}"


@dataclass
class Ternary(Expr):
    cond: Expr
    then: Expr
    other: Expr
    ctype: CType

    def __post_init__(self) -> None:
        self.prec = TERNARY
        self.names = self.cond.names | self.then.names | self.other.names
        self.size = self.cond.size + self.then.size + self.other.size + 1

    def raw(self, check: bool) -> str:
        cond = self.cond.render(TERNARY + 1, check)
        return f"{cond} ? {self.then.render(0, check)} : {self.other.render(TERNARY, check)}"


@dataclass
class Cast(Expr):
    style: str  # "c" (int)x, "func" int(x), "static" static_cast<int>(x)
    operand: Expr
    ctype: CType

    def __post_init__(self) -> None:
        self.prec = UNARY if self.style == "c" else PRIMARY
        self.names = self.operand.names
        self.size = self.operand.size + 1

    def raw(self, check: bool) -> str:
        t = self.ctype.name
        if self.style == "c":
            return f"({t}){self.operand.render(UNARY, check)}"
        inner = self.operand.render(0, check)
        return f"{t}({inner})" if self.style == "func" else f"static_cast<{t}>({inner})"


@dataclass
class AsType(Expr):
    """``as_type<T>(x)``: reinterpret the bits of a 32-bit value."""

    operand: Expr
    ctype: CType

    def __post_init__(self) -> None:
        self.names = self.operand.names
        self.size = self.operand.size + 1

    def raw(self, check: bool) -> str:
        return f"as_type<{self.ctype.name}>({self.operand.render(0, check)})"


@dataclass
class Paren(Expr):
    """Redundant parentheses the generator adds now and then."""

    inner: Expr

    def __post_init__(self) -> None:
        self.ctype = self.inner.ctype
        self.names = self.inner.names
        self.size = self.inner.size

    def raw(self, check: bool) -> str:
        return f"({self.inner.render(0, check)})"


# ----------------------------------------------------------------------------------------
# Literals


def int_literal_type(value: int, hexadecimal: bool, unsigned: bool) -> CType:
    """C++ rules: first of the listed types that holds the value."""
    if unsigned:
        candidates = (UINT, ULONG)
    elif hexadecimal:
        candidates = (INT, UINT, LONG, ULONG)
    else:
        candidates = (INT, LONG)
    for t in candidates:
        hi = (1 << (t.bits - 1)) - 1 if t.signed else (1 << t.bits) - 1
        if value <= hi:
            return t
    raise ValueError(f"literal {value} too large")


INTERESTING_INTS = (
    0, 1, 2, 3, 7, 8, 15, 16, 31, 32, 63, 64, 100, 127, 128, 255, 256, 1000,
    32767, 32768, 65535, 65536, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x100000000,
    0x7FFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF, 5000000000, 123456789, 0xDEADBEEF,
)  # fmt: skip


def int_literal(rng: random.Random) -> Leaf:
    """A non-negative integer literal: decimal, ``u``-suffixed, hexadecimal or octal."""
    if rng.random() < 0.65:
        value = rng.randint(0, 20)
    else:
        value = rng.choice(INTERESTING_INTS)
    style = rng.choices(("dec", "u", "hex", "hexu", "oct"), (5, 2, 2, 1, 0.5))[0]
    hexadecimal = style.startswith("hex") or style == "oct"  # octal types like hex
    unsigned = style.endswith("u")
    if not hexadecimal and not unsigned and value > 0x7FFFFFFFFFFFFFFF:
        unsigned = True  # a decimal literal that fits no signed type is ill-formed
    if style == "oct":
        text = f"0{value:o}"  # "017" is fifteen
    elif hexadecimal:
        digits = f"{value:x}" if rng.random() < 0.7 else f"{value:X}"
        text = ("0x" if rng.random() < 0.85 else "0X") + digits
    else:
        text = str(value)
    if unsigned:
        text += "u" if rng.random() < 0.8 else "U"
    return Leaf(text, int_literal_type(value, hexadecimal, unsigned))


def float_literal(rng: random.Random) -> Leaf:
    """A float literal with an ``f`` suffix, in one of C's spellings, never double."""
    kind = rng.random()
    if kind < 0.4:
        value = np.float32(rng.randint(0, 12))
    elif kind < 0.7:
        value = np.float32(rng.choice((0.5, 0.25, 1.5, 0.1, 2.5, 0.75, 3.14159, 1e-3, 0.3)))
    else:
        value = np.float32(rng.uniform(-1, 1) * 10.0 ** rng.randint(-6, 12))
        value = abs(value)
    form = rng.random()
    if form < 0.05 and value == int(value) and value < 1000:
        text = f"{int(value)}e0"  # an exponent and no point
    elif form < 0.2:
        text = np.format_float_scientific(value, unique=True, trim="0")
    else:
        text = np.format_float_positional(value, unique=True, trim="0")
        if form < 0.3 and text.endswith(".0"):
            text = text[:-1]  # "3." is a valid spelling
        elif form < 0.4 and text.startswith("0."):
            text = text[1:]  # ".5"
    suffix = "f" if rng.random() < 0.85 else "F"
    return Leaf(text + suffix, FLOAT)


# ----------------------------------------------------------------------------------------
# Kernel description


@dataclass
class Var:
    """A local: a scalar, a thread-local array, or a pointer (to a local or into a buffer)."""

    name: str
    ctype: CType  # the scalar / element / pointee type
    assignable: bool = True
    kind: str = "scalar"  # "scalar" | "array" | "ptr" | "bufptr" | "outslot"
    length: int = 0  # arrays: element count; bufptr: elements reachable from the pointer
    pointee: str = ""  # ptr: the local it points at (an alias, so it counts as mentioned)

    @property
    def names(self) -> frozenset[str]:
        return frozenset({self.name, self.pointee} - {""})


@dataclass
class Buffer:
    name: str
    ctype: CType
    slots: int = 0  # outputs: results per thread
    scalar: bool = False  # inputs: a 0-d input, `const constant T& name`


@dataclass
class Kernel:
    """One generated kernel: MSL body, C++ type-check variant, inputs and outputs."""

    name: str
    seed: int
    index: int
    body: str
    check_body: str
    n_threads: int
    threadgroup: int
    inputs: list[Buffer]
    outputs: list[Buffer]
    input_data: list[np.ndarray]
    # (output name, slot) -> the statement that stores it, for mismatch reports
    stores: dict[tuple[str, int], str] = field(default_factory=dict)
    # Fill outputs with zeros first (both sides). The reducer sets it: deleting a store
    # would otherwise leave an element uninitialised.
    zero_outputs: bool = False
    # Declarations the body uses (structs and their helper functions), valid MSL and C++.
    header: str = ""


# ----------------------------------------------------------------------------------------
# Structs in the header


@dataclass
class StructDef:
    """A struct the header declares, with a by-value and a by-reference helper function."""

    name: str
    fields: list[tuple[str, CType | StructDef, int]]  # (name, type, array length or 0)
    bump: str = ""  # S bump(S s, int k): a copy with one scalar member changed
    twice: str = ""  # void twice(thread S& s): doubles one scalar member in place


def make_structs(rng: random.Random, prefix: str) -> tuple[str, list[StructDef]]:
    """One or two structs of scalar, array and (for the second) struct members, laid out by
    C's rules on both sides, and helpers that take them by value and by reference."""
    defs: list[StructDef] = []
    lines: list[str] = []
    for k in range(rng.randint(1, 2)):
        name = f"{prefix}S{k}"
        fields: list[tuple[str, CType | StructDef, int]] = []
        for j in range(rng.randint(2, 4)):
            ctype = rng.choice(VALUE_TYPES)
            length = rng.choice((2, 3)) if rng.random() < 0.25 else 0
            fields.append((f"f{j}", ctype, length))
        if defs and rng.random() < 0.6:
            fields.insert(rng.randint(0, len(fields)), ("in", defs[-1], 0))
        d = StructDef(name, fields, bump=f"{name}_bump", twice=f"{name}_twice")
        members = "; ".join(f"{t.name} {f}" + (f"[{n}]" if n else "") for f, t, n in fields)
        if rng.random() < 0.4 and isinstance(fields[0][1], CType):
            # A struct template instance: its first member's type is the parameter.
            lines.extend(_struct_template(rng, name, fields))
            d.name = f"{name}<{fields[0][1].name}>"
            name = d.name
        else:
            lines.append(f"struct {name} {{ {members}; }};")
        scalars = [(f, t) for f, t, n in fields if isinstance(t, CType) and not n]
        f, t = scalars[0] if scalars else (None, None)
        change = f"s.{f} = s.{f} + ({t.name})k; " if f else ""
        lines.append(f"inline {name} {d.bump}({name} s, int k) {{ {change}return s; }}")
        f, t = scalars[-1] if scalars else (None, None)
        double = f"s.{f} = s.{f} * ({t.name})2;" if f else ""
        lines.append(f"inline void {d.twice}(thread {name}& s) {{ {double} }}")
        defs.append(d)
    if rng.random() < 0.5:
        return _in_namespace(rng, prefix, lines, defs), defs
    return "\n".join(lines) + "\n", defs


def _struct_template(rng: random.Random, name: str, fields: list[tuple[str, CType | StructDef, int]]) -> list[str]:
    """Declare struct ``name`` as a template over its first member's type: either the primary
    template itself, or a primary with other members and an explicit specialisation for that
    type that has the real ones (so picking the wrong definition cannot go unnoticed)."""
    first, ctype, length = fields[0]
    rest = [f"{t.name} {f}" + (f"[{n}]" if n else "") for f, t, n in fields[1:]]
    generic = "; ".join([f"T {first}" + (f"[{length}]" if length else "")] + rest)
    if rng.random() < 0.5:
        return [f"template <typename T> struct {name} {{ {generic}; }};"]
    concrete = "; ".join([f"{ctype.name} {first}" + (f"[{length}]" if length else "")] + rest)
    return [f"template <typename T> struct {name} {{ T decoy[5]; }};",
            f"template <> struct {name}<{ctype.name}> {{ {concrete}; }};"]


def _in_namespace(rng: random.Random, prefix: str, lines: list[str], defs: list[StructDef]) -> str:
    """Declare the structs and helpers inside nested namespaces (written as nested blocks or as
    'namespace a::b'); the body then names them qualified, sometimes from the global namespace
    ('::a::b::S'). Inside the namespace they name each other unqualified, as headers do."""
    outer, inner = f"{prefix}ns", "detail"
    if rng.random() < 0.5:
        text = f"namespace {outer} {{\nnamespace {inner} {{\n" + "\n".join(lines) + "\n}\n}\n"
    else:
        text = f"namespace {outer}::{inner} {{\n" + "\n".join(lines) + "\n}\n"
    root = "::" if rng.random() < 0.5 else ""
    for d in defs:
        qualify = f"{root}{outer}::{inner}::"
        d.name, d.bump, d.twice = qualify + d.name, qualify + d.bump, qualify + d.twice
    return text


def _size_of(t: CType) -> int:
    return max(t.bits // 8, 1)


# Element types a buffer may be read as through a pointer cast (bool: not every byte is one).
VIEW_TYPES = (CHAR, UCHAR, SHORT, USHORT, INT, UINT, FLOAT, LONG, ULONG)

# ----------------------------------------------------------------------------------------
# The generator


def _weighted(rng: random.Random, table: Sequence[tuple[float, Callable[[], Expr]]]) -> Expr:
    weights = [w for w, _ in table]
    return rng.choices([f for _, f in table], weights)[0]()


class BodyGenerator:
    """Builds one kernel body; a small grammar with weights, see ``expr`` and ``statement``."""

    MAX_DEPTH = 3

    def __init__(self, rng: random.Random, n_threads: int, inputs: list[Buffer],
                 structs: Sequence[StructDef] = ()) -> None:
        self.rng = rng
        self.structs = list(structs)
        self.n = n_threads
        self.inputs = inputs
        self.tid = "tid"
        self.scopes: list[list[Var]] = [[]]
        self.lines: list[str] = []
        self.check_lines: list[str] = []
        self.indent = 1
        self.counter = 0
        self.loop_depth = 0
        self.index_nesting = 0  # a computed index never contains another computed index
        self.switch_depth = 0
        self.may_return = False  # set when every output slot is prefilled first

    # -- bookkeeping ------------------------------------------------------------------

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def visible(self, kind: str = "scalar") -> list[Var]:
        return [v for scope in self.scopes for v in scope if v.kind == kind]

    def emit(self, text: str, check_text: str | None = None) -> None:
        pad = "    " * self.indent
        self.lines.append(pad + text)
        self.check_lines.append(pad + (text if check_text is None else check_text))

    def emit_expr_stmt(self, template: str, *exprs: Expr) -> None:
        """Emit a line built from ``template`` (``{}`` per expression) in both variants."""
        self.emit(
            template.format(*(e.render() for e in exprs)),
            template.format(*(e.render(check=True) for e in exprs)),
        )

    def emit_fn(self, line: Callable[[bool], str]) -> None:
        """Emit ``line(False)``; the type-check variant gets ``line(True)``."""
        self.emit(line(False), line(True))

    # -- leaves -----------------------------------------------------------------------

    def var_leaf(self, v: Var) -> Leaf:
        return Leaf(v.name, v.ctype, frozenset({v.name}))

    def leaf(self, kind: str, avoid: frozenset[str]) -> Expr:
        rng = self.rng
        want_float = kind == "float" or (kind == "any" and rng.random() < 0.35)

        def usable(kind: str) -> list[Var]:
            return [
                v
                for v in self.visible(kind)
                if v.ctype.is_float == want_float and not v.names & avoid
            ]

        vars_, arrays, ptrs, bufptrs, slots = (
            usable(k) for k in ("scalar", "array", "ptr", "bufptr", "outslot")
        )
        bufs = [b for b in self.inputs if b.ctype.is_float == want_float and not b.scalar]
        scalars = [b for b in self.inputs if b.ctype.is_float == want_float and b.scalar]
        options: list[tuple[float, Callable[[], Expr]]] = [
            (2.0, lambda: float_literal(rng) if want_float else int_literal(rng)),
        ]
        if vars_:
            options.append((6.0, lambda: self.var_leaf(rng.choice(vars_))))
        if arrays:
            options.append((1.5, lambda: self.element(rng.choice(arrays), avoid)))
        if ptrs:
            options.append((1.0, lambda: self.deref(rng.choice(ptrs))))
        if bufptrs:
            options.append((1.0, lambda: self.element(rng.choice(bufptrs), avoid)))
        if slots:
            options.append((1.0, lambda: self.var_leaf(rng.choice(slots))))
        if bufs:
            options.append((3.0, lambda: self.buffer_read(rng.choice(bufs), avoid)))
        if scalars:
            options.append((1.0, lambda: (lambda b: Leaf(b.name, b.ctype))(rng.choice(scalars))))
        if not want_float and self.structs:
            options.append((0.3, lambda: Leaf(f"sizeof({rng.choice(self.structs).name})", ULONG)))
            members = [v for v in self.visible() if "." in v.name and not v.names & avoid]
            if members:
                options.append((0.6, lambda: self.member_byte(rng.choice(members))))
        if not want_float and self.tid not in avoid:
            options.append((1.0, lambda: Leaf(self.tid, UINT, frozenset({self.tid}))))
            options.append((0.4, lambda: Leaf(rng.choice(THREAD_ATTRIBUTES), UINT)))
        return _weighted(rng, options)

    def member_byte(self, v: Var) -> Expr:
        """One byte of a struct member's object representation, read through a uchar pointer."""
        k = self.rng.randrange(_size_of(v.ctype))
        return Leaf(f"((thread uchar*)&{v.name})[{k}]", UCHAR, frozenset({v.name}))

    def in_range_index(self, length: int, avoid: frozenset[str]) -> Expr:
        """An index in [0, length): a literal, a masked or a reduced expression."""
        rng = self.rng
        if self.index_nesting or rng.random() < 0.4:
            return Leaf(str(rng.randrange(length)), INT)
        self.index_nesting += 1
        inner = self.expr("int", 1, avoid)
        self.index_nesting -= 1
        if length & (length - 1) == 0 and rng.random() < 0.5:
            return Binary("&", inner, Leaf(str(length - 1), INT), usual(inner.ctype, INT))
        as_uint = Cast(rng.choice(("c", "func", "static")), inner, UINT)
        return Binary("%", as_uint, Leaf(f"{length}u", UINT), UINT)

    def element(self, v: Var, avoid: frozenset[str]) -> Expr:
        """``a[i]`` of a local array, or ``p[i]`` / ``*p`` / ``*(p + k)`` of a buffer pointer."""
        rng = self.rng
        if v.kind == "bufptr" and rng.random() < 0.4:
            if rng.random() < 0.5:
                return Unary("*", Leaf(v.name, v.ctype), v.ctype)
            k = rng.randrange(v.length)
            return Unary("*", Leaf(f"({v.name} + {k})", v.ctype), v.ctype)
        index = self.in_range_index(v.length, avoid)
        return Index(v.name, index, v.ctype, names=frozenset({v.name}) | index.names)

    def deref(self, v: Var) -> Expr:
        """``*q`` or ``q[0]`` of a pointer to a local; it mentions the local it aliases."""
        if self.rng.random() < 0.75:
            node: Expr = Unary("*", Leaf(v.name, v.ctype), v.ctype)
        else:
            node = Index(v.name, Leaf("0", INT), v.ctype)
        node.names = v.names
        return node

    def buffer_read(self, buf: Buffer, avoid: frozenset[str]) -> Expr:
        """``buf[i]`` with an index that is always in range."""
        rng, n = self.rng, self.n
        tid = Leaf(self.tid, UINT, frozenset({self.tid}))
        form = rng.random()
        if form < 0.45:
            index: Expr = tid
        elif form < 0.7:
            shifted = Paren(Binary("+", tid, Leaf(f"{rng.randint(1, 2 * n)}u", UINT), UINT))
            index = Binary("%", shifted, Leaf(f"{n}u", UINT), UINT)
        elif self.index_nesting:
            # tid ^ k stays below a power-of-two n; otherwise count down from the end.
            if n & (n - 1) == 0:
                index = Binary("^", tid, Leaf(str(rng.randint(0, n - 1)), INT), UINT)
            else:
                index = Binary("-", Leaf(f"{n - 1}u", UINT), tid, UINT)
        else:
            self.index_nesting += 1
            inner = self.expr("int", 1, avoid)
            self.index_nesting -= 1
            as_uint = Cast(rng.choice(("c", "func", "static")), inner, UINT)
            if n & (n - 1) == 0 and rng.random() < 0.5:
                index = Binary("&", as_uint, Leaf(str(n - 1), INT), UINT)
            else:
                index = Binary("%", as_uint, Leaf(f"{n}u", UINT), UINT)
        return Index(buf.name, index, buf.ctype)

    # -- expressions --------------------------------------------------------------------

    def expr(self, kind: str, depth: int, avoid: frozenset[str] = frozenset()) -> Expr:
        """A side-effect-free expression; ``kind`` is "int", "float" or "any"."""
        rng = self.rng
        if kind == "any":
            kind = "float" if rng.random() < 0.35 else "int"
        if depth <= 0 or rng.random() < 0.15:
            node = self.leaf(kind, avoid)
        elif kind == "float":
            node = self.float_expr(depth, avoid)
        else:
            node = self.int_expr(depth, avoid)
        if rng.random() < 0.06:
            node = Paren(node)
        return node

    def float_expr(self, depth: int, avoid: frozenset[str]) -> Expr:
        rng, d = self.rng, depth - 1

        def arith() -> Expr:
            op = rng.choice("+-*/")
            a, b = self.expr("float", d, avoid), self.expr("any", d, avoid)
            if rng.random() < 0.5:
                a, b = b, a
            return Binary(op, a, b, FLOAT)

        def unary() -> Expr:
            return Unary(rng.choice("-+"), self.expr("float", d, avoid), FLOAT)

        def cond() -> Expr:
            a, b = self.expr("float", d, avoid), self.expr("any", d, avoid)
            return Ternary(self.expr("any", d, avoid), a, b, FLOAT)

        def cast() -> Expr:
            return Cast(rng.choice(("c", "func", "static")), self.expr("any", d, avoid), FLOAT)

        def bits() -> Expr:
            # as_type needs a 32-bit operand: convert to int/uint first unless it is one.
            x = self.expr("int", min(d, 1), avoid)
            if x.ctype not in (INT, UINT):
                x = Cast(rng.choice(("c", "func", "static")), x, rng.choice((INT, UINT)))
            return AsType(x, FLOAT)

        return _weighted(rng, [(6, arith), (1.5, unary), (1.5, cond), (2, cast), (0.4, bits)])

    def int_expr(self, depth: int, avoid: frozenset[str]) -> Expr:
        rng, d = self.rng, depth - 1

        def arith() -> Expr:
            a, b = self.expr("int", d, avoid), self.expr("int", d, avoid)
            op = rng.choice("+-*&|^")
            return Binary(op, a, b, usual(a.ctype, b.ctype))

        def divide() -> Expr:
            a = self.expr("int", d, avoid)
            b = self.expr("int", min(d, 1), avoid)
            t = usual(a.ctype, b.ctype)
            return Binary(rng.choice("/%"), a, self.divisor(b, t), t)

        def shift() -> Expr:
            a = self.expr("int", d, avoid)
            return Binary(
                rng.choice(("<<", ">>")), a, self.shift_count(a.ctype, d, avoid), promote(a.ctype)
            )

        def compare() -> Expr:
            a, b = self.expr("any", d, avoid), self.expr("any", d, avoid)
            return Binary(rng.choice(("<", "<=", ">", ">=", "==", "!=")), a, b, BOOL)

        def logical() -> Expr:
            a, b = self.expr("any", d, avoid), self.expr("any", d, avoid)
            return Binary(rng.choice(("&&", "||")), a, b, BOOL)

        def unary() -> Expr:
            op = rng.choice("--++~~!")
            if op == "!":
                return Unary(op, self.expr("any", d, avoid), BOOL)
            a = self.expr("int", d, avoid)
            return Unary(op, a, promote(a.ctype))

        def cond() -> Expr:
            a, b = self.expr("int", d, avoid), self.expr("int", d, avoid)
            return Ternary(self.expr("any", d, avoid), a, b, conditional_type(a.ctype, b.ctype))

        def cast() -> Expr:
            target = rng.choice((*INT_TYPES, BOOL) if rng.random() < 0.1 else INT_TYPES)
            return self.cast_to(target, self.expr("int", d, avoid))

        def float_cast() -> Expr:
            target = rng.choice((*INT_TYPES, BOOL))
            return self.cast_to(target, self.expr("float", min(d, 1), avoid))

        def bits() -> Expr:
            # NaN payloads are not portable, so a NaN reads as the canonical quiet NaN.
            x = self.expr("float", min(d, 1), avoid)
            target = rng.choice((INT, UINT))
            nan = Leaf("0x7fc00000" + ("u" if target == UINT else ""), target)
            return Ternary(Binary("==", x, x, BOOL), AsType(x, target), nan, target)

        table = [
            (5, arith), (2, divide), (2, shift), (2, compare), (0.7, logical),
            (2, unary), (1.5, cond), (1.5, cast), (1.5, float_cast), (0.4, bits),
        ]  # fmt: skip
        return _weighted(rng, table)

    def divisor(self, d: Expr, division_type: CType) -> Expr:
        """Wrap a divisor so it is never 0, nor -1 when the division is signed."""
        rng = self.rng
        zero = Binary("==", d, Leaf("0", INT), BOOL)
        if division_type.signed:
            minus_one = Binary("==", d, Unary("-", Leaf("1", INT), INT), BOOL)
            test: Expr = Binary("||", zero, minus_one, BOOL)
            repl = Leaf(str(rng.choice((3, 5, 7))), INT)
        else:
            test, repl = zero, Leaf("1", INT)
        return Ternary(test, repl, d, conditional_type(repl.ctype, d.ctype))

    def shift_count(self, left: CType, depth: int, avoid: frozenset[str]) -> Expr:
        """A count below the promoted width of the left operand."""
        rng = self.rng
        width = promote(left).bits
        if rng.random() < 0.35:
            return Leaf(str(rng.randint(0, width - 1)), INT)
        count = self.expr("int", min(depth, 1), avoid)
        text = rng.choice((str(width - 1), hex(width - 1), f"{width - 1}u"))
        mask = Leaf(text, UINT if text.endswith("u") else INT)
        return Binary("&", count, mask, usual(count.ctype, mask.ctype))

    def cast_to(self, target: CType, x: Expr) -> Expr:
        """An explicit cast; a float source gets a range test so the cast is defined."""
        rng = self.rng
        style = rng.choice(("c", "func", "static"))
        if not x.ctype.is_float or target in (BOOL, FLOAT):
            return Cast(style, x, target)
        bounds = FLOAT_CAST_BOUNDS[target.name]
        if rng.random() < 0.5:
            bounds = SMALL_CAST_BOUNDS if target.signed else SMALL_UNSIGNED_CAST_BOUNDS
        lo, hi = bounds
        test = Binary(
            "&&",
            Binary(
                ">",
                x,
                Leaf(lo, FLOAT) if lo[0] != "-" else Unary("-", Leaf(lo[1:], FLOAT), FLOAT),
                BOOL,
            ),
            Binary("<", x, Leaf(hi, FLOAT), BOOL),
            BOOL,
        )
        fallback = Leaf(str(rng.randint(0, 9)), INT)
        return Ternary(test, Cast(style, x, target), fallback, conditional_type(target, INT))

    # -- statements ---------------------------------------------------------------------

    def depth(self) -> int:
        return self.rng.randint(1, self.MAX_DEPTH)

    def assignable(self) -> list[Var]:
        """Scalar locals that statements may modify (not const, not loop counters)."""
        return [v for v in self.visible() if v.assignable]

    def target(self, avoid: frozenset[str] = frozenset(), incdec: bool = False) -> Expr | None:
        """An lvalue: a scalar local, an array element, or ``*q`` of a pointer to a local."""
        rng = self.rng
        ok: Callable[[Var], bool] = lambda v: (  # noqa: E731
            v.assignable and not v.names & avoid and not (incdec and v.ctype == BOOL)
        )
        scalars = [v for v in self.visible() if ok(v)]
        arrays = [v for v in self.visible("array") if ok(v)]
        ptrs = [v for v in self.visible("ptr") if ok(v)]
        slots = [v for v in self.visible("outslot") if ok(v)]
        table: list[tuple[float, Callable[[], Expr]]] = []
        if slots:
            table.append((1.0, lambda: self.var_leaf(rng.choice(slots))))
        if scalars:
            table.append((6.0, lambda: self.var_leaf(rng.choice(scalars))))
        if arrays:
            table.append((1.5, lambda: self.element(rng.choice(arrays), avoid)))
        if ptrs:
            table.append((1.0, lambda: self.deref(rng.choice(ptrs))))
        return _weighted(rng, table) if table else None

    def value_for(self, target: CType, depth: int, avoid: frozenset[str] = frozenset()) -> Expr:
        """An expression that may be assigned to ``target`` without a float->int conversion."""
        return self.expr("int" if target.is_int and target != BOOL else "any", depth, avoid)

    def declare(self, ctype: CType | None = None) -> Var:
        rng = self.rng
        ctype = ctype or rng.choice(VALUE_TYPES)
        init = self.value_for(ctype, self.depth())
        var = Var(self.fresh("v"), ctype)
        qual = rng.choices(("", "thread ", "const "), (8, 1, 1))[0]
        var.assignable = qual != "const "
        self.emit_expr_stmt(f"{qual}{ctype.name} {var.name} = {{}};", init)
        self.scopes[-1].append(var)
        return var

    def declare_pair(self) -> None:
        """``T a = x, b = y;`` — two declarators in one declaration."""
        ctype = self.rng.choice(VALUE_TYPES)
        x, y = self.value_for(ctype, 2), self.value_for(ctype, 2)
        a, b = Var(self.fresh("v"), ctype), Var(self.fresh("v"), ctype)
        self.emit_expr_stmt(f"{ctype.name} {a.name} = {{}}, {b.name} = {{}};", x, y)
        self.scopes[-1] += [a, b]

    def declare_array(self) -> Var:
        """``T a[L] = {x, y, ...};`` — possibly fewer initialisers than elements (rest zero)."""
        rng = self.rng
        ctype = rng.choice((*VALUE_TYPES, BOOL) if rng.random() < 0.1 else VALUE_TYPES)
        length = rng.choice((2, 3, 4, 4, 5, 8))
        count = length if rng.random() < 0.7 else rng.randint(0, length)
        inits = [self.value_for(ctype, rng.randint(0, 2)) for _ in range(count)]
        var = Var(self.fresh("a"), ctype, kind="array", length=length)
        qual = rng.choices(("", "thread "), (5, 1))[0]
        head = f"{qual}{ctype.name} {var.name}[{length}] = {{"
        self.emit_fn(lambda c: head + ", ".join(e.render(2, c) for e in inits) + "};")
        self.scopes[-1].append(var)
        return var

    def declare_pointer(self) -> None:
        """``thread T* q = &v;`` (an alias of a local) or ``const device T* p = in0 + k;``."""
        rng = self.rng
        bufs = [b for b in self.inputs if not b.scalar]
        locals_ = self.visible()
        if bufs and (not locals_ or rng.random() < 0.4):
            buf = rng.choice(bufs)
            offset = rng.randint(0, self.n // 2)
            var = Var(self.fresh("p"), buf.ctype, False, "bufptr", length=self.n - offset)
            qual = rng.choice(("const device", "device const"))
            start = rng.choice((f"{buf.name} + {offset}", f"&{buf.name}[{offset}]"))
            self.emit(f"{qual} {buf.ctype.name}* {var.name} = {start};")
        elif locals_:
            target = rng.choice(locals_)
            const = "" if target.assignable else "const "
            var = Var(self.fresh("q"), target.ctype, target.assignable, "ptr", pointee=target.name)
            self.emit(f"{const}thread {target.ctype.name}* {var.name} = &{target.name};")
        else:
            return
        self.scopes[-1].append(var)

    def declare_view(self) -> None:
        """``const device U* bN = (const device U*)inK;`` — a buffer read as another element type
        no wider than its own (so every element of the view is aligned)."""
        rng = self.rng
        bufs = [b for b in self.inputs if not b.scalar]
        if not bufs:
            self.declare()
            return
        buf = rng.choice(bufs)
        size = _size_of(buf.ctype)
        view = rng.choice([t for t in VIEW_TYPES if _size_of(t) <= size])
        var = Var(self.fresh("b"), view, False, "bufptr", length=self.n * size // _size_of(view))
        cast = rng.choice((f"(const device {view.name}*){buf.name}",
                           f"reinterpret_cast<const device {view.name}*>({buf.name})"))
        self.emit(f"const device {view.name}* {var.name} = {cast};")
        self.scopes[-1].append(var)

    def _struct_members(self, name: str, d: StructDef, const: bool) -> list[Var]:
        out: list[Var] = []
        for f, t, n in d.fields:
            member = f"{name}.{f}"
            if isinstance(t, StructDef):
                out += self._struct_members(member, t, const)
            elif n:
                out.append(Var(member, t, not const, "array", length=n))
            else:
                out.append(Var(member, t, not const))
        return out

    def _struct_value(self, d: StructDef) -> Callable[[bool], str]:
        """A brace initializer for ``d``: every member (or the first few) converted explicitly,
        so no narrowing conversion happens in the braces."""
        rng = self.rng
        count = len(d.fields) if rng.random() < 0.7 else rng.randint(0, len(d.fields))
        parts: list[Callable[[bool], str]] = []
        for _, t, n in d.fields[:count]:
            if isinstance(t, StructDef):
                parts.append(self._struct_value(t))
            elif n:
                items = [Cast("c", self.value_for(t, 1), t) for _ in range(rng.randint(1, n))]
                parts.append(lambda c, items=items: "{" + ", ".join(e.render(2, c) for e in items) + "}")
            else:
                e = Cast(rng.choice(("c", "func")), self.value_for(t, rng.randint(0, 2)), t)
                parts.append(lambda c, e=e: e.render(2, c))
        return lambda c: "{" + ", ".join(p(c) for p in parts) + "}"

    def declare_struct(self) -> None:
        """``S sN = {...};``, a copy ``S sN = sM;``, or a copy changed by a by-value helper."""
        rng = self.rng
        existing = self.visible("struct")
        name = self.fresh("s")
        if existing and rng.random() < 0.5:
            src = rng.choice(existing)
            d = next(x for x in self.structs if x.name == src.pointee)
            if rng.random() < 0.5:
                self.emit(f"{d.name} {name} = {src.name};")
            else:
                self.emit(f"{d.name} {name} = {d.bump}({src.name}, {rng.randint(-3, 3)});")
        else:
            d = rng.choice(self.structs)
            value = self._struct_value(d)
            self.emit_fn(lambda c: f"{d.name} {name} = {value(c)};")
        self.scopes[-1].append(Var(name, UCHAR, False, "struct", pointee=d.name))
        self.scopes[-1] += self._struct_members(name, d, False)

    def struct_update(self) -> None:
        """``sN = sM;`` (same struct), or ``S_twice(sN);`` through a reference."""
        rng = self.rng
        existing = self.visible("struct")
        if not existing:
            self.declare_struct()
            return
        target = rng.choice(existing)
        d = next(x for x in self.structs if x.name == target.pointee)
        same = [v for v in existing if v.pointee == d.name and v is not target]
        if same and rng.random() < 0.5:
            self.emit(f"{target.name} = {rng.choice(same).name};")
        else:
            self.emit(f"{d.twice}({target.name});")

    def assign(self) -> None:
        t = self.target()
        if t is None:
            self.declare()
            return
        value = self.value_for(t.ctype, self.depth())
        self.emit_fn(lambda c: f"{t.render()} = {value.render(0, c)};")

    def compound(self) -> None:
        rng = self.rng
        t = self.target()
        if t is None:
            self.declare()
            return
        if t.ctype.is_float:
            op = rng.choice("+-*/")
            rhs = self.expr("any", self.depth())
        else:
            ops = (
                ("&", "|", "^")
                if t.ctype == BOOL
                else ("+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^")
            )
            op = rng.choice(ops)
            if op in ("<<", ">>"):
                rhs = self.shift_count(t.ctype, 1, frozenset())
            else:
                rhs = self.expr("int", rng.randint(1, 2) if op in "/%" else self.depth())
                if op in "/%":
                    rhs = self.divisor(rhs, usual(t.ctype, rhs.ctype))
        self.emit_fn(lambda c: f"{t.render()} {op}= {rhs.render(0, c)};")

    def incdec(self) -> None:
        t = self.target(incdec=True)
        if t is None:
            self.declare()
            return
        op = self.rng.choice(("++", "--"))
        node = Postfix(op, t, t.ctype) if self.rng.random() < 0.5 else Unary(op, t, t.ctype)
        self.emit(node.render() + ";")

    def incdec_in_expr(self) -> None:
        """``w = v++ * e;`` — the value of a postfix/prefix update used in an expression.

        Neither ``w`` nor ``e`` mentions ``v`` (aliases included), so the update is sequenced.
        An integer ``w`` only takes an integer ``v``: a guarded cast would repeat ``v++``.
        """
        rng = self.rng
        sources = [v for v in self.assignable() if v.ctype != BOOL]
        if not sources:
            self.incdec()
            return
        v = rng.choice(sources)
        avoid = frozenset({v.name})
        w = self.target(avoid)
        if w is None or (w.ctype.is_int and v.ctype.is_float):
            self.incdec()
            return
        op = rng.choice(("++", "--"))
        if rng.random() < 0.5:
            upd: Expr = Postfix(op, self.var_leaf(v), v.ctype)
        else:
            upd = Unary(op, self.var_leaf(v), v.ctype)
        other = self.value_for(w.ctype if w.ctype != BOOL else INT, 1, avoid)
        a, b = (upd, other) if rng.random() < 0.6 else (other, upd)
        value = Binary(rng.choice("+-*"), a, b, usual(a.ctype, b.ctype))
        self.emit_fn(lambda c: f"{w.render()} = {value.render(0, c)};")

    def condition(self) -> Expr:
        """An if-condition; sometimes with a side effect behind ``&&``/``||``."""
        rng = self.rng
        cond = self.expr("any", self.depth())
        targets = [v for v in self.assignable() if v.ctype != BOOL and v.name not in cond.names]
        if targets and rng.random() < 0.15:
            v = rng.choice(targets)
            upd = Unary(rng.choice(("++", "--")), self.var_leaf(v), v.ctype)
            rhs = self.expr("any", 1, frozenset({v.name}))
            side = Binary(rng.choice(("<", ">", "!=", "==")), upd, rhs, BOOL)
            cond = Binary(rng.choice(("&&", "||")), cond, side, BOOL)
        return cond

    def block(self, n_statements: int) -> None:
        self.scopes.append([])
        self.indent += 1
        for _ in range(n_statements):
            self.statement()
        self.indent -= 1
        self.scopes.pop()

    def if_statement(self) -> None:
        cond = self.condition()
        self.emit_expr_stmt("if ({}) {{", cond)
        self.block(self.rng.randint(1, 3))
        if self.rng.random() < 0.5:
            self.emit("} else {")
            self.block(self.rng.randint(1, 3))
        self.emit("}")

    def loop(self) -> None:
        rng = self.rng
        self.loop_depth += 1
        form = rng.choice(("for", "for_down", "for_two", "while", "do"))
        ctype = rng.choice((UCHAR, SHORT, INT, UINT, LONG, ULONG))
        counter = Var(self.fresh("i"), ctype, assignable=False)
        limit = rng.randint(1, 6)
        bound = f"{limit}" if rng.random() < 0.7 else f"({self.tid} & 3u) + {limit}u"
        if form == "for":
            step = rng.choice((f"{counter.name}++", f"++{counter.name}", f"{counter.name} += 2"))
            self.emit(f"for ({ctype.name} {counter.name} = 0; {counter.name} < {bound}; {step}) {{")
            self.scopes.append([counter])
            self.block(rng.randint(1, 4))
            self.scopes.pop()
            self.emit("}")
        elif form == "for_two":
            # Two counters and the comma operator: i climbs while j falls.
            other = Var(self.fresh("j"), ctype, assignable=False)
            i, j = counter.name, other.name
            self.emit(f"for ({ctype.name} {i} = 0, {j} = {2 * limit}; {i} < {j}; {i}++, {j}--) {{")
            self.scopes.append([counter, other])
            self.block(rng.randint(1, 4))
            self.scopes.pop()
            self.emit("}")
        elif form == "for_down":
            self.emit(
                f"for ({ctype.name} {counter.name} = {limit}; {counter.name} > 0; {counter.name}--) {{"
            )
            self.scopes.append([counter])
            self.block(rng.randint(1, 4))
            self.scopes.pop()
            self.emit("}")
        else:
            # The counter is bumped first thing in the body, so `continue` cannot skip it.
            self.emit(f"{ctype.name} {counter.name} = 0;")
            self.scopes[-1].append(counter)
            if form == "while":
                self.emit(f"while ({counter.name} < {bound}) {{")
                self.indent += 1
                self.emit(f"{counter.name}++;")
                self.indent -= 1
                self.block(rng.randint(1, 4))
                self.emit("}")
            else:
                self.emit("do {")
                self.indent += 1
                self.emit(f"{counter.name} += 1;")
                self.indent -= 1
                self.block(rng.randint(1, 4))
                extra = self.expr("any", 1)
                head = f"}} while ({counter.name} < {bound} && "
                self.emit_fn(lambda c: head + extra.render(BINARY_PREC["&&"] + 1, c) + ");")
        self.loop_depth -= 1

    def switch(self) -> None:
        """A switch over a small integer, with fall-through, shared labels and default."""
        rng = self.rng
        x = self.expr("int", rng.randint(0, 2))
        n_labels = rng.randint(2, 5)
        if rng.random() < 0.5:
            subject: Expr = Binary("&", x, Leaf("7", INT), usual(x.ctype, INT))
        else:
            subject = Binary("%", Cast("c", x, UINT), Leaf(f"{n_labels + 1}u", UINT), UINT)
        labels = rng.sample(range(8), n_labels)
        self.emit_expr_stmt("switch ({}) {{", subject)
        self.switch_depth += 1
        for k, label in enumerate(labels):
            if 0 < k < n_labels - 1 and rng.random() < 0.2:
                self.emit(f"case {label}:")  # shares the next body
                continue
            head = "default" if k == n_labels - 1 and rng.random() < 0.5 else f"case {label}"
            self.emit(f"{head}: {{")
            self.block(rng.randint(1, 2))
            self.emit("} break;" if rng.random() < 0.7 else "}")  # else: fall through
        self.switch_depth -= 1
        self.emit("}")

    def early_return(self) -> None:
        """``if (c) return;`` — the thread stops; its unstored slots keep the prefill."""
        self.emit_expr_stmt("if ({}) return;", self.expr("any", self.rng.randint(1, 2)))

    def jump(self) -> None:
        cond = self.expr("any", self.depth())
        word = self.rng.choice(("break", "continue"))
        if self.rng.random() < 0.5:
            self.emit_expr_stmt(f"if ({{}}) {word};", cond)
        else:
            self.emit_expr_stmt("if ({}) {{", cond)
            self.indent += 1
            self.emit(f"{word};")
            self.indent -= 1
            self.emit("}")

    def statement(self) -> None:
        rng = self.rng
        nested = self.indent < 4
        table: list[tuple[float, Callable[[], None]]] = [
            (2.0, self.declare),
            (0.2, lambda: self.declare(BOOL)),
            (0.3, self.declare_pair),
            (0.5, self.declare_array),
            (0.5, self.declare_pointer),
            (3.0, self.assign),
            (3.0, self.compound),
            (1.0, self.incdec),
            (0.8, self.incdec_in_expr),
        ]
        if nested:
            table.append((1.5, self.if_statement))
            table.append((0.5, lambda: self.block_statement()))
        if nested and self.loop_depth < 2:
            table.append((1.0, self.loop))
        if nested and not self.switch_depth:
            table.append((0.3, self.switch))
        if self.may_return and self.indent > 1:
            table.append((0.3, self.early_return))
        if self.loop_depth > 0:
            table.append((1.0, self.jump))
        table.append((0.3, self.declare_view))
        if self.structs:
            table.append((0.8, self.declare_struct))
            table.append((0.4, self.struct_update))
        rng.choices([f for _, f in table], [w for w, _ in table])[0]()

    def block_statement(self) -> None:
        self.emit("{")
        self.block(self.rng.randint(1, 3))
        self.emit("}")


# ----------------------------------------------------------------------------------------
# Whole kernels


def random_values(rng: np.random.Generator, ctype: CType, n: int) -> np.ndarray:
    """Inputs of one type: small values, extremes and full-range noise mixed."""
    if ctype.is_float:
        special = np.array(
            [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 127.5, 255.9, 2147483520.0, -2147483648.0,
             4294967040.0, 1e20, -1e20, 3.0e38, 1e-30, 1.5e-40, 65504.0, 0.1],
            dtype=np.float32,
        )  # fmt: skip
        pick = rng.random(n)
        small = rng.integers(-20, 21, n).astype(np.float32)
        uniform = rng.uniform(-100, 100, n).astype(np.float32)
        wide = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 10, n)).astype(np.float32)
        out = np.where(pick < 0.3, small, np.where(pick < 0.6, uniform, wide))
        mask = pick > 0.9
        out[mask] = rng.choice(special, int(mask.sum()))
        return out.astype(np.float32)
    info = np.iinfo(ctype.dtype)
    full = rng.integers(info.min, info.max, n, dtype=ctype.dtype, endpoint=True)
    small = rng.integers(max(info.min, -10), 11, n).astype(ctype.dtype)
    extremes = np.array(
        [info.min, info.max, 0, 1, info.max // 2 + 1, info.min + 1], dtype=ctype.dtype
    )
    pick = rng.random(n)
    out = np.where(pick < 0.4, small, full)
    mask = pick > 0.85
    out[mask] = rng.choice(extremes, int(mask.sum()))
    return out.astype(ctype.dtype)


def _store(
    gen: BodyGenerator, buf: Buffer, value: Expr, kernel_stores: dict[tuple[str, int], str]
) -> None:
    """``buf[tid * K + j] = value;`` — slot j of this thread; K is patched in afterwards."""
    rng = gen.rng
    slot = buf.slots
    buf.slots += 1
    if buf.ctype == ULONG and rng.random() < 0.7:
        value = Cast(rng.choice(("c", "func", "static")), value, ULONG)
    template = f"{buf.name}[{gen.tid} * @{buf.name}@ + {slot}] = {{}};"
    gen.emit_expr_stmt(template, value)
    kernel_stores[(buf.name, slot)] = gen.lines[-1].strip()


def _store_bytes(gen: BodyGenerator, buf: Buffer, value: Expr, kernel_stores: dict[tuple[str, int], str]) -> None:
    """Slot j of this thread written piece by piece through narrower views of the buffer:
    ``ulong wN = value;`` then its 8 bytes as uchar, ushort or uint stores (little-endian)."""
    rng = gen.rng
    slot = buf.slots
    buf.slots += 1
    word = gen.fresh("w")
    gen.emit_expr_stmt(f"ulong {word} = {{}};", Cast("c", value, ULONG) if value.ctype != ULONG else value)
    byte = 0
    while byte < 8:
        width = rng.choice([w for w in (1, 2, 4) if byte % w == 0 and byte + w <= 8])
        view = {1: UCHAR, 2: USHORT, 4: UINT}[width]
        where = f"({gen.tid} * @{buf.name}@ + {slot}) * {8 // width} + {byte // width}"
        gen.emit(f"((device {view.name}*){buf.name})[{where}] = {view.name}({word} >> {8 * byte});")
        byte += width
    kernel_stores[(buf.name, slot)] = f"{word} = {value.render()} (stored byte by byte)"


def _prefill(gen: BodyGenerator, outputs: list[Buffer], stores: dict[tuple[str, int], str]) -> None:
    """Write every output slot first; then the body may ``return`` early, and some slots
    become accumulators the body reads and updates in device memory."""
    rng = gen.rng
    for buf in outputs:
        for _ in range(rng.randint(0, 2)):
            slot = buf.slots
            buf.slots += 1
            name = f"{buf.name}[{gen.tid} * @{buf.name}@ + {slot}]"
            gen.scopes[0].append(Var(name, buf.ctype, kind="outslot"))
            stores[(buf.name, slot)] = f"{name} (an accumulator: prefilled, updated by the body)"
    for buf in outputs:
        j = gen.fresh("j")
        value = float_literal(rng) if buf.ctype.is_float else int_literal(rng)
        gen.emit(
            f"for (uint {j} = 0; {j} < @{buf.name}@; {j}++) "
            f"{buf.name}[{gen.tid} * @{buf.name}@ + {j}] = {value.text};"
        )
    gen.may_return = True


def generate_kernel(seed: int, index: int) -> Kernel:
    """Kernel ``index`` of the run with ``seed``; the same pair always gives the same kernel."""
    rng = random.Random(f"msl-diff:{seed}:{index}")
    data_rng = np.random.default_rng([seed, index])
    n = rng.choice((32, 48, 64))
    threadgroup = rng.choice((32, 16, n, 24))
    inputs = [Buffer(f"in{i}", rng.choice(VALUE_TYPES)) for i in range(rng.randint(1, 3))]
    if rng.random() < 0.3:
        inputs.append(Buffer("s0", rng.choice(VALUE_TYPES), scalar=True))
    narrow = rng.choice(INT_TYPES)
    outputs = [Buffer("out_u", ULONG), Buffer("out_f", FLOAT), Buffer("out_n", narrow)]

    header, structs = make_structs(rng, f"k{index}") if rng.random() < 0.3 else ("", [])
    gen = BodyGenerator(rng, n, inputs, structs)
    tid_decl = rng.choice(("uint", "const uint", "uint"))
    gen.emit(f"{tid_decl} {gen.tid} = thread_position_in_grid.x;")
    stores: dict[tuple[str, int], str] = {}
    if rng.random() < 0.35:
        _prefill(gen, outputs, stores)
    for ctype in rng.sample(VALUE_TYPES, rng.randint(3, 5)):
        gen.declare(ctype)
    for _ in range(rng.randint(5, 12)):
        gen.statement()

    for v in gen.scopes[0]:
        out = outputs[1] if v.ctype.is_float else outputs[0]
        if v.kind == "scalar":
            _store(gen, out, gen.var_leaf(v), stores)
        elif v.kind == "array":
            for k in range(v.length):
                _store(gen, out, Index(v.name, Leaf(str(k), INT), v.ctype), stores)
    for _ in range(rng.randint(1, 2)):
        _store(gen, outputs[0], gen.expr("int", gen.depth()), stores)
        _store(gen, outputs[1], gen.expr("float", gen.depth()), stores)
    for _ in range(rng.randint(1, 3)):
        _store(gen, outputs[2], gen.expr("int", gen.depth()), stores)
    if rng.random() < 0.3:
        _store_bytes(gen, outputs[0], gen.expr("int", gen.depth()), stores)

    def patch(lines: list[str]) -> str:
        text = "\n".join(lines) + "\n"
        for buf in outputs:
            text = text.replace(f"@{buf.name}@", str(buf.slots))
        return text

    slots = {buf.name: buf.slots for buf in outputs}
    stores = {key: line.replace(f"@{key[0]}@", str(slots[key[0]])) for key, line in stores.items()}
    return Kernel(
        name=f"k{index}",
        seed=seed,
        index=index,
        body=patch(gen.lines),
        check_body=patch(gen.check_lines),
        n_threads=n,
        threadgroup=threadgroup,
        inputs=inputs,
        outputs=outputs,
        input_data=[
            random_values(data_rng, b.ctype, 1).reshape(())
            if b.scalar
            else random_values(data_rng, b.ctype, n)
            for b in inputs
        ],
        stores=stores,
        header=header,
    )
