"""Metal Puzzles: learn GPU programming by writing Metal kernels for MLX, on any machine.

``metal_kernel`` is a drop-in for ``mx.fast.metal_kernel`` running on a faithful simulator of
the Metal Shading Language (``metal_puzzles.msl``); ``MetalKernel`` is the puzzle wrapper.
"""

from .kernel import MetalKernel, SimulatedKernel, metal_kernel
from .msl import CompileError, KernelRuntimeError, SanitizerError
from .problem import MetalProblem
from .progress import progress
from .puzzles.finale import GradProblem

__version__ = "0.1.0"

__all__ = ["metal_kernel", "MetalKernel", "MetalProblem", "GradProblem", "progress", "SimulatedKernel", "CompileError", "KernelRuntimeError",
           "SanitizerError", "__version__"]
