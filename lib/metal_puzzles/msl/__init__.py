"""The Metal Shading Language simulator: NumPy only, no MLX.

``simulate`` runs a kernel body the way ``mx.fast.metal_kernel`` would on a GPU, with every
thread of the grid executed in lock-step, exact C/Metal semantics, per-thread access counts,
an optional access trace and a sanitizer's findings. ``ShaderLibrary`` does the same for a whole
shader (kernel functions with their own signatures), launched with arrays at buffer indices.
"""

from .api import compile_cache_stats, get_kernel, simulate
from .counting.counters import Counter
from .findings.advice import Audience
from .findings.finding import Finding, FindingKind, RaceKind, Severity
from .findings.modes import SanitizeMode, StopReason
from .lang.errors import ArgumentError, CompileError, KernelRuntimeError, Pos
from .program import CompiledKernel
from .record import Counts, RunResult, SanitizerError
from .shader_program import LaunchGeometry, ShaderKernel, ShaderLibrary

__all__ = [
    "simulate", "get_kernel", "compile_cache_stats", "CompileError", "KernelRuntimeError", "ArgumentError",
    "SanitizerError", "RunResult", "Counts", "Counter", "Finding", "FindingKind", "SanitizeMode", "Severity", "StopReason",
    "CompiledKernel", "Pos", "RaceKind", "Audience", "ShaderLibrary", "ShaderKernel", "LaunchGeometry",
]
