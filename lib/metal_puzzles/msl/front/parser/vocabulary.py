"""The words and operators the parser knows: address spaces, qualifiers, the names that take
template arguments, operator precedence, and small helpers on names every part of it uses."""

from __future__ import annotations

from ...lang.errors import CompileError
from ...lang.types import AddressSpace
from ..ast import AssignOp, BinaryOp, UnaryOp
from ..lexer import Token

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

#: The standard attributes clang knows on a statement, a label or a declaration in a body; it
#: ignores any other unscoped one with a warning ('[[unroll]] for ...').
STATEMENT_ATTRIBUTES = {"likely", "unlikely", "fallthrough", "assume", "maybe_unused", "nodiscard", "deprecated",
                        "noreturn", "carries_dependency", "no_unique_address"}

#: Words that may precede a constructor's name.
CONSTRUCTOR_PREFIXES = ("constexpr", "inline", "METAL_FUNC", "explicit")

#: Type names offered as corrections of an unknown one ('flaot x = 1;'), besides the program's own.
COMMON_TYPES = {
    "float", "half", "bfloat", "int", "uint", "short", "ushort", "char", "uchar", "long", "ulong", "bool",
    "float2", "float3", "float4", "half2", "half3", "half4", "int2", "int3", "int4", "uint2", "uint3", "uint4",
    "size_t", "int32_t", "uint32_t", "int64_t", "uint64_t", "auto",
}

#: Operators a struct may overload (besides '[]'), as the simulator runs them.
OVERLOADABLE_OPERATORS = ("+", "-", "*", "/", "%", "^", "&", "|", "~", "!", "<", ">", "<=", ">=", "==", "!=",
                          "<<", ">>", "+=", "-=", "*=", "/=", "%=", "^=", "&=", "|=", "<<=", ">>=")
#: The binary operators from the loosest to the tightest binding.
BINARY_PRECEDENCE: list[tuple[BinaryOp, ...]] = [
    (BinaryOp.LOGICAL_OR,), (BinaryOp.LOGICAL_AND,), (BinaryOp.BIT_OR,), (BinaryOp.BIT_XOR,), (BinaryOp.BIT_AND,),
    (BinaryOp.EQ, BinaryOp.NE), (BinaryOp.LT, BinaryOp.GT, BinaryOp.LE, BinaryOp.GE),
    (BinaryOp.SHL, BinaryOp.SHR), (BinaryOp.ADD, BinaryOp.SUB), (BinaryOp.MUL, BinaryOp.DIV, BinaryOp.MOD),
]
#: Each binary operator's precedence: its index in BINARY_PRECEDENCE (higher binds tighter).
BINARY_LEVEL: dict[BinaryOp, int] = {op: level for level, ops in enumerate(BINARY_PRECEDENCE) for op in ops}
assert set(BINARY_LEVEL) == set(BinaryOp), "every binary operator has its precedence"
#: The binary operator each operator token is, if any.
BINARY_OPERATORS: dict[str, BinaryOp] = {op.value: op for op in BinaryOp}
#: Operator tokens that read as an assignment, a prefix operator, or '++'/'--' after an operand.
#: (Dictionaries from the token's text: cheaper than calling the enum on every operator.)
ASSIGN_OPS: dict[str, AssignOp] = {op.value: op for op in AssignOp}
PREFIX_OPS: dict[str, UnaryOp] = {op.value: op for op in UnaryOp}
POSTFIX_OPS: dict[str, UnaryOp] = {op.value: op for op in (UnaryOp.INC, UnaryOp.DEC)}

#: Parentheses, operators and blocks nest at most this deep (recursive descent uses the stack).
MAX_NESTING = 64


def add_suffixes(names: set[str], qualified: str) -> None:
    """Add every name 'a::b::T' can be written with from inside its namespaces ('a::b::T', 'b::T', 'T')."""
    parts = qualified.split("::")
    for k in range(len(parts)):
        names.add("::".join(parts[k:]))


def address_space(tok: Token) -> AddressSpace:
    try:
        return AddressSpace(tok.text)
    except ValueError:
        raise CompileError(f"the '{tok.text}' address space is not supported by the simulator (device, constant, "
                           "threadgroup and thread are)", tok.pos) from None
