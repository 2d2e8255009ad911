"""Arrows follow values through thread-private memory: an element of a thread's array (and a
member of a thread's struct) remembers where the value stored in it came from, so the diagram
draws the same arrows whether a value waits in a register or in ``float v[PER_THREAD]``."""

import re

import numpy as np
import pytest

from metal_puzzles.checking import run_case
from metal_puzzles.diagrams.draw import draw_run, to_svg
from metal_puzzles.diagrams.style import ARROW_W
from metal_puzzles.msl import simulate
from metal_puzzles.puzzles import get_puzzle, solution_kernel

F32 = np.float32
N = 8


def traced(src: str, header: str = "", inputs=None, dtype=F32):
    names = ["x", "y"]
    if inputs is None:
        inputs = [np.arange(N, dtype=dtype) + 1000, np.arange(N, dtype=dtype) * 3 - 700]
    return simulate("k", names[: len(inputs)], ["out"], src, header, inputs=inputs, output_shapes=[(N,)],
                    output_dtypes=["float32"], grid=(N, 1, 1), threadgroup=(N, 1, 1), trace=True)


def sources(run, buffer: str = "out") -> dict[int, set[tuple[str, int]]]:
    """Written element -> the (buffer, index) elements its value came from (the last write wins)."""
    out: dict[int, set[tuple[str, int]]] = {}
    for a in run.trace.element_accesses():
        if a.kind != "read" and a.buffer == buffer:
            out[a.index] = {(name, index) for name, _, index in a.sources}
    return out


def arrow_count(svg: str) -> int:
    """Arrow shafts: the paths of the groups drawn with the arrow line width (as test_draw counts them)."""
    groups = re.findall(rf"<g [^>]*stroke-width='{ARROW_W:g}'[^>]*>(.*?)</g>", svg)
    return sum(g.count("<path") for g in groups)


PRELUDE = "uint i = thread_position_in_grid.x;\n"


def test_a_value_kept_in_a_thread_array_draws_the_arrows_a_register_draws():
    # The two kernels: 21 paths for the array against 45 for the register.
    in_array = traced(PRELUDE + "float v[2]; v[0] = x[i]; out[i] = v[0] * 2.0f;")
    in_register = traced(PRELUDE + "float a = x[i]; out[i] = a * 2.0f;")
    assert sources(in_array) == sources(in_register) == {i: {("x", i)} for i in range(N)}
    svg_array, svg_register = to_svg(draw_run(in_array)), to_svg(draw_run(in_register))
    assert arrow_count(svg_array) == arrow_count(svg_register) == N
    assert svg_array.count("<path") == svg_register.count("<path")


def test_each_element_of_a_thread_array_keeps_its_own_sources():
    run = traced(PRELUDE + "float v[2]; v[0] = x[i]; v[1] = y[i]; out[i] = v[1] - 1.0f;")
    assert sources(run) == {i: {("y", i)} for i in range(N)}
    both = traced(PRELUDE + "float v[2]; v[0] = x[i]; v[1] = y[i]; out[i] = v[0] + v[1];")
    assert sources(both) == {i: {("x", i), ("y", i)} for i in range(N)}


def test_an_overwritten_element_forgets_what_it_held():
    run = traced(PRELUDE + "float v[2]; v[0] = x[i]; v[0] = 3.0f; out[i] = v[0];")
    assert sources(run) == {i: set() for i in range(N)}


def test_an_index_computed_per_thread_picks_the_element_it_names():
    # Thread i stores into v[i % 4] and reads v[(i + 1) % 4], which only the even threads filled
    # from y: the index each thread computed decides, element by element.
    run = traced(PRELUDE + "float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};\n"
                 "v[i % 4] = x[i];\nif (i % 2 == 0) v[(i + 1) % 4] = y[i];\nout[i] = v[(i + 1) % 4];")
    assert sources(run) == {i: {("y", i)} if i % 2 == 0 else set() for i in range(N)}


def test_an_element_written_only_under_a_branch_keeps_the_other_threads_sources():
    run = traced(PRELUDE + "float v[1]; v[0] = x[i];\nif (i >= 4) v[0] = y[i];\nout[i] = v[0];")
    assert sources(run) == {i: {("y", i)} if i >= 4 else {("x", i)} for i in range(N)}


def test_a_loop_through_a_thread_array_brings_every_element_it_summed():
    src = ("uint i = thread_position_in_grid.x;\nfloat v[4];\n"
           "for (uint k = 0; k < 4; k++) v[k] = x[(i + k) % 8];\n"
           "float s = 0.0f;\nfor (uint k = 0; k < 4; k++) s += v[k];\nout[i] = s;")
    run = traced(src)
    assert sources(run) == {i: {("x", (i + k) % N) for k in range(4)} for i in range(N)}
    assert arrow_count(to_svg(draw_run(run))) == 4 * N


