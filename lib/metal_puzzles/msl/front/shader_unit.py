"""A whole shader source (a ``.metal`` file): its kernel functions, the explicit instantiations of
templated kernels, and everything else (helpers, structs, constants) as a header.

The MLX path hands the parser a body and writes the signature itself; a whole shader brings its
own signatures. This module splits the preprocessed tokens into top-level items, parses each
kernel function with the ordinary parser, and reads what the parser skips: each parameter's
attribute with its index (``[[buffer(2)]]``, ``[[threadgroup(0)]]``), the function's
``[[max_total_threads_per_threadgroup(N)]]`` and the ``[[host_name("...")]]`` of instantiation
lines such as ``template [[host_name("add_float")]] kernel void add<float>(...);``.
"""

from __future__ import annotations

import ast as python_ast
from dataclasses import dataclass, field

from ..lang.errors import CompileError, Pos
from . import ast
from .lexer import ID, NUM, STR, Token
from .parser import Parser


@dataclass(frozen=True)
class Attribute:
    """``[[name]]`` or ``[[name(index)]]`` written after a kernel parameter."""

    name: str
    index: int | None
    pos: Pos


@dataclass
class KernelFunction:
    """A ``kernel`` function as written: its syntax tree, one attribute (or None) per parameter
    and the threadgroup size it promises not to exceed."""

    func: ast.FuncDef
    attributes: list[Attribute | None]
    max_total_threads: int | None


@dataclass(frozen=True)
class Instantiation:
    """``template [[host_name("name")]] kernel ... function<args>(...);``: a templated kernel
    made concrete and given the name the host looks it up by."""

    host_name: str
    function: str
    template_args: list  # TypeSpec or Expr, as the parser reads template arguments
    pos: Pos
    #: The parameters the instantiation declares ('template [[host_name("f_float")]] kernel void
    #: f(device float* x, uint i);'): as in C++, they must be the template's, once its arguments
    #: are bound; without '<...>' the arguments are deduced from them.
    params: list[ast.Param] | None = None
    #: Whether the template arguments are written out ('f<float>(...)') rather than deduced.
    explicit_args: bool = False


@dataclass
class ShaderUnit:
    """A shader split into the helpers around its kernels and the kernels themselves."""

    helpers: ast.TranslationUnit
    kernels: dict[str, KernelFunction] = field(default_factory=dict)
    instantiations: list[Instantiation] = field(default_factory=list)


def parse_shader(tokens: list[Token], type_names: set[str], template_names: set[str]) -> ShaderUnit:
    """Split preprocessed shader tokens into helpers, kernel functions and instantiations."""
    helper_tokens: list[Token] = []
    kernel_items: list[tuple[tuple[str, ...], list[Token]]] = []
    instantiation_items: list[list[Token]] = []
    _split_items(tokens, (), helper_tokens, kernel_items, instantiation_items)
    helper_parser = Parser(helper_tokens, type_names=set(type_names), template_names=set(template_names))
    unit = ShaderUnit(helper_parser.parse_translation_unit())
    for namespace, item in kernel_items:
        parser = Parser(list(item), type_names=set(helper_parser.type_names),
                        template_names=set(helper_parser.template_names))
        parser.namespace = namespace
        func = parser.parse_top_level()
        if func is None and item[0].text == "template":
            continue  # a templated kernel declared ahead of its definition (c10/metal/indexing.h does)
        if not isinstance(func, ast.FuncDef) or func.body is None:
            raise CompileError("a kernel function needs a body ('{ ... }'); a declaration alone defines nothing",
                               item[0].pos)
        qualified = parser._qualify(func)
        assert isinstance(qualified, ast.FuncDef)  # a definition keeps its kind, with its namespace's name
        func = qualified
        if func.name in unit.kernels:
            raise CompileError(f"kernel function '{func.name}' is defined twice (Metal has no kernel overloads)",
                               func.pos)
        attributes = _parameter_attributes(item, len(func.params))
        unit.kernels[func.name] = KernelFunction(func, attributes, _max_total_threads(item))
    for item in instantiation_items:
        unit.instantiations.append(_instantiation(item, unit, helper_parser))
    return unit


