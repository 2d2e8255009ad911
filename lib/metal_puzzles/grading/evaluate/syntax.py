"""What a notebook's code says before it runs: the names a body binds, what a function
declares, whether code mentions MetalKernel, and short quotations of code for messages."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class FunctionFacts:
    """What Python decides about a function before it runs, scanned once per definition."""

    local_names: frozenset[str]  # every name it assigns, unless declared global or nonlocal
    global_names: frozenset[str]
    nonlocal_names: frozenset[str]
    generator: bool  # its body runs as it is iterated, not when it is called
    captured: bool  # it defines functions or classes, which may keep its frame alive
    builds_kernels: bool  # it mentions MetalKernel

    @staticmethod
    def of(node: ast.FunctionDef | ast.AsyncFunctionDef) -> FunctionFacts:
        globals_: set[str] = set()
        nonlocals: set[str] = set()
        generator = captured = False
        for n in own_nodes(node.body):
            if isinstance(n, ast.Global):
                globals_.update(n.names)
            elif isinstance(n, ast.Nonlocal):
                nonlocals.update(n.names)
            elif isinstance(n, ast.Yield | ast.YieldFrom):
                generator = True
            elif isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
                captured = True
        a = node.args
        params = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if p is not None}
        local = (assigned_names(node.body) | params) - globals_ - nonlocals
        builds = any(isinstance(n, ast.Name | ast.Attribute) and names_metal_kernel(n) for n in ast.walk(node))
        return FunctionFacts(frozenset(local), frozenset(globals_), frozenset(nonlocals), generator, captured, builds)



def own_nodes(body: Iterable[ast.AST]) -> Iterable[ast.AST]:
    """The nodes of a body, not descending into nested functions, classes or lambdas (their own
    scopes), but into comprehensions (a walrus there binds in this scope)."""
    stack = list(body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            stack.extend(node.decorator_list)
            if not isinstance(node, ast.ClassDef):
                stack.extend(d for d in (*node.args.defaults, *node.args.kw_defaults) if d is not None)
            continue
        if isinstance(node, ast.Lambda):
            continue
        stack.extend(ast.iter_child_nodes(node))


def assigned_names(body: Iterable[ast.AST]) -> set[str]:
    names: set[str] = set()
    comprehension_targets: set[int] = set()
    for node in own_nodes(body):
        if isinstance(node, ast.comprehension):
            comprehension_targets.update(id(n) for n in ast.walk(node.target))
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del) and id(node) not in \
                comprehension_targets:
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names if a.name != "*")
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
    return names


def pattern_names(pattern: ast.AST) -> set[str]:
    return assigned_names([pattern])



def names_metal_kernel(func: ast.expr) -> bool:
    return isinstance(func, ast.Name) and func.id == "MetalKernel" or \
        isinstance(func, ast.Attribute) and func.attr == "MetalKernel"



def quote(node: ast.AST) -> str:
    """A short quotation of the code that made a value."""
    try:
        text = ast.unparse(node)
    except (ValueError, TypeError, AttributeError, RecursionError):
        return "an expression"
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:57] + "..."


KIND_NAMES = {"ListComp": "list comprehension", "SetComp": "set comprehension", "DictComp": "dict comprehension",
               "GeneratorExp": "generator", "Lambda": "lambda", "Dict": "dict", "Set": "set", "Yield": "yield",
               "YieldFrom": "yield", "Starred": "starred expression"}

