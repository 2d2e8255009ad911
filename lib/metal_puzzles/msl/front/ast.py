"""Syntax tree of kernel source. The parser builds it; the checker annotates every expression
with its type (``ty``) and makes implicit conversions explicit as ``Convert`` nodes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ...compat import StrEnum
from ..lang.errors import Pos
from ..lang.types import AddressSpace


class CastStyle(StrEnum):
    """How an explicit conversion was written."""

    C = "c"  # (T)x, and T(x) for scalars
    STATIC = "static_cast"
    REINTERPRET = "reinterpret_cast"
    CONST = "const_cast"
    AS_TYPE = "as_type"  # as_type<T>(x) and bit_cast<T>(x): same bits, another type


class ConvertKind(StrEnum):
    """What a checker-inserted conversion does."""

    CONVERT = "convert"  # a value conversion (C's implicit conversions)
    SPLAT = "splat"  # a scalar repeated into every component of a vector
    DECAY = "decay"  # an array used as a pointer to its first element
    PTR = "ptr"  # a pointer to a more qualified (const) pointer
    LOAD = "load"  # the current value of an lvalue (the 'a' in 'a op= b')


class BinaryOp(StrEnum):
    """A binary operator, its value the operator's text: the parser reads it once
    (``BinaryOp(token.text)``), and precedence (the parser's ``BINARY_PRECEDENCE``), typing (the
    checker), constant folding (``constexpr``), arithmetic (the code generator) and cost
    (``counting/op_kinds``) are keyed by it."""

    LOGICAL_OR = "||"
    LOGICAL_AND = "&&"
    BIT_OR = "|"
    BIT_XOR = "^"
    BIT_AND = "&"
    EQ = "=="
    NE = "!="
    LT = "<"
    GT = ">"
    LE = "<="
    GE = ">="
    SHL = "<<"
    SHR = ">>"
    ADD = "+"
    SUB = "-"
    MUL = "*"
    DIV = "/"
    MOD = "%"

    # The groups below are sets of the operators' texts: a member is its text, and a set lookup
    # is cheaper than the class attribute lookups a tuple of members costs on every call.
    @property
    def is_comparison(self) -> bool:
        return self in _COMPARISONS

    @property
    def is_logical(self) -> bool:
        return self in _LOGICAL

    @property
    def is_bitwise(self) -> bool:
        """'&', '|', '^' (not the shifts)."""
        return self in _BITWISE

    @property
    def is_shift(self) -> bool:
        return self in _SHIFTS


_COMPARISONS = frozenset({"==", "!=", "<", ">", "<=", ">="})
_LOGICAL = frozenset({"&&", "||"})
_BITWISE = frozenset({"&", "|", "^"})
_SHIFTS = frozenset({"<<", ">>"})


class UnaryOp(StrEnum):
    """A prefix operator (``Unary.op``), or '++'/'--' after the operand (``Postfix.op``)."""

    NEG = "-"
    PLUS = "+"
    NOT = "!"
    BIT_NOT = "~"
    DEREF = "*"
    ADDRESS = "&"
    INC = "++"
    DEC = "--"

    @property
    def is_increment(self) -> bool:
        """'++' or '--': the operand is modified."""
        return self in _INCREMENTS


_INCREMENTS = frozenset({"++", "--"})


class AssignOp(StrEnum):
    """An assignment operator: '=' or a compound one ('+=' is '+' then '=')."""

    ASSIGN = "="
    ADD = "+="
    SUB = "-="
    MUL = "*="
    DIV = "/="
    MOD = "%="
    SHL = "<<="
    SHR = ">>="
    BIT_AND = "&="
    BIT_OR = "|="
    BIT_XOR = "^="

    @property
    def binary(self) -> BinaryOp | None:
        """The operation a compound assignment applies ('+=' -> '+'); None for '='."""
        return _COMPOUND.get(self)


#: Each compound assignment's operation.
_COMPOUND: dict[str, BinaryOp] = {op.value: BinaryOp(op.value[:-1]) for op in AssignOp if op.value != "="}


@dataclass(eq=False)
class Node:
    pos: Pos


# --------------------------------------------------------------------------- type syntax
@dataclass(eq=False)
class TypeSpec(Node):
    """A type as written: base name (possibly qualified/templated) plus qualifiers and declarator parts."""

    name: str  # e.g. 'float', 'T', 'atomic', 'vec', 'uint32_t'
    args: list[Any] = field(default_factory=list)  # template arguments: TypeSpec or Expr
    const: bool = False
    space: AddressSpace | None = None
    pointers: list[tuple[AddressSpace | None, bool]] = field(default_factory=list)  # per '*': (space, const)
    reference: bool = False
    array_dims: list[Any] = field(default_factory=list)  # Expr or None (unsized)
    #: A member type of the (template) struct named: 'typename OpMath<T>::type' is OpMath, [T], ['type'].
    member: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- expressions
@dataclass(eq=False)
class Expr(Node):
    """An expression. The fields after ``pos`` are the checker's findings about it."""

    #: Its type (types.Type).
    ty: Any = field(default=None, init=False, repr=False)
    #: It designates an object, so it can be assigned or bound to a reference (C's lvalue).
    lvalue: bool = field(default=False, init=False, repr=False)
    #: ... an object in addressable memory (an element, a dereference, a threadgroup variable).
    memory: bool = field(default=False, init=False, repr=False)
    #: The address space of that object, or of the array it is.
    space: AddressSpace | None = field(default=None, init=False, repr=False)
    #: The object is read-only (a const variable, an input buffer, constant memory).
    const_mem: bool = field(default=False, init=False, repr=False)


