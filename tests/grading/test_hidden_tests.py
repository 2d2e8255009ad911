"""Second red team, hidden tests that leak: feedback a student can resubmit against says what
failed and why, never a hidden test's expected or actual values; and each submission's hidden
tests are seeded from the autograder's secret and the notebook's content, so a kernel that
hard-codes earlier feedback gets new tests."""

from __future__ import annotations

import re

from metal_puzzles.checking import check_source
from metal_puzzles.grading.feedback import feedback
from metal_puzzles.grading.gradescope import submission_seed
from metal_puzzles.grading.tasks import summarize
from metal_puzzles.puzzles import get_puzzle

#: Right on the visible test (4 values), wrong on every hidden test of another size.
VISIBLE_ONLY = "uint i = thread_position_in_grid.x;\nout[i] = (a_shape[0] == 4) ? a[i] + 10 : a[i];\n"
SEED = 5


def _numbers(text: str) -> set[str]:
    return set(re.findall(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?", text))


def test_feedback_on_a_hidden_test_hides_its_values() -> None:
    summary = summarize(check_source(get_puzzle("map"), VISIBLE_ONLY, seed=SEED))
    assert summary["status"] == "wrong"
    first_hidden = get_puzzle("map").cases(SEED)[1]
    expected = str(int(first_hidden.inputs[0][0]) + 10)
    assert f"Spec : [{expected}]" in summary["report"]  # the book's report shows the data (the leak)
    text = feedback(summary)
    assert "Spec" not in text and "Yours" not in text
    # Every number left is a test's size, launch, count or line: nothing computed from its data.
    shapes = " ".join(f"{t['label']} {t['grid']} {t['threadgroup']} {t['mismatches']}" for t in summary["tests"])
    assert _numbers(text) <= _numbers(shapes) | {"3", "4"}  # "3 of 4 tests fail"
    assert "hidden test: 1 random value " in text and "stay hidden" in text
    assert "wrong output at 1 position" in text


def test_feedback_on_the_visible_test_is_the_full_report() -> None:
    wrong = "uint i = thread_position_in_grid.x;\nout[i] = a[i];\n"
    summary = summarize(check_source(get_puzzle("map"), wrong, seed=SEED))
    assert feedback(summary) == summary["report"]  # the visible test's data are the learner's own


def test_a_finale_entrys_comparisons_are_all_hidden() -> None:
    summary = {"report": "yours 1.234, reference 5.678", "tests": [
        {"label": "values", "status": "wrong", "mismatches": 3, "beyond_contract": [], "findings": []}]}
    text = feedback(summary, visible_known=False)
    assert "5.678" not in text and "wrong output at 3 positions" in text


def test_each_submission_gets_its_own_hidden_tests() -> None:
    one, other = "a" * 64, "b" * 64
    assert submission_seed("secret", one) == submission_seed("secret", one)  # a regrade agrees
    assert submission_seed("secret", one) != submission_seed("secret", other)  # a resubmission does not
    assert submission_seed("secret", one) != submission_seed("other secret", one)
    seeds = {submission_seed("secret", f"{n:064x}") for n in range(200)}
    assert len(seeds) == 200 and all(0 <= s < 2**32 for s in seeds)
