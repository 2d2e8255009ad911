"""Every syntax-tree node has its handler in every visitor that dispatches on the node's type
(issue 31), the guarantee jlox's visitors give. Each visitor is a table from node class to handler
(``front/dispatch.py``), checked complete when its module is imported (issue 38): the code
generator's expressions and statements (``CodeGen.expression_handlers``, ``.statement_handlers``),
the checker's (``checker/expressions.EXPRESSION_HANDLERS``, ``checker/statements.STATEMENT_HANDLERS``).
Here the node classes are found after every module of the simulator is imported, so a node
defined in a module the tables' modules do not import still fails here, not in a learner's kernel.

(``constexpr.evaluate`` is not such a visitor: it folds what C allows in a constant expression
and answers NotConstant for every other node, by design.)"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping

import numpy as np
import pytest

import metal_puzzles.msl
from metal_puzzles.msl import CompileError, simulate
from metal_puzzles.msl.executor.codegen import CodeGen
from metal_puzzles.msl.front import ast
from metal_puzzles.msl.front.checker.expressions import EXPRESSION_HANDLERS, NEVER_CHECKED
from metal_puzzles.msl.front.checker.statements import STATEMENT_HANDLERS
from metal_puzzles.msl.front.dispatch import dispatch_table, node_classes

# Node classes may be defined anywhere in the simulator (the parser has a statement of its own).
for _module in pkgutil.walk_packages(metal_puzzles.msl.__path__, "metal_puzzles.msl."):
    importlib.import_module(_module.name)

#: Each visitor's table, the node classes it must handle, and the nodes it never sees.
VISITORS: dict[str, tuple[Mapping[type, object], type, Mapping[type, str]]] = {
    "codegen expressions": (CodeGen.expression_handlers, ast.Expr,
                            {ast.PackExpansion: "expanded or refused by the checker"}),
    "codegen statements": (CodeGen.statement_handlers, ast.Stmt, {}),
    "checker expressions": (EXPRESSION_HANDLERS, ast.Expr, NEVER_CHECKED),
    "checker statements": (STATEMENT_HANDLERS, ast.Stmt, {}),
}

CASES = [(visitor, node) for visitor, (_, base, _) in VISITORS.items() for node in node_classes(base)]


@pytest.mark.parametrize("visitor, node", CASES, ids=[f"{v}-{n.__name__}" for v, n in CASES])
def test_every_node_has_its_handler(visitor: str, node: type) -> None:
    table, _, never = VISITORS[visitor]
    if node in never:
        assert node not in table, f"{visitor} handles {node.__name__}: it is not a node it never sees"
        return
    assert callable(table.get(node)), (
        f"{visitor} has no handler for node {node.__module__}.{node.__name__}: add it to its table, "
        f"or declare why it never sees this node")


@pytest.mark.parametrize("visitor", list(VISITORS))
def test_every_handler_is_for_a_node(visitor: str) -> None:
    """A handler whose node is gone is dead code, and would hide a missing one."""
    table, base, _ = VISITORS[visitor]
    assert set(table) - set(node_classes(base)) == set()


class _Toy(ast.Node):
    """A tree of its own, so that the toy nodes never join the simulator's."""


class _Leaf(_Toy):
    pass


class _Pair(_Toy):
    pass


def test_a_table_without_a_handler_for_a_node_is_refused_by_name() -> None:
    with pytest.raises(TypeError, match="toy visitor: no handler for _Pair"):
        dispatch_table("toy visitor", _Toy, {_Leaf: "leaf"})


def test_a_table_with_a_handler_for_a_class_that_is_not_a_node_is_refused() -> None:
    with pytest.raises(TypeError, match="toy visitor: Name is not a _Toy node"):
        dispatch_table("toy visitor", _Toy, {_Leaf: "leaf", _Pair: "pair", ast.Name: "name"})


def test_a_node_the_visitor_never_sees_needs_no_handler() -> None:
    assert dispatch_table("toy visitor", _Toy, {_Leaf: "leaf"}, never={_Pair: "the toy folds pairs away"}) == {
        _Leaf: "leaf"}


def test_a_stray_pack_expansion_is_refused() -> None:
    """The checker's exemption for PackExpansion rests on this: outside a call's arguments it is a
    compile error at the '...', not a crash."""
    src = "uint i = thread_position_in_grid.x;\nout[i] = float3(a[i]...).x;"
    with pytest.raises(CompileError) as caught:
        simulate("k", ["a"], ["out"], src, inputs=[np.ones(4, np.float32)], output_shapes=[(4,)],
                 output_dtypes=[np.float32], grid=(4, 1, 1), threadgroup=(4, 1, 1))
    assert "PackExpansion" in str(caught.value) and "source:2:" in str(caught.value)
