"""Metal types written as CUDA C++ types: scalars as CUDA's (half as ``__half``, bfloat as
``__nv_bfloat16``), vectors as the prelude's ``mp_vec<T, N>`` (packed: ``mp_packed``), atomics
as the type they hold (CUDA's atomic functions take plain pointers), address spaces dropped
(CUDA's pointers are generic) except ``threadgroup``, which a declaration marks ``__shared__``."""

from __future__ import annotations

from ..lang.errors import CompileError, Pos
from ..lang.types import (
    AtomicType,
    EnumType,
    MatrixType,
    PointerType,
    ScalarType,
    SimdgroupMatrixType,
    StructType,
    Type,
    VectorType,
    VoidType,
)

#: Each Metal scalar's CUDA spelling (the names mx.fast.cuda_kernel's signature uses for dtypes).
SCALAR_CTYPES: dict[str, str] = {
    "bool": "bool", "char": "signed char", "uchar": "unsigned char", "short": "short",
    "ushort": "unsigned short", "int": "int", "uint": "unsigned int", "long": "long long",
    "ulong": "unsigned long long", "half": "__half", "bfloat": "__nv_bfloat16", "float": "float",
    "simd_vote": "unsigned long long",
}

#: The CUDA type MLX's cuda_kernel declares for each dtype (dtype_to_cuda_type).
DTYPE_CTYPES: dict[str, str] = {
    "bool": "bool", "int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "uint16": "uint16_t",
    "int32": "int32_t", "uint32": "uint32_t", "int64": "int64_t", "uint64": "uint64_t",
    "float16": "__half", "bfloat16": "__nv_bfloat16", "float32": "float",
}
#: The same types in the translation unit, which needs no <cstdint>.
DTYPE_UNIT_CTYPES: dict[str, str] = {
    "bool": "bool", "int8": "signed char", "uint8": "unsigned char", "int16": "short", "uint16": "unsigned short",
    "int32": "int", "uint32": "unsigned int", "int64": "long long", "uint64": "unsigned long long",
    "float16": "__half", "bfloat16": "__nv_bfloat16", "float32": "float",
}


class TypeNames:
    """Spells types; gives each struct type one CUDA name and remembers it, to be defined."""

    def __init__(self) -> None:
        self.structs: dict[str, StructType] = {}

    def ctype(self, ty: Type, pos: Pos) -> str:
        if isinstance(ty, VoidType):
            return "void"
        if isinstance(ty, ScalarType):
            return SCALAR_CTYPES[ty.name]
        if isinstance(ty, VectorType):
            kind = "mp_packed" if ty.packed else "mp_vec"
            return f"{kind}<{SCALAR_CTYPES[ty.elem.name]}, {ty.n}>"
        if isinstance(ty, AtomicType):
            return SCALAR_CTYPES[ty.elem.name]
        if isinstance(ty, SimdgroupMatrixType):
            return f"mp_sgmat<{SCALAR_CTYPES[ty.elem.name]}>"
        if isinstance(ty, MatrixType):
            return f"mp_mat<{SCALAR_CTYPES[ty.elem.name]}, {ty.cols}, {ty.rows}>"
        if isinstance(ty, PointerType):
            inner = self.ctype(ty.pointee, pos)
            return f"{'const ' if ty.const else ''}{inner}*"
        if isinstance(ty, EnumType):
            return "int"
        if isinstance(ty, StructType):
            name = struct_name(ty)
            self.structs.setdefault(name, ty)
            return name
        raise CompileError(f"the type '{ty}' is not supported on CUDA: the translator has no CUDA form for it",
                           pos)

    def declare(self, ty: Type, name: str, pos: Pos) -> str:
        """A declaration of ``name`` with type ``ty`` (arrays' sizes after the name)."""
        from ..lang.types import ArrayType
        dims = ""
        while isinstance(ty, ArrayType):
            dims += f"[{ty.n}]"
            ty = ty.elem
        return f"{self.ctype(ty, pos)} {name}{dims}"


def struct_name(ty: StructType) -> str:
    safe = "".join(ch if ch.isalnum() else "_" for ch in ty.name)
    return f"mp_struct_{safe}"
