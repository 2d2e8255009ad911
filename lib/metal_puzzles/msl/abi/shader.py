"""The second ABI: how a whole shader's kernel function takes its arguments.

Beside MLX's generated signature (``signature.py``), a ``.metal`` file declares its own: each
parameter says where its value comes from with an attribute. Buffers (``device``/``constant``
pointers and ``constant`` references) take ``[[buffer(n)]]``, or the lowest index no other
buffer claims when the index is left out (as the Metal compiler assigns them); threadgroup
memory takes ``[[threadgroup(n)]]``, its size given at launch; thread attributes keep the name
and type the author chose (``uint gid [[thread_position_in_grid]]``, ``ushort2 lid
[[thread_position_in_threadgroup]]``). This module checks those declarations and describes the
bindings; it knows types but no syntax (the front end hands it resolved types).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...compat import StrEnum
from ..lang.errors import CompileError, Pos
from ..lang.kernel_parameters import METAL_ATTRIBUTES
from ..lang.types import (
    AddressSpace,
    ArrayType,
    AtomicType,
    PointerType,
    ScalarType,
    StructType,
    Type,
    VectorType,
)

#: Thread attributes and how many components their value has (a uint3 attribute may be declared
#: with fewer: ``uint gid [[thread_position_in_grid]]`` is the x component).
ATTRIBUTE_WIDTHS: dict[str, int] = {name: 3 if type_text == "uint3" else 1 for name, type_text in METAL_ATTRIBUTES}

#: Integer element types a thread attribute may be declared with.
_ATTRIBUTE_ELEMENTS = ("uint", "ushort", "int", "short")


class Binding(StrEnum):
    """Where a kernel parameter's value comes from at launch."""

    BUFFER = "buffer"  # a device or constant pointer: an array the host binds
    CONSTANT_VALUE = "constant value"  # a constant reference: bytes the host sets (a number, a struct)
    THREADGROUP = "threadgroup"  # threadgroup memory of a size the launch gives
    ATTRIBUTE = "attribute"  # a thread attribute, filled in per thread


@dataclass(frozen=True)
class ShaderParam:
    """One kernel parameter: its name and type as written, how it is bound, and at which index
    (buffer or threadgroup index; None for thread attributes)."""

    name: str
    ty: Type
    binding: Binding
    index: int | None
    pos: Pos
    attribute: str | None = None  # the thread attribute's name, for ATTRIBUTE bindings
    #: A reference parameter's address space and constness as written ('device float& x'): one
    #: object in a buffer, writable when it is a non-const device reference.
    ref_space: AddressSpace | None = None
    ref_const: bool = False

    @property
    def bound_index(self) -> int:
        """The index the host binds it at (``[[buffer(i)]]``, ``[[threadgroup(i)]]``): every
        parameter but a thread attribute has one (``describe_params`` gives it)."""
        if self.index is None:
            raise ValueError(f"'{self.name}' is a thread attribute: nothing is bound at an index to it")
        return self.index

    @property
    def element(self) -> Type:
        """What one element of the bound memory holds."""
        return self.ty.pointee if isinstance(self.ty, PointerType) else self.ty

    @property
    def writable(self) -> bool:
        if isinstance(self.ty, PointerType):
            return not self.ty.const and self.ty.space == AddressSpace.DEVICE
        return self.ref_space == AddressSpace.DEVICE and not self.ref_const


@dataclass(frozen=True)
class DeclaredParam:
    """A parameter as the front end resolved it: the attribute's name and index as written."""

    name: str
    ty: Type
    reference: bool
    attribute: str | None
    index: int | None
    pos: Pos
    space: AddressSpace | None = None  # the address space written before the type
    const: bool = False


