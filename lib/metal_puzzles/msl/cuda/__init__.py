"""MSL to CUDA: the simulator's checked syntax tree rendered a second time, as CUDA C++ (beside
the NumPy code generator, ``run/codegen``), with Metal's semantics. NumPy-only like the rest of
``msl``: it writes text; compiling it (NVRTC) and running it (MLX's ``cuda_kernel``, CuPy) is the
host's business.

``translate_kernel(...)``: an MLX custom kernel (``metal_kernel``'s arguments plus one call's
input descriptions, output dtypes and template) as a ``CudaTranslation``.
``translate_shader(library)``: every kernel of a whole shader (``compile_shader``), by host name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..abi.signature import InputDesc
from ..lang.errors import CompileError
from ..program import CompiledKernel
from ..shader_program import ShaderLibrary
from .kernel import translate_body, translate_shader_kernel
from .render import Unsupported, missing_rules
from .translation import GRID_CONSTANTS, CudaParam, CudaTranslation, launch_dims


def translate_kernel(name: str, input_names: Sequence[str], output_names: Sequence[str], source: str, header: str,
                     inputs: Sequence[InputDesc], output_dtypes: Sequence[str],
                     template: Sequence[tuple[str, Any]] = (), atomic_outputs: bool = False) -> CudaTranslation:
    """Translate one instance of an MLX custom kernel: compiled by the simulator's front end for
    these inputs, output dtypes and template arguments (as MLX compiles one per call), then
    rendered as CUDA. A compile error, or a construct with no faithful CUDA form, raises a
    ``CompileError`` located in ``source`` or ``header``."""
    compiled = CompiledKernel(name, input_names, output_names, source, header, inputs, output_dtypes,
                              list(template), atomic_outputs)
    return translate_body(name, compiled.generated, compiled.checked, compiled.registry,
                          [i.dtype for i in inputs], list(output_dtypes), input_names, output_names, template)


def translate_shader(library: ShaderLibrary) -> dict[str, CudaTranslation]:
    """Every kernel of a whole shader, by host name (templated kernels: each instantiation)."""
    out = {}
    for host_name in library.kernel_names:
        kernel = library.kernel(host_name)
        try:
            out[host_name] = translate_shader_kernel(host_name, kernel.params, kernel.checked, library.registry)
        except CompileError as err:
            raise err.with_registry(library.registry) from None
    return out


__all__ = ["CudaParam", "CudaTranslation", "GRID_CONSTANTS", "Unsupported", "launch_dims", "missing_rules",
           "translate_kernel", "translate_shader"]
