"""Part II of the puzzle book: the catalogue, its specs against independent NumPy loops, every
reference solution passing (through check_source and through MetalProblem), templates failing,
the non-atomic scatter-add caught as a race, typical mistakes failing, and the finale."""

from __future__ import annotations

import json

import mlx.core as mx
import numpy as np
import pytest

from metal_puzzles import MetalKernel, MetalProblem
from metal_puzzles.checking import (
    CaseStatus,
    GradPuzzle,
    check_kernel_sources,
    check_source,
    compare_with_spec,
)
from metal_puzzles.grading.tasks import summarize
from metal_puzzles.msl import StopReason
from metal_puzzles.puzzles import (
    PUZZLES,
    Puzzle,
    entry_of,
    find_puzzle,
    get_puzzle,
    part2,
    part3,
    part4,
    part5,
    part_of,
    solution_source,
)
from metal_puzzles.puzzles.part2.mvmr import MAX_C

BOOK = [
    ("II.1a", "Block Scan", "block_scan", "block_scan"),
    ("II.1b", "Scan: Add Block Offsets", "block_offsets", "add_block_offsets"),
    ("II.2", "Gather Rows", "gather_rows", "gather_rows"),
    ("II.3", "Scatter-Add", "scatter_add", "scatter_add"),
    ("II.4", "Segment Sum", "segment_sum", "segment_sum"),
    ("II.5", "Segment Sum (Large)", "segment_sum_large", "segment_sum_large"),
    ("II.6", "Segment Sum Backward", "segment_sum_backward", "segment_sum_backward"),
    ("II.7a", "MVMR (Simple)", "mvmr_simple", "mvmr_simple"),
    ("II.7b", "MVMR (Fast)", "mvmr_fast", "mvmr"),
    ("II.8", "VVOR", "vvor", "vvor"),
    ("II.9", "MVMR Backward (db)", "mvmr_backward_b", "mvmr_backward_b"),
    ("II.10a", "MVMR Autodiff", "mvmr_autodiff", "mvmr_op"),
    ("II.10b", "Segment Sum Autodiff", "segment_sum_autodiff", "segment_sum_op"),
    ("B.1", "SIMD Row Sum", "simd_row_sum", "simd_row_sum"),
    ("B.2", "Layer Norm", "layer_norm", "layer_norm"),
    ("B.3", "Layer Norm Backward", "layer_norm_backward", "layer_norm_backward"),
]
BONUS_IDS = ["simd_row_sum", "layer_norm", "layer_norm_backward"]

# Part II and its bonus section, as one module of the catalogue writes them.
PART_II = [*part2.PART_II.puzzles, *part2.BONUS.puzzles]
KERNEL_PUZZLES = [p for p in PART_II if not isinstance(p, GradPuzzle)]
KERNEL_IDS = [p.id for p in KERNEL_PUZZLES]
ATOMIC_IDS = ["scatter_add", "mvmr_simple", "mvmr_fast", "vvor", "mvmr_backward_b"]


def problem_for(puzzle: Puzzle, source: str, *, atomic_outputs: bool | None = None) -> MetalProblem:
    """The puzzle as the notebook poses it, with ``source`` as the learner's kernel body."""
    atomic = puzzle.atomic_outputs if atomic_outputs is None else atomic_outputs

    def kernel_fn(*inputs: mx.array) -> MetalKernel:
        return MetalKernel(name=puzzle.kernel_name, input_names=list(puzzle.input_names),
                           output_names=list(puzzle.output_names), source=source, header=puzzle.header,
                           atomic_outputs=atomic)

    case = puzzle.visible
    return MetalProblem(puzzle.title, kernel_fn, [mx.array(x) for x in case.inputs], case.output_shape,
                        grid=case.grid, threadgroup=case.threadgroup, spec=puzzle.spec)


def check(pid: str, source: str):
    return check_source(get_puzzle(pid), source)


def solution(pid: str) -> str:
    return solution_source(get_puzzle(pid))


def kinds(result) -> set[str]:
    return {f.kind for f in result.findings}


