"""``<metal_type_traits>``: the value traits shader headers use to pick overloads.

``is_same_v<T, U>`` (and ``is_same<T, U>::value``), ``is_floating_point_v``, ``is_integral_v``,
``is_signed_v``, ``is_unsigned_v``, ``is_arithmetic_v``, ``is_scalar_v``, ``is_vector_v`` and
``is_pointer_v``, each ``constexpr bool``. Metal extends the arithmetic traits to vectors by their
element type (``is_floating_point_v<float2>`` is true: PyTorch's headers define
``is_scalar_floating_point_v`` as ``is_floating_point_v<T> && is_scalar_v<T>``, and its complex
kernels over ``float2`` select the floating-point overloads); ``is_scalar_v`` holds for scalars
and pointers only; ``half`` and ``bfloat`` are floating point; ``bool`` is integral and unsigned. The type-producing traits (``enable_if_t``,
``conditional_t``) are type names: the checker resolves them (``checker/typenames.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..front import ast
from ..lang.errors import CompileError
from ..lang.metal_namespace import strip_metal_namespace
from ..lang.types import BOOL, PointerType, ScalarType, Type, VectorType


def _scalar(pred: Callable[[ScalarType], bool]) -> Callable[[Type], bool]:
    """A trait of a scalar type, and of a vector by its element type."""
    return lambda t: (isinstance(t, ScalarType) and pred(t)) or (isinstance(t, VectorType) and pred(t.elem))


#: One-type traits: name -> predicate.
UNARY_TRAITS: dict[str, Callable[[Type], bool]] = {
    "is_floating_point": _scalar(lambda t: t.is_float),
    "is_integral": _scalar(lambda t: t.is_int or t.is_bool),
    "is_signed": _scalar(lambda t: t.signed and not t.is_bool),
    "is_unsigned": _scalar(lambda t: t.is_bool or (t.is_int and not t.signed)),
    "is_arithmetic": _scalar(lambda t: True),
    "is_scalar": lambda t: isinstance(t, ScalarType | PointerType),
    "is_vector": lambda t: isinstance(t, VectorType),
    "is_pointer": lambda t: isinstance(t, PointerType),
}

#: Every trait's name, as the parser must know it to read its template argument list.
TRAIT_NAMES = {*UNARY_TRAITS, "is_same"}


def trait_base(name: str) -> str | None:
    """The trait a name reads (``metal::is_same_v`` and ``is_same<>::value`` are ``is_same``)."""
    plain = strip_metal_namespace(name)
    for suffix in ("_v", "<>::value"):
        if plain.endswith(suffix) and plain[: -len(suffix)] in TRAIT_NAMES:
            return plain[: -len(suffix)]
    return None


def lookup_trait(name: str, targs: Any, ck: Any) -> tuple[Type, object] | None:
    """``(bool, value)`` for a trait applied to its template arguments, or None if ``name``
    is no trait. ``ck`` resolves the argument types (the checker)."""
    base = trait_base(name)
    if base is None or targs is None:
        return None
    arity = 2 if base == "is_same" else 1
    if len(targs) != arity:
        where = targs[0].pos if targs else None
        if where is None:
            return None
        raise CompileError(f"'{base}' takes {arity} type argument(s), {len(targs)} given", where)
    types = [ck.types.resolve_type(a) if isinstance(a, ast.TypeSpec) else _not_a_type(base, a) for a in targs]
    value = types[0] == types[1] if base == "is_same" else UNARY_TRAITS[base](types[0])
    return BOOL, bool(value)


def _not_a_type(trait: str, arg: Any) -> Type:
    raise CompileError(f"'{trait}' takes types as its template arguments, not a value", arg.pos)
