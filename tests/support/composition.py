"""What the tests of a composition check (issue 38): a class made of parts, one per concept, each
part an instance of a part base class that reaches the shared state and the other parts through
one attribute (the code generator's parts through ``self.gen``, the checker's through
``self.chk``), under the interface each part offers. The code generator
(tests/msl/executor/test_codegen_parts.py) and the checker (tests/msl/front/test_checker_parts.py)
are two such compositions; their tests state what each is and ask this module what breaks the
rules. Read from the source, so that a part turned back into a mixin, or a call of another part's
private method, is named where it is."""

from __future__ import annotations

import ast as pyast
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType


@dataclass(frozen=True)
class Composition:
    """One composition: the class that holds the parts, the base class of its parts, the class of
    the shared state (whose annotations declare each part under its interface, an ``...Api`` of
    ``interfaces``), the attribute by which a part reaches the whole, and the folder of its modules."""

    whole: type
    part_base: type
    state: type
    interfaces: ModuleType
    back_reference: str
    folder: Path

    @property
    def parts(self) -> dict[str, str]:
        """The part under each attribute of the whole, and the interface it is declared under."""
        return {name: hint for name, hint in self.state.__annotations__.items() if hint.endswith("Api")}

    @property
    def modules(self) -> list[Path]:
        return sorted(self.folder.glob("*.py"))

    def parts_not_made_under_their_interface(self, whole: object) -> list[str]:
        """What is wrong with the parts of ``whole`` (an instance of the composition): a part that
        is not a part, does not reach this whole, or lacks a method of its interface."""
        wrong = []
        for name, interface in self.parts.items():
            part = getattr(whole, name)
            if not isinstance(part, self.part_base):
                wrong.append(f"{name}: a {type(part).__name__}, not a {self.part_base.__name__}")
                continue
            if getattr(part, self.back_reference, None) is not whole:
                wrong.append(f"{name}: its {self.back_reference} is not the {self.whole.__name__} it is part of")
            offered = {m for m in vars(getattr(self.interfaces, interface)) if not m.startswith("_")}
            if not offered:
                wrong.append(f"{interface} offers nothing")
            missing = {m for m in offered if not callable(getattr(part, m, None))}
            if missing:
                wrong.append(f"{type(part).__name__} lacks {sorted(missing)} of {interface}")
        return wrong

    def mixins(self, module: Path) -> list[str]:
        """The classes of ``module`` that mix parts: a part deriving from more than the part base,
        or a class other than the whole deriving from the shared state."""
        part, state = self.part_base.__name__, self.state.__name__
        wrong = []
        for cls in (n for n in pyast.parse(module.read_text()).body if isinstance(n, pyast.ClassDef)):
            bases = [pyast.unparse(b) for b in cls.bases]
            if part in bases or state in bases:
                if len(bases) != 1:
                    wrong.append(f"{module.name}: {cls.name}({', '.join(bases)}) mixes parts")
                elif bases == [state] and cls.name != self.whole.__name__:
                    wrong.append(f"{module.name}: {cls.name} shares a self")
        return wrong

    def private_calls(self, module: Path) -> list[str]:
        """Where ``module`` reaches a private attribute of another part."""
        return self._private_calls(pyast.parse(module.read_text()))

    def _private_calls(self, tree: pyast.AST) -> list[str]:
        return sorted(f"line {n.lineno}: {pyast.unparse(n)}" for n in pyast.walk(tree)
                      if isinstance(n, pyast.Attribute) and n.attr.startswith("_") and not n.attr.startswith("__")
                      and self.reaches_a_part(n.value))

    def reaches_a_part(self, e: pyast.expr) -> bool:
        """``self.<back reference>.<part>`` (or the whole's own ``self.<part>``)."""
        return (isinstance(e, pyast.Attribute) and e.attr in self.parts
                and isinstance(e.value, pyast.Attribute | pyast.Name)
                and pyast.unparse(e.value) in (f"self.{self.back_reference}", "self"))

    def sees_a_private_call(self, code: str) -> bool:
        """Whether the rule of ``private_calls`` finds a private call in ``code``: the rule is not
        vacuous when a cross-part private call is the shape it looks for."""
        return bool(self._private_calls(pyast.parse(code)))