@dataclass(eq=False)
class IntLit(Expr):
    value: int
    suffix: str = ""
    radix: int = 10


@dataclass(eq=False)
class FloatLit(Expr):
    value: float
    suffix: str = ""


@dataclass(eq=False)
class BoolLit(Expr):
    value: bool


@dataclass(eq=False)
class Name(Expr):
    ident: str  # may be qualified: 'metal::exp', 'mem_flags::mem_threadgroup'
    template_args: list[Any] | None = None
    symbol: Any = field(default=None, init=False, repr=False)


@dataclass(eq=False)
class Unary(Expr):
    op: UnaryOp
    operand: Expr


@dataclass(eq=False)
class Postfix(Expr):
    op: UnaryOp  # INC or DEC
    operand: Expr


@dataclass(eq=False)
class Binary(Expr):
    op: BinaryOp
    left: Expr
    right: Expr
    # Set by the checker: the type both operands are converted to before the operation.
    op_ty: Any = field(default=None, init=False, repr=False)
    #: Set by the checker when a matrix is involved: what kind of product or sum it is.
    matrix_op: MatrixOp | None = field(default=None, init=False, repr=False)


class MatrixOp(StrEnum):
    """The operations matrices take part in."""

    MAT_VEC = "matrix * vector"
    VEC_MAT = "vector * matrix"
    MAT_MAT = "matrix * matrix"
    SCALE = "matrix with scalar"  # m * s, s * m, m / s (componentwise)
    ELEMENTWISE = "matrix with matrix"  # m + n, m - n


@dataclass(eq=False)
class Assign(Expr):
    op: AssignOp
    target: Expr
    value: Expr
    op_ty: Any = field(default=None, init=False, repr=False)


@dataclass(eq=False)
class Ternary(Expr):
    cond: Expr
    then: Expr
    other: Expr


@dataclass(eq=False)
class Call(Expr):
    func: Expr
    args: list[Expr]
    # Set by the checker: what is called (a builtin or a header function instance).
    target: Any = field(default=None, init=False, repr=False)
    #: The call is a statement of its own: its value is discarded.
    value_unused: bool = field(default=False, init=False, repr=False)
    #: Set by a builtin's type rule for its code generation: the type the arguments were unified
    #: to, the element type of the atomic object, the value of a constant-valued builtin
    #: (numeric_limits), and whether a select picks per component with a scalar condition.
    arg_ty: Any = field(default=None, init=False, repr=False)
    atomic_elem: Any = field(default=None, init=False, repr=False)
    const_value: Any = field(default=None, init=False, repr=False)
    select_per_component: bool = field(default=False, init=False, repr=False)


