"""Barriers: ``threadgroup_barrier`` and ``simdgroup_barrier``."""

from __future__ import annotations

from ..lang.errors import CompileError
from ..lang.types import (
    MEM_FLAGS,
    VOID,
)
from .base import Builtin, nargs, register


# ============================================================================ barriers
class Barrier(Builtin):
    def check(self, ck, call, args, targs):
        nargs(call, args, (0, 1))
        for a in args:
            if a.ty != MEM_FLAGS:
                raise CompileError(f"'{self.name}' takes mem_flags (e.g. mem_flags::mem_threadgroup), "
                                   f"got '{a.ty}'", a.pos)
        call.args = args
        return VOID

    def emit(self, cg, call, fns):
        pos = call.pos
        simd = self.name == "simdgroup_barrier"
        return lambda c, m: c.barrier(m, pos, simd)


register(Barrier("threadgroup_barrier"))
register(Barrier("simdgroup_barrier"))
