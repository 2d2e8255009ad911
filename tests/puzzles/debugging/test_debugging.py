"""The debugging part: five detective puzzles, each a finished kernel with one bug a GPU hides.
Every template fails check() with the sanitizer finding its bug produces (on the visible test and
on every hidden test), every reference solution passes, the fix is small, hidden tests keep the
visible test's structure, and the text teaches the method without giving the fix away."""

from __future__ import annotations

import difflib

import pytest

from metal_puzzles.checking import CaseStatus, PuzzleStatus, check_source, run_case
from metal_puzzles.msl.findings.finding import FindingKind
from metal_puzzles.puzzles import (
    PUZZLES,
    debugging,
    entry_of,
    find_puzzle,
    get_puzzle,
    part1,
    part_of,
    solution_source,
)

DEBUG_PUZZLES = debugging.PART_DEBUG.puzzles
IDS = [p.id for p in DEBUG_PUZZLES]

# The finding each planted bug produces (the kind of bug the puzzle is about).
PLANTED = {
    "detective_block_sum": FindingKind.RACE,  # no barrier between the rounds of the loop
    "detective_blur": FindingKind.OUT_OF_BOUNDS,  # i - 1 >= 0 on a uint: a[4294967295]
    "detective_neighbour_sum": FindingKind.BARRIER_DIVERGENCE,  # the barrier inside the guard
    "detective_block_max": FindingKind.UNINITIALIZED_READ,  # the spare threads' empty slots
    "detective_squares": FindingKind.UNWRITTEN_OUTPUT,  # threads_per_threadgroup in a partial group
}


def _errors(outcome) -> list[FindingKind]:
    return [f.kind for f in outcome.findings if f.is_error]


def test_the_debugging_part_follows_part_one_in_order():
    start = len(part1.PART_I.entries)
    assert PUZZLES[start:start + len(DEBUG_PUZZLES)] == DEBUG_PUZZLES
    assert [p.number for p in DEBUG_PUZZLES] == [f"D.{k}" for k in range(1, 6)]
    assert set(IDS) == set(PLANTED)
    names = [p.kernel_name for p in DEBUG_PUZZLES]
    others = {p.kernel_name for p in PUZZLES if p not in DEBUG_PUZZLES}
    assert len(set(names)) == len(names) and not set(names) & others  # the grader finds kernels by name
    for p in DEBUG_PUZZLES:
        assert part_of(p) is debugging.PART_DEBUG
        assert find_puzzle(p.title) is p and find_puzzle(p.id) is p
        entry = entry_of(p)
        assert entry.setup and entry.kernel_function == f"{p.id}_test" and entry.solution_path().is_file()
        assert "FILL ME IN" not in p.template  # the template is the buggy kernel itself


@pytest.mark.parametrize("pid", IDS)
def test_the_template_fails_with_its_planted_finding(pid):
    p = get_puzzle(pid)
    result = check_source(p, p.template)
    assert result.status == PuzzleStatus.FINDINGS, result.report()
    visible = result.outcomes[0]
    assert visible.case == p.visible
    assert visible.status == CaseStatus.FINDINGS
    assert _errors(visible)[0] == PLANTED[pid], result.report()
    assert PLANTED[pid].value in result.report()


@pytest.mark.parametrize("pid", IDS)
def test_every_hidden_test_shows_the_bug_too(pid):
    """A fix that only works for the visible test's sizes fails: the bug shows on every test."""
    p = get_puzzle(pid)
    kernel = p.kernel(p.template)
    for case in p.cases(seed=11)[1:]:
        run = run_case(kernel, case, p.launch_options)
        assert PLANTED[pid] in [f.kind for f in run.findings if f.is_error], case.label


@pytest.mark.parametrize("pid", IDS)
def test_the_reference_solution_passes_without_notes(pid):
    p = get_puzzle(pid)
    result = check_source(p, solution_source(p))
    assert result.passed and not result.notes and not result.findings, result.report()


@pytest.mark.parametrize("pid", IDS)
def test_the_fix_is_small(pid):
    """The solution is the template with its bug fixed, not a rewrite: at most two code lines
    differ (a moved line counts twice); comments added to explain the fix do not count."""
    p = get_puzzle(pid)

    def code(text: str) -> list[str]:
        return [line for line in text.splitlines() if not line.strip().startswith("//")]

    changed = [line for line in difflib.ndiff(code(p.template), code(solution_source(p)))
               if line[:2] in ("+ ", "- ")]
    assert 1 <= len(changed) <= 4, changed


