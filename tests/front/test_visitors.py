"""Every syntax-tree node has its handler in every visitor that dispatches on the node's type
(issue 31), the guarantee jlox's visitors give: the code generator's ``x_<Node>`` (expressions)
and ``s_<Node>`` (statements), the checker's ``e_<Node>`` (expressions) and ``s_<Node>``
(statements). The node classes are found by introspection, not listed, so a
node added to the tree without its handlers fails here instead of in a learner's kernel. A node
a visitor never sees is declared in ``EXEMPT`` with the reason.

(``constexpr.evaluate`` is not such a visitor: it folds what C allows in a constant expression
and answers NotConstant for every other node, by design.)"""

from __future__ import annotations

import importlib
import pkgutil

import numpy as np
import pytest

import metal_puzzles.msl
from metal_puzzles.msl import CompileError, simulate
from metal_puzzles.msl.front import ast
from metal_puzzles.msl.front.checker import Checker
from metal_puzzles.msl.run.codegen import CodeGen

# Node classes may be defined anywhere in the simulator (the parser has a statement of its own).
for _module in pkgutil.walk_packages(metal_puzzles.msl.__path__, "metal_puzzles.msl."):
    importlib.import_module(_module.name)


def node_classes(base: type) -> list[type]:
    """Every class of the simulator derived from ``base``, however indirectly."""
    found: dict[str, type] = {}
    todo = [base]
    while todo:
        for sub in todo.pop().__subclasses__():
            todo.append(sub)
            if sub.__module__.startswith("metal_puzzles.msl."):
                found[sub.__name__] = sub
    return [found[name] for name in sorted(found)]


#: The visitors that dispatch by name: (class, handler prefix, the node classes it must handle).
NAMED_VISITORS = {
    "codegen expressions": (CodeGen, "x_", ast.Expr),
    "codegen statements": (CodeGen, "s_", ast.Stmt),
    "checker expressions": (Checker, "e_", ast.Expr),
    "checker statements": (Checker, "s_", ast.Stmt),
}

#: Nodes a visitor never sees: (visitor, node class name) -> why.
EXEMPT = {
    ("codegen expressions", "PackExpansion"):
        "the checker expands 'pattern...' into one argument per pack element (checker/packs.py) or "
        "refuses it, so no checked tree holds one",
    ("checker expressions", "PackExpansion"):
        "expanded by expand_packs in call and constructor arguments before they are checked; one left "
        "anywhere else is refused by Checker.expr's own error (test_a_stray_pack_expansion_is_refused)",
    ("checker expressions", "StructInit"):
        "built by the checker from an initializer list it has already checked (checker/structs.py), "
        "never checked again",
}

CASES = [(visitor, node) for visitor, (_, _, base) in NAMED_VISITORS.items() for node in node_classes(base)]


@pytest.mark.parametrize("visitor, node", CASES, ids=[f"{v}-{n.__name__}" for v, n in CASES])
def test_every_node_has_its_handler(visitor: str, node: type) -> None:
    cls, prefix, _ = NAMED_VISITORS[visitor]
    if (visitor, node.__name__) in EXEMPT:
        return
    assert callable(getattr(cls, prefix + node.__name__, None)), (
        f"{cls.__name__} has no {prefix}{node.__name__} for node {node.__module__}.{node.__name__}: "
        f"add it, or declare in EXEMPT why {visitor} never sees this node")


@pytest.mark.parametrize("visitor, node_name", list(EXEMPT))
def test_every_exemption_is_still_needed(visitor: str, node_name: str) -> None:
    cls, prefix, base = NAMED_VISITORS[visitor]
    assert node_name in {n.__name__ for n in node_classes(base)}, f"{node_name} is no longer a node: drop it"
    assert not hasattr(cls, prefix + node_name), f"{cls.__name__} now handles {node_name}: drop the exemption"


@pytest.mark.parametrize("visitor", list(NAMED_VISITORS))
def test_every_handler_is_for_a_node(visitor: str) -> None:
    """A handler whose node is gone (or misspelt) is dead code, and would hide a missing one."""
    cls, prefix, base = NAMED_VISITORS[visitor]
    nodes = {n.__name__ for n in node_classes(base)}
    handlers = {name[len(prefix):] for name in dir(cls) if name.startswith(prefix) and callable(getattr(cls, name))}
    assert handlers - nodes == set()


def test_a_stray_pack_expansion_is_refused() -> None:
    """The checker's exemption for PackExpansion rests on this: outside a call's arguments it is a
    compile error at the '...', not a crash."""
    src = "uint i = thread_position_in_grid.x;\nout[i] = float3(a[i]...).x;"
    with pytest.raises(CompileError) as caught:
        simulate("k", ["a"], ["out"], src, inputs=[np.ones(4, np.float32)], output_shapes=[(4,)],
                 output_dtypes=[np.float32], grid=(4, 1, 1), threadgroup=(4, 1, 1))
    assert "PackExpansion" in str(caught.value) and "source:2:" in str(caught.value)
