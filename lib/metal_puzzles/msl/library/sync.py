"""Barriers: ``threadgroup_barrier`` and ``simdgroup_barrier``, each with the ``mem_flags`` that say
which memory it orders (``mem_none``: execution only)."""

from __future__ import annotations

from ..counting.op_kinds import BuiltinCost
from ..executor.codegen.codegen_state import CodeGenState
from ..executor.codegen.interfaces import Fn
from ..front import ast
from ..front.checker.checker_state import CheckerState
from ..lang.errors import CompileError
from ..lang.types import (
    MEM_FLAGS,
    VOID,
    MemFlags,
    Type,
)
from .base import Builtin, TemplateArgs, register


# ============================================================================ barriers
class Barrier(Builtin):
    def check(self, ck: CheckerState, call: ast.Call, args: list[ast.Expr], targs: TemplateArgs) -> Type:
        if len(args) != 1:
            raise CompileError(f"'{self.name}' takes one mem_flags argument saying which memory it orders "
                               "(mem_flags::mem_threadgroup, mem_flags::mem_device, both with '|', or "
                               "mem_flags::mem_none for execution only)", call.pos)
        for a in args:
            if a.ty != MEM_FLAGS:
                raise CompileError(f"'{self.name}' takes mem_flags (e.g. mem_flags::mem_threadgroup), "
                                   f"got '{a.ty}'", a.pos)
        call.args = args
        return VOID

    def emit(self, cg: CodeGenState, call: ast.Call, fns: list[Fn]) -> Fn:
        pos = call.pos
        flags = fns[0] if fns else (lambda c, m: MemFlags.NONE)
        if self.name == "simdgroup_barrier":
            return lambda c, m: c.simd_barrier(m, pos, MemFlags(int(flags(c, m))))
        return lambda c, m: c.barrier(m, pos, MemFlags(int(flags(c, m))))


register(Barrier("threadgroup_barrier", BuiltinCost.NOT_ARITHMETIC))
register(Barrier("simdgroup_barrier", BuiltinCost.NOT_ARITHMETIC))
