"""The checker is a composition (issue 38), as mypy's is: one part per concept, each a
``CheckerPart`` that reaches the shared state and the other parts through ``self.chk``, under the
interface each part offers (``front/checker/interfaces.py``). Read from the source
(``support.composition``, shared with the code generator's tests), so that a part turned back
into a mixin, or a call of another part's private method, fails here by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from metal_puzzles.msl.front import checker as checker_package
from metal_puzzles.msl.front.checker import Checker, interfaces
from metal_puzzles.msl.front.checker.checker_state import CheckerPart, CheckerState
from metal_puzzles.msl.library import STANDARD_LIBRARY
from support.composition import Composition

CHECKER = Composition(whole=Checker, part_base=CheckerPart, state=CheckerState, interfaces=interfaces,
                      back_reference="chk", folder=Path(checker_package.__file__).parent)
MODULES = CHECKER.modules


def test_every_part_is_made_under_its_interface() -> None:
    assert len(CHECKER.parts) == 12
    assert CHECKER.parts_not_made_under_their_interface(Checker(STANDARD_LIBRARY)) == []


@pytest.mark.parametrize("module", MODULES, ids=[m.name for m in MODULES])
def test_no_part_is_a_mixin(module: Path) -> None:
    """A part derives from CheckerPart alone; only the Checker itself holds the shared state."""
    assert CHECKER.mixins(module) == []


@pytest.mark.parametrize("module", MODULES, ids=[m.name for m in MODULES])
def test_no_module_calls_another_parts_private_method(module: Path) -> None:
    private = CHECKER.private_calls(module)
    assert not private, f"{module.name} calls private methods of other parts: {private}"


def test_the_private_call_test_sees_one() -> None:
    """The rule above is not vacuous: the shape it looks for is what a cross-part private call is."""
    assert CHECKER.sees_a_private_call("self.chk.types._resolve_base(spec)")
    assert not CHECKER.sees_a_private_call("self.chk.types.resolve_base(spec)")
