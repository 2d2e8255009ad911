"""The contract rule: the visible test is the contract. Hidden tests that pose conditions the
visible test does not are marked on their cases, still run, and fail only as notes."""

from __future__ import annotations

import numpy as np
import pytest

from metal_puzzles.checking import Case, check_source
from metal_puzzles.checking.contract import Coverage, Structure, input_extent, mark_beyond
from metal_puzzles.grading.tasks import summarize
from metal_puzzles.puzzles import get_puzzle, solution_source


def case(n: int, grid: int, group: int, *more: np.ndarray, out: tuple[int, ...] | None = None) -> Case:
    return Case((np.zeros(n, np.float32), *more), out or (n,), (grid, 1, 1), (group, 1, 1))


# ----------------------------------------------------------------------------- structure
def test_structure_of_a_one_dimensional_launch():
    s = Structure.of(case(9, 10, 4), ["a"])
    assert s.dims == 1
    assert s.partial_last_group == (True,) and s.several_groups == (True,) and s.coverage == (Coverage.MORE,)
    exact = Structure.of(case(8, 8, 8), ["a"])
    assert exact.partial_last_group == (False,) and exact.several_groups == (False,)
    assert exact.coverage == (Coverage.EXACT,)
    # A threadgroup larger than the grid shrinks to it (as MLX does): one whole threadgroup.
    assert Structure.of(case(3, 3, 8), ["a"]).partial_last_group == (False,)


def test_structure_per_dimension_and_of_matrices():
    c = Case((np.zeros((5, 5), np.float32),), (5, 5), (6, 8, 1), (3, 3, 1))
    s = Structure.of(c, ["a"])
    assert s.dims == 2
    assert s.partial_last_group == (False, True) and s.several_groups == (True, True)
    assert s.square == (("a", True), ("out", True))


def test_work_extent_of_a_reduction_is_its_input():
    # A dot product's output has one element; its threads stand for the elements of the input.
    c = case(8, 8, 8, np.zeros(8, np.float32), out=(1,))
    assert Structure.of(c, ["a", "b"]).coverage == (Coverage.MORE,)
    assert Structure.of(c, ["a", "b"], input_extent(0)).coverage == (Coverage.EXACT,)


# ----------------------------------------------------------------------------- departures
def test_only_new_conditions_are_departures():
    visible = Structure.of(case(9, 12, 4), ["a"])  # whole threadgroups, spare threads, several groups
    assert Structure.of(case(9, 10, 4), ["a"]).departures(visible) == ("a partial last threadgroup",)
    assert Structure.of(case(12, 12, 4), ["a"]).departures(visible) == ()  # exact is a special case
    partial = Structure.of(case(9, 10, 4), ["a"])
    assert Structure.of(case(9, 12, 4), ["a"]).departures(partial) == ()  # whole where it was partial
    exact = Structure.of(case(8, 8, 8), ["a"])
    assert Structure.of(case(5, 8, 8), ["a"]).departures(exact) == ("more threads than elements",)
    one_group = Structure.of(case(8, 8, 8), ["a"])
    assert "several threadgroups" in Structure.of(case(16, 16, 8), ["a"]).departures(one_group)


def test_non_square_and_unequal_shapes_are_departures():
    def matrix(rows, cols):
        return Case((np.zeros((rows, cols), np.float32), np.zeros((rows, cols), np.float32)), (rows, cols),
                    (cols, rows, 1), (cols, rows, 1))

    square = Structure.of(matrix(2, 2), ["a", "b"])
    assert Structure.of(matrix(2, 5), ["a", "b"]).departures(square) == (
        "a non-square a", "a non-square b", "a non-square out")
    zipped = Structure.of(case(4, 4, 4, np.zeros(4, np.float32)), ["a", "b"])
    assert Structure.of(case(4, 4, 4, np.zeros(3, np.float32)), ["a", "b"]).departures(zipped) == (
        "a and b of different shapes",)


def test_hidden_cases_are_marked_against_the_visible_one():
    marked = mark_beyond(case(9, 12, 4), [case(5, 8, 4), case(9, 10, 4)], ["a"])
    assert [c.beyond for c in marked] == [(), ("a partial last threadgroup",)]


