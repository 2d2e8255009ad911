"""Matrix types ``floatCxR`` and ``halfCxR``: construction, column access, and the operators
Metal defines on them (matrix-vector, vector-matrix and matrix-matrix products, scaling by a
scalar, sums and differences of matrices of one type)."""

from __future__ import annotations

from ...lang.errors import CompileError
from ...lang.types import (
    MatrixType,
    ScalarType,
    Type,
    VectorType,
    matrix,
    promote,
    vector,
)
from .. import ast
from ..ast import CastStyle, MatrixOp
from .checker_state import CheckerPart
from .helpers import designates_part_of


class Matrices(CheckerPart):
    def matrix_construct(self, e: ast.Construct, ty: MatrixType) -> ast.Expr:
        """``floatCxR(columns...)``, ``(C*R scalars, column by column)``, ``(s)`` for s on the
        diagonal, ``()`` for zero, or another matrix of the same shape converted."""
        args = [self.chk.conversions.rvalue(self.chk.exprs.expr(a)) for a in e.args]
        e.ty = ty
        if not args:
            e.args = [self.chk.conversions.convert(self.chk.exprs.expr(ast.IntLit(e.pos, 0)), ty.elem, "matrix constructor")]
            e.splat = True
            return e
        if len(args) == 1 and isinstance(args[0].ty, MatrixType):
            src = args[0].ty
            if (src.cols, src.rows) != (ty.cols, ty.rows):
                raise CompileError(f"cannot convert '{src}' to '{ty}': the shapes differ", e.pos)
            cast = ast.Cast(e.pos, e.type_spec, args[0], CastStyle.C)
            cast.ty = ty
            return cast
        if len(args) == 1 and isinstance(args[0].ty, ScalarType):
            e.args = [self.chk.conversions.convert(args[0], ty.elem, "matrix constructor")]
            e.splat = True  # the value on the diagonal, zero elsewhere
            return e
        if all(isinstance(a.ty, VectorType) for a in args):
            if len(args) != ty.cols or any(a.ty.n != ty.rows for a in args):
                raise CompileError(f"'{ty}(...)' takes {ty.cols} column vectors of {ty.rows} components, got "
                                   + ", ".join(f"'{a.ty}'" for a in args), e.pos)
            e.args = [self.chk.conversions.convert(a, ty.column, "matrix column") if a.ty.elem == ty.elem else
                      self.chk.conversions.make_convert(a, ty.column) for a in args]
            return e
        if all(isinstance(a.ty, ScalarType) for a in args):
            if len(args) != ty.cols * ty.rows:
                raise CompileError(f"'{ty}(...)' takes {ty.cols * ty.rows} scalars (column by column), got "
                                   f"{len(args)}", e.pos)
            e.args = [self.chk.conversions.convert(a, ty.elem, "matrix element") for a in args]
            return e
        raise CompileError(f"'{ty}(...)' takes column vectors or scalars, not a mix", e.pos)

    def matrix_binary(self, e: ast.Binary, l: ast.Expr, r: ast.Expr) -> ast.Expr:
        op = e.op
        lt, rt = l.ty, r.ty
        mt = lt if isinstance(lt, MatrixType) else rt
        elem = mt.elem

        def bad(detail: str = "") -> CompileError:
            return CompileError(f"invalid operands to binary '{op}' ('{lt}' and '{rt}'){detail}", e.pos)

        if isinstance(lt, MatrixType) and isinstance(rt, MatrixType):
            if lt.elem != rt.elem:
                raise bad(": the element types differ; convert one matrix first")
            if op in (ast.BinaryOp.ADD, ast.BinaryOp.SUB):
                if lt != rt:
                    raise bad(": the shapes differ")
                e.matrix_op, e.ty = MatrixOp.ELEMENTWISE, lt
            elif op == ast.BinaryOp.MUL:
                if lt.cols != rt.rows:
                    raise bad(f": a {lt.cols}-column matrix times a matrix of {rt.rows} rows")
                e.matrix_op, e.ty = MatrixOp.MAT_MAT, matrix(elem, rt.cols, lt.rows)
            else:
                raise bad()
            e.left, e.right = l, r
            return e
        other = rt if isinstance(lt, MatrixType) else lt
        if isinstance(other, VectorType):
            if op != ast.BinaryOp.MUL or other.elem != elem:
                raise bad("" if op != ast.BinaryOp.MUL else ": the element types differ")
            if isinstance(lt, MatrixType):
                if other.n != lt.cols:
                    raise bad(f": a {lt.cols}-column matrix times a {other.n}-vector")
                e.matrix_op, e.ty = MatrixOp.MAT_VEC, vector(elem, lt.rows)
            else:
                if other.n != rt.rows:
                    raise bad(f": a {other.n}-vector times a matrix of {rt.rows} rows")
                e.matrix_op, e.ty = MatrixOp.VEC_MAT, vector(elem, rt.cols)
            e.left, e.right = l, r
            return e
        if isinstance(other, ScalarType) and (op == ast.BinaryOp.MUL or (op == ast.BinaryOp.DIV and isinstance(lt, MatrixType))):
            if isinstance(lt, MatrixType):
                e.left, e.right = l, self.chk.conversions.convert(r, elem, f"'{op}'")
            else:
                e.left, e.right = self.chk.conversions.convert(l, elem, f"'{op}'"), r
            e.matrix_op, e.ty = MatrixOp.SCALE, mt
            return e
        raise bad()

    def matrix_column(self, e: ast.Index, base: ast.Expr, idx: ast.Expr) -> ast.Expr:
        """``m[i]``: column i, a vector (assignable when m is)."""
        mt: MatrixType = base.ty
        e.base = base
        e.index = self.chk.conversions.convert(idx, promote(idx.ty), "subscript")
        e.ty = mt.column
        e.matrix_index = True
        designates_part_of(e, base)
        return e

    def matrix_unary(self, e: ast.Unary, t: Type) -> ast.Expr:
        if e.op not in (ast.UnaryOp.NEG, ast.UnaryOp.PLUS):
            raise CompileError(f"invalid argument type '{t}' to unary '{e.op}'", e.pos)
        e.ty = t
        return e
