"""Part I of the puzzle book: every reference solution passes, every template fails, and the
typical mistakes fail with the message that explains them."""

from __future__ import annotations

import re

import mlx.core as mx
import numpy as np
import pytest

from metal_puzzles import MetalKernel, MetalProblem
from metal_puzzles.checking import CheckResult
from metal_puzzles.puzzles import (
    PUZZLES,
    Puzzle,
    entry_of,
    find_puzzle,
    get_puzzle,
    part1,
    solution_source,
)

PART_I = part1.PART_I.puzzles

# (number, title, id, kernel name) of the book's first part, in order.
BOOK = [
    ("1", "Map", "map", "map"),
    ("2", "Zip", "zip", "zip"),
    ("3", "Guard", "guard", "guard"),
    ("4", "Map 2D", "map_2d", "map_2D"),
    ("5", "Broadcast", "broadcast", "broadcast"),
    ("6", "Threadgroups", "threadgroups", "threadgroups"),
    ("7", "Threadgroups 2D", "threadgroups_2d", "threadgroups_2D"),
    ("8", "Threadgroup Memory", "threadgroup_memory", "threadgroup_memory"),
    ("9", "Pooling", "pooling", "pooling"),
    ("10", "Dot Product", "dot_product", "dot_product"),
    ("11a", "1D Conv (Simple)", "conv_simple", "1D_conv"),
    ("11b", "1D Conv (Full)", "conv_full", "1D_conv"),
    ("12a", "Prefix Sum (Simple)", "prefix_sum_simple", "prefix_sum"),
    ("12b", "Prefix Sum (Full)", "prefix_sum_full", "prefix_sum"),
    ("13", "Axis Sum", "axis_sum", "axis_sum"),
    ("14a", "Matmul (Simple)", "matmul_simple", "matmul"),
    ("14b", "Matmul (Full)", "matmul_full", "matmul"),
]

IDS = [p.id for p in PART_I]


def problem_for(puzzle: Puzzle, source: str, header: str | None = None) -> MetalProblem:
    """The puzzle as the notebook poses it, with ``source`` as the learner's kernel body."""

    def kernel_fn(*inputs: mx.array) -> MetalKernel:
        return MetalKernel(name=puzzle.kernel_name, input_names=list(puzzle.input_names),
                           output_names=list(puzzle.output_names), source=source,
                           header=puzzle.header if header is None else header)

    case = puzzle.visible
    return MetalProblem(puzzle.title, kernel_fn, [mx.array(x) for x in case.inputs], case.output_shape,
                        grid=case.grid, threadgroup=case.threadgroup, spec=puzzle.spec)


def check(puzzle_id: str, source: str, header: str | None = None) -> CheckResult:
    return problem_for(get_puzzle(puzzle_id), source, header).check(quiet=True)


def solution(puzzle_id: str) -> str:
    return solution_source(get_puzzle(puzzle_id))


# ----------------------------------------------------------------------------- the catalogue
def test_part_one_is_the_original_book_in_order():
    assert [(p.number, p.title, p.id, p.kernel_name) for p in PART_I] == BOOK
    assert PUZZLES[: len(PART_I)] == PART_I
    for p in PART_I:
        assert find_puzzle(p.title) is p and find_puzzle(p.id) is p
        assert p.output_names == ("out",) and p.output_dtype == "float32"


def test_every_puzzle_has_text_template_and_tables():
    for p in PART_I:
        assert "Budget" in p.description, p.id
        assert "// FILL ME IN (roughly" in p.template, p.id
        assert entry_of(p).setup and entry_of(p).kernel_function, p.id
        assert entry_of(p).solution_path().is_file(), p.id


def test_entries_sharing_a_kernel_share_everything_the_learner_writes():
    by_kernel: dict[str, list[Puzzle]] = {}
    for p in PART_I:
        by_kernel.setdefault(p.kernel_name, []).append(p)
    shared = {k: v for k, v in by_kernel.items() if len(v) > 1}
    assert set(shared) == {"1D_conv", "prefix_sum", "matmul"}
    for group in shared.values():
        first = group[0]
        for other in group[1:]:
            assert (other.template, other.header, other.input_names) == (first.template, first.header,
                                                                         first.input_names)
            assert entry_of(other).solution == entry_of(first).solution
            assert entry_of(other).kernel_function == entry_of(first).kernel_function


