"""The CUDA header every translation starts with: what Metal has and CUDA lacks, with Metal's
(and the simulator's) results. Vector types with Metal's operators, swizzles and constructors;
conversions as C and the simulator make them (float to int out of range as the simulator's
NumPy does); integer division by zero giving 0 and shift counts masked to the operand's width
(the simulator's documented choices); signed arithmetic wrapping (C leaves overflow undefined,
and NVCC would optimise on it); Metal's math and integer functions; SIMD-group functions as warp
shuffles over the lanes that run, reduced in lane order as the simulator does (so float sums
agree bit for bit); atomics on ``atomic<T>`` as CUDA's atomic functions.

Everything is ``mp_``-prefixed so no kernel's names collide with it."""

from __future__ import annotations

from .core import CORE
from .math import MATH
from .simd import SIMD

#: The header: needs only NVRTC's own headers (cuda_fp16.h, cuda_bf16.h); guarded, so several
#: translation units can share one program.
CUDA_PRELUDE = "\n".join([CORE.rstrip("\n"), MATH.strip("\n"), SIMD.strip("\n"), "#endif", ""])

__all__ = ["CUDA_PRELUDE"]