# ------------------------------------------------------------------------------ top-level items
def _split_items(tokens: list[Token], namespace: tuple[str, ...], helper_tokens: list[Token],
                 kernel_items: list[tuple[tuple[str, ...], list[Token]]],
                 instantiation_items: list[list[Token]]) -> None:
    """Sort file-scope items into helpers, kernel functions and instantiations. A namespace
    block is opened: its kernels are taken out (with the namespace they are declared in, which
    qualifies their names), the rest stays in the block among the helpers."""
    for item in top_level_items(tokens):
        opened = _namespace_block(item)
        if opened is not None:
            path, open_at = opened
            helper_tokens.extend(item[: open_at + 1])
            _split_items(item[open_at + 1 : -1], namespace + path, helper_tokens, kernel_items, instantiation_items)
            helper_tokens.append(item[-1])
        elif not declares_kernel(item):
            helper_tokens.extend(item)
        elif item[0].text == "template" and not (len(item) > 1 and item[1].is_op("<")):
            instantiation_items.append(item)
        else:
            kernel_items.append((namespace, item))


def _namespace_block(item: list[Token]) -> tuple[tuple[str, ...], int] | None:
    """For ``namespace a::b { ... }`` (or an anonymous or inline one): the path it adds and the
    index of its '{'; None for any other item."""
    k = 1 if item and item[0].kind == ID and item[0].text == "inline" else 0
    if not (len(item) > k + 1 and item[k].kind == ID and item[k].text == "namespace" and item[-1].is_op("}")):
        return None
    inline = k == 1
    path: list[str] = []
    k += 1
    while k < len(item) and not item[k].is_op("{"):
        if item[k].kind == ID:
            path.append(item[k].text)
        elif not item[k].is_op("::"):
            return None  # 'namespace x = y;' and the like: the parser reports them
        k += 1
    if k == len(item):
        return None
    return (() if inline else tuple(path)), k


def top_level_items(tokens: list[Token]) -> list[list[Token]]:
    """Declarations at file scope: each ends at a ';' outside brackets, or at the '}' closing a
    function body (a '}' followed by ';' ends a struct, which goes on to the ';')."""
    items: list[list[Token]] = []
    current: list[Token] = []
    depth = 0
    for k, t in enumerate(tokens):
        current.append(t)
        if t.is_op("(", "[", "{"):
            depth += 1
        elif t.is_op(")", "]", "}"):
            depth -= 1
            if depth == 0 and t.is_op("}"):
                following = tokens[k + 1] if k + 1 < len(tokens) else None
                if following is None or not following.is_op(";"):
                    items.append(current)
                    current = []
        elif depth == 0 and t.is_op(";"):
            items.append(current)
            current = []
    if current:
        items.append(current)
    return items


def _head(item: list[Token]) -> list[Token]:
    """The tokens before the parameter list: the first '(' outside attribute brackets."""
    brackets = 0
    for k, t in enumerate(item):
        if t.is_op("["):
            brackets += 1
        elif t.is_op("]"):
            brackets -= 1
        elif t.is_op("(") and brackets == 0:
            return item[:k]
        elif t.is_op("{", ";") and brackets == 0:
            return item[:k]
    return item


def declares_kernel(item: list[Token]) -> bool:
    return any(t.kind == ID and t.text == "kernel" for t in _head(item))


# ------------------------------------------------------------------------------ attributes
def _attributes_in(tokens: list[Token]) -> list[Attribute]:
    """Every ``[[name]]`` / ``[[name(n)]]`` in a run of tokens (several may share one pair of
    double brackets: ``[[kernel, max_total_threads_per_threadgroup(64)]]``)."""
    found: list[Attribute] = []
    k = 0
    while k + 1 < len(tokens):
        if not (tokens[k].is_op("[") and tokens[k + 1].is_op("[")):
            k += 1
            continue
        k += 2
        while k < len(tokens) and not tokens[k].is_op("]"):
            t = tokens[k]
            if t.kind == ID:
                index = None
                if k + 1 < len(tokens) and tokens[k + 1].is_op("("):
                    close = k + 2
                    while close < len(tokens) and not tokens[close].is_op(")"):
                        close += 1
                    inside = tokens[k + 2 : close]
                    if len(inside) == 1 and inside[0].kind == NUM:
                        index = _integer(inside[0])
                    k = close
                found.append(Attribute(t.text, index, t.pos))
            k += 1
        k += 2
    return found


