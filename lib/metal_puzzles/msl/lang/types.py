"""The MSL type system: scalars, vectors, pointers (with address spaces), arrays and atomics,
plus C's integer promotions and usual arithmetic conversions."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import IntFlag
from functools import cache

import numpy as np

from ...compat import StrEnum
from .metal_namespace import strip_metal_namespace


class AddressSpace(StrEnum):
    """Where an object lives: Metal's address spaces."""

    DEVICE = "device"  # kernel buffers, read-write, visible to the whole grid
    CONSTANT = "constant"  # read-only buffers and program-scope constants
    THREADGROUP = "threadgroup"  # shared by the threads of one threadgroup
    THREAD = "thread"  # private to one thread


class Type:
    """Base of all types. Types are immutable and compared by value."""

    def __str__(self) -> str:  # pragma: no cover - overridden
        return self.__class__.__name__


@dataclass(frozen=True)
class VoidType(Type):
    def __str__(self) -> str:
        return "void"


@dataclass(frozen=True)
class ScalarType(Type):
    name: str
    kind: str  # 'bool', 'int' or 'float'
    bits: int
    signed: bool
    rank: int  # integer conversion rank (bool 0, char 1, short 2, int 3, long 4); floats: precision order

    def __str__(self) -> str:
        return self.name

    @property
    def dtype(self) -> np.dtype:
        """NumPy storage dtype. bfloat is kept in float32 and rounded after every operation."""
        return _STORAGE[self.name]

    @property
    def is_int(self) -> bool:
        return self.kind == "int"

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def size(self) -> int:
        return max(self.bits // 8, 1)


BOOL = ScalarType("bool", "bool", 8, False, 0)
CHAR = ScalarType("char", "int", 8, True, 1)
UCHAR = ScalarType("uchar", "int", 8, False, 1)
SHORT = ScalarType("short", "int", 16, True, 2)
USHORT = ScalarType("ushort", "int", 16, False, 2)
INT = ScalarType("int", "int", 32, True, 3)
UINT = ScalarType("uint", "int", 32, False, 3)
LONG = ScalarType("long", "int", 64, True, 4)
ULONG = ScalarType("ulong", "int", 64, False, 4)
HALF = ScalarType("half", "float", 16, True, 1)
BFLOAT = ScalarType("bfloat", "float", 16, True, 1)
FLOAT = ScalarType("float", "float", 32, True, 2)
VOID = VoidType()
#: simd_vote: a 64-bit lane mask with all()/any() members; converts explicitly to ulong.
SIMD_VOTE = ScalarType("simd_vote", "int", 64, False, 4)

SCALARS = {t.name: t for t in (BOOL, CHAR, UCHAR, SHORT, USHORT, INT, UINT, LONG, ULONG, HALF, BFLOAT, FLOAT)}

_STORAGE = {
    "bool": np.dtype(np.bool_), "char": np.dtype(np.int8), "uchar": np.dtype(np.uint8),
    "short": np.dtype(np.int16), "ushort": np.dtype(np.uint16), "int": np.dtype(np.int32),
    "uint": np.dtype(np.uint32), "long": np.dtype(np.int64), "ulong": np.dtype(np.uint64),
    "half": np.dtype(np.float16), "bfloat": np.dtype(np.float32), "float": np.dtype(np.float32),
    "simd_vote": np.dtype(np.uint64),
}

#: Alternative spellings of scalar types (Metal's and MLX's typedefs).
SCALAR_ALIASES = {
    "int8_t": "char", "uint8_t": "uchar", "int16_t": "short", "uint16_t": "ushort",
    "int32_t": "int", "uint32_t": "uint", "int64_t": "long", "uint64_t": "ulong",
    "size_t": "ulong", "ptrdiff_t": "long", "float16_t": "half", "bfloat16_t": "bfloat",
    "float32_t": "float", "unsigned": "uint", "signed": "int", "bfloat16": "bfloat",
}

#: NumPy-style dtype names (as used by the kernel API) to MSL scalar types.
DTYPE_NAMES: dict[str, ScalarType] = {
    "bool": BOOL, "int8": CHAR, "uint8": UCHAR, "int16": SHORT, "uint16": USHORT,
    "int32": INT, "uint32": UINT, "int64": LONG, "uint64": ULONG, "float16": HALF,
    "bfloat16": BFLOAT, "float32": FLOAT,
}


@dataclass(frozen=True)
class VectorType(Type):
    elem: ScalarType
    n: int
    packed: bool = False

    def __str__(self) -> str:
        return f"{'packed_' if self.packed else ''}{self.elem.name}{self.n}"

    @property
    def stride(self) -> int:
        """Elements a vector occupies in memory: 3-vectors are padded to 4 unless packed."""
        return 4 if self.n == 3 and not self.packed else self.n


@cache
def vector(elem: ScalarType, n: int, packed: bool = False) -> VectorType:
    return VectorType(elem, n, packed)


@dataclass(frozen=True)
class AtomicType(Type):
    elem: ScalarType

    def __str__(self) -> str:
        return f"atomic<{self.elem}>"


@dataclass(frozen=True)
class PointerType(Type):
    pointee: Type
    space: AddressSpace
    const: bool = False

    def __str__(self) -> str:
        return f"{'const ' if self.const else ''}{self.space} {self.pointee}*"


@dataclass(frozen=True)
class ArrayType(Type):
    elem: Type
    n: int

    def __str__(self) -> str:
        inner: Type = self
        dims = ""
        while isinstance(inner, ArrayType):
            dims += f"[{inner.n}]"
            inner = inner.elem
        return f"{inner}{dims}"


@dataclass(frozen=True)
class MatrixType(Type):
    """``floatCxR`` / ``halfCxR``: C columns of R-vectors, column-major (``m[i]`` is column i)."""

    elem: ScalarType
    cols: int
    rows: int

    def __str__(self) -> str:
        return f"{self.elem.name}{self.cols}x{self.rows}"

    @property
    def column(self) -> VectorType:
        return vector(self.elem, self.rows)


@cache
def matrix(elem: ScalarType, cols: int, rows: int) -> MatrixType:
    return MatrixType(elem, cols, rows)


@dataclass(frozen=True)
class SimdgroupMatrixType(Type):
    """``simdgroup_matrix<T, 8, 8>``: one 8x8 matrix per SIMD-group, held as two elements in each
    of its 32 threads (``thread_elements()``)."""

    elem: ScalarType
    cols: int = 8
    rows: int = 8

    def __str__(self) -> str:
        return f"simdgroup_{self.elem.name}{self.cols}x{self.rows}"


@dataclass(frozen=True)
class StructField:
    name: str
    ty: Type
    offset: int  # in bytes from the start of the struct


@dataclass(frozen=True, eq=False)
class StructType(Type):
    """A ``struct`` declared in the header. Compared by identity, as C++ types are by name.

    ``methods`` maps a member function's name to its definitions (syntax trees the checker
    instantiates with an implicit ``this``)."""

    name: str
    fields: tuple[StructField, ...]
    size: int
    align: int
    methods: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    def __str__(self) -> str:
        return self.name

    def field_named(self, name: str) -> StructField | None:
        return next((f for f in self.fields if f.name == name), None)


def layout_struct(name: str, members: list[tuple[str, Type]], methods: dict | None = None, *,
                  union: bool = False) -> StructType:
    """Lay members out as Metal (and C) do: each at the next multiple of its alignment (a union's
    all at 0), the size rounded up to its largest member alignment."""
    offset = 0
    end = 0
    align = 1
    fields = []
    for fname, ty in members:
        a = align_of(ty)
        offset = 0 if union else -(-offset // a) * a
        fields.append(StructField(fname, ty, offset))
        offset += size_of(ty)
        end = max(end, offset)
        align = max(align, a)
    size = max(-(-end // align) * align, 1)
    return StructType(name, tuple(fields), size, align, methods if methods is not None else {})


@dataclass(frozen=True)
class EnumType(Type):
    """Metal's small enums used as arguments (mem_flags, memory_order)."""

    name: str

    def __str__(self) -> str:
        return self.name


class MemFlags(IntFlag):
    """``mem_flags``: which memory a barrier orders besides synchronising execution."""

    NONE = 0
    DEVICE = 1
    THREADGROUP = 2
    TEXTURE = 4
    THREADGROUP_IMAGEBLOCK = 8
    OBJECT_DATA = 16


MEM_FLAGS = EnumType("mem_flags")
MEMORY_ORDER = EnumType("memory_order")

VECTOR_ELEMS = ("bool", "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "half", "bfloat", "float")


_MATRIX_NAME = re.compile(r"(float|half)([234])x([234])")
_SIMDGROUP_MATRIX_NAME = re.compile(r"simdgroup_(float|half|bfloat)8x8")


def lookup_builtin_type(name: str) -> Type | None:
    """Resolve a builtin type name such as 'float', 'uint32_t', 'half4', 'packed_float3'."""
    name = strip_metal_namespace(name)
    name = SCALAR_ALIASES.get(name, name)
    if name in SCALARS:
        return SCALARS[name]
    if name == "void":
        return VOID
    if name == "simd_vote":
        return SIMD_VOTE
    m = _MATRIX_NAME.fullmatch(name)
    if m is not None:
        elem = SCALARS[SCALAR_ALIASES.get(m.group(1), m.group(1))]
        return matrix(elem, int(m.group(2)), int(m.group(3)))
    m = _SIMDGROUP_MATRIX_NAME.fullmatch(name)
    if m is not None:
        return SimdgroupMatrixType(SCALARS[m.group(1)])
    packed = name.startswith("packed_")
    base = name.removeprefix("packed_")
    if base and base[-1] in "234":
        elem_name = SCALAR_ALIASES.get(base[:-1], base[:-1])
        if elem_name in SCALARS and elem_name in VECTOR_ELEMS:
            return vector(SCALARS[elem_name], int(base[-1]), packed)
    if name.startswith("atomic_"):
        atomic_elem = {"atomic_int": INT, "atomic_uint": UINT, "atomic_float": FLOAT, "atomic_bool": BOOL}.get(name)
        if atomic_elem is not None:
            return AtomicType(atomic_elem)
    return None


def is_arith(t: Type) -> bool:
    return isinstance(t, ScalarType | VectorType)


def scalar_of(t: Type) -> ScalarType:
    if isinstance(t, VectorType):
        return t.elem
    assert isinstance(t, ScalarType), t
    return t


def with_elem(t: Type, elem: ScalarType) -> Type:
    """Same shape (scalar or n-vector) with another element type."""
    return vector(elem, t.n) if isinstance(t, VectorType) else elem


def promote(t: ScalarType) -> ScalarType:
    """C integer promotion: bool, char, short (signed or not) become int."""
    if t.kind in ("bool", "int") and t.rank < INT.rank:
        return INT
    return t


def _unsigned_of(t: ScalarType) -> ScalarType:
    return {3: UINT, 4: ULONG}[t.rank]


def usual_arithmetic(a: ScalarType, b: ScalarType) -> ScalarType:
    """C's usual arithmetic conversions for two scalar operand types."""
    if a.is_float or b.is_float:
        if a.is_float and b.is_float:
            if a == b:
                return a
            if FLOAT in (a, b):
                return FLOAT
            return FLOAT  # half with bfloat: Metal has no common type narrower than float
        return a if a.is_float else b
    a, b = promote(a), promote(b)
    if a == b:
        return a
    if a.signed == b.signed:
        return a if a.rank >= b.rank else b
    u, s = (a, b) if not a.signed else (b, a)
    if u.rank >= s.rank:
        return u
    if s.bits > u.bits:
        return s
    return _unsigned_of(s)


def size_of(t: Type) -> int:
    """sizeof in bytes, as Metal lays types out."""
    if isinstance(t, ScalarType):
        return t.size
    if isinstance(t, VectorType):
        return t.elem.size * t.stride
    if isinstance(t, ArrayType):
        return t.n * size_of(t.elem)
    if isinstance(t, AtomicType):
        return t.elem.size
    if isinstance(t, PointerType):
        return 8
    if isinstance(t, MatrixType):
        return t.cols * size_of(t.column)
    if isinstance(t, StructType):
        return t.size
    if isinstance(t, SimdgroupMatrixType):
        return 2 * t.elem.size  # what one thread holds
    raise TypeError(f"sizeof({t})")


def align_of(t: Type) -> int:
    """alignof in bytes: a scalar's size; 2-vectors twice the element, 3- and 4-vectors four
    times (packed vectors only the element's); arrays their element's; structs their largest
    member's; matrices their column's."""
    if isinstance(t, ScalarType):
        return t.size
    if isinstance(t, VectorType):
        if t.packed:
            return t.elem.size
        return t.elem.size * (2 if t.n == 2 else 4)
    if isinstance(t, ArrayType):
        return align_of(t.elem)
    if isinstance(t, AtomicType):
        return t.elem.size
    if isinstance(t, PointerType):
        return 8
    if isinstance(t, MatrixType):
        return align_of(t.column)
    if isinstance(t, StructType):
        return t.align
    if isinstance(t, SimdgroupMatrixType):
        return 2 * t.elem.size
    raise TypeError(f"alignof({t})")


def unit_of(t: Type) -> int:
    """The bytes a pointer to t counts its offset in: the size of t's scalars (one byte for a
    struct, whose members mix scalar types). Pointer arithmetic moves by ``units_in(t)``."""
    if isinstance(t, ScalarType):
        return t.size
    if isinstance(t, VectorType | AtomicType | MatrixType | SimdgroupMatrixType):
        return t.elem.size
    if isinstance(t, ArrayType):
        return unit_of(t.elem)
    if isinstance(t, StructType | VoidType):  # a void pointer counts bytes, as a char pointer does
        return 1
    raise TypeError(f"no memory layout for {t}")


def units_in(t: Type) -> int:
    """How many addressing units (see ``unit_of``) an object of type t occupies."""
    return size_of(t) // unit_of(t)


def storage_scalar(t: Type) -> ScalarType:
    """The scalar type a memory object of (array of) t stores (bytes for structs)."""
    while isinstance(t, ArrayType):
        t = t.elem
    if isinstance(t, VectorType | AtomicType | MatrixType | SimdgroupMatrixType):
        return t.elem
    if isinstance(t, StructType):
        return UCHAR
    assert isinstance(t, ScalarType), t
    return t


