"""Matrix functions: ``transpose``."""

from __future__ import annotations

import numpy as np

from ..counting.op_kinds import BuiltinCost
from ..executor.codegen.codegen_state import CodeGenState
from ..executor.codegen.interfaces import Fn
from ..front import ast
from ..front.checker.checker_state import CheckerState
from ..lang.errors import CompileError
from ..lang.types import MatrixType, Type, matrix
from .base import Builtin, TemplateArgs, nargs, register


class Transpose(Builtin):
    def check(self, ck: CheckerState, call: ast.Call, args: list[ast.Expr], targs: TemplateArgs) -> Type:
        nargs(call, args, 1)
        a = ck.conversions.rvalue(args[0])
        if not isinstance(a.ty, MatrixType):
            raise CompileError(f"'transpose' takes a matrix, got '{a.ty}'", a.pos)
        call.args = [a]
        return matrix(a.ty.elem, a.ty.rows, a.ty.cols)

    def emit(self, cg: CodeGenState, call: ast.Call, fns: list[Fn]) -> Fn:
        (a,) = fns
        return lambda c, m: np.swapaxes(np.asarray(a(c, m)), -1, -2).copy()


register(Transpose("transpose", BuiltinCost.ELEMENTWISE))