# ----------------------------------------------------------------------------- verdicts
TPT_MAP = """
uint i = threads_per_threadgroup.x * threadgroup_position_in_grid.x + thread_position_in_threadgroup.x;
if (i < a_shape[0]) {
    out[i] = a[i] + 10;
}
"""


def test_failures_beyond_the_contract_are_notes():
    # Threadgroup Memory's visible test has whole threadgroups and a thread per element; the
    # original notebook's template computes positions from threads_per_threadgroup.
    result = check_source(get_puzzle("threadgroup_memory"), TPT_MAP)
    assert result.passed and result.status == "passed"
    assert not all(o.ok for o in result.outcomes)  # the beyond-contract tests did fail...
    assert all(o.ok for o in result.counted)  # ... but only the others count
    assert result.notes and all("(a partial last threadgroup)" in n or "more threads" in n for n in result.notes)
    report = result.report()
    assert report.startswith("Passed: Threadgroup Memory is correct on all")
    assert "Note: correct for this puzzle as its visible test poses it." in report
    assert "it would write out[" in report and "from two threads" in report
    assert "notes=" in repr(result)


def test_within_the_contract_the_same_kernel_fails():
    # Posed with a partial last threadgroup in its visible test, Threadgroups fails the same kernel:
    # the partial hidden tests are now within the contract.
    import mlx.core as mx

    from metal_puzzles import MetalKernel, MetalProblem

    def threadgroups_test(a):
        return MetalKernel(name="threadgroups", input_names=["a"], output_names=["out"], source=TPT_MAP)

    problem = MetalProblem("Threadgroups", threadgroups_test, [mx.arange(9)], (9,), grid=(10, 1, 1),
                           threadgroup=(4, 1, 1))
    result = problem.check(quiet=True)
    assert not result and result.status in ("findings", "wrong")
    assert result.report().startswith("Failed: Threadgroups fails")
    # The book's own visible test (the original notebook's 12 threads in groups of 4) has whole
    # threadgroups: there the kernel passes, with notes about partial ones.
    posed = check_source(get_puzzle("threadgroups"), TPT_MAP)
    assert posed.passed and any("partial last threadgroup" in n for n in posed.notes)


def test_reference_solutions_give_no_notes():
    for pid in ("threadgroups", "pooling", "axis_sum", "broadcast"):
        result = check_source(get_puzzle(pid), solution_source(get_puzzle(pid)))
        assert result.passed and not result.notes, pid


def test_grader_summary_carries_the_notes():
    summary = summarize(check_source(get_puzzle("threadgroup_memory"), TPT_MAP))
    assert summary["passed"] and summary["notes"]
    beyond = [t for t in summary["tests"] if t["beyond_contract"]]
    assert beyond and all(isinstance(w, str) for t in beyond for w in t["beyond_contract"])
    assert any(t["status"] != "pass" for t in beyond)


@pytest.mark.parametrize("pid", ["threadgroups", "pooling", "axis_sum"])
def test_a_learners_own_visible_test_is_their_contract(pid):
    # MetalProblem marks the puzzle's hidden tests against the visible test the learner launched.
    p = get_puzzle(pid)
    ours = [c.beyond for c in p.cases()]
    grid = {"axis_sum": (16, 8, 1), "threadgroups": (10, 1, 1)}.get(pid, (p.visible.grid[0] * 2, 1, 1))
    theirs = [c.beyond for c in p.cases(visible=Case(p.visible.inputs, p.visible.output_shape, grid,
                                                     p.visible.threadgroup))]
    assert ours != theirs


def test_a_failed_verdict_mentions_failures_beyond_the_contract_in_one_line():
    p = get_puzzle("pooling")
    racy = solution_source(p).replace("threadgroup_barrier(mem_flags::mem_threadgroup);", "")
    report = check_source(p, racy).report()
    assert report.startswith("Failed: Pooling fails 4 of 4 tests.")
    assert " ".join(report.split()).endswith("(Also 2 more hidden tests fail on what the visible test does not show "
                                             "(more threads than elements): the puzzle does not ask for that, so they "
                                             "do not count.)")
    assert "Note:" not in report
