"""Part III: every reference solution passes within its cost budget, every template fails, and
the slow versions each puzzle is about are correct but over budget with the sentence that says
what to change."""

from __future__ import annotations

import re

import numpy as np
import pytest

from metal_puzzles.checking import CaseStatus, PuzzleStatus, check_source, run_case
from metal_puzzles.msl.counting.op_kinds import OpKind
from metal_puzzles.msl.observe.gpu_models import APPLE_16_BANKS, GPU_MODELS
from metal_puzzles.puzzles import (
    entry_of,
    get_puzzle,
    part3,
    part_of,
    solution_header,
    solution_source,
)
from metal_puzzles.puzzles.catalogue.solution_files import solution_file
from metal_puzzles.puzzles.part3.block_sum import TREE
from metal_puzzles.puzzles.part3.simdgroup_matmul import LANE_BY_LANE
from metal_puzzles.puzzles.part3.simdgroup_matmul import PUZZLE as SIMDGROUP_MATMUL

PART_III_IDS = [p.id for p in part3.PART_III.puzzles]


def check(pid: str, source: str, header: str | None = None):
    return check_source(get_puzzle(pid), source, header)


def test_part_three_follows_part_two_and_part_four_follows_it():
    from metal_puzzles.puzzles import PUZZLES, find_puzzle, part4, part5

    part_iii, part_iv, part_v = part3.PART_III.puzzles, part4.PART_IV.puzzles, part5.PART_V.puzzles
    after = len(part_iv) + len(part_v)  # Part V closes the book (tests/puzzles/part5/test_part5.py)
    assert PUZZLES[-len(part_iii) - after:-after] == part_iii
    assert PUZZLES[-after:-len(part_v)] == part_iv
    assert [p.number for p in part_iv] == ["IV.1", "IV.2"] and all(part_of(p) is part4.PART_IV for p in part_iv)
    assert [p.number for p in part_iii] == [f"III.{k}" for k in range(1, 8)]
    assert len({p.id for p in PUZZLES}) == len(PUZZLES)
    for p in part_iii:
        assert part_of(p) is part3.PART_III and part_of(p).number == 5 and find_puzzle(p.title) is p
        entry = entry_of(p)
        assert entry.setup and entry.solution_path().is_file() and entry.kernel_function == f"{p.id}_test"


@pytest.mark.parametrize("pid", PART_III_IDS)
def test_the_reference_solution_passes_within_its_cost_budget(pid):
    p = get_puzzle(pid)
    result = check(pid, solution_source(p), solution_header(p))
    assert result.passed, result.report()
    assert p.budget.uses_cost and result.cost_figures is not None


@pytest.mark.parametrize("pid", PART_III_IDS)
def test_the_template_fails(pid):
    p = get_puzzle(pid)
    assert "// FILL ME IN" in p.template
    result = check(pid, p.template)
    assert result.status in (PuzzleStatus.FINDINGS, PuzzleStatus.WRONG), result.report()


@pytest.mark.parametrize("pid", PART_III_IDS)
def test_hidden_tests_keep_the_visible_tests_shape(pid):
    """The visible test is the contract: hidden tests launch the same way, with inputs of the same
    kinds, only sizes and values change."""
    p = get_puzzle(pid)
    cases = p.cases(seed=3)
    assert len(cases) >= 4
    for case in cases[1:]:
        assert case.threadgroup == p.visible.threadgroup
        assert [(x.dtype, x.ndim) for x in case.inputs] == [(x.dtype, x.ndim) for x in p.visible.inputs]
        assert len(case.output_shape) == len(p.visible.output_shape)


def over_budget(pid: str, source: str, header: str | None = None) -> str:
    result = check(pid, source, header)
    assert result.status == PuzzleStatus.OVER_BUDGET, result.report()
    return " ".join(result.report().split())  # reports break long lines between words


NAIVE_TRANSPOSE = """
uint rows = a_shape[0];
uint cols = a_shape[1];
uint x = thread_position_in_grid.x;
uint y = thread_position_in_grid.y;
if (y < rows && x < cols) {
    out[x * rows + y] = a[y * cols + x];
}
"""


@pytest.mark.parametrize("pid", ["tiled_transpose", "padded_transpose"])
def test_the_naive_transpose_writes_32_segments_per_simdgroup(pid):
    report = over_budget(pid, NAIVE_TRANSPOSE)
    assert "it touches 32 memory segments per SIMD-group store (line 7); this puzzle allows at most 2" in report
    assert "neighbouring threads should write neighbouring addresses" in report
    assert "per SIMD-group load" not in report  # the reads are coalesced


def test_the_unpadded_tile_is_a_32_way_bank_conflict():
    tiled = solution_source(get_puzzle("tiled_transpose"))
    report = over_budget("padded_transpose", tiled)
    assert "has a 32-way bank conflict in threadgroup memory (line 15)" in report
    assert "this puzzle allows none" in report and "pad each row of a tile by one element" in report


def _transpose_ways(source: str, gpu) -> int:
    p = get_puzzle("padded_transpose")
    run = run_case(p.kernel(source), p.visible, p.launch_options, cost=gpu)
    return run.cost.figures().bank_conflict.value


def test_padding_is_conflict_free_with_16_banks_too():
    """Apple's banks are not public: the lesson must not depend on the model's choice."""
    m16 = GPU_MODELS["M1"].with_memory(APPLE_16_BANKS)
    tiled = solution_source(get_puzzle("tiled_transpose"))
    padded = solution_source(get_puzzle("padded_transpose"))
    assert _transpose_ways(tiled, m16) == 16 and _transpose_ways(padded, m16) == 1
    assert _transpose_ways(tiled, "H100") == 32 and _transpose_ways(padded, "H100") == 1


