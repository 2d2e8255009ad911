"""The checker's scope entries (front/checker/entries.py): one dataclass per kind of name."""

import dataclasses
import typing

from metal_puzzles.msl.front.checker import entries
from metal_puzzles.msl.front.symbols import Var


def test_every_entry_kind_is_in_the_scope_entry_union():
    """A new kind of entry added as a class but not to ``ScopeEntry`` would be invisible to mypy
    at every lookup; one listed but not deriving from ``NameEntry`` would be read as a value."""
    kinds = set(typing.get_args(entries.ScopeEntry)) - {Var}
    assert kinds == set(entries.NameEntry.__subclasses__())


def test_entries_are_frozen():
    for kind in entries.NameEntry.__subclasses__():
        assert dataclasses.is_dataclass(kind) and kind.__dataclass_params__.frozen, kind