@dataclass(eq=False)
class Construct(Expr):
    """A functional cast or vector constructor: float(x), float4(a, b), uint2(1)."""

    type_spec: TypeSpec
    args: list[Expr]
    #: Set by the checker: one scalar argument fills every component.
    splat: bool = field(default=False, init=False, repr=False)


@dataclass(eq=False)
class Cast(Expr):
    type_spec: TypeSpec
    operand: Expr
    style: CastStyle


@dataclass(eq=False)
class Index(Expr):
    base: Expr
    index: Expr
    #: Set by the checker: a subscript of a vector value (v[i]), not of memory.
    vector_index: bool = field(default=False, init=False, repr=False)
    #: Set by the checker: a column of a matrix value (m[i]).
    matrix_index: bool = field(default=False, init=False, repr=False)


@dataclass(eq=False)
class Member(Expr):
    base: Expr
    name: str
    arrow: bool = False
    #: Set by the checker: the vector components the swizzle selects, and whether one repeats.
    comps: list[int] = field(default_factory=list, init=False, repr=False)
    dup_swizzle: bool = field(default=False, init=False, repr=False)
    #: Set by the checker for a struct member: the field (types.StructField).
    field: Any = field(default=None, init=False, repr=False)


@dataclass(eq=False)
class Comma(Expr):
    exprs: list[Expr]


@dataclass(eq=False)
class InitList(Expr):
    items: list[Expr]


@dataclass(eq=False)
class TemporaryObject(Expr):
    """A struct temporary built by a constructor ('P(1, 2)' as a value), made by the checker: the
    hidden variable ``var`` (thread memory of its own), the constructor ``construct`` called on
    it, then ``value`` (the variable's name) read."""

    var: Any
    construct: Expr
    value: Expr


@dataclass(eq=False)
class PackExpansion(Expr):
    """``pattern...`` in an argument list: one copy of the pattern per element of the
    parameter packs it names ('declval<Args>()...', 'rest...')."""

    pattern: Expr


@dataclass(eq=False)
class StructInit(Expr):
    """A struct value built by the checker from an initializer list and default member
    initializers: each part is (byte offset, converted expression); other bytes are zero."""

    parts: list[tuple[int, Expr]]


@dataclass(eq=False)
class SizeOf(Expr):
    """``sizeof(T)`` / ``sizeof x``, or with ``align`` ``alignof(T)``: a constant the checker folds."""

    target: Any  # TypeSpec or Expr
    align: bool = False


@dataclass(eq=False)
class Convert(Expr):
    """An implicit (or explicit) conversion inserted by the checker."""

    operand: Expr
    kind: ConvertKind = ConvertKind.CONVERT


# --------------------------------------------------------------------------- statements
@dataclass(eq=False)
class Stmt(Node):
    pass


@dataclass(eq=False)
class Declarator(Node):
    name: str
    type_spec: TypeSpec  # the full type for this declarator
    init: Expr | None = None
    symbol: Any = field(default=None, init=False, repr=False)
    #: Set by the checker for a struct with constructors: the constructor call that initialises
    #: the variable in place ('P p(1, 2);', 'P p = P(1, 2);', 'P p;').
    construct: Any = field(default=None, init=False, repr=False)


@dataclass(eq=False)
class Decl(Stmt):
    declarators: list[Declarator]
    static: bool = False
    constexpr: bool = False


@dataclass(eq=False)
class ExprStmt(Stmt):
    expr: Expr


@dataclass(eq=False)
class LocalTypeDef(Stmt):
    """A struct or union defined inside a function body, named or not, and the variables declared
    with it ('union { uint i; half h[2]; } val;')."""

    struct: StructDef
    decl: Decl | None = None