def test_a_barrier_tree_waits_at_nine_barriers():
    report = over_budget("block_sum", TREE)
    assert "it makes each threadgroup wait at 9 barriers; this puzzle allows 1" in report
    assert "simd_sum" in report


def test_one_element_per_thread_in_order_diverges():
    template = get_puzzle("uniform_branches").template
    naive = template.replace("uint i = 0;", "uint i = t;")
    report = over_budget("uniform_branches", naive)
    # The visible test's own figure, as show() prints it (issue 22: one number, one definition).
    assert "it keeps 48% of its SIMD-group lanes busy on the visible test; this puzzle needs at least 80%" in report
    assert "give each SIMD-group threads that take the same branch" in report


OCCUPANCY_HEADER = get_puzzle("lookup_occupancy").header


def test_small_threadgroups_with_a_16_kib_table_leave_the_core_empty():
    p = get_puzzle("lookup_occupancy")
    report = over_budget("lookup_occupancy", solution_source(p), OCCUPANCY_HEADER)
    assert "it keeps 6% of a GPU core's SIMD-groups resident (limited by threadgroup memory per core)" in report
    assert "this puzzle needs at least 100%" in report
    half = OCCUPANCY_HEADER.replace("TG = 64;", "TG = 512;")
    assert "it keeps 50% of a GPU core's SIMD-groups" in over_budget("lookup_occupancy", solution_source(p), half)


def test_the_tests_launch_with_the_headers_threadgroup_size():
    p = get_puzzle("lookup_occupancy")
    run = run_case(p.kernel(solution_source(p), solution_header(p)), p.visible, p.launch_options)
    assert run.threadgroup == (1024, 1, 1) and run.cost.occupancy.simdgroups_per_core == 96


@pytest.mark.parametrize("header, message", [
    ("constant uint TABLE = 4096;\n", "the header must define the constant TG"),
    ("constant uint TABLE = 4096;\nconstant uint TG = 2048;\n", "TG = 2048 in the header: a threadgroup holds 1 to 1024"),
])
def test_a_missing_or_impossible_threadgroup_size_is_explained(header, message):
    p = get_puzzle("lookup_occupancy")
    result = check("lookup_occupancy", solution_source(p), header)
    assert result.outcomes[0].status == CaseStatus.RUNTIME_ERROR
    assert message in result.report()


def test_three_passes_read_each_element_three_times():
    p = get_puzzle("fused_softmax")
    three_pass = p.template + """
for (uint k = j; k < N; k += TG) {
    out[r * N + k] = exp(x[r * N + k] - m) / sum;
}
"""
    report = over_budget("fused_softmax", three_pass)
    assert "it reads each input element 3 times from device memory; this puzzle allows 1" in report
    assert "keep what a thread has read in registers" in report


def test_show_prints_the_cost_table_and_draws_the_access_map(capsys):
    import mlx.core as mx

    from metal_puzzles.notebook.problem import MetalProblem

    p = get_puzzle("padded_transpose")
    tiled = solution_source(get_puzzle("tiled_transpose"))
    problem = MetalProblem(p.title, lambda a: p.kernel(tiled), [mx.array(x) for x in p.visible.inputs],
                           p.visible.output_shape, p.visible.grid, p.visible.threadgroup)
    diagram = problem.show()
    out = capsys.readouterr().out
    assert "Cost on a model of an Apple GPU (M1" in out
    yours, budget = [line for line in out.splitlines() if "-way" in line]
    assert "32-way" in yours and "1-way" in budget and budget.startswith("budget |")
    page = diagram._repr_mimebundle_()["text/html"]
    words = " ".join(re.findall(r"<text[^>]*>([^<]*)</text>", page))  # captions wrap onto several lines
    assert "a 32-way bank conflict" in words
    profile = problem.profile("H100")
    assert profile.gpu.name == "H100" and "This is a model" in capsys.readouterr().out


# ----------------------------------------------------------------------------- III.7
def test_the_simdgroup_matmul_puzzle_has_its_parts_and_the_lane_by_lane_version_is_over_budget():
    p = SIMDGROUP_MATMUL
    assert p in part3.PART_III.puzzles and "// FILL ME IN" in p.template and p.budget.max_reads_per_element == 8
    assert (solution_file("simdgroup_matmul.metal").read_text().count("simdgroup_multiply_accumulate")
            == 1)
    slow = check_source(p, LANE_BY_LANE)
    assert slow.status == PuzzleStatus.OVER_BUDGET, slow.report()
    assert "reads each input element 64 times from device memory; this puzzle allows 8" in slow.report()


def test_the_simdgroup_matmul_costs_its_multiply_adds_as_fmas():
    """One 8x8x8 product is 512 multiply-adds over a SIMD-group's 32 lanes: 16 FMAs per lane,
    1,024 floating-point operations per SIMD-group and step of k."""
    p = SIMDGROUP_MATMUL
    case = p.visible  # 16x16: 4 SIMD-groups, each 2 steps of k
    run = run_case(p.kernel(solution_file("simdgroup_matmul.metal").read_text()), case,
                   p.launch_options, cost=True)
    assert np.allclose(run.outputs[0], case.inputs[0] @ case.inputs[1])
    fmas = run.cost.kernel.ops[OpKind.FLOAT_FMA]
    assert fmas.lane_ops == 4 * 2 * 32 * 16
    assert run.cost.kernel.flops >= 4 * 2 * 1024
