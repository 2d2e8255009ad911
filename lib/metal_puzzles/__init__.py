"""Metal Puzzles: learn GPU programming by writing Metal kernels for MLX, on any machine.

``metal_kernel`` is a drop-in for ``mx.fast.metal_kernel`` running on a faithful simulator of
the Metal Shading Language (``metal_puzzles.msl``); ``MetalKernel`` and ``MetalProblem`` are the
puzzle notebook's wrapper and problem; ``explore`` opens the interactive explorer.

Names are imported on first use, so importing a part of the package (the simulator, the
grader) loads only what that part needs: the grader never loads the notebook's widgets.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .version import __version__

#: Public name -> the module that defines it.
_PUBLIC = {
    "metal_kernel": "host.kernel",
    "compile_shader": "host.shader_library",
    "MetalKernel": "host.kernel",
    "SimulatedKernel": "host.kernel",
    "MetalProblem": "notebook.problem",
    "GradProblem": "notebook.problem",
    "DecodeStepProblem": "notebook.problem",
    "explore": "notebook.problem",
    "progress": "notebook.session",
    "CompileError": "msl",
    "KernelRuntimeError": "msl",
    "SanitizerError": "msl",
}

__all__ = ["metal_kernel", "compile_shader", "MetalKernel", "SimulatedKernel", "MetalProblem", "GradProblem", "DecodeStepProblem", "explore", "progress",
           "CompileError", "KernelRuntimeError", "SanitizerError", "__version__"]

if TYPE_CHECKING:
    from .host.kernel import MetalKernel, SimulatedKernel, metal_kernel
    from .host.shader_library import compile_shader
    from .msl import CompileError, KernelRuntimeError, SanitizerError
    from .notebook.problem import DecodeStepProblem, GradProblem, MetalProblem, explore
    from .notebook.session import progress


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'metal_puzzles' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