def describe_params(kernel: str, params: list[DeclaredParam]) -> list[ShaderParam]:
    """Check a kernel function's parameters and say how each is bound; buffers written without
    an index get the lowest ones left free, in order."""
    out: list[ShaderParam | None] = []
    taken: dict[tuple[Binding, int], str] = {}
    implicit: list[int] = []
    for k, p in enumerate(params):
        binding = _binding_of(kernel, p)
        if binding == Binding.ATTRIBUTE:
            _check_attribute_type(p)
            out.append(ShaderParam(p.name, p.ty, binding, None, p.pos, attribute=p.attribute))
            continue
        if p.index is None and p.attribute is not None:
            raise CompileError(f"[[{p.attribute}]] on '{p.name}' needs an index, as in [[{p.attribute}(0)]]", p.pos)
        if p.index is None:
            implicit.append(k)
            out.append(None)
            continue
        key = (Binding.THREADGROUP if binding == Binding.THREADGROUP else Binding.BUFFER, p.index)
        if key in taken:
            raise CompileError(f"'{p.name}' and '{taken[key]}' both claim [[{key[0]}({p.index})]]", p.pos)
        taken[key] = p.name
        out.append(ShaderParam(p.name, p.ty, binding, p.index, p.pos, ref_space=_ref_space(p), ref_const=p.const))
    free = 0
    for k in implicit:
        p = params[k]
        binding = _binding_of(kernel, p)
        space = Binding.THREADGROUP if binding == Binding.THREADGROUP else Binding.BUFFER
        while (space, free) in taken:
            free += 1
        taken[(space, free)] = p.name
        out[k] = ShaderParam(p.name, p.ty, binding, free, p.pos, ref_space=_ref_space(p), ref_const=p.const)
    return [p for p in out if p is not None]


def _ref_space(p: DeclaredParam) -> AddressSpace | None:
    return (p.space or AddressSpace.THREAD) if p.reference else None


def _binding_of(kernel: str, p: DeclaredParam) -> Binding:
    if p.attribute in ATTRIBUTE_WIDTHS:
        return Binding.ATTRIBUTE
    if p.attribute not in (None, "buffer", "threadgroup"):
        raise CompileError(f"kernel '{kernel}': parameter '{p.name}' has the attribute [[{p.attribute}]], which the "
                           "simulator does not know (buffers take [[buffer(n)]], threadgroup memory "
                           "[[threadgroup(n)]], thread attributes their own names)", p.pos)
    ty = p.ty
    if isinstance(ty, PointerType):
        if ty.space == AddressSpace.THREADGROUP:
            return Binding.THREADGROUP
        if ty.space in (AddressSpace.DEVICE, AddressSpace.CONSTANT):
            return Binding.BUFFER
        raise CompileError(f"kernel parameter '{p.name}' points to {ty.space} memory; a kernel's pointers point to "
                           "device, constant or threadgroup memory", p.pos)
    if p.reference and isinstance(ty, AtomicType) and p.space == AddressSpace.DEVICE:
        return Binding.BUFFER  # a counter: 'device atomic_uint& count [[buffer(1)]]'
    if p.reference and isinstance(ty, ScalarType | VectorType | StructType | ArrayType):
        if p.space == AddressSpace.DEVICE:  # one object in a buffer ('device float& total [[buffer(2)]]')
            return Binding.BUFFER
        if p.space not in (None, AddressSpace.CONSTANT):
            raise CompileError(f"kernel parameter '{p.name}' is a {p.space} reference; a kernel's references "
                               "refer to device or constant memory", p.pos)
        return Binding.CONSTANT_VALUE
    if p.attribute is None:
        raise CompileError(f"kernel parameter '{p.name}' is passed by value without an attribute; pass it as "
                           f"'constant {ty}& {p.name} [[buffer(n)]]' or name the thread attribute it receives", p.pos)
    raise CompileError(f"kernel parameter '{p.name}' of type '{ty}' cannot be bound to a buffer", p.pos)


def _check_attribute_type(p: DeclaredParam) -> None:
    ty = p.ty
    elem = ty.elem if isinstance(ty, VectorType) else ty
    width = ty.n if isinstance(ty, VectorType) else 1
    if not isinstance(elem, ScalarType) or elem.name not in _ATTRIBUTE_ELEMENTS or p.reference:
        raise CompileError(f"thread attribute '{p.name}' [[{p.attribute}]] has type '{ty}'; declare it uint or "
                           "ushort (or a vector of them)", p.pos)
    components = ATTRIBUTE_WIDTHS[p.attribute or ""]
    if width > components:
        raise CompileError(f"[[{p.attribute}]] has {components} component(s); '{p.name}' is declared with {width}",
                           p.pos)
