"""Names of the Metal standard library as the code writes them: ``exp``, ``metal::exp``,
``::metal::exp``. The simulator's library (builtins, constants, types, traits) knows each by its
plain name, so every look-up strips the qualifier here, by one rule: a leading ``::`` (the global
namespace) and then a leading ``metal::``, each as a whole qualifier. A ``metal`` inside a longer
name is another namespace (``c10::metal::max`` is PyTorch's, ``metalx::f`` someone else's) and
stays, and so does a second ``metal::`` (``metal::metal::exp`` is no name of the library).
"""

from __future__ import annotations

#: The standard library's namespace.
METAL_NAMESPACE = "metal"

_QUALIFIER = METAL_NAMESPACE + "::"


def is_metal_qualified(name: str) -> bool:
    """Whether ``name`` is qualified by the ``metal`` namespace: ``metal::x`` or ``::metal::x``."""
    return name.removeprefix("::").startswith(_QUALIFIER)


def strip_metal_namespace(name: str) -> str:
    """The plain name the library knows ``name`` by: ``metal::exp``, ``::metal::exp`` and ``::exp``
    are ``exp``; ``metal::fast::exp`` is ``fast::exp``; other names are returned as they are."""
    return name.removeprefix("::").removeprefix(_QUALIFIER)


__all__ = ["METAL_NAMESPACE", "is_metal_qualified", "strip_metal_namespace"]
