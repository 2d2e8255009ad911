"""C's implicit conversions, made explicit as ``Convert`` nodes."""

from __future__ import annotations

from ...lang.errors import CompileError
from ...lang.types import (
    BOOL,
    AddressSpace,
    ArrayType,
    PointerType,
    ScalarType,
    Type,
    VectorType,
    VoidType,
)
from .. import ast
from ..ast import ConvertKind
from .checker_state import CheckerPart


class Conversions(CheckerPart):
    def to_bool(self, e: ast.Expr) -> ast.Expr:
        t = e.ty
        if t == BOOL:
            return e
        if isinstance(t, ScalarType) or isinstance(t, PointerType):
            return self.make_convert(e, BOOL)
        raise CompileError(f"value of type '{t}' is not contextually convertible to 'bool'", e.pos)

    def make_convert(self, e: ast.Expr, ty: Type, kind: ConvertKind = ConvertKind.CONVERT) -> ast.Expr:
        c = ast.Convert(e.pos, e, kind)
        c.ty = ty
        return c

    def rvalue(self, e: ast.Expr) -> ast.Expr:
        """Array-to-pointer decay."""
        if isinstance(e.ty, ArrayType):
            space = e.space or AddressSpace.THREAD
            return self.make_convert(e, PointerType(e.ty.elem, space, False), ConvertKind.DECAY)
        return e

    def convert(self, e: ast.Expr, ty: Type, context: str) -> ast.Expr:
        e = self.rvalue(e)
        src = e.ty
        if src == ty:
            return e
        if isinstance(ty, ScalarType) and isinstance(src, ScalarType):
            return self.make_convert(e, ty)
        if isinstance(ty, VectorType) and isinstance(src, ScalarType):
            return self.make_convert(self.make_convert(e, ty.elem) if src != ty.elem else e, ty, ConvertKind.SPLAT)
        if isinstance(ty, VectorType) and isinstance(src, VectorType):
            if ty.n == src.n and ty.elem == src.elem:
                return self.make_convert(e, ty)  # packed <-> unpacked
            raise CompileError(f"cannot implicitly convert '{src}' to '{ty}' in {context}; "
                               f"use an explicit conversion such as {ty}(...)", e.pos)
        if isinstance(ty, PointerType) and isinstance(src, PointerType):
            if src.pointee == ty.pointee and src.space == ty.space and (ty.const or not src.const):
                return self.make_convert(e, ty, ConvertKind.PTR)
            if isinstance(ty.pointee, VoidType) and src.space == ty.space and (ty.const or not src.const):
                return self.make_convert(e, ty, ConvertKind.PTR)  # any object pointer converts to 'void*'
            if isinstance(src.pointee, VoidType) and src.space == ty.space:
                raise CompileError(f"cannot convert '{src}' to '{ty}' in {context} without a cast; write "
                                   f"static_cast<{ty}>(...)", e.pos)
            if src.pointee == ty.pointee and src.space == AddressSpace.CONSTANT and ty.space == AddressSpace.DEVICE:
                raise CompileError(f"cannot convert '{src}' to '{ty}' in {context}: MLX passes inputs with fewer "
                                   "than 8 elements in the 'constant' address space; declare the parameter "
                                   f"'constant {ty.pointee}*' (or a template)", e.pos)
            if src.const and not ty.const and src.pointee == ty.pointee:
                raise CompileError(f"cannot convert '{src}' to '{ty}' in {context}: it would drop 'const' "
                                   "(inputs are read-only)", e.pos)
            raise CompileError(f"cannot convert '{src}' to '{ty}' in {context}", e.pos)
        if isinstance(ty, ScalarType) and ty == BOOL and isinstance(src, PointerType):
            return self.make_convert(e, BOOL)
        raise CompileError(f"cannot convert '{src}' to '{ty}' in {context}", e.pos)