# ----------------------------------------------------------------------------- the catalogue
def test_part_two_follows_part_one_in_order():
    assert [(p.number, p.title, p.id, p.kernel_name) for p in PART_II] == BOOK
    after = sum(len(part.entries) for part in (part3.PART_III, part4.PART_IV, part5.PART_V))
    assert PUZZLES[-len(PART_II) - after:-after] == PART_II  # Parts III, IV and V follow
    assert len({p.id for p in PUZZLES}) == len(PUZZLES)
    for p in PART_II:
        assert part_of(p) is (part2.BONUS if p.id in BONUS_IDS else part2.PART_II)
        assert find_puzzle(p.title) is p and find_puzzle(p.id) is p


def test_every_entry_has_text_template_solution_and_tables():
    for p in PART_II:
        entry = entry_of(p)
        assert entry.solution_path().is_file(), p.id
        assert entry.solution_path().name.split(".")[0] == p.id
        if isinstance(p, GradPuzzle):
            assert entry.setup is None
            assert "# FILL ME IN (roughly" in p.template and "GradProblem(" in p.template
            continue
        assert "Budget" in p.description, p.id
        assert "// FILL ME IN (roughly" in p.template, p.id
        assert entry.setup and entry.kernel_function == f"{p.id}_test"
        assert p.budget.limits(), f"{p.id} has no budget"


def test_atomic_puzzles_start_from_zero_with_atomic_outputs():
    for p in KERNEL_PUZZLES:
        assert p.atomic_outputs == (p.id in ATOMIC_IDS), p.id
        assert (p.init_value == 0.0) == (p.id in ATOMIC_IDS), p.id


# ----------------------------------------------------------------------------- specs, independently
def _segments(lens: np.ndarray) -> np.ndarray:
    return np.repeat(np.arange(len(lens)), lens)


def _mvmr_loops(a, a_idx, b, b_idx, o_idx, n):
    o = np.zeros((int(n), a.shape[1], a.shape[3]))
    for t in range(len(a_idx)):
        for g in range(a.shape[1]):
            o[o_idx[t], g] += b[b_idx[t], g].astype(np.float64) @ a[a_idx[t], g]
    return o


def _vvor_loops(a, a_idx, b, b_idx, o_idx, n):
    o = np.zeros((int(n), a.shape[1], a.shape[2], b.shape[2]))
    for t in range(len(a_idx)):
        for g in range(a.shape[1]):
            o[o_idx[t], g] += np.outer(a[a_idx[t], g], b[b_idx[t], g])
    return o


def _block_scan_loops(a):
    out = np.zeros(len(a))
    for i in range(len(a)):
        start = i - i % 8
        out[i] = a[start:i + 1].sum()
    return out


def _segment_sum_loops(x, lens, offsets):
    assert np.array_equal(offsets, np.cumsum(lens) - lens)
    y = np.zeros((len(lens), x.shape[1]))
    for row, k in enumerate(_segments(lens)):
        y[k] += x[row]
    return y


