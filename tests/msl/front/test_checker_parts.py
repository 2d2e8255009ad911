"""The checker is a composition (issue 38), as mypy's is: one part per concept, each a
``CheckerPart`` that reaches the shared state and the other parts through ``self.chk``, under the
interface each part offers (``front/checker/interfaces.py``). Read from the source, so that a
part turned back into a mixin, or a call of another part's private method, fails here by name."""

from __future__ import annotations

import ast as pyast
from pathlib import Path

import pytest

from metal_puzzles.msl.front import checker as checker_package
from metal_puzzles.msl.front.checker import Checker, interfaces
from metal_puzzles.msl.front.checker.checker_state import CheckerPart, CheckerState
from metal_puzzles.msl.library import STANDARD_LIBRARY

CHECKER = Path(checker_package.__file__).parent
MODULES = sorted(CHECKER.glob("*.py"))

#: The part under each attribute of the checker, and the interface it is declared under.
PARTS = {name: hint for name, hint in CheckerState.__annotations__.items() if hint.endswith("Api")}


def test_every_part_is_made_under_its_interface() -> None:
    ck = Checker(STANDARD_LIBRARY)
    assert len(PARTS) == 12
    for name, interface in PARTS.items():
        part = getattr(ck, name)
        assert isinstance(part, CheckerPart), name
        assert part.chk is ck, name
        offered = {m for m in vars(getattr(interfaces, interface)) if not m.startswith("_")}
        assert offered, interface
        missing = {m for m in offered if not callable(getattr(part, m, None))}
        assert not missing, f"{type(part).__name__} lacks {missing} of {interface}"


@pytest.mark.parametrize("module", MODULES, ids=[m.name for m in MODULES])
def test_no_part_is_a_mixin(module: Path) -> None:
    """A part derives from CheckerPart alone; only the Checker itself holds the shared state."""
    tree = pyast.parse(module.read_text())
    for cls in (n for n in tree.body if isinstance(n, pyast.ClassDef)):
        bases = [pyast.unparse(b) for b in cls.bases]
        if "CheckerPart" in bases or "CheckerState" in bases:
            assert len(bases) == 1, f"{module.name}: {cls.name}({', '.join(bases)}) mixes parts"
            assert bases != ["CheckerState"] or cls.name == "Checker", f"{module.name}: {cls.name} shares a self"


@pytest.mark.parametrize("module", MODULES, ids=[m.name for m in MODULES])
def test_no_module_calls_another_parts_private_method(module: Path) -> None:
    tree = pyast.parse(module.read_text())
    private = sorted(f"line {n.lineno}: {pyast.unparse(n)}" for n in pyast.walk(tree)
                     if isinstance(n, pyast.Attribute) and n.attr.startswith("_") and not n.attr.startswith("__")
                     and _reaches_a_part(n.value))
    assert not private, f"{module.name} calls private methods of other parts: {private}"


def _reaches_a_part(e: pyast.expr) -> bool:
    """``self.chk.<part>`` (or the checker's own ``self.<part>``)."""
    return (isinstance(e, pyast.Attribute) and e.attr in PARTS and isinstance(e.value, pyast.Attribute | pyast.Name)
            and pyast.unparse(e.value) in ("self.chk", "self"))


def test_the_private_call_test_sees_one() -> None:
    """The rule above is not vacuous: the shape it looks for is what a cross-part private call is."""
    call = pyast.parse("self.chk.types._resolve_base(spec)").body[0]
    assert isinstance(call, pyast.Expr) and isinstance(call.value, pyast.Call)
    func = call.value.func
    assert isinstance(func, pyast.Attribute) and _reaches_a_part(func.value)