@pytest.mark.parametrize("pid", IDS)
def test_the_text_teaches_the_method_not_the_answer(pid):
    p = get_puzzle(pid)
    assert "problem.explore()" in p.description and "finding" in p.description
    assert "check()" in p.description and "Budget" in p.description
    template_lines = {line.strip() for line in p.template.splitlines()}
    added = [line.strip() for line in solution_source(p).splitlines()
             if line.strip() and not line.strip().startswith("//") and line.strip() not in template_lines]
    for line in added:  # the fixed line is for the learner to write
        assert line not in p.description, line


@pytest.mark.parametrize("pid", IDS)
def test_hidden_tests_keep_the_visible_tests_structure(pid):
    p = get_puzzle(pid)
    for seed in (0, 1, 7):
        cases = p.cases(seed)
        assert len(cases) >= 5
        for case in cases[1:]:
            assert case.beyond == (), (seed, case.label, case.beyond)
            assert case.threadgroup == p.visible.threadgroup
        assert {c.inputs[0].shape for c in cases[1:]} - {p.visible.inputs[0].shape}, "sizes should change"


# Fixes a learner may try: the ones that cure the bug pass, the ones that hide it fail.
ALTERNATIVE_FIXES = {
    "detective_blur": ("if (i - 1 >= 0) {", "if (int(i) - 1 >= 0) {"),  # signed arithmetic
    "detective_squares": ("uint i = group * threads_per_threadgroup.x + local_i;",
                          "uint i = thread_position_in_grid.x;"),
}
WRONG_FIXES = {
    # Zero is not the identity of a maximum: the visible test's values are all negative.
    "detective_block_max": (("if (i < a_shape[0]) {\n    shared[local_i] = a[i];\n}",
                             "shared[local_i] = i < a_shape[0] ? a[i] : 0.0f;"), CaseStatus.WRONG),
    # Taking the barrier away with the guard trades the divergence for a race.
    "detective_neighbour_sum": (("    threadgroup_barrier(mem_flags::mem_threadgroup);\n", ""), CaseStatus.FINDINGS),
}


@pytest.mark.parametrize("pid", sorted(ALTERNATIVE_FIXES))
def test_other_correct_fixes_pass(pid):
    p = get_puzzle(pid)
    old, new = ALTERNATIVE_FIXES[pid]
    assert old in p.template
    result = check_source(p, p.template.replace(old, new))
    assert result.passed, result.report()


@pytest.mark.parametrize("pid", sorted(WRONG_FIXES))
def test_fixes_that_hide_the_bug_fail(pid):
    p = get_puzzle(pid)
    (old, new), status = WRONG_FIXES[pid]
    assert old in p.template
    result = check_source(p, p.template.replace(old, new))
    assert not result.passed and result.outcomes[0].status == status, result.report()


@pytest.mark.parametrize("pid", IDS)
def test_the_explorer_leads_to_the_planted_finding(pid):
    """The method the text teaches works on the template: the explorer lists the planted finding,
    and a click on it goes to a thread of the launch at the finding's line."""
    from metal_puzzles.explorer.run_model import ExplorerModel

    p = get_puzzle(pid)
    model = ExplorerModel(run_case(p.kernel(p.template), p.visible, p.launch_options, trace=True, steps=True))
    site = next(s for s in model.findings() if s.finding.kind == PLANTED[pid])
    jump = model.jump(site.number)
    assert jump.line == site.line
    if site.lane is None:  # a finding about the whole launch (an unwritten output): no thread to show;
        # the note the text sends the learner to instead names a thread of the partial last group.
        race = next(s for s in model.findings() if s.finding.kind == FindingKind.RACE)
        last = model.n_groups - 1
        assert last in (race.group, int(model.result.lanes.group[race.other_lane]))
        return
    assert model.lane(jump.group, jump.thread) == site.lane
    if PLANTED[pid] == FindingKind.BARRIER_DIVERGENCE:
        # The finding lands on the barrier's step; the thread it names never arrives there, while
        # a thread of its threadgroup waits (the text sends the learner to compare the two).
        assert jump.step is not None and model.step(jump.step, site.lane)["line"] == site.line
        waiting = [model.lane(jump.group, t) for t in range(model.threads_in_group(jump.group))]
        assert any(model.step_at(site.line, lane) is not None for lane in waiting)
    else:
        assert jump.step is not None and model.step(jump.step, site.lane)["line"] == site.line


def test_the_seed_sweep_catches_the_buggy_template_on_every_seed():
    # (The reference solutions' own sweep is tests/checking/test_fairness.py's, for every puzzle of the book.)
    from support.fairness import sweep

    for p in DEBUG_PUZZLES:
        assert sweep(p, p.template, range(3)).failed_seeds == [0, 1, 2], p.id
