"""A whole kernel translated: the thread attributes as locals computed from CUDA's indices and
the Metal grid, the partial-threadgroup guard, the body, and around it the prelude and the
header functions it calls; for MLX's body ABI (``translate_body``: ``metal_kernel``'s source)
and a whole shader's kernel functions (``translate_shader_kernel``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..abi.shader import Binding, ShaderParam
from ..abi.signature import GeneratedKernel, Param, Passing
from ..front import ast
from ..front.checker import CheckedKernel
from ..lang.errors import CompileError, Pos, SourceRegistry
from ..lang.kernel_parameters import ParamRole
from ..lang.types import ArrayType, PointerType, ScalarType, Type, VectorType
from .builtins import builtin_rule
from .prelude import CUDA_PRELUDE
from .render import Renderer
from .translation import GRID_CONSTANTS, CudaParam, CudaTranslation
from .types import DTYPE_CTYPES, DTYPE_UNIT_CTYPES

#: Each thread attribute's value, from CUDA's indices and the Metal grid (mp_g*): what Metal
#: gives that thread, partial last threadgroups included (mp_t*: the threadgroup's real size).
ATTRIBUTE_VALUES: dict[str, tuple[str, ...]] = {
    "thread_position_in_grid": ("mp_px", "mp_py", "mp_pz"),
    "thread_position_in_threadgroup": ("mp_lx", "mp_ly", "mp_lz"),
    "threadgroup_position_in_grid": ("blockIdx.x", "blockIdx.y", "blockIdx.z"),
    "threads_per_threadgroup": ("mp_tx", "mp_ty", "mp_tz"),
    "dispatch_threads_per_threadgroup": ("blockDim.x", "blockDim.y", "blockDim.z"),
    "threadgroups_per_grid": ("gridDim.x", "gridDim.y", "gridDim.z"),
    "threads_per_grid": ("mp_gx", "mp_gy", "mp_gz"),
    "grid_size": ("mp_gx", "mp_gy", "mp_gz"),
    "grid_origin": ("0u", "0u", "0u"),
    "thread_index_in_threadgroup": ("mp_index",),
    "thread_index_in_simdgroup": ("(mp_index % 32u)",),
    "simdgroup_index_in_threadgroup": ("(mp_index / 32u)",),
    "threads_per_simdgroup": ("32u",),
    "thread_execution_width": ("32u",),
    "simdgroups_per_threadgroup": ("((mp_tx * mp_ty * mp_tz + 31u) / 32u)",),
    "dispatch_simdgroups_per_threadgroup": ("((blockDim.x * blockDim.y * blockDim.z + 31u) / 32u)",),
    "quadgroup_index_in_threadgroup": ("(mp_index / 4u)",),
    "thread_index_in_quadgroup": ("(mp_index % 4u)",),
    "quadgroups_per_threadgroup": ("((mp_tx * mp_ty * mp_tz + 3u) / 4u)",),
    "dispatch_quadgroups_per_threadgroup": ("((blockDim.x * blockDim.y * blockDim.z + 3u) / 4u)",),
}

_GEOMETRY = """\
  // Metal's threads_per_threadgroup: the last threadgroup's real size where it is partial.
  const unsigned mp_tx = min(blockDim.x, mp_gx - min(mp_gx, blockIdx.x * blockDim.x));
  const unsigned mp_ty = min(blockDim.y, mp_gy - min(mp_gy, blockIdx.y * blockDim.y));
  const unsigned mp_tz = min(blockDim.z, mp_gz - min(mp_gz, blockIdx.z * blockDim.z));
  // Metal numbers a threadgroup's threads x first over its real size, and its SIMD-groups are 32
  // consecutive numbers; CUDA's warps are 32 consecutive numbers over the block's size. So the
  // thread CUDA numbers mp_index plays the Metal thread numbered mp_index: its SIMD-group is its
  // warp even in a partial threadgroup of several rows (where the same position would not be).
  const unsigned mp_index = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const bool mp_full = mp_tx == blockDim.x && mp_ty == blockDim.y;
  const unsigned mp_lx = mp_full ? threadIdx.x : mp_index % mp_tx;
  const unsigned mp_ly = mp_full ? threadIdx.y : (mp_index / mp_tx) % mp_ty;
  const unsigned mp_lz = mp_full ? threadIdx.z : mp_index / (mp_tx * mp_ty);
  const unsigned mp_px = blockIdx.x * blockDim.x + mp_lx;
  const unsigned mp_py = blockIdx.y * blockDim.y + mp_ly;
  const unsigned mp_pz = blockIdx.z * blockDim.z + mp_lz;
  // The numbers past the threadgroup's real size are threads past the Metal grid: they do not run
  // the body (a partial last threadgroup is a whole block here).
  const bool mp_in_grid = mp_index < mp_tx * mp_ty * mp_tz;
  (void)mp_tx; (void)mp_ty; (void)mp_tz; (void)mp_index; (void)mp_px; (void)mp_py; (void)mp_pz;