def _integer(t: Token) -> int:
    text = t.text.rstrip("uUlL")
    try:
        return int(text, 0)
    except ValueError:
        raise CompileError(f"an attribute's index must be an integer, not '{t.text}'", t.pos) from None


def _parameter_attributes(item: list[Token], count: int) -> list[Attribute | None]:
    """The attribute written after each parameter of a kernel function, in order."""
    head = _head(item)
    start = len(head) + 1
    groups: list[list[Token]] = [[]]
    depth = 0
    for t in item[start:]:
        if t.is_op("(", "[", "{") or t.is_op("<"):
            depth += 1
        elif t.is_op(")", "]", "}") or t.is_op(">"):
            if depth == 0:
                break
            depth -= 1
        elif t.is_op(">>"):
            depth -= 2
        elif t.is_op(",") and depth == 0:
            groups.append([])
            continue
        groups[-1].append(t)
    if groups == [[]]:
        groups = []
    out: list[Attribute | None] = []
    for group in groups[:count]:
        attributes = _attributes_in(group)
        out.append(attributes[0] if attributes else None)
    return out + [None] * (count - len(out))


def _max_total_threads(item: list[Token]) -> int | None:
    for attribute in _attributes_in(_head(item)):
        if attribute.name == "max_total_threads_per_threadgroup":
            if attribute.index is None or not 0 < attribute.index <= 1024:
                raise CompileError("[[max_total_threads_per_threadgroup(N)]] needs N from 1 to 1024",
                                   attribute.pos)
            return attribute.index
    return None


# ------------------------------------------------------------------------------ instantiations
def _instantiation(item: list[Token], unit: ShaderUnit, helpers: Parser) -> Instantiation:
    start = item[0].pos
    host_name = _host_name(item)
    if host_name is None:
        raise CompileError("an explicit instantiation of a kernel needs [[host_name(\"...\")]]: the name the host "
                           "looks the kernel up by", start)
    for k, t in enumerate(item):
        if t.kind == ID and k + 1 < len(item) and item[k + 1].is_op("<"):
            function = _kernel_named_at(item, k, unit.kernels)
            if function is None:
                continue
            parser = Parser(list(item[k + 1 :]), type_names=set(helpers.type_names),
                            template_names=set(helpers.template_names))
            args = parser.parse_template_args()
            # Its parameter list, which must match the template's (checked once the arguments are bound).
            params = parser.parse_params() if parser.accept("(") else None
            return Instantiation(host_name, function, args, t.pos, params=params, explicit_args=True)
    for k, t in enumerate(item):
        if t.kind == ID and k + 1 < len(item) and item[k + 1].is_op("("):
            function = _kernel_named_at(item, k, unit.kernels)
            if function is None or not unit.kernels[function].func.template_params:
                continue
            parser = Parser(list(item[k + 2 :]), type_names=set(helpers.type_names),
                            template_names=set(helpers.template_names))
            return Instantiation(host_name, function, [], t.pos, params=parser.parse_params())
    raise CompileError(f"the instantiation '{host_name}' names no templated kernel function defined above it "
                       f"(kernels: {', '.join(sorted(unit.kernels)) or 'none'})", start)


def _kernel_named_at(item: list[Token], k: int, kernels: dict) -> str | None:
    """The kernel the name written up to token ``k`` denotes: 'apply', 'ops::apply' or
    '::ops::apply' (read from file scope, so a leading '::' changes nothing). The longest
    qualified reading that names a kernel wins ('void ::ops::apply' has no 'void::ops::apply')."""
    parts = [item[k].text]
    found = parts[0] if parts[0] in kernels else None
    while k >= 2 and item[k - 1].is_op("::") and item[k - 2].kind == ID:
        parts.insert(0, item[k - 2].text)
        k -= 2
        if "::".join(parts) in kernels:
            found = "::".join(parts)
    return found


def _host_name(item: list[Token]) -> str | None:
    for k in range(len(item) - 2):
        if item[k].kind == ID and item[k].text == "host_name" and item[k + 1].is_op("("):
            parts = []
            j = k + 2
            while j < len(item) and item[j].kind == STR:
                parts.append(python_ast.literal_eval(item[j].text))
                j += 1
            if not parts:
                raise CompileError("[[host_name(...)]] takes a string literal", item[k].pos)
            return "".join(parts)  # adjacent literals join, as macros that build names rely on
    return None
