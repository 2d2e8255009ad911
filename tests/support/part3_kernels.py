"""Part III's slow kernels: what each lesson's text describes before it teaches the fast one.

One source for the claims tested against the cost model (tests/puzzles/part3/test_part3_lessons.py) and for
the real-GPU timing of the lessons (benchmarks/cuda_lessons.py).
"""

from __future__ import annotations

from metal_puzzles.puzzles import get_puzzle, solution_source
from metal_puzzles.puzzles.part3.block_sum import TREE
from metal_puzzles.puzzles.part3.simdgroup_matmul import LANE_BY_LANE

# ----------------------------------------------------------------------------- III.1, III.2
#: The obvious transpose: coalesced reads, each lane's write a row of out apart.
NAIVE_TRANSPOSE = """\
uint rows = a_shape[0];
uint cols = a_shape[1];
uint x = thread_position_in_grid.x;
uint y = thread_position_in_grid.y;
if (y < rows && x < cols) {
    out[x * rows + y] = a[y * cols + x];
}
"""

#: Through the tile, but written back as it was read: out's column again, 32 segments a store.
TILE_WRITTEN_BY_COLUMN = """\
threadgroup float tile[TILE][TILE];
uint rows = a_shape[0];
uint cols = a_shape[1];
uint tx = thread_position_in_threadgroup.x;
uint ty = thread_position_in_threadgroup.y;
uint bx = threadgroup_position_in_grid.x * TILE;
uint by = threadgroup_position_in_grid.y * TILE;
if (by + ty < rows && bx + tx < cols) {
    tile[ty][tx] = a[(by + ty) * cols + bx + tx];
}
threadgroup_barrier(mem_flags::mem_threadgroup);
if (by + ty < rows && bx + tx < cols) {
    out[(bx + tx) * rows + by + ty] = tile[ty][tx];
}
"""


# ----------------------------------------------------------------------------- III.3
#: The taught first level, then thread 0 adds the 8 partials one after another.
SERIAL_PARTIALS = """\
threadgroup float partial[SIMD_GROUPS];
uint i = thread_position_in_grid.x;
uint lane = thread_index_in_simdgroup;
uint sg = simdgroup_index_in_threadgroup;
float v = simd_sum(i < a_shape[0] ? a[i] : 0.0f);
if (lane == 0) {
    partial[sg] = v;
}
threadgroup_barrier(mem_flags::mem_threadgroup);
if (thread_position_in_threadgroup.x == 0) {
    float total = 0.0f;
    for (uint s = 0; s < SIMD_GROUPS; s++) {
        total += partial[s];
    }
    out[threadgroup_position_in_grid.x] = total;
}
"""


# ----------------------------------------------------------------------------- III.4
#: The template's loop with each thread on its own position: half of each SIMD-group idle in each branch.
IN_ORDER = get_puzzle("uniform_branches").template.replace("uint i = 0;", "uint i = t;")

# ----------------------------------------------------------------------------- III.6
SOFTMAX = get_puzzle("fused_softmax")
#: Three passes over the row in device memory: maximum, sum, output.
THREE_PASS = SOFTMAX.template + """
for (uint k = j; k < N; k += TG) {
    out[r * N + k] = exp(x[r * N + k] - m) / sum;
}
"""
#: Fused for the maximum and the sum, but the output reads the row again.
TWO_PASS = solution_source(SOFTMAX).replace("out[r * N + k] = v[q] / sum;", "out[r * N + k] = exp(x[r * N + k] - m) / sum;")

__all__ = ["IN_ORDER", "LANE_BY_LANE", "NAIVE_TRANSPOSE", "SERIAL_PARTIALS", "THREE_PASS", "TILE_WRITTEN_BY_COLUMN",
           "TREE", "TWO_PASS"]
