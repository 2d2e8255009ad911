"""What every kernel puzzle of the book shows the learner matches what it checks."""

import dataclasses
import re

import mlx.core as mx
import numpy as np
import pytest

from metal_puzzles.checking import WiredPuzzle
from metal_puzzles.puzzles import ENTRIES, PARTS, PUZZLES, Entry, entry_of, get_puzzle, part_of

KERNEL_IDS = [p.id for p in PUZZLES if not isinstance(p, WiredPuzzle)]


@pytest.mark.parametrize("pid", KERNEL_IDS)
def test_notebook_setup_builds_the_visible_test(pid):
    """The notebook's setup lines (run here on our own catalogue text) build the visible test."""
    p = get_puzzle(pid)
    scope: dict = {"mx": mx}
    exec(entry_of(p).setup, scope)
    for name, want in zip(p.input_names, p.visible.inputs, strict=True):
        got = np.asarray(scope[name])
        assert got.dtype == want.dtype and got.shape == want.shape, name
        np.testing.assert_array_equal(got, want)
    assert tuple(scope["output_shape"]) == p.visible.output_shape


@pytest.mark.parametrize("pid", KERNEL_IDS)
def test_spec_source_is_the_spec(pid):
    """The notebook shows spec_source and passes the function it defines; the grader uses p.spec."""
    p = get_puzzle(pid)
    scope: dict = {"mx": mx}
    exec(p.spec_source, scope)
    name = re.findall(r"^def (\w+)\(", p.spec_source, flags=re.M)[-1]
    for case in p.cases():
        args = [mx.array(x) for x in case.inputs]
        np.testing.assert_allclose(np.asarray(scope[name](*args)), np.asarray(p.spec(*args)))


def test_every_entry_is_complete():
    """Each entry names a reference solution that is installed, and a kernel puzzle's entry the
    notebook lines of its visible test; every puzzle belongs to exactly one part."""
    assert [p for part in PARTS for p in part.puzzles] == PUZZLES
    for entry in ENTRIES:
        assert entry.solution_path().is_file(), entry.puzzle.id
        assert entry.solution_source().strip(), entry.puzzle.id
        assert (entry.setup is None) == isinstance(entry.puzzle, WiredPuzzle), entry.puzzle.id
        assert entry_of(entry.puzzle) is entry and entry.puzzle in part_of(entry.puzzle).puzzles


def test_an_entry_without_its_notebook_setup_is_refused():
    with pytest.raises(ValueError, match="'map'.*notebook lines"):
        Entry(get_puzzle("map"), setup=None, solution="01_map.metal")


def test_a_puzzle_outside_the_catalogue_has_no_entry():
    stray = dataclasses.replace(get_puzzle("map"))
    with pytest.raises(KeyError, match="'map' is not in the catalogue"):
        entry_of(stray)
    with pytest.raises(KeyError, match="'map' is not in the catalogue"):
        part_of(stray)