"""


def attribute_local(name: str, ty: Type, attribute: str) -> str:
    """The declaration of a thread attribute's local, of the type the kernel declares it with."""
    values = ATTRIBUTE_VALUES[attribute]
    if isinstance(ty, VectorType):
        elem = _elem_ctype(ty.elem)
        parts = ", ".join(f"({elem})({v})" for v in (values + ("0u", "0u"))[: ty.n])
        return f"  const mp_vec<{elem}, {ty.n}> {name} = {{{{{parts}}}}};"
    assert isinstance(ty, ScalarType)
    return f"  const {_elem_ctype(ty)} {name} = ({_elem_ctype(ty)})({values[0]});"


def _elem_ctype(ty: ScalarType) -> str:
    from .types import SCALAR_CTYPES
    return SCALAR_CTYPES[ty.name]


def _assemble(r: Renderer, body: ast.Block, attribute_lines: list[str]) -> tuple[list[str], str]:
    """(header lines, kernel body text): the body guarded, its 'return's jumping to its end."""
    body_lines = r.s_Block(body, 1)
    # The header functions the body calls, rendered before the drain is decided: a barrier may
    # be in one of them.
    protos, defs = r.function_definitions()
    lines = [_GEOMETRY.rstrip("\n"), *attribute_lines, "  if (mp_in_grid)", *body_lines, "mp_done:;"]
    if r.uses_barriers:
        lines.append("  // The threads that left the body (or never ran it) keep meeting the barriers of those")
        lines.append("  // still running, so every barrier is reached by the whole block.")
        lines.append("  mp_drain();")
    header = [*r.struct_definitions(), *r.const_array_definitions(), *protos, "", *defs]
    return header, "\n".join(lines)


def translate_body(name: str, generated: GeneratedKernel, checked: CheckedKernel, registry: SourceRegistry,
                   input_dtypes: Sequence[str], output_dtypes: Sequence[str], input_names: Sequence[str],
                   output_names: Sequence[str], template: Sequence[tuple[str, Any]]) -> CudaTranslation:
    """An MLX custom kernel (``metal_kernel``'s body) for ``mx.fast.cuda_kernel`` and NVRTC."""
    params = list(generated.params)
    scalar_inputs = {p.name for p in params if p.role == ParamRole.INPUT and p.passing == Passing.REFERENCE}
    shapes = {p.name for p in params if p.role in (ParamRole.SHAPE, ParamRole.STRIDES)}
    r = Renderer(builtin_rule, scalar_inputs=scalar_inputs, shape_params=shapes)
    r.long_strides = {p.name for p in params if p.role == ParamRole.STRIDES}
    dtypes_of = dict(zip(input_names, input_dtypes, strict=True)) | dict(zip(output_names, output_dtypes, strict=True))
    for p in params:
        if p.role in (ParamRole.INPUT, ParamRole.OUTPUT) and dtypes_of.get(p.name) in ("int64", "uint64"):
            ctype = DTYPE_UNIT_CTYPES[dtypes_of[p.name]]
            r.pointer_casts[p.name] = f"{'const ' if p.role == ParamRole.INPUT else ''}{ctype}*"
    try:
        attr_lines = [attribute_local(p.name, _attribute_type(p), p.name) for p in params
                      if p.role == ParamRole.ATTRIBUTE]
        header_lines, body = _assemble(r, checked.body, attr_lines)
    except CompileError as err:
        raise err.with_registry(registry) from None
    dtypes = dict(zip(input_names, input_dtypes, strict=True))
    dtypes.update(zip(output_names, output_dtypes, strict=True))
    unit_params: list[CudaParam] = []
    for p in params:
        if p.role == ParamRole.ATTRIBUTE:
            continue
        unit_params.append(_unit_param(p, dtypes))
    unit_params.extend(CudaParam(g, "unsigned int", None) for g in GRID_CONSTANTS)
    entry = f"mp_kernel_{_safe(name)}"
    header = "\n".join([CUDA_PRELUDE.strip("\n"), *header_lines])
    grid_locals = "\n".join(f"  const unsigned mp_g{a} = (unsigned)({g});" for a, g in zip("xyz", GRID_CONSTANTS, strict=True))
    signature = ",\n    ".join(f"{p.ctype} {p.name}" for p in unit_params)
    unit = f'{header}\n\nextern "C" __global__ void {entry}(\n    {signature}) {{\n{grid_locals}\n{body}\n}}\n'
    mlx_body = f"{grid_locals}\n{body}\n"
    return CudaTranslation(name=name, entry=entry, unit=unit, body=mlx_body, header=header,
                           input_names=tuple(input_names), output_names=tuple(output_names),
                           params=tuple(unit_params), template=tuple(template), shared_bytes=r.shared_bytes,
                           uses_barriers=r.uses_barriers, uses_simd=r.uses_simd)