# The visible answers of the original book (its "Spec" lines).
ORIGINAL_ANSWERS = {
    "map": [10, 11, 12, 13],
    "zip": [0, 2, 4, 6],
    "guard": [10, 11, 12, 13],
    "map_2d": [[10, 11], [12, 13]],
    "broadcast": [[0, 1], [1, 2]],
    "threadgroups": list(range(10, 19)),
    "threadgroups_2d": [[11] * 5] * 5,
    "threadgroup_memory": [11] * 8,
    "pooling": [0, 1, 3, 6, 9, 12, 15, 18],
    "dot_product": [140],
    "conv_simple": [5, 8, 11, 14, 5, 0],
    "conv_full": [14, 20, 26, 32, 38, 44, 50, 56, 62, 68, 74, 80, 41, 14, 0],
    "prefix_sum_simple": [28],
    "prefix_sum_full": [28, 77],
    "axis_sum": [[15], [51], [87], [123]],
    "matmul_simple": [[1, 3], [3, 13]],
}


@pytest.mark.parametrize("pid", IDS)
def test_visible_answer_is_the_original_books(pid):
    p = get_puzzle(pid)
    got = np.asarray(p.spec(*[mx.array(x) for x in p.visible.inputs])).reshape(p.visible.output_shape)
    if pid == "matmul_full":
        assert got[0].tolist() == [140, 364, 588, 812, 1036, 1260, 1484, 1708]
        assert got[7, 7] == 28364 and (got == got.T).all()
    else:
        np.testing.assert_array_equal(got, np.array(ORIGINAL_ANSWERS[pid]))


# ----------------------------------------------------------------------------- hidden tests
# Largest threadgroup the header's fixed shared arrays allow, and whether the puzzle's technique
# needs the whole array in a single threadgroup.
GROUP_LIMITS = {"threadgroup_memory": ((4, 1, 1), False), "pooling": ((8, 1, 1), True),
                "dot_product": ((8, 1, 1), True), "conv_simple": ((8, 1, 1), True),
                "conv_full": ((8, 1, 1), False), "prefix_sum_simple": ((8, 1, 1), True),
                "prefix_sum_full": ((8, 1, 1), False), "axis_sum": ((8, 1, 1), False),
                "matmul_simple": ((3, 3, 1), True), "matmul_full": ((3, 3, 1), False)}

# Part I keeps the original notebook's launches (whole threadgroups, a few spare threads), so
# tests with a partial last threadgroup go beyond those puzzles' contract: they run as notes.
ORIGINAL_WHOLE_GROUPS = ["threadgroups", "conv_full", "prefix_sum_full"]


@pytest.mark.parametrize("pid", ORIGINAL_WHOLE_GROUPS)
def test_partial_threadgroups_go_beyond_the_original_launches(pid):
    p = get_puzzle(pid)
    assert not any(g % t for g, t in zip(p.visible.grid, p.visible.threadgroup, strict=True))
    hidden = p.cases()[1:]
    partial = [c for c in hidden if any(g % t for g, t in zip(c.grid, c.threadgroup, strict=True))]
    assert partial and all(any("partial" in what for what in c.beyond) for c in partial)
    whole = [c for c in hidden if all(c is not q for q in partial)]
    assert whole and not any(c.beyond for c in whole)


def partial_launch(puzzle_id: str, source: str, grid: int) -> CheckResult:
    """The puzzle posed with a partial last threadgroup in the learner's own visible test."""
    p = get_puzzle(puzzle_id)
    problem = problem_for(p, source)
    problem.grid = (grid, 1, 1)
    return problem.check(quiet=True)


# Visible tests that fill exactly one threadgroup of the header's fixed size: within their structure
# only the values can change.
ONE_FULL_GROUP = {"dot_product", "prefix_sum_simple"}


@pytest.mark.parametrize("pid", IDS)
def test_most_hidden_tests_stay_within_the_visible_tests_structure(pid):
    # The visible test is the contract: at least two hidden tests keep its structure, with other sizes
    # where the structure allows them.
    p = get_puzzle(pid)
    within = [c for c in p.cases()[1:] if not c.beyond]
    assert len(within) >= 2
    other_sizes = {tuple(x.shape for x in c.inputs) for c in within} - {tuple(x.shape for x in p.visible.inputs)}
    assert bool(other_sizes) == (pid not in ONE_FULL_GROUP)


# ----------------------------------------------------------------------------- solutions
@pytest.mark.parametrize("pid", IDS)
def test_reference_solution_passes(pid):
    p = get_puzzle(pid)
    result = check(pid, solution(pid))
    assert result.passed, result.report()
    assert not result.findings
    assert len(result.outcomes) == len(p.cases())
    assert result.report().startswith(f"Passed: {p.title}")


