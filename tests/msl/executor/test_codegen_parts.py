"""The code generator is a composition (issue 38), as the checker is: one part per concept, each a
``CodeGenPart`` that reaches the shared state and the other parts through ``self.gen``, under the
interface each part offers (``executor/codegen/interfaces.py``), and each node compiled by the
part whose table names it. Read from the source, so that a part turned back into a mixin, or a
call of another part's private method, fails here by name."""

from __future__ import annotations

import ast as pyast
from functools import partial
from pathlib import Path

import pytest

from metal_puzzles.msl.executor import codegen as codegen_package
from metal_puzzles.msl.executor.codegen import CodeGen, interfaces
from metal_puzzles.msl.executor.codegen.codegen_state import CodeGenPart, CodeGenState
from metal_puzzles.msl.front import ast

CODEGEN = Path(codegen_package.__file__).parent
MODULES = sorted(CODEGEN.glob("*.py"))

#: The part under each attribute of the code generator, and the interface it is declared under.
PARTS = {name: hint for name, hint in CodeGenState.__annotations__.items() if hint.endswith("Api")}


def test_every_part_is_made_under_its_interface() -> None:
    gen = CodeGen()
    assert len(PARTS) == 6
    for name, interface in PARTS.items():
        part = getattr(gen, name)
        assert isinstance(part, CodeGenPart), name
        assert part.gen is gen, name
        offered = {m for m in vars(getattr(interfaces, interface)) if not m.startswith("_")}
        assert offered, interface
        missing = {m for m in offered if not callable(getattr(part, m, None))}
        assert not missing, f"{type(part).__name__} lacks {missing} of {interface}"


def test_each_node_is_compiled_by_the_part_whose_table_names_it() -> None:
    """The bound dispatch covers the joined tables, each handler bound to this generator's part of
    the handler's own class (a handler bound to another part would compile with the wrong self)."""
    gen = CodeGen(cost=True)
    parts = {type(getattr(gen, name)): getattr(gen, name) for name in PARTS}
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
    tree = pyast.parse(module.read_text())
    for cls in (n for n in tree.body if isinstance(n, pyast.ClassDef)):
        bases = [pyast.unparse(b) for b in cls.bases]
        if "CodeGenPart" in bases or "CodeGenState" in bases:
            assert len(bases) == 1, f"{module.name}: {cls.name}({', '.join(bases)}) mixes parts"
            assert bases != ["CodeGenState"] or cls.name == "CodeGen", f"{module.name}: {cls.name} shares a self"


@pytest.mark.parametrize("module", MODULES, ids=[m.name for m in MODULES])
def test_no_module_calls_another_parts_private_method(module: Path) -> None:
    tree = pyast.parse(module.read_text())
    private = sorted(f"line {n.lineno}: {pyast.unparse(n)}" for n in pyast.walk(tree)
                     if isinstance(n, pyast.Attribute) and n.attr.startswith("_") and not n.attr.startswith("__")
                     and _reaches_a_part(n.value))
    assert not private, f"{module.name} calls private methods of other parts: {private}"


def _reaches_a_part(e: pyast.expr) -> bool:
    """``self.gen.<part>`` (or the generator's own ``self.<part>``)."""
    return (isinstance(e, pyast.Attribute) and e.attr in PARTS and isinstance(e.value, pyast.Attribute | pyast.Name)
            and pyast.unparse(e.value) in ("self.gen", "self"))


def test_the_private_call_test_sees_one() -> None:
    """The rule above is not vacuous: the shape it looks for is what a cross-part private call is."""
    call = pyast.parse("self.gen.places._element_loc(e)").body[0]
    assert isinstance(call, pyast.Expr) and isinstance(call.value, pyast.Call)
    func = call.value.func
    assert isinstance(func, pyast.Attribute) and _reaches_a_part(func.value)