def _attribute_type(p: Param) -> Type:
    from ..lang.types import UINT, vector
    return vector(UINT, 3) if p.width == 3 else UINT


def _unit_param(p: Param, dtypes: dict[str, str]) -> CudaParam:
    if p.role == ParamRole.SHAPE:
        return CudaParam(p.name, "const int*", p.role)
    if p.role == ParamRole.STRIDES:
        return CudaParam(p.name, "const long long*", p.role)
    if p.role == ParamRole.NDIM:
        return CudaParam(p.name, "int", p.role)
    dtype = dtypes[p.name]
    ctype = DTYPE_UNIT_CTYPES[dtype]
    if p.role == ParamRole.INPUT:
        return CudaParam(p.name, f"const {ctype}*", p.role, dtype)
    return CudaParam(p.name, f"{ctype}*", p.role, dtype)


def translate_shader_kernel(host_name: str, params: Sequence[ShaderParam], checked: CheckedKernel,
                            registry: SourceRegistry) -> CudaTranslation:
    """One kernel function of a whole shader: its buffers in index order as the unit's parameters
    (a constant value by pointer, as a host binds a buffer), thread attributes as locals."""
    r = Renderer(builtin_rule)
    unit_params: list[CudaParam] = []
    attr_lines: list[str] = []
    dynamic: list[CudaParam] = []
    try:
        for p in sorted(params, key=lambda q: (q.index is None, q.index or 0)):
            if p.binding == Binding.ATTRIBUTE:
                assert p.attribute is not None
                attr_lines.append(attribute_local(p.name, p.ty, p.attribute))
            elif p.binding == Binding.THREADGROUP:
                # Threadgroup memory sized at launch: one dynamic __shared__ region, each parameter's
                # part in index order at a 16-byte boundary, its size in bytes a parameter of the unit.
                if not dynamic:
                    attr_lines.append("  extern __shared__ __align__(16) unsigned char mp_dynamic_shared[];")
                    attr_lines.append("  unsigned int mp_shared_offset = 0u;")
                size = CudaParam(f"{p.name}_bytes", "unsigned int", None)
                dynamic.append(size)
                attr_lines.append(f"  {r.ctype(p.ty, p.pos)} {p.name} = ({r.ctype(p.ty, p.pos)})"
                                  f"(mp_dynamic_shared + mp_shared_offset);")
                attr_lines.append(f"  mp_shared_offset += ({size.name} + 15u) & ~15u;")
            elif isinstance(p.ty, PointerType):  # a buffer the host binds
                unit_params.append(CudaParam(p.name, r.ctype(p.ty, p.pos), None))
            else:
                # A reference to one object in a buffer ('constant float& w', 'device int& n'), or a
                # constant value the host sets: bound like a buffer, read (and written, when it is
                # a writable device reference) as the object it points to.
                const = "" if p.writable else "const "
                unit_params.append(CudaParam(p.name, f"{const}{r.ctype(p.ty, p.pos)}*", None))
                r.scalar_inputs.add(p.name)
        header_lines, body = _assemble(r, checked.body, attr_lines)
    except CompileError as err:
        raise err.with_registry(registry) from None
    unit_params.extend(CudaParam(g, "unsigned int", None) for g in GRID_CONSTANTS)
    unit_params.extend(dynamic)
    entry = f"mp_kernel_{_safe(host_name)}"
    header = "\n".join([CUDA_PRELUDE.strip("\n"), *header_lines])
    grid_locals = "\n".join(f"  const unsigned mp_g{a} = (unsigned)({g});" for a, g in zip("xyz", GRID_CONSTANTS, strict=True))
    signature = ",\n    ".join(f"{p.ctype} {p.name}" for p in unit_params)
    unit = f'{header}\n\nextern "C" __global__ void {entry}(\n    {signature}) {{\n{grid_locals}\n{body}\n}}\n'
    return CudaTranslation(name=host_name, entry=entry, unit=unit, body=f"{grid_locals}\n{body}\n", header=header,
                           input_names=tuple(p.name for p in unit_params if p.name not in GRID_CONSTANTS
                                             and p not in dynamic),
                           output_names=(), params=tuple(unit_params), shared_bytes=r.shared_bytes,
                           threadgroup_memory=tuple(d.name[:-len("_bytes")] for d in dynamic),
                           uses_barriers=r.uses_barriers, uses_simd=r.uses_simd)


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in name)


_ = (ArrayType, PointerType, Pos, DTYPE_CTYPES)