@pytest.mark.parametrize("pid", IDS)
def test_budget_is_exactly_what_the_intended_technique_needs(pid):
    # Budgets are tight: the reference solution uses every global read and write it is allowed.
    p = get_puzzle(pid)
    used = check(pid, solution(pid)).counts_max
    for key, limit in p.budget.limits().items():
        if key.startswith("global"):
            assert used[key] == limit, key


@pytest.mark.parametrize("pid", IDS)
def test_template_fails_politely(pid):
    p = get_puzzle(pid)
    result = check(pid, p.template)
    assert not result
    assert result.compile_error is None
    assert result.report().startswith(f"Failed: {p.title} fails")
    assert "unwritten-output" in result.report()


# ----------------------------------------------------------------------------- typical mistakes
def test_off_by_one_window_is_a_wrong_answer():
    src = solution("pooling").replace("if (local_i >= 2) {\n        total += shared[local_i - 2];\n    }", "")
    assert src != solution("pooling")
    result = check("pooling", src)
    assert result.status == "wrong"
    report = result.report()
    assert "wrong output at 5 of 8 positions" in report
    assert "Yours: [0 1 3 5 7 9 11 13]" in report.replace("  ", " ").replace("[ ", "[")


def test_off_by_one_index_reads_past_the_end():
    result = check("zip", "uint i = thread_position_in_grid.x;\nout[i] = a[i + 1] + b[i + 1];")
    assert result.status == "findings"
    assert "out-of-bounds: line 2: thread 3 reads a[4]" in result.report()


def test_missing_guard_is_an_out_of_bounds_finding():
    result = check("guard", "uint local_i = thread_position_in_grid.x;\nout[local_i] = a[local_i] + 10;")
    assert not result
    report = " ".join(result.report().split())  # reports break long lines between words
    assert "out-of-bounds" in report and "outside the 4 elements of 'a'" in report
    # The output itself is right: only the sanitizer catches this one.
    assert "happens to match the spec" in report


def test_missing_barrier_is_a_race_finding():
    src = solution("pooling").replace("threadgroup_barrier(mem_flags::mem_threadgroup);", "")
    result = check("pooling", src)
    assert not result
    assert any(f.kind == "race" for f in result.findings)
    assert "race: line" in result.report() and "threadgroup_barrier" in result.report()


def test_barrier_inside_the_guard_is_barrier_divergence():
    # The layout of the original template: fine while every thread has an element, not otherwise.
    src = """
threadgroup float shared[THREADGROUP_MEM_SIZE];
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
if (i < a_shape[0]) {
    shared[local_i] = a[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = shared[local_i] + 10;
}
"""
    result = check("threadgroup_memory", src)
    # The visible test has a thread for every element: correct for the puzzle as posed...
    assert result.passed and result.outcomes[0].ok
    # ... and a hidden test with spare threads, which the visible test does not pose, says why not more.
    assert any(o.case.beyond and any(f.kind == "barrier-divergence" for f in o.findings) for o in result.outcomes)
    assert "barrier-divergence: line 7" in result.report() and result.report().count("Note:") == 1


def test_hard_coded_size_passes_the_visible_test_only():
    result = check("guard", "uint i = thread_position_in_grid.x;\nif (i < 4) {\n    out[i] = a[i] + 10;\n}")
    assert result.outcomes[0].ok
    assert not result and not all(o.ok for o in result.outcomes[1:])


def test_hard_coded_visible_values_fail_the_hidden_tests():
    # arange(4) + 10 is 10 + the position: right for the visible input only.
    src = """
uint col = thread_position_in_grid.x;
uint row = thread_position_in_grid.y;
if (row < 2 && col < 2) {
    out[row * 2 + col] = row * 2 + col + 10;
}
"""
    result = check("map_2d", src)
    assert result.outcomes[0].ok
    assert result.status in ("wrong", "findings")
    assert "Also failing" in result.report() or "fails 3 of 4" in result.report()


def test_group_size_of_a_partial_group_gives_wrong_positions():
    src = """
uint group = threadgroup_position_in_grid.x;
uint size = threads_per_threadgroup.x;  // smaller in a partial group
uint i = group * size + thread_position_in_threadgroup.x;
if (i < a_shape[0]) {
    out[i] = a[i] + 10;
}
"""
    posed = check("threadgroups", src)  # the original launch, 12 threads in groups of 4: whole groups
    assert posed and any("partial last threadgroup" in n for n in posed.notes)
    result = partial_launch("threadgroups", src, 10)  # 10 threads in groups of 4: the last one is partial
    assert not result and not result.outcomes[0].ok
    report = result.report()
    # The hint names the attribute to use instead, not atomics.
    assert "dispatch_threads_per_threadgroup" in report and "partial threadgroup of 2 threads" in report
    assert "atomics" not in report


