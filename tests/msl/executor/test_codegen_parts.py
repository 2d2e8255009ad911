"""The code generator is a composition (issue 38), as the checker is: one part per concept, each a
``CodeGenPart`` that reaches the shared state and the other parts through ``self.gen``, under the
interface each part offers (``executor/codegen/interfaces.py``), and each node compiled by the
part whose table names it. Read from the source (``support.composition``, shared with the
checker's tests), so that a part turned back into a mixin, or a call of another part's private
method, fails here by name."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from metal_puzzles.msl.executor import codegen as codegen_package
from metal_puzzles.msl.executor.codegen import CodeGen, interfaces
from metal_puzzles.msl.executor.codegen.codegen_state import CodeGenPart, CodeGenState
from metal_puzzles.msl.front import ast
from support.composition import Composition

CODEGEN = Composition(whole=CodeGen, part_base=CodeGenPart, state=CodeGenState, interfaces=interfaces,
                      back_reference="gen", folder=Path(codegen_package.__file__).parent)
MODULES = CODEGEN.modules


def test_every_part_is_made_under_its_interface() -> None:
    assert len(CODEGEN.parts) == 6
    assert CODEGEN.parts_not_made_under_their_interface(CodeGen()) == []


def test_each_node_is_compiled_by_the_part_whose_table_names_it() -> None:
    """The bound dispatch covers the joined tables, each handler bound to this generator's part of
    the handler's own class (a handler bound to another part would compile with the wrong self)."""
    gen = CodeGen(cost=True)
    parts = {type(getattr(gen, name)): getattr(gen, name) for name in CODEGEN.parts}
    for dispatch, table in ((gen.expression_dispatch, CodeGen.expression_handlers),
                            (gen.statement_dispatch, CodeGen.statement_handlers)):
        assert dispatch.keys() == table.keys()
        for node, bound in dispatch.items():
            assert isinstance(bound, partial) and bound.func is table[node], node.__name__
            owner = parts[next(cls for cls in parts if getattr(cls, table[node].__name__, None) is table[node])]
            assert bound.args == (owner,), node.__name__


def test_a_node_claimed_by_two_parts_is_refused() -> None:
    from metal_puzzles.msl.executor.codegen import _joined

    with pytest.raises(TypeError, match="both compile IntLit"):
        _joined(ast.Expr, {ast.IntLit: object()}, {ast.IntLit: object()})


@pytest.mark.parametrize("module", MODULES, ids=[m.name for m in MODULES])
def test_no_part_is_a_mixin(module: Path) -> None:
    """A part derives from CodeGenPart alone; only CodeGen itself holds the shared state."""
    assert CODEGEN.mixins(module) == []


@pytest.mark.parametrize("module", MODULES, ids=[m.name for m in MODULES])
def test_no_module_calls_another_parts_private_method(module: Path) -> None:
    private = CODEGEN.private_calls(module)
    assert not private, f"{module.name} calls private methods of other parts: {private}"


def test_the_private_call_test_sees_one() -> None:
    """The rule above is not vacuous: the shape it looks for is what a cross-part private call is."""
    assert CODEGEN.sees_a_private_call("self.gen.places._element_loc(e)")
    assert not CODEGEN.sees_a_private_call("self.gen.places.element_loc(e)")
