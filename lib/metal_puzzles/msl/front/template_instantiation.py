"""Explicit instantiations of a whole shader's kernel templates (``template [[host_name("f_float")]]
kernel void f<float>(device float*, ...);``) matched against their templates as clang matches them
when the library is built: template arguments written or deduced from the parameter types the
instantiation declares, bound in the checker's scope, and the instantiation's parameter types
compared with the template's after substitution. An instantiation that instantiates no template is
``NoMatchingTemplate``, clang's error for it, with both signatures."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..lang.errors import CompileError, Pos
from ..lang.types import AddressSpace, PointerType, Type
from . import ast
from .checker import Checker
from .shader_unit import Instantiation


def bind_template_arguments(ck: Checker, func: ast.FuncDef, inst: Instantiation | None) -> None:
    if inst is None:
        return
    # The types the instantiation writes, read where it stands (the template's parameters are not
    # names there) before its arguments are bound.
    written = None if inst.params is None else _written_signature(ck, func, inst)
    if inst.params is not None and not inst.explicit_args:
        _bind_deduced_template_args(ck, func, inst, written)
    else:
        _bind_explicit_template_args(ck, func, inst)
    if written is not None:
        _check_instantiation_matches(ck, func, inst, written)


def _bind_explicit_template_args(ck: Checker, func: ast.FuncDef, inst: Instantiation) -> None:
    params = func.template_params
    if len(inst.template_args) > len(params):
        raise NoMatchingTemplate(f"'{inst.host_name}' gives {len(inst.template_args)} template argument(s); kernel "
                           f"'{func.name}' takes {len(params)}", inst.pos)
    for k, tp in enumerate(params):
        arg = inst.template_args[k] if k < len(inst.template_args) else tp.default
        if arg is None:
            raise NoMatchingTemplate(f"'{inst.host_name}' gives no template argument for '{tp.name}'", inst.pos)
        if tp.kind == "type":
            if not isinstance(arg, ast.TypeSpec):
                raise NoMatchingTemplate(f"template parameter '{tp.name}' is a type; '{inst.host_name}' gives a value",
                                   inst.pos)
            ck.bind_template(tp.name, ck.types.resolve_type(arg), arg.pos, ck.scope)
        else:
            value = ck.types.const_int(arg, f"template argument '{tp.name}'")
            ck.bind_template(tp.name, bool(value) if tp.kind == "bool" else value, arg.pos, ck.scope)


def _bind_deduced_template_args(ck: Checker, func: ast.FuncDef, inst: Instantiation,
                                written: list[_ParamType] | None) -> None:
    """Bind the template arguments an instantiation without '<...>' implies: each template
    parameter deduced from the type the instantiation declares for the kernel's parameter at that
    place, as C++ deduces them for 'template void f(device float*);' (or its default)."""
    assert inst.params is not None and written is not None
    tparams = {tp.name: tp for tp in func.template_params}
    deduced: dict = {}
    for declared, theirs in zip(func.params, written, strict=True):
        try:
            ck.calls.match_type_spec(declared.type_spec, theirs.ty, tparams, deduced)
        except CompileError as err:  # two parameters deduce different types: no template matches
            raise _no_matching_template(ck, func, inst, written, err.message, err.pos) from None
    for tp in func.template_params:
        if tp.kind != "type":
            raise CompileError(f"the instantiation '{inst.host_name}' must give the value of '{tp.name}' as "
                               f"'{func.name}<...>(...)'", inst.pos)
        if tp.name in deduced:
            ty = deduced[tp.name]
        elif tp.default is not None:
            ty = ck.types.resolve_type(tp.default)  # it may name the parameters bound before it
        else:
            raise CompileError(f"the instantiation '{inst.host_name}' does not say what '{tp.name}' is: write "
                               f"'{func.name}<...>(...)', or parameter types it can be deduced from", inst.pos)
        ck.bind_template(tp.name, ty, inst.pos, ck.scope)


@dataclass(frozen=True)
class _ParamType:
    """A parameter's type as C++ compares function types: arrays decayed to pointers, a value
    parameter's own 'const' dropped; a reference keeps its address space and constness. Metal's
    constant address space is read-only, so 'constant T' and 'constant const T' are taken alike."""

    ty: Type
    reference: bool
    space: AddressSpace | None
    const: bool

    def __str__(self) -> str:
        if not self.reference:
            return str(self.ty)
        const = "const " if self.const and self.space != AddressSpace.CONSTANT else ""
        return f"{self.space or AddressSpace.THREAD} {const}{self.ty}&"


def _param_type(ck: Checker, p: ast.Param) -> _ParamType:
    spec = p.type_spec
    ty = ck.calls.param_type(spec)
    if isinstance(ty, PointerType) and ty.space == AddressSpace.CONSTANT:
        ty = dataclasses.replace(ty, const=True)
    if not spec.reference:
        return _ParamType(ty, False, None, False)
    space = spec.space or AddressSpace.THREAD
    return _ParamType(ty, True, space, spec.const or space == AddressSpace.CONSTANT)


def _written_signature(ck: Checker, func: ast.FuncDef, inst: Instantiation) -> list[_ParamType]:
    assert inst.params is not None
    outer = ck.namespace
    ck.namespace = func.namespace  # names are found from the kernel's namespace outwards
    try:
        written = [_param_type(ck, p) for p in inst.params]
    finally:
        ck.namespace = outer
    if len(written) != len(func.params):
        raise _no_matching_template(ck, func, inst, written, f"it declares {len(written)} parameter(s); the template "
                                    f"takes {len(func.params)}", inst.pos)
    return written


def _check_instantiation_matches(ck: Checker, func: ast.FuncDef, inst: Instantiation,
                                 written: list[_ParamType]) -> None:
    """Clang refuses an explicit instantiation whose parameter types are not the template's with
    its arguments substituted: it instantiates no template."""
    assert inst.params is not None
    outer = ck.namespace
    ck.namespace = func.namespace
    try:
        for k, (declared, theirs, at) in enumerate(zip(func.params, written, inst.params, strict=True)):
            ours = _param_type(ck, declared)
            if ours != theirs:
                raise _no_matching_template(ck, func, inst, written, f"parameter {k + 1} is '{theirs}' here, but the "
                                            f"template's '{declared.name}' is '{ours}'", at.pos)
    finally:
        ck.namespace = outer


class NoMatchingTemplate(CompileError):
    """An explicit instantiation that instantiates no template: clang refuses the whole shader."""


def _no_matching_template(ck: Checker, func: ast.FuncDef, inst: Instantiation, written: list[_ParamType],
                          why: str, pos: Pos) -> NoMatchingTemplate:
    """Clang's error for an instantiation that matches no template, with both signatures."""
    template = ", ".join(f"{_spelled(p.type_spec)} {p.name}" if p.name else _spelled(p.type_spec) for p in func.params)
    theirs = ", ".join(str(t) for t in written)
    return NoMatchingTemplate(f"explicit instantiation of '{func.name}' does not refer to a function template, variable "
                        f"template, member function, member class, or static data member ('{inst.host_name}': {why}); "
                        f"the template is '{func.name}({template})', the instantiation declares "
                        f"'{func.name}({theirs})'", pos)


def _spelled(spec: ast.TypeSpec) -> str:
    """A parameter's type as the template writes it ('device const T*', 'constant uint&')."""
    text = " ".join(part for part in (str(spec.space) if spec.space else "", "const" if spec.const else "",
                                      spec.name) if part)
    if spec.args:
        text += "<...>"
    text += "".join("*" for _ in spec.pointers)
    return text + ("&" if spec.reference else "") + ("[]" if spec.array_dims else "")


__all__ = ["NoMatchingTemplate", "bind_template_arguments"]