def test_reduction_over_unwritten_slots_of_a_partial_group():
    src = solution("prefix_sum_full").replace("uint width = threads_per_threadgroup.x;",
                                              "uint width = THREADGROUP_MEM_SIZE;")
    assert check("prefix_sum_simple", src)  # a single full group hides it
    posed = check("prefix_sum_full", src)  # so do the original launch's whole groups: notes only
    assert posed and posed.notes
    result = partial_launch("prefix_sum_full", src, 15)  # a group of 8 and a partial group of 7
    assert not result and not result.outcomes[0].ok
    assert "uninitialized-read" in result.report() and "cache[" in result.report()
    # Inside a puzzle the hint does not suggest init_value, which a learner cannot pass there.
    assert "init_value" not in result.report()


def test_every_thread_adding_into_the_output_is_a_race():
    src = "uint i = thread_position_in_grid.x;\nif (i < a_shape[0]) {\n    out[0] += a[i] * b[i];\n}"
    result = check("dot_product", src)
    assert not result
    assert {"race", "uninitialized-read"} <= {f.kind for f in result.findings}


def test_tiles_need_a_barrier_after_use_too():
    src = solution("matmul_full")
    last = src.rindex("threadgroup_barrier(mem_flags::mem_threadgroup);")
    src = src[:last] + src[last:].replace("threadgroup_barrier(mem_flags::mem_threadgroup);", "", 1)
    assert check("matmul_simple", src)  # a single tile step needs no second barrier
    result = check("matmul_full", src)
    assert not result and any(f.kind == "race" for f in result.findings)


def test_reading_global_memory_three_times_is_over_budget():
    src = """
uint i = thread_position_in_grid.x;
uint n = a_shape[0];
if (i < n) {
    float total = a[i];
    if (i >= 1) {
        total += a[i - 1];
    }
    if (i >= 2) {
        total += a[i - 2];
    }
    out[i] = total;
}
"""
    result = check("pooling", src)
    assert result.correct and not result
    assert result.status == "over-budget"
    assert "uses 3 global reads per thread; this puzzle needs at most 1" in result.report()
    assert result.report().startswith("Almost")


def test_matmul_without_tiles_is_over_budget():
    src = """
uint col = thread_position_in_grid.x;
uint row = thread_position_in_grid.y;
uint n = a_shape[0];
if (row < n && col < n) {
    float acc = 0.0f;
    for (uint k = 0; k < n; k++) {
        acc += a[row * n + k] * b[k * n + col];
    }
    out[row * n + col] = acc;
}
"""
    simple, full = check("matmul_simple", src), check("matmul_full", src)
    assert simple.correct and full.correct and not simple and not full
    assert "uses 6 global reads per thread; this puzzle needs at most 2" in simple.report()
    assert re.search(r"uses 18 global reads per thread; this puzzle needs at most 6", full.report())


def test_a_single_tile_solves_simple_but_not_full():
    src = solution("matmul_simple").replace("for (uint k0 = 0; k0 < n; k0 += THREADGROUP_MEM_SIZE) {",
                                            "for (uint k0 = 0; k0 < 1; k0 += THREADGROUP_MEM_SIZE) {")
    assert check("matmul_simple", src)
    full = check("matmul_full", src)
    assert full.status == "wrong"


def test_conv_loading_b_in_every_thread_is_over_budget():
    src = solution("conv_full").replace("if (local_i < taps) {", "for (uint t = 0; t < taps; t++) {\n"
                                        "    b_cache[t] = b[t];\n}\nif (false) {")
    result = check("conv_full", src)
    assert not result
    assert "global reads per thread; this puzzle needs at most 2" in result.report()


def test_compile_error_points_at_the_line_and_column():
    result = check("zip", "\nuint local_i = thread_position_in_grid.x;\nout[local_i] = a[local_i] + b[locl_i];\n")
    assert result.status == "compile-error"
    report = result.report()
    assert report.startswith("Failed: Zip does not compile.")
    assert re.search(r"source:3:\d+: error: use of undeclared identifier 'locl_i'", report)
    assert "out[local_i] = a[local_i] + b[locl_i];" in report
    assert re.search(r"\n\s*\^", report)


def test_compile_error_in_the_header_names_the_header():
    result = check("dot_product", solution("dot_product"), header="constant uint THREADGROUP_MEM_SIZE = 8\n")
    assert result.status == "compile-error"
    assert "header:" in result.report()
