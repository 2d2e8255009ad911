"""The Metal standard library as the simulator knows it: every builtin function and constant,
each with its type rule (used by the checker) and its vectorised implementation (used by the
executor). One module per family; a new builtin goes into its family's module and is
registered there with ``base.register``.
"""

from __future__ import annotations

from typing import Any

from ..lang.metal_namespace import strip_metal_namespace
from ..lang.types import Type
from . import atomics, integer, math, matrix_functions, simd, simdgroup_matrix, sync  # noqa: F401  (each registers its builtins)
from .base import BUILTINS, Builtin
from .constants import CONSTANT_NAMES, NUMERIC_LIMITS, lookup_constant
from .std_types import STD_TYPES_SOURCE

#: Namespaces whose functions are the library's own under their plain names, within ``metal``
#: (``metal::fast::exp``, ``precise::exp``) or beside it (``simd::``).
_INNER_NAMESPACES = ("precise::", "fast::", "simd::")


def lookup_builtin(name: str) -> Builtin | None:
    """The builtin a (possibly qualified) name calls, or None."""
    plain = strip_metal_namespace(name)
    for prefix in _INNER_NAMESPACES:
        if plain.startswith(prefix):
            plain = plain[len(prefix):]
            break
    if "numeric_limits<>::" in plain:
        return NUMERIC_LIMITS
    return BUILTINS.get(plain)


class StandardLibrary:
    """The builtins as the checker looks them up (``front.checker.Library``)."""

    def function(self, name: str) -> Builtin | None:
        return lookup_builtin(name)

    def constant(self, name: str, template_args: Any, checker: Any) -> tuple[Type, object] | None:
        return lookup_constant(name, template_args, checker)

    def function_names(self) -> set[str]:
        return set(BUILTINS)

    def constant_names(self) -> set[str]:
        return set(CONSTANT_NAMES)

    def types_source(self) -> str:
        return STD_TYPES_SOURCE


STANDARD_LIBRARY = StandardLibrary()

__all__ = ["STANDARD_LIBRARY", "StandardLibrary", "lookup_builtin", "lookup_constant", "BUILTINS", "Builtin"]
