"""Structs declared in the header: their layout, brace initialization (with default member
initializers), member access (``.`` and ``->``), member functions (called with an implicit
``this`` reference; inside them, member names refer to ``this``'s fields), static member
functions (no ``this``: ``S::f()``, ``Op::f()``) and constructors (member functions named
CONSTRUCTOR whose body initialises the members first; a declaration builds its variable in place,
an expression ``P(a, b)`` a temporary object)."""

from __future__ import annotations

import copy

from ...lang.errors import CompileError, Pos, did_you_mean
from ...lang.types import (
    AddressSpace,
    ArrayType,
    AtomicType,
    MatrixType,
    PointerType,
    SimdgroupMatrixType,
    StructField,
    StructType,
    Type,
    VectorType,
    VoidType,
    layout_struct,
    size_of,
)
from .. import ast
from ..symbols import FuncInstance, Var, VarKind
from .checker_state import CheckerPart
from .entries import (
    FunctionArgumentEntry,
    MemberEntry,
    MethodEntry,
    NameEntry,
    Scope,
    TypeEntry,
    named_struct,
)
from .helpers import addressed_names, callee_name, designates_part_of, regroup

#: The name a struct's constructors go by among its member functions (no code can write it).
CONSTRUCTOR = "#constructor"


class Structs(CheckerPart):
    # ------------------------------------------------------------------ declaration
    def declare_struct(self, item: ast.StructDef) -> None:
        if isinstance(self.chk.scope.lookup(item.name), NameEntry):
            raise CompileError(f"redefinition of type '{item.name}'", item.pos)
        members: list[tuple[str, Type]] = []
        seen: set[str] = set()
        saved_scope = self.chk.scope
        self.chk.scope = Scope(saved_scope)  # member types and constants, seen by the data members
        try:
            named = self.chk.templates.resolve_struct_members(item, self.chk.scope)
            self._declare_fields(item, members, seen)
        finally:
            self.chk.scope = saved_scope
        for m in item.methods:
            if m.name in seen:
                raise CompileError(f"member function '{m.name}' has the name of a data member", m.pos)
        st = layout_struct(item.name, members, union=item.union)
        self.chk.struct_defs[st] = item
        self.chk.scope.names[item.name] = TypeEntry(st)
        self.chk.templates.record_struct_members(item, st, named)
        item.methods.extend(self._constructor_bodies(item))

    def has_constructors(self, st: StructType) -> bool:
        return bool(self.chk.struct_defs[st].constructors)

    def _constructor_bodies(self, item: ast.StructDef) -> list[ast.FuncDef]:
        """Each constructor as a member function named CONSTRUCTOR whose body first initialises
        the members in declaration order, as C++ does: from the initializer list, else from the
        default member initializer; a member with neither stays indeterminate."""
        fields = {d.name: d for d in item.fields}
        out = []
        for ctor in item.constructors:
            listed: dict[str, ast.MemberInit] = {}
            for init in ctor.member_inits:
                if init.name not in fields:
                    raise CompileError(f"'{init.name}' in the initializer list of '{item.name}' is not a data member "
                                       "of it" + did_you_mean(init.name, list(fields)), init.pos)
                if init.name in listed:
                    raise CompileError(f"member '{init.name}' is initialized twice", init.pos)
                listed[init.name] = init
            stmts: list[ast.Stmt] = []
            for d in item.fields:
                given = listed.get(d.name)
                if given is not None:
                    value = (given.args[0] if len(given.args) == 1 and not given.braced
                             else ast.Construct(given.pos, copy.deepcopy(d.type_spec), list(given.args)))
                elif d.init is not None:
                    value = copy.deepcopy(d.init)
                    if isinstance(value, ast.InitList):
                        value = ast.Construct(value.pos, copy.deepcopy(d.type_spec), list(value.items))
                else:
                    continue
                if d.type_spec.array_dims:
                    raise CompileError(f"initializing the array member '{d.name}' in a constructor is not supported "
                                       "by the simulator (assign its elements in the constructor's body)",
                                       value.pos)
                target = ast.Member(value.pos, ast.Name(value.pos, "this"), d.name)
                stmts.append(ast.ExprStmt(value.pos, ast.Assign(value.pos, ast.AssignOp.ASSIGN, target, value)))
            body = ast.Block(ctor.pos, stmts + list(ctor.body.stmts))
            out.append(ast.FuncDef(ctor.pos, CONSTRUCTOR, ctor.ret, ctor.params, body))
        return out

    def _declare_fields(self, item: ast.StructDef, members: list[tuple[str, Type]], seen: set[str]) -> None:
        for d in item.fields:
            if d.name in seen:
                raise CompileError(f"duplicate member '{d.name}' in struct '{item.name}'", d.pos)
            seen.add(d.name)
            if d.type_spec.reference:
                raise CompileError("reference members are not supported by the simulator", d.pos)
            ty = self.chk.types.resolve_type(d.type_spec)
            if _holds_pointer(ty):
                raise CompileError(f"pointer member '{d.name}' ('{ty}'): structs holding pointers are not supported "
                                   "by the simulator (pass the buffer and an index instead)", d.pos)
            if isinstance(ty, VoidType | SimdgroupMatrixType):
                raise CompileError(f"a struct member cannot have type '{ty}'", d.pos)
            if isinstance(ty, StructType) and self.has_constructors(ty):
                raise CompileError(f"member '{d.name}' has type '{ty}', which has constructors: members of such "
                                   "types are not supported by the simulator", d.pos)
            if d.type_spec.space is not None:
                raise CompileError("struct members take the address space of their struct; drop "
                                   f"'{d.type_spec.space}'", d.pos)
            members.append((d.name, ty))

    # ------------------------------------------------------------------ initialization
    def struct_init(self, init: ast.InitList | None, st: StructType, pos: Pos) -> ast.StructInit:
        """A struct value from a brace list (one item per member, in order; missing members take
        their default member initializer, else zero)."""
        if self.has_constructors(st):
            raise CompileError(f"'{st.name}' has constructors, so a brace list here would call one; the simulator "
                               f"supports that in declarations and as '{st.name}{{...}}' / '{st.name}(...)' only",
                               init.pos if init is not None else pos)
        if init is not None:
            init = self._braced(init, st)
        items = list(init.items) if init is not None else []
        if len(items) > len(st.fields):
            raise CompileError(f"too many initializers for struct '{st.name}' ({len(items)} for "
                               f"{len(st.fields)} members)", init.pos if init is not None else pos)
        defaults = {d.name: d.init for d in self.chk.struct_defs[st].fields}
        parts: list[tuple[int, ast.Expr]] = []
        for k, f in enumerate(st.fields):
            if k < len(items):
                parts += self._member_parts(items[k], f.ty, f.offset)
            elif defaults.get(f.name) is not None:
                # Each use checks a fresh copy: checking annotates the tree in place.
                parts += self._member_parts(copy.deepcopy(defaults[f.name]), f.ty, f.offset)
        out = ast.StructInit(pos, parts)
        out.ty = st
        return out

    def _braced(self, init: ast.InitList, st: StructType) -> ast.InitList:
        """C's brace elision: '{1, 2, 3}' for a struct whose first member is 'float v[2]' means
        '{{1, 2}, 3}'; an aggregate member without its own braces takes as many items as it has
        scalars (``metal::array<float, 3> a = {1, 2, 3}``)."""
        flat = list(init.items)
        items = [self._elided(flat, f.ty) for f in st.fields if flat]
        if flat:
            raise CompileError(f"too many initializers for struct '{st.name}' ({len(init.items)} items; it has "
                               f"{len(st.fields)} members)", flat[0].pos)
        return ast.InitList(init.pos, items)

    def _elided(self, flat: list[ast.Expr], ty: Type) -> ast.Expr:
        item = flat[0]
        if isinstance(item, ast.InitList) or not isinstance(ty, StructType | ArrayType):
            return flat.pop(0)
        if isinstance(ty, StructType):
            # A value of the struct's own type initialises it whole (checked on a copy: only its type matters).
            if self.chk.exprs.expr(copy.deepcopy(item)).ty == ty:
                return flat.pop(0)
            return ast.InitList(item.pos, [self._elided(flat, f.ty) for f in ty.fields if flat])
        return ast.InitList(item.pos, [self._elided(flat, ty.elem) for _ in range(ty.n) if flat])

    def has_defaults(self, st: StructType) -> bool:
        return any(d.init is not None for d in self.chk.struct_defs[st].fields) or any(
            isinstance(f.ty, StructType) and self.has_defaults(f.ty) for f in st.fields)

    def _member_parts(self, item: ast.Expr, ty: Type, offset: int) -> list[tuple[int, ast.Expr]]:
        if isinstance(ty, StructType):
            if isinstance(item, ast.InitList):
                return [(offset + o, e) for o, e in self.struct_init(item, ty, item.pos).parts]
            return [(offset, self.chk.conversions.convert(self.chk.exprs.expr(item), ty, "initialization"))]
        if isinstance(ty, ArrayType):
            if not isinstance(item, ast.InitList):
                raise CompileError(f"array member of type '{ty}' needs a {{...}} initializer", item.pos)
            if isinstance(ty.elem, ArrayType) and item.items and not any(isinstance(x, ast.InitList)
                                                                       for x in item.items):
                item = regroup(item, ty)
            if len(item.items) > ty.n:
                raise CompileError(f"too many initializers for an array of {ty.n}", item.pos)
            step = size_of(ty.elem)
            out = []
            for j, sub in enumerate(item.items):
                out += self._member_parts(sub, ty.elem, offset + j * step)
            return out
        if isinstance(ty, AtomicType):
            raise CompileError("atomic members cannot be initialized; use atomic_store_explicit", item.pos)
        return [(offset, self.initial_value(item, ty))]

    def initial_value(self, item: ast.Expr, ty: Type) -> ast.Expr:
        """A scalar, vector or matrix (or struct) value from an initializer, braces or not."""
        if isinstance(item, ast.InitList):
            if isinstance(ty, StructType):
                return self.struct_init(item, ty, item.pos)
            if isinstance(ty, VectorType | MatrixType):
                return self.chk.conversions.convert(self.chk.exprs.construct(ast.Construct(item.pos, ast.TypeSpec(item.pos, str(ty)),
                                                                  item.items), ty), ty, "initialization")
            if len(item.items) == 1:
                return self.chk.conversions.convert(self.chk.exprs.expr(item.items[0]), ty, "initialization")
            if not item.items:
                return self.chk.conversions.convert(self.chk.exprs.expr(ast.IntLit(item.pos, 0)), ty, "initialization")
            raise CompileError(f"too many initializers for '{ty}'", item.pos)
        return self.chk.conversions.convert(item if item.ty is not None else self.chk.exprs.expr(item), ty, "initialization")

    # ------------------------------------------------------------------ member access
    def struct_member(self, e: ast.Member, base: ast.Expr | None = None) -> ast.Expr:
        """``s.name`` on a struct (``base``: ``s``, already checked), or ``p->name`` on a pointer
        to one."""
        if e.arrow and isinstance(e.base, ast.Name) and e.base.ident == "this":
            e.arrow = False  # 'this' is a reference here: this->x is this.x
        if e.arrow:
            base = self.chk.conversions.rvalue(self.chk.exprs.expr(e.base))
            bt = base.ty
            if not (isinstance(bt, PointerType) and isinstance(bt.pointee, StructType)):
                raise CompileError(f"member reference type '{bt}' is not a pointer to a struct; use '.'", e.pos)
            st = bt.pointee
            f = self._field(st, e)
            e.base, e.field, e.ty = base, f, f.ty
            e.lvalue = e.memory = True
            e.space = bt.space
            e.const_mem = bt.const
            return e
        if base is None:
            base = self.chk.exprs.expr(e.base)
        st = base.ty
        if not isinstance(st, StructType):
            raise CompileError(f"member reference base type '{st}' is not a struct", e.pos)
        f = self._field(st, e)
        e.base, e.field, e.ty = base, f, f.ty
        designates_part_of(e, base)
        if isinstance(base, ast.Name) and isinstance(base.symbol, Var) and not base.symbol.mutable:
            e.const_mem = True
        if isinstance(f.ty, ArrayType) and not base.lvalue:
            raise CompileError(f"indexing the array member '{e.name}' of a temporary struct is not supported; "
                               "store the struct in a variable first", e.pos)
        if isinstance(f.ty, ArrayType) and e.space is None:
            e.space = AddressSpace.THREAD
        return e

    @staticmethod
    def _field(st: StructType, e: ast.Member) -> StructField:
        f = st.field_named(e.name)
        if f is None:
            raise CompileError(f"no member named '{e.name}' in struct '{st.name}'"
                               + did_you_mean(e.name, [x.name for x in st.fields]), e.pos)
        return f

    # ------------------------------------------------------------------ member functions
    def static_member_functions(self, name: str) -> tuple[StructType, str] | None:
        """For a qualified name ``S::f`` (``ns::S::f``, ``F::f`` with F a type parameter) whose
        owner is a struct declaring member functions named ``f``: the struct and ``f``; else None."""
        owner, sep, fname = name.rpartition("::")
        if not sep or not owner:
            return None
        st = named_struct(self.chk.lookup.lookup_name(owner))
        if st is None or st not in self.chk.struct_defs:
            return None
        if not any(m.name == fname for m in self.chk.struct_defs[st].methods):
            return None
        return st, fname

    def static_call(self, e: ast.Call, st: StructType, name: str) -> ast.Expr:
        """``S::f(args)``: a call without an object, which only a static member function takes."""
        e.func = ast.Member(e.func.pos, ast.Name(e.func.pos, f"{st.name}::{name}"), name)
        return self.method_call(e, None, st)

    def method_call(self, e: ast.Call, base: ast.Expr | None, st: StructType) -> ast.Expr:
        """A member function call on ``base`` (an object of struct ``st``), or on no object
        (``base`` None: 'S::f()'), which must pick a static member function."""
        assert isinstance(e.func, ast.Member)  # static_call and the checker's callers make it one
        name = e.func.name
        defs = [m for m in self.chk.struct_defs[st].methods if m.name == name]
        if not defs:
            raise CompileError(f"no member function named '{name}' in struct '{st.name}'"
                               + did_you_mean(name, [m.name for m in self.chk.struct_defs[st].methods
                                                     if m.name != CONSTRUCTOR]), e.func.pos)
        if any(p.function_params is not None for m in defs for p in m.params):
            defs = self.chk.calls.with_function_arguments(e, defs)
        args = [a if a.ty is not None else self.chk.exprs.expr(a) for a in e.args]  # operator operands come checked
        defs = _by_constness(defs, base is not None and base.const_mem)
        binding: dict = {}
        fd: ast.FuncDef | None
        if any(m.template_params for m in defs) or name == CONSTRUCTOR:
            # Member function templates: deduced and picked like free function templates
            # (enable_if_t overloads drop out by SFINAE).
            label = f"{st.name}::{st.name if name == CONSTRUCTOR else name}"
            fd, binding = self.chk.calls.choose_overload(label, e.pos, defs, args, [])
        else:
            fd = next((m for m in defs if len(m.params) >= len(args) >= sum(p.default is None for p in m.params)),
                      None)
        if fd is None:
            raise CompileError(f"no matching member function for call to '{name}' with {len(args)} argument(s)",
                               e.pos)
        if base is None and not fd.static:
            raise CompileError(f"call to non-static member function '{st.name}::{name}' without an object", e.pos)
        # A temporary object ('F()(x)', 'make().get()') is materialised for the call (executor.codegen).
        if not fd.const_method and not fd.static and name != CONSTRUCTOR:  # a const object is made by one
            if base is not None and base.const_mem:
                raise CompileError(f"'{name}' changes its object, which is read-only here (declare it 'const' if "
                                   "it does not change the struct)", e.pos)
        inst = self._instantiate_method(st, fd, e.pos, binding)
        # A static member function has no object: called on one ('op.apply(x)'), the object is
        # not passed.
        converted: list[ast.Expr] = [] if fd.static or base is None else [base]
        own_params = inst.params if fd.static else inst.params[1:]
        for p, a in zip(own_params, args, strict=False):
            if p.kind == VarKind.REF:
                if not a.lvalue:
                    raise CompileError(f"cannot bind a temporary to reference parameter '{p.name}'", a.pos)
                converted.append(a)
            else:
                converted.append(self.chk.conversions.convert(a, p.ty, f"argument '{p.name}' of '{name}'"))
        for p, fp in list(zip(own_params, fd.params, strict=False))[len(args):]:
            assert fp.default is not None  # the overload was chosen for having defaults for the rest
            converted.append(self.chk.conversions.convert(self.chk.exprs.expr(copy.deepcopy(fp.default)), p.ty, "default argument"))
        e.args = converted
        e.target = inst
        e.ty = inst.ret
        self.chk.mark_reference_result(e, inst)
        return e

    def _instantiate_method(self, st: StructType, fd: ast.FuncDef, pos: Pos, binding: dict) -> FuncInstance:
        key = (id(fd), id(st), tuple(sorted((k, str(v)) for k, v in binding.items())))
        if key in self.chk.instances:
            return self.chk.instances[key]
        qualified = f"{st.name}::{fd.name}"
        body = copy.deepcopy(fd.body)
        saved_scope, saved_func, saved_addr = self.chk.scope, self.chk.func, self.chk.addressed
        saved_namespace = self.chk.lookup.enter_namespace(fd.namespace)
        try:
            return self._instantiate_method_body(st, fd, body, key, qualified, binding,
                                                 (saved_scope, saved_func, saved_addr))
        finally:
            self.chk.namespace = saved_namespace

    def _instantiate_method_body(self, st: StructType, fd: ast.FuncDef, body: ast.Block, key: tuple,
                                 qualified: str, binding: dict, saved: tuple) -> FuncInstance:
        self.chk.addressed = addressed_names(body)
        self.chk.scope = Scope(self.chk.globals)
        for f in st.fields:
            self.chk.scope.names[f.name] = MemberEntry(f)
        for m in self.chk.struct_defs[st].methods:
            self.chk.scope.names[m.name] = MethodEntry(m.name, st)
        self.chk.templates.struct_members_scope(st, self.chk.scope)
        for tname, value in binding.items():  # a member function template's own parameters
            self.chk.calls.bind_template_param(tname, value, fd.pos)
        for pname, functions in fd.function_arguments.items():  # its function pointer parameters
            self.chk.scope.names[pname] = FunctionArgumentEntry(functions)
        ret = self.chk.types.resolve_type(fd.ret)
        self.chk.func = self.chk.function_context(ret, fd.ret)
        params = [self.chk.calls.param_var(p) for p in fd.params]
        if not fd.static:
            this = Var("this", st, VarKind.REF, fd.pos, slot=self.chk.decls.new_slot(), mutable=not fd.const_method,
                       space=AddressSpace.THREAD)
            self.chk.scope.names["this"] = this
            params.insert(0, this)
        return self.chk.calls.check_instance(key, qualified, params, ret, body, fd.pos, saved)

    # ------------------------------------------------------------------ constructors
    def construct_into(self, target: ast.Name, st: StructType, args: list[ast.Expr], pos: Pos) -> ast.Expr:
        """The (checked) call of the constructor of ``st`` that these arguments pick, on the
        object ``target`` names."""
        arities = sorted({len(c.params) for c in self.chk.struct_defs[st].constructors})
        if not any(sum(p.default is None for p in c.params) <= len(args) <= len(c.params)
                   for c in self.chk.struct_defs[st].constructors):
            raise CompileError(f"no constructor of '{st.name}' takes {len(args)} argument(s) (its constructors take "
                               f"{' or '.join(map(str, arities))})", pos)
        return self.method_call(ast.Call(pos, ast.Member(pos, target, CONSTRUCTOR), list(args)), self.chk.exprs.expr(target),
                                st)

    def temporary_object(self, st: StructType, args: list[ast.Expr], pos: Pos) -> ast.Expr:
        """``P(args)`` / ``P{args}`` as a value: a hidden variable of its own, constructed, then read."""
        if self.chk.func is None:
            raise CompileError(f"constructing '{st.name}' at program scope is not supported by the simulator", pos)
        # A name no code can write, and no qualified one ('c10::metal::df32'): it is looked up in scope.
        name = f"{st.name.replace('::', '.')} temporary@{pos.line}:{pos.col}"
        var = Var(name, st, VarKind.MEMVAR, pos, slot=self.chk.decls.new_slot(), space=AddressSpace.THREAD)
        self.chk.scope.names[name] = var
        construct = self.construct_into(ast.Name(pos, name), st, args, pos)
        value = self.chk.exprs.expr(ast.Name(pos, name))
        out = ast.TemporaryObject(pos, var, construct, value)
        # It designates the object (as a C++ prvalue materialised once): a member read or a
        # member function call uses it in place, without copying members it leaves indeterminate.
        out.ty, out.lvalue, out.memory, out.space = st, True, True, AddressSpace.THREAD
        return out

    def member_name(self, e: ast.Name) -> ast.Expr:
        """A member's name inside a member function: ``this``'s field."""
        if self.chk.scope.lookup("this") is None:
            raise CompileError(f"invalid use of member '{e.ident}' in a static member function (it has no object)",
                               e.pos)
        return self.chk.exprs.expr(ast.Member(e.pos, ast.Name(e.pos, "this"), e.ident))

    def member_function_call(self, e: ast.Call) -> ast.Expr:
        """A call of another member function inside a member function: on ``this``, or on no
        object inside a static member function (which may call only static ones)."""
        callee = callee_name(e)
        if self.chk.scope.lookup("this") is None:
            entry = self.chk.lookup.lookup_name(callee.ident)
            assert isinstance(entry, MethodEntry)  # the caller looked it up
            return self.static_call(e, entry.struct, callee.ident)
        e.func = ast.Member(callee.pos, ast.Name(callee.pos, "this"), callee.ident)
        return self.chk.exprs.expr(e)


def _by_constness(defs: list[ast.FuncDef], const_object: bool) -> list[ast.FuncDef]:
    """Of member functions overloaded on 'const' ('T& operator[](i)' and 'const T& operator[](i)
    const'), the one the object's constness picks: a read-only object calls the const one, any
    other object the one that may change it."""
    if len(defs) < 2:
        return defs
    if const_object:
        return [m for m in defs if m.const_method] or defs
    changing = {_written_params(m) for m in defs if not m.const_method}
    return [m for m in defs if not m.const_method or _written_params(m) not in changing]


def _written_params(m: ast.FuncDef) -> tuple:
    return tuple((p.type_spec.name, repr(p.type_spec.args), tuple(p.type_spec.pointers), p.type_spec.reference,
                  p.type_spec.const) for p in m.params)


def _holds_pointer(ty: Type) -> bool:
    """Whether an object of this type holds a pointer, directly or in an array or struct member
    ('metal::array<device float*, 64>', as PyTorch passes a list of tensors)."""
    if isinstance(ty, PointerType):
        return True
    if isinstance(ty, ArrayType):
        return _holds_pointer(ty.elem)
    if isinstance(ty, StructType):
        return any(_holds_pointer(f.ty) for f in ty.fields)
    return False