def test_two_dimensional_and_half_arrays_and_vectors_read_by_component():
    src = ("uint i = thread_position_in_grid.x;\nhalf h[2][2];\nh[1][0] = half(x[i]); h[0][1] = half(y[i]);\n"
           "float2 f[2]; f[1] = float2(y[i], 0.0f);\nout[i] = float(h[1][0]) + f[1].x;")
    run = traced(src, inputs=[np.linspace(-60000, 60000, N, dtype=F32), np.full(N, 2048.5, dtype=F32)])
    assert sources(run) == {i: {("x", i), ("y", i)} for i in range(N)}
    assert run.outputs[0][0] == pytest.approx(-60000 + 2048.5, abs=32)  # half rounds 2048.5 and -60000


def test_struct_members_keep_their_own_sources_and_a_whole_copy_carries_all_of_them():
    header = "struct Pair { float a; float b; };"
    member = traced(PRELUDE + "Pair p; p.a = x[i]; p.b = y[i];\nout[i] = p.b;", header)
    assert sources(member) == {i: {("y", i)} for i in range(N)}
    # A copy of the whole struct is one value a thread: conservatively, each member of the copy
    # came from everything the struct held (an arrow too many, never one missing).
    copied = traced(PRELUDE + "Pair p; p.a = x[i]; p.b = y[i];\nPair q = p;\nout[i] = q.b;", header)
    assert sources(copied) == {i: {("x", i), ("y", i)} for i in range(N)}


def test_a_value_through_a_threadgroup_array_still_points_at_its_snapshot():
    # Unchanged: threadgroup memory has snapshots of its own; a thread array in between passes
    # the snapshot's element through.
    src = ("threadgroup float t[8];\nuint i = thread_position_in_grid.x;\nt[i] = x[i];\n"
           "threadgroup_barrier(mem_flags::mem_threadgroup);\nfloat v[2]; v[1] = t[(i + 1) % 8];\nout[i] = v[1];")
    run = traced(src)
    assert sources(run) == {i: {("t", (i + 1) % N)} for i in range(N)}
    assert arrow_count(to_svg(draw_run(run))) == 2 * N


# ----------------------------------------------------------------------------- the book's puzzles
def solution_run(puzzle_id: str):
    p = get_puzzle(puzzle_id)
    return p, run_case(solution_kernel(p), p.visible, p.launch_options, trace=True)


def writes_of(run, buffer: str) -> list:
    return [a for a in run.trace.element_accesses() if a.kind != "read" and a.buffer == buffer]


def test_rms_norm_draws_every_output_from_the_x_it_kept_in_v_and_every_partial_sum_from_its_lanes():
    p, run = solution_run("rms_norm")
    x, _w = p.visible.inputs
    rows, n = x.shape
    outs = writes_of(run, "out")
    assert sorted(a.index for a in outs) == list(range(rows * n))
    slots = sorted({a.index for a in writes_of(run, "partial")})
    for a in outs:
        r, k = divmod(a.index, n)
        # v[q] held x[r, k]; the scale came through the threadgroup's partial sums.
        assert a.sources == {("x", -1, a.index), ("w", -1, k)} | {("partial", r, s) for s in slots}, a
    for a in writes_of(run, "partial"):
        # SIMD-group s summed the squares of the elements its 32 lanes kept in v.
        lanes = range(32 * a.index, min(32 * (a.index + 1), n))
        assert a.sources == {("x", -1, a.group * n + k) for k in lanes}, a
    assert x.max() - x.min() > 1.0  # values that tell the elements apart


def test_quantized_matvec_draws_every_output_from_the_x_values_it_kept_in_xs():
    p, run = solution_run("quantized_matvec")
    x, w_q, scales, biases = p.visible.inputs
    words, groups = w_q.shape[1], scales.shape[1]
    got = sources(run)
    assert sorted(got) == list(range(w_q.shape[0]))
    for row, src in got.items():
        # Every x, kept in xs[PER_WORD] (no arrow from x was drawn before), and the row's words,
        # scales and biases, read into registers.
        assert src == ({("x", k) for k in range(x.size)} | {("w_q", row * words + k) for k in range(words)}
                       | {("scales", row * groups + g) for g in range(groups)}
                       | {("biases", row * groups + g) for g in range(groups)}), row


def test_topk_draws_each_simdgroups_best_from_the_values_its_lanes_kept_in_v():
    p, run = solution_run("topk")
    x = p.visible.inputs[0]
    n = x.shape[1]
    best = writes_of(run, "best_values")
    assert best
    for a in best:
        # The SIMD-group's best value came from the candidates its lanes picked out of v[q]: all of
        # the threadgroup's row, of its own lanes' columns, and the value written is their maximum.
        cols = {i - a.group * n for _, _, i in a.sources}
        assert a.sources and all(g == -1 and name == "x" for name, g, _ in a.sources), a
        assert cols <= set(range(n)) and len({(c % 64) // 32 for c in cols}) == 1, a
        assert a.value == max(x.reshape(-1)[i] for _, _, i in a.sources), a