@dataclass(eq=False)
class Block(Stmt):
    stmts: list[Stmt]


@dataclass(eq=False)
class If(Stmt):
    cond: Expr
    then: Stmt
    other: Stmt | None = None


@dataclass(eq=False)
class For(Stmt):
    init: Stmt | None
    cond: Expr | None
    step: Expr | None
    body: Stmt


@dataclass(eq=False)
class While(Stmt):
    cond: Expr
    body: Stmt


@dataclass(eq=False)
class DoWhile(Stmt):
    body: Stmt
    cond: Expr


@dataclass(eq=False)
class Switch(Stmt):
    value: Expr
    body: Block


@dataclass(eq=False)
class Case(Stmt):
    value: Expr | None  # None for 'default'


@dataclass(eq=False)
class Break(Stmt):
    pass


@dataclass(eq=False)
class Continue(Stmt):
    pass


@dataclass(eq=False)
class Return(Stmt):
    value: Expr | None = None
    #: Set by the checker: the function returns a reference, so the value is a location.
    by_reference: bool = field(default=False, init=False, repr=False)


@dataclass(eq=False)
class Empty(Stmt):
    pass


@dataclass(eq=False)
class StaticAssert(Stmt):
    """``static_assert(condition, "message");`` at namespace or block scope: checked when the
    checker reaches it (in a function template, for each instance)."""

    condition: Expr
    message: str = ""
    #: The namespace it is written in (at namespace scope): its names are looked up from there.
    namespace: tuple[str, ...] = ()


@dataclass(eq=False)
class UsingNamespace(Stmt):
    """``using namespace X;``: X's names are found unqualified, in the namespace the directive
    is written in (a kernel body's directive is in the global namespace). ``target`` is X as
    written; the checker resolves it from ``namespace``, as C++ does."""

    target: str
    namespace: tuple[str, ...] = ()


# --------------------------------------------------------------------------- top level
@dataclass(eq=False)
class Param(Node):
    name: str | None
    type_spec: TypeSpec
    default: Expr | None = None
    #: The attribute written after it ('buffer', 'thread_position_in_grid'...), if any.
    attribute: str | None = None
    #: A function parameter pack ('const Args&... rest'): one parameter per type of its pack.
    pack: bool = False
    #: A function pointer parameter ('T (*op)(T, T)'): the pointed-to function's parameters
    #: (``type_spec`` is its return type). Its argument must name a function: each call site
    #: instantiates the function with the one it names.
    function_params: list[Param] | None = None


@dataclass(eq=False)
class TemplateParam(Node):
    name: str  # an unnamed parameter ('typename = enable_if_t<...>') gets a name no code can write
    kind: str  # 'type' or a value type name such as 'int', 'bool', 'uint'
    default: Any = None
    #: A value parameter's type as written ('enable_if_t<is_integral_v<T>, int> = 0'): forming it
    #: is part of deducing the function's template arguments (a failure drops the candidate).
    type_spec: TypeSpec | None = None
    #: A template parameter pack ('typename... Args'): it binds a list of types.
    pack: bool = False


@dataclass(eq=False)
class FuncDef(Node):
    name: str
    ret: TypeSpec
    params: list[Param]
    body: Block  # the parser refuses a prototype without its definition
    template_params: list[TemplateParam] = field(default_factory=list)
    is_kernel: bool = False
    #: A member function declared 'const' (it may not change its object).
    const_method: bool = False
    #: The namespace it is declared in (its ``name`` is qualified with it): names in its body are
    #: looked up from there outwards.
    namespace: tuple[str, ...] = ()
    #: Declared 'constexpr': a call with constant arguments may appear where C++ needs a constant.
    constexpr: bool = False
    #: An explicit specialisation's template arguments ('template <> float2 one<float2>()'): the
    #: body used when a call to the function template ``name`` binds exactly these.
    specialization: list | None = None
    #: A static member function: called without an object ('S::f()', 'S<T>::f()'), no 'this'.
    static: bool = False
    #: A constructor's member initializer list (': a(x), b{y}'), in the order written.
    member_inits: list[MemberInit] = field(default_factory=list)
    #: For an instance made for function arguments: each function pointer parameter's name and
    #: the overload set (list of FuncDef) of the function its call site named.
    function_arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(eq=False)
