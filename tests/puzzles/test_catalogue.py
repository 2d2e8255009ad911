"""What every kernel puzzle of the book shows the learner matches what it checks."""

import dataclasses
import importlib
import pkgutil
import re
from pathlib import Path

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
        Entry(get_puzzle("map"), setup=None)


def test_a_puzzle_outside_the_catalogue_has_no_entry():
    stray = dataclasses.replace(get_puzzle("map"))
    with pytest.raises(KeyError, match="'map' is not in the catalogue"):
        entry_of(stray)
    with pytest.raises(KeyError, match="'map' is not in the catalogue"):
        part_of(stray)


SOLUTIONS = Path(__file__).resolve().parents[2] / "solutions"


def _number_key(number: str) -> tuple[int, str]:
    """'V.2a' -> (2, 'a'): a puzzle's place within its part."""
    n, letter = re.fullmatch(r"(?:[A-Z]+\.)?(\d+)([a-z]?)", number).groups()
    return int(n), letter


def test_the_parts_are_numbered_in_reading_order():
    """Was: the debugging part number 5 and read second; Part V's KV-cache append V.9 and sampling
    V.10 read before the radix pass V.7 and the finale V.8."""
    assert [part.number for part in PARTS] == list(range(1, len(PARTS) + 1))
    for part in PARTS:
        keys = [_number_key(p.number) for p in part.puzzles]
        assert keys == sorted(keys) and len(set(keys)) == len(keys), (part.title, [p.number for p in part.puzzles])
    numbers = {p.id: p.number for p in PUZZLES}
    assert [numbers[i] for i in ("kv_cache_append", "sampling", "radix_pass", "decode_step")] == \
        ["V.7", "V.8", "V.11", "V.12"]


def test_each_puzzle_is_named_by_its_id_in_its_parts_package_and_folders():
    """A puzzle's module lies in its part's package, and its reference solution in the part's
    folder of solutions/, named by the puzzle's id (or by the id of the entry whose kernel it
    shares); no other file lies there."""
    for part in PARTS:
        package = importlib.import_module(f"metal_puzzles.puzzles.{part.folder}")
        entries = {id(e) for e in part.entries}
        in_modules = set()
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            in_modules |= {id(v) for v in vars(module).values() if isinstance(v, Entry)}
        assert entries <= in_modules, part.title
    expected = set()
    for part in PARTS:
        for e in part.entries:
            assert e.solution_path().parent.name == part.folder, e.puzzle.id
            stem = e.shares_solution_of or e.puzzle.id
            assert e.solution.split(".")[0] == stem and stem in {q.id for q in part.puzzles}
            expected.add(f"{part.folder}/{e.solution}")
            if e.solution_has_header:
                expected.add(f"{part.folder}/{e.puzzle.id}.header.metal")
    found = {p.relative_to(SOLUTIONS).as_posix() for p in SOLUTIONS.rglob("*")
             if p.is_file() and p.name != "__init__.py" and "__pycache__" not in p.parts}
    assert found == expected
