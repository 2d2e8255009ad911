"""What every kernel puzzle of the book shows the learner matches what it checks."""

import re

import mlx.core as mx
import numpy as np
import pytest

from metal_puzzles.checking import GradPuzzle
from metal_puzzles.puzzles import PUZZLES, get_puzzle, part1, part2, part3, part4, part5, part_debug

KERNEL_IDS = [p.id for p in PUZZLES if not isinstance(p, GradPuzzle)]
NOTEBOOK_SETUP = {**part1.NOTEBOOK_SETUP, **part_debug.NOTEBOOK_SETUP, **part2.NOTEBOOK_SETUP,
                  **part3.NOTEBOOK_SETUP, **part4.NOTEBOOK_SETUP, **part5.NOTEBOOK_SETUP}


@pytest.mark.parametrize("pid", KERNEL_IDS)
def test_notebook_setup_builds_the_visible_test(pid):
    """The notebook's setup lines (run here on our own catalogue text) build the visible test."""
    p = get_puzzle(pid)
    scope: dict = {"mx": mx}
    exec(NOTEBOOK_SETUP[pid], scope)
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