class MemberInit(Node):
    """One entry of a constructor's member initializer list: ``a(x)`` or ``a{x, y}``."""

    name: str
    args: list[Expr]
    braced: bool = False


@dataclass(eq=False)
class GlobalDecl(Node):
    decl: Decl
    namespace: tuple[str, ...] = ()  # its declarators' names are qualified with it
    #: A variable template's parameters ('template <typename T> constexpr T pi_v = T(3.14159);').
    template_params: list[TemplateParam] = field(default_factory=list)


@dataclass(eq=False)
class TypeAlias(Node):
    name: str
    type_spec: TypeSpec
    template_params: list[TemplateParam] = field(default_factory=list)
    namespace: tuple[str, ...] = ()  # ``name`` is qualified with it


@dataclass(eq=False)
class Enumerator(Node):
    name: str
    value: Expr | None  # None: one more than the enumerator before it (0 for the first)


@dataclass(eq=False)
class EnumDef(Node):
    """``enum class Name : uchar { A, B = 4 };`` (scoped) or ``enum Name { A, B };`` (whose
    enumerators are also names of the enclosing namespace)."""

    name: str
    enumerators: list[Enumerator]
    underlying: TypeSpec | None = None  # None: int
    scoped: bool = True
    namespace: tuple[str, ...] = ()  # ``name`` is qualified with it


@dataclass(eq=False)
class StructDef(Node):
    """``struct Name { members; member functions };`` in the header. A member's declarator
    carries its default member initializer, if any."""

    name: str
    fields: list[Declarator]
    methods: list[FuncDef] = field(default_factory=list)
    namespace: tuple[str, ...] = ()  # ``name`` is qualified with it
    #: A struct template's parameters (empty for a plain struct and an explicit specialisation).
    template_params: list[TemplateParam] = field(default_factory=list)
    #: A specialisation's arguments as written ('template <> struct S<half>': [half]); None for
    #: a plain struct or a primary template.
    specialization: list[Any] | None = None
    #: Member types ('using type = float;', 'typedef T type;') and static constant members
    #: ('static constexpr int value = 4;'), reached as 'S::type' and 'S<T>::value'.
    member_types: list[TypeAlias] = field(default_factory=list)
    static_members: list[Declarator] = field(default_factory=list)
    #: Constructors ('P(float x) : a(x) {}'): FuncDefs named after the struct, returning void.
    constructors: list[FuncDef] = field(default_factory=list)
    #: An instance of a struct template: its template parameters' values (types or integers).
    binding: dict[str, Any] = field(default_factory=dict)
    #: Where a member first carries '[[id(n)]]': the struct is an argument buffer (a table of
    #: buffers the host encodes), which the simulator declares but cannot bind.
    argument_buffer: Pos | None = None
    #: A 'union': every member at offset 0, sharing its bytes (type punning, as c10/metal/atomic.h does).
    union: bool = False


@dataclass(eq=False)
class TranslationUnit(Node):
    items: list[Node]


def children(node: Node) -> Iterator[Node]:
    """The nodes directly inside a node (fields holding nodes or lists of nodes)."""
    for value in vars(node).values():
        if isinstance(value, Node):
            yield value
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, Node):
                    yield item


def too_deep(node: Node, limit: int) -> Node | None:
    """The first node nested more than ``limit`` levels deep (depth first), or None."""
    stack = [(node, 0)]
    while stack:
        n, depth = stack.pop()
        if depth > limit:
            return n
        stack.extend((child, depth + 1) for child in children(n))
    return None


def walk(node: Node, into_loops: bool = True) -> Iterator[Node]:
    """Every node of a subtree, depth first (optionally not entering nested loops)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if not into_loops and n is not node and isinstance(n, For | While | DoWhile):
            continue
        stack.extend(children(n))