NUMPY_REFERENCES = {
    "block_scan": _block_scan_loops,
    "block_offsets": lambda a, s: a + np.concatenate([[0], s])[np.arange(len(a)) // 8],
    "gather_rows": lambda x, idx: x[idx],
    "scatter_add": lambda x, idx, n: _segment_free_scatter(x, idx, n),
    "segment_sum": _segment_sum_loops,
    "segment_sum_large": _segment_sum_loops,
    "segment_sum_backward": lambda dy, lens, offsets: dy[_segments(lens)],
    "mvmr_simple": _mvmr_loops,
    "mvmr_fast": _mvmr_loops,
    "vvor": _vvor_loops,
    "mvmr_backward_b": lambda a, a_idx, dout, o_idx, b_idx, nb: _mvmr_loops(
        a.transpose(0, 1, 3, 2), a_idx, dout, o_idx, b_idx, nb),
}


def _layer_norm_np(x, w, b, eps=1e-5):
    x = x.astype(np.float64)
    mean = x.mean(axis=1, keepdims=True)
    rstd = 1 / np.sqrt(((x - mean) ** 2).mean(axis=1, keepdims=True) + eps)
    return (x - mean) * rstd * w + b


def _layer_norm_backward_np(x, w, g, eps=1e-5):
    # Written out by hand: out = xhat * w + b, xhat = (x - mean) * rstd.
    x = x.astype(np.float64)
    mean = x.mean(axis=1, keepdims=True)
    rstd = 1 / np.sqrt(((x - mean) ** 2).mean(axis=1, keepdims=True) + eps)
    xhat = (x - mean) * rstd
    wg = w * g
    return rstd * (wg - wg.mean(axis=1, keepdims=True) - xhat * (wg * xhat).mean(axis=1, keepdims=True))


NUMPY_REFERENCES.update({
    "simd_row_sum": lambda x: x.astype(np.float64).sum(axis=1),
    "layer_norm": _layer_norm_np,
    "layer_norm_backward": _layer_norm_backward_np,
})


def _segment_free_scatter(x, idx, n):
    out = np.zeros((int(n), x.shape[1]))
    np.add.at(out, idx, x)
    return out


@pytest.mark.parametrize("pid", KERNEL_IDS)
def test_spec_agrees_with_numpy_loops(pid):
    p = get_puzzle(pid)
    for case in p.cases():
        want = NUMPY_REFERENCES[pid](*case.inputs)
        # The spec as the checker evaluates it: in float64 (see checking.tolerance).
        got = compare_with_spec(p.spec, case.inputs, case.output_shape, p.error_model, p.atol, p.rtol).expected
        assert got.shape == case.output_shape, case.label
        # Quarter-grid values make every Part II spec exact; layer norm divides and takes roots.
        # (MLX's float64 autodiff of the mean carries a float32 rounding: about 6e-8 relative.)
        tol = dict(rtol=1e-6, atol=1e-7) if pid.startswith("layer_norm") else dict(rtol=0, atol=0)
        np.testing.assert_allclose(got, want, err_msg=case.label, **tol)


def test_the_scan_kernels_compose_into_a_full_scan():
    from metal_puzzles.puzzles.part2.block_scan import offsets_inputs

    x = np.arange(37, dtype=np.float32) % 5
    scanned, sums = offsets_inputs(x)
    total = get_puzzle("block_offsets").spec(mx.array(scanned), mx.array(sums))
    np.testing.assert_array_equal(np.asarray(total), np.cumsum(x))


# ----------------------------------------------------------------------------- hidden tests
@pytest.mark.parametrize("pid", KERNEL_IDS)
def test_hidden_tests_change_sizes_and_values_deterministically(pid):
    p = get_puzzle(pid)
    hidden = p.cases()[1:]
    assert len(hidden) >= 3
    assert {tuple(x.shape for x in c.inputs) for c in hidden} - {tuple(x.shape for x in p.visible.inputs)}
    for c in p.cases():
        assert all(x.dtype == v.dtype for x, v in zip(c.inputs, p.visible.inputs, strict=True)), c.label
        assert c.label.startswith("hidden test") or c is p.visible
    again = p.cases()[1:]
    assert all(np.array_equal(x, y) for a, b in zip(hidden, again, strict=True)
               for x, y in zip(a.inputs, b.inputs, strict=True))


def _index_arrays(p: Puzzle, case) -> list[np.ndarray]:
    return [x for name, x in zip(p.input_names, case.inputs, strict=True) if name.endswith("idx")]


@pytest.mark.parametrize("pid", ["gather_rows", *ATOMIC_IDS])
def test_hidden_indices_repeat_and_are_unsorted(pid):
    p = get_puzzle(pid)
    arrays = [idx for c in p.cases()[1:] for idx in _index_arrays(p, c) if len(idx) > 1]
    assert arrays and all(len(set(idx.tolist())) < len(idx) for idx in arrays)
    assert any((np.diff(idx) < 0).any() for idx in arrays)


@pytest.mark.parametrize("pid", ["segment_sum", "segment_sum_large", "segment_sum_backward"])
def test_hidden_segments_include_empty_ones(pid):
    p = get_puzzle(pid)
    lens = [c.inputs[1] for c in p.cases()[1:]]
    assert sum((x == 0).any() for x in lens) >= 2
    assert any(x[0] == 0 for x in lens) and any(x[-1] == 0 for x in lens)


@pytest.mark.parametrize("pid", ["mvmr_simple", "mvmr_fast", "vvor", "mvmr_backward_b"])
def test_hidden_tests_have_several_groups_and_ragged_threadgroups(pid):
    p = get_puzzle(pid)
    assert any(c.inputs[0].shape[1] > 1 for c in p.cases()[1:])  # G > 1
    # Partial threadgroups at the edge of the grid (II.7b's groups are exactly M wide by design).
    ragged = [c for c in p.cases()[1:] if any(g % t for g, t in zip(c.grid, c.threadgroup, strict=True))]
    assert ragged or pid == "mvmr_fast"


def test_bonus_rows_fit_one_threadgroup_of_two_simd_groups():
    for pid in BONUS_IDS:
        for c in get_puzzle(pid).cases():
            assert c.threadgroup == (64, 1, 1) and c.grid == (64, c.inputs[0].shape[0], 1), c.label


def test_fixed_headers_hold_every_test():
    for c in get_puzzle("mvmr_fast").cases():
        assert c.inputs[2].shape[2] <= MAX_C and c.threadgroup == (c.output_shape[2], 1, 1)
    for pid in ("block_scan", "block_offsets", "segment_sum_large"):
        assert all(c.threadgroup == (8, 1, 1) for c in get_puzzle(pid).cases())


# ----------------------------------------------------------------------------- solutions and templates
@pytest.mark.parametrize("pid", KERNEL_IDS)
def test_solution_passes_through_check_source(pid):
    result = check(pid, solution(pid))
    assert result.passed, result.report()
    assert result.findings == [] and len(result.outcomes) == len(get_puzzle(pid).cases())


@pytest.mark.parametrize("pid", KERNEL_IDS)
def test_solution_passes_as_the_notebook_poses_it(pid):
    result = problem_for(get_puzzle(pid), solution(pid)).check(quiet=True)
    assert result.passed, result.report()


@pytest.mark.parametrize("pid", KERNEL_IDS)
def test_template_fails(pid):
    result = check(pid, get_puzzle(pid).template)
    assert not result.passed and not result.correct, pid


# ----------------------------------------------------------------------------- atomics
NON_ATOMIC_SCATTER = """\
uint c = thread_position_in_grid.x;
uint t = thread_position_in_grid.y;
uint C = x_shape[1];
if (c < C && t < uint(idx_shape[0])) {
    out[idx[t] * C + c] += x[t * C + c];
}
"""


def test_non_atomic_scatter_add_is_flagged_as_a_race():
    result = problem_for(get_puzzle("scatter_add"), NON_ATOMIC_SCATTER, atomic_outputs=False).check(quiet=True)
    assert not result.passed
    assert "race" in kinds(result)
    assert result.outcomes[0].status == "findings"  # already on the visible test: rows 0 and 2 repeat
    assert "race" in result.report()


def test_non_atomic_scatter_add_does_not_compile_with_atomic_outputs():
    result = check("scatter_add", NON_ATOMIC_SCATTER)
    assert result.status == "compile-error"
    assert "atomic" in result.report()


def test_atomic_load_then_store_loses_updates():
    source = NON_ATOMIC_SCATTER.replace(
        "    out[idx[t] * C + c] += x[t * C + c];\n",
        "    float old = atomic_load_explicit(&out[idx[t] * C + c], memory_order_relaxed);\n"
        "    atomic_store_explicit(&out[idx[t] * C + c], old + x[t * C + c], memory_order_relaxed);\n")
    result = check("scatter_add", source)
    assert not result.correct and result.outcomes[0].status == "wrong"


def test_non_atomic_mvmr_is_flagged_as_a_race():
    source = solution("mvmr_simple").replace(
        "atomic_fetch_add_explicit(&o[(o_idx[t] * G + g) * M + m], dot, memory_order_relaxed);",
        "o[(o_idx[t] * G + g) * M + m] += dot;")
    assert source != solution("mvmr_simple")
    result = problem_for(get_puzzle("mvmr_simple"), source, atomic_outputs=False).check(quiet=True)
    assert not result.passed and "race" in kinds(result)


# ----------------------------------------------------------------------------- typical mistakes
def _edit(pid: str, old: str, new: str) -> str:
    source = solution(pid)
    assert old in source, (pid, old)
    return source.replace(old, new)


def test_blelloch_scan_passes_too():
    # The work-efficient scan the description offers: up-sweep, clear the root, down-sweep.
    source = """\
threadgroup float cache[BLOCK];
uint i = thread_position_in_grid.x;
uint j = thread_position_in_threadgroup.x;
uint n = a_shape[0];
float mine = (i < n) ? a[i] : 0.0f;
cache[j] = mine;
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint d = 1; d < BLOCK; d *= 2) {
    if ((j + 1) % (2 * d) == 0) {
        cache[j] += cache[j - d];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (j == BLOCK - 1) {
    cache[j] = 0.0f;
}
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint d = BLOCK / 2; d >= 1; d /= 2) {
    if ((j + 1) % (2 * d) == 0) {
        float left = cache[j - d];
        cache[j - d] = cache[j];
        cache[j] += left;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (i < n) {
    out[i] = cache[j] + mine;
}
"""
    result = check("block_scan", source)
    assert result.passed, result.report()


def test_scan_without_a_guard_reads_past_the_end():
    source = _edit("block_scan", "float running = (i < n) ? a[i] : 0.0f;", "float running = a[i];")
    result = check("block_scan", source)
    assert not result.passed and "out-of-bounds" in kinds(result)


def test_scan_without_the_barrier_between_read_and_write_races():
    source = _edit("block_scan", "    // Everyone has read the previous round before anyone overwrites it.\n"
                   "    threadgroup_barrier(mem_flags::mem_threadgroup);\n", "")
    result = check("block_scan", source)
    assert not result.passed and "race" in kinds(result)


def test_scan_reading_global_memory_in_a_loop_is_over_budget():
    source = """\
uint i = thread_position_in_grid.x;
uint n = a_shape[0];
if (i < n) {
    float total = 0.0f;
    for (uint k = i - i % BLOCK; k <= i; k++) {
        total += a[k];
    }
    out[i] = total;
}
"""
    result = check("block_scan", source)
    assert result.correct and not result.passed
    assert "global reads" in result.report()


def test_add_offsets_off_by_one_block_is_wrong():
    source = _edit("block_offsets", "block_sums[block - 1]", "block_sums[block]")
    assert not check("block_offsets", source).correct


def test_gather_without_a_guard_reads_out_of_bounds():
    source = "uint c = thread_position_in_grid.x;\nuint t = thread_position_in_grid.y;\nuint C = x_shape[1];\n" \
             "out[t * C + c] = x[idx[t] * C + c];\n"
    result = check("gather_rows", source)
    assert not result.passed and "out-of-bounds" in kinds(result)


def test_gather_copying_row_t_instead_of_row_idx_t_is_wrong():
    source = _edit("gather_rows", "x[idx[t] * C + c]", "x[t * C + c]")
    result = check("gather_rows", source)
    assert not result.correct


def test_segment_sum_recomputing_offsets_is_over_budget():
    source = _edit("segment_sum", "uint start = offsets[k];",
                   "uint start = 0;\n    for (uint j = 0; j < k; j++) { start += lengths[j]; }")
    result = check("segment_sum", source)
    assert result.correct and not result.passed


def test_segment_sum_skipping_empty_segments_leaves_outputs_unwritten():
    source = _edit("segment_sum", "    float total = 0.0f;\n", "    if (len == 0) return;\n    float total = 0.0f;\n")
    result = check("segment_sum", source)
    assert not result.passed and "unwritten-output" in kinds(result)


def test_segment_sum_accumulating_in_the_output_reads_garbage():
    source = _edit("segment_sum", "total += x[t * C + c];", "out[k * C + c] += x[t * C + c];")
    result = check("segment_sum", source)
    assert not result.passed and "uninitialized-read" in kinds(result)


def test_large_segment_sum_by_one_thread_is_over_budget():
    source = solution("segment_sum").replace("uint c = thread_position_in_grid.x;\nuint k = thread_position_in_grid.y;",
                                              "uint c = threadgroup_position_in_grid.y;\n"
                                              "uint k = threadgroup_position_in_grid.z;")
    source = source.replace("if (c < C && k < uint(lengths_shape[0])) {",
                            "if (thread_position_in_threadgroup.x == 0) {")
    result = check("segment_sum_large", source)
    assert result.correct and not result.passed
    assert "102 global reads" in result.report()


def test_large_segment_sum_with_simd_sum_passes():
    source = """\
uint j = thread_position_in_threadgroup.x;
uint c = threadgroup_position_in_grid.y;
uint k = threadgroup_position_in_grid.z;
uint C = x_shape[1];
uint start = offsets[k];
uint len = lengths[k];
float mine = 0.0f;
for (uint i = j; i < len; i += TG) {
    mine += x[(start + i) * C + c];
}
float total = simd_sum(mine);
if (j == 0) {
    out[k * C + c] = total;
}
"""
    result = check("segment_sum_large", source)
    assert result.passed, result.report()


def test_large_segment_sum_without_barriers_races():
    source = solution("segment_sum_large").replace("threadgroup_barrier(mem_flags::mem_threadgroup);", "")
    result = check("segment_sum_large", source)
    assert not result.passed and "race" in kinds(result)


def test_backward_by_linear_search_is_over_budget():
    source = """\
uint c = thread_position_in_grid.x;
uint t = thread_position_in_grid.y;
uint C = dy_shape[1];
if (c < C) {
    int k = 0;
    while (k + 1 < lengths_shape[0] && uint(offsets[k + 1]) <= t) {
        k++;
    }
    dx[t * C + c] = dy[k * C + c];
}
"""
    result = check("segment_sum_backward", source)
    assert result.correct and not result.passed


def test_backward_with_a_strict_comparison_is_wrong():
    # The last segment starting strictly before t: wrong for the first row of every segment.
    source = _edit("segment_sum_backward", "if (uint(offsets[mid]) <= t) {", "if (uint(offsets[mid]) < t) {")
    assert not check("segment_sum_backward", source).correct


def test_fast_mvmr_without_the_barrier_races():
    source = solution("mvmr_fast").replace("threadgroup_barrier(mem_flags::mem_threadgroup);", "")
    result = check("mvmr_fast", source)
    assert not result.passed and kinds(result) & {"race", "uninitialized-read"}


def test_simple_mvmr_under_the_fast_launch_is_over_budget():
    source = solution("mvmr_simple")
    for old, new in (("thread_position_in_grid.x", "thread_position_in_threadgroup.x"),
                     ("thread_position_in_grid.y", "threadgroup_position_in_grid.y"),
                     ("thread_position_in_grid.z", "threadgroup_position_in_grid.z")):
        source = source.replace(old, new)
    result = check("mvmr_fast", source)
    assert result.correct and not result.passed
    assert f"uses {3 + 2 * MAX_C} global reads" in result.report()


def test_vvor_with_output_axes_swapped_is_wrong():
    source = _edit("vvor", "((o_idx[t] * G + g) * M + m) * C + c", "((o_idx[t] * G + g) * C + c) * M + m")
    assert not check("vvor", source).correct


def test_mvmr_backward_reading_a_untransposed_is_wrong():
    # Reading a[.., c', m'] with c' and m' swapped: the classic transposition slip.
    source = _edit("mvmr_backward_b", "a[row * M + m]", "a[((a_idx[t] * G + g) * M + m) * C + c]")
    result = check("mvmr_backward_b", source)
    assert not result.correct


# ----------------------------------------------------------------------------- the finale
def notebook_scope(source_for=solution_source) -> dict:
    """What the notebook has defined by the finale: every kernel puzzle's test function."""
    scope: dict = {"mx": mx, "MetalKernel": MetalKernel}
    for p in KERNEL_PUZZLES:
        source = source_for(p)

        def test_fn(*inputs, p=p, source=source):
            return MetalKernel(name=p.kernel_name, input_names=list(p.input_names),
                               output_names=list(p.output_names), source=source, header=p.header,
                               atomic_outputs=p.atomic_outputs)
        scope[entry_of(p).kernel_function] = test_fn
    return scope


@pytest.mark.parametrize("pid", ["mvmr_autodiff", "segment_sum_autodiff"])
def test_finale_solution_passes_in_the_notebook(pid, capsys):
    scope = notebook_scope()
    exec(solution(pid), scope)
    shown = capsys.readouterr().out
    assert "values" in shown and "WRONG" not in shown
    result = scope["problem"].check(quiet=True)
    assert result and result.passed, result.report()
    p = get_puzzle(pid)
    per_case = 1 + 2 * len(p.argnums)
    assert len(result.outcomes) == per_case * len(p.cases())


@pytest.mark.parametrize("pid", ["mvmr_autodiff", "segment_sum_autodiff"])
def test_finale_template_fails_politely(pid, capsys):
    scope = notebook_scope()
    exec(get_puzzle(pid).template, scope)  # show() runs without a traceback
    result = scope["problem"].check()
    out = capsys.readouterr().out
    assert not result and result.status == "runtime-error"
    assert "Failed:" in out and "NameError" in out


def test_finale_catches_a_none_gradient_for_an_index_array():
    # MLX lines gradients up with the array arguments, so None for a_idx shifts db out of place.
    scope = notebook_scope()
    exec(solution("mvmr_autodiff").replace(
        "return da, mx.zeros_like(a_idx), db, mx.zeros_like(b_idx), mx.zeros_like(o_idx), None",
        "return da, None, db, None, None, None"), scope)
    result = scope["problem"].check(quiet=True)
    assert not result
    assert any(o.quantity.endswith("w.r.t. b") and not o.ok for o in result.outcomes)
    assert all(o.ok for o in result.outcomes if o.quantity in ("values", "vjp w.r.t. a"))


def test_finale_catches_swapped_index_roles():
    scope = notebook_scope()
    exec(solution("mvmr_autodiff").replace("cotangent, o_idx, b_idx, b.shape[0]", "cotangent, b_idx, o_idx, b.shape[0]"),
         scope)
    assert not scope["problem"].check(quiet=True)


def _reference_kernels(pid: str, **replace: str) -> dict[str, dict]:
    out = {}
    for name in get_puzzle(pid).kernels:
        owner = next(p for p in KERNEL_PUZZLES if p.kernel_name == name)
        out[name] = {"source": replace.get(name, solution_source(owner)), "header": owner.header}
    return out


@pytest.mark.parametrize("pid", ["mvmr_autodiff", "segment_sum_autodiff"])
def test_grader_wires_the_learners_kernels(pid):
    result = check_kernel_sources(get_puzzle(pid), _reference_kernels(pid))
    assert result.passed, result.report()
    record = summarize(result)  # the grader's JSON record reads a finale verdict unchanged
    json.dumps(record)
    assert record["passed"] and record["status"] == "passed"


def test_grader_reads_kernels_as_the_extractor_gives_them():
    from types import SimpleNamespace

    kernels = {name: SimpleNamespace(source=k["source"], header="", input_names=None, output_names=None)
               for name, k in _reference_kernels("mvmr_autodiff").items()}
    result = check_kernel_sources(get_puzzle("mvmr_autodiff"), kernels, max_steps=20_000)
    assert result.passed, result.report()  # an empty header falls back to the puzzle's (MAX_C)


def test_grader_fails_a_wrong_backward_kernel():
    wrong = _edit("vvor", "((o_idx[t] * G + g) * M + m) * C + c", "((a_idx[t] * G + g) * M + m) * C + c")
    result = check_kernel_sources(get_puzzle("mvmr_autodiff"), _reference_kernels("mvmr_autodiff", vvor=wrong))
    assert not result
    assert all(o.ok for o in result.outcomes if o.quantity == "values")
    assert any(not o.ok and "w.r.t. a" in o.quantity for o in result.outcomes)


def test_grader_reports_sanitizer_findings_and_missing_kernels():
    past_the_end = _edit("segment_sum_backward", "int k = lo - 1;", "int k = lo;")
    result = check_kernel_sources(get_puzzle("segment_sum_autodiff"),
                                         _reference_kernels("segment_sum_autodiff", segment_sum_backward=past_the_end))
    assert not result and result.status == "findings" and result.findings
    assert "sanitizer" in result.report()
    missing = check_kernel_sources(get_puzzle("mvmr_autodiff"), {"mvmr": {"source": solution("mvmr_fast")}})
    assert not missing and "vvor" in missing.report()


def test_grader_says_which_kernel_has_no_source():
    # A kernel the extractor found but could not read (``ExtractedKernel.source`` None) is named,
    # not handed to MetalKernel to fail inside the simulator ("NoneType has no len()").
    kernels = _reference_kernels("mvmr_autodiff")
    kernels["vvor"] = {"source": None, "header": ""}
    result = check_kernel_sources(get_puzzle("mvmr_autodiff"), kernels)
    assert not result and [o.status for o in result.outcomes] == [CaseStatus.RUNTIME_ERROR]
    assert "kernel 'vvor' has no source" in result.report()
    assert "NoneType" not in result.report()


def test_grad_problem_records_progress():
    from metal_puzzles.notebook.session import WITHIN_BUDGET, reset, state

    reset()
    scope = notebook_scope()
    exec(solution("segment_sum_autodiff").replace("problem.show()", ""), scope)
    scope["problem"].check(quiet=True)
    assert state("segment_sum_autodiff") == WITHIN_BUDGET
    reset()


# ----------------------------------------------------------------------------- bonus: SIMD-groups, layer norm
def test_row_sum_by_a_tree_in_threadgroup_memory_is_over_budget():
    source = """\
threadgroup float tree[TG];
uint j = thread_position_in_threadgroup.x;
uint r = threadgroup_position_in_grid.y;
uint N = x_shape[1];
float mine = 0.0f;
for (uint i = j; i < N; i += TG) {
    mine += x[r * N + i];
}
tree[j] = mine;
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint stride = 1; stride < TG; stride *= 2) {
    if (j % (2 * stride) == 0) {
        tree[j] += tree[j + stride];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (j == 0) {
    out[r] = tree[0];
}
"""
    result = check("simd_row_sum", source)
    assert result.correct and not result.passed
    assert "threadgroup-memory" in result.report() or "shared" in result.report()


def test_row_sum_without_the_barrier_races():
    source = solution("simd_row_sum").replace("threadgroup_barrier(mem_flags::mem_threadgroup);", "")
    result = check("simd_row_sum", source)
    assert not result.passed and kinds(result) & {"race", "uninitialized-read"}


def test_layer_norm_with_one_pass_variance_fails_only_far_from_zero():
    source = _edit("layer_norm", "    float centred = x[row + i] - mean;\n    d += centred * centred;",
                   "    d += x[row + i] * x[row + i];")
    source = source.replace("float rstd = rsqrt(spread / N + EPS);", "float rstd = rsqrt(spread / N - mean * mean + EPS);")
    result = check("layer_norm", source)
    assert not result.correct
    assert [o.case.label for o in result.outcomes if not o.ok] == [
        "hidden test: 2 rows of 100, values near 10000: subtract the mean before squaring"]


def test_layer_norm_reusing_the_slots_without_a_barrier_races():
    source = _edit("layer_norm", "squares[group] = d;", "sums[group] = d;").replace("spread += squares[k];",
                                                                                   "spread += sums[k];")
    source = source.replace("threadgroup float squares[SIMD_GROUPS];\n", "")
    result = check("layer_norm", source)
    assert not result.passed and "race" in kinds(result)


def test_layer_norm_backward_without_the_variance_path_is_wrong():
    source = _edit("layer_norm_backward", "- mean_wg - xhat * mean_wgx)", "- mean_wg)")
    assert not check("layer_norm_backward", source).correct


def test_finale_stops_after_a_kernel_that_does_not_finish():
    # The forward kernel with an endless loop: its first comparison spends the whole step budget,
    # and every later comparison and test is reported as not run instead of spending it again.
    src = solution_source(get_puzzle("segment_sum"))
    endless = src.replace("for (", "for (;;) {} for (", 1)
    assert endless != src
    result = check_kernel_sources(get_puzzle("segment_sum_autodiff"),
                                  _reference_kernels("segment_sum_autodiff", segment_sum=endless), max_steps=2_000)
    first, *rest = result.outcomes
    assert first.stopped == StopReason.STEP_BUDGET and not result.passed
    assert rest and all(o.status == "runtime-error" and o.error.startswith("not run") for o in rest)
    cases = get_puzzle("segment_sum_autodiff").cases(0)
    assert {o.case.label for o in rest} >= {c.label for c in cases[1:]}  # every later test is accounted for
