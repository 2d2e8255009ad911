"""III.3: Block Sum, with simd_sum instead of a tree of barriers.

Every threadgroup of 256 threads sums its 256 elements. The template does it the classic way, a
tree in threadgroup memory with a barrier per level (eight levels, nine barriers). The budget
allows one barrier: sum each SIMD-group in registers with simd_sum, leave eight partial sums in
threadgroup memory, wait once, and sum those.
"""

import inspect

import mlx.core as mx
import numpy as np

from ...checking import Budget, Case, Puzzle
from ...checking.inputs import ceil_div, padded, values
from ...checking.puzzle import SIMD_SUM_BARRIERS
from ..catalogue.entry import Entry

TG = 256

HEADER = """\
constant uint TG = 256;
constant uint SIMD_GROUPS = TG / 32;
"""


def block_sum_spec(a):
    # The sum of each block of 256 elements (the last block may be shorter).
    n = a.shape[0]
    blocks = -(-n // 256)
    padded_a = mx.concatenate([a, mx.zeros((blocks * 256 - n,), dtype=a.dtype)])
    return padded_a.reshape(blocks, 256).sum(axis=1)


def _case(a: np.ndarray, label: str) -> Case:
    n = a.shape[0]
    return Case((a,), (ceil_div(n, TG),), (padded(n, TG), 1, 1), (TG, 1, 1), label)


def hidden(rng: np.random.Generator) -> list[Case]:
    return [_case(values(rng, (n,)), f"hidden test: {n} values, {what}") for n, what in
            ((1024, "four whole blocks"), (1000, "a partial last block"), (40, "one short block"),
             (2560, "ten blocks"))]


VISIBLE = _case((np.arange(512) % 7).astype(np.float32), "visible test")

SETUP = """\
a = (mx.arange(512) % 7).astype(mx.float32)
output_shape = (2,)"""

TEMPLATE = """\
threadgroup float partial[SIMD_GROUPS];  // one slot per SIMD-group
uint i = thread_position_in_grid.x;
uint lane = thread_index_in_simdgroup;
uint sg = simdgroup_index_in_threadgroup;
// FILL ME IN (roughly 12 lines)
"""

#: Part I's way, correct and slow: a tree in threadgroup memory with a barrier per level.
TREE = """\
threadgroup float sh[TG];
uint i = thread_position_in_grid.x;
uint t = thread_position_in_threadgroup.x;
sh[t] = i < a_shape[0] ? a[i] : 0.0f;
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint s = TG / 2; s > 0; s /= 2) {
    if (t < s) {
        sh[t] += sh[t + s];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (t == 0) {
    out[threadgroup_position_in_grid.x] = sh[0];
}
"""

PUZZLE = Puzzle(
    id="block_sum",
    number="III.3",
    title="Block Sum Without a Barrier Tree",
    kernel_name="block_sum",
    input_names=("a",),
    header=HEADER,
    description="""\
`out[g]` is the sum of `a[256 g]` to `a[256 g + 255]` (zero past the end of `a`): one
threadgroup of `TG = 256` threads per block, one element per thread, the grid rounded up to
whole blocks.

Part I would build a tree in threadgroup memory, halving the active threads at every level,
with a barrier after each (`sh[t] += sh[t + s]` for `s = 128, 64, ..., 1`). That is correct,
and on a GPU it is slow for a reason the counts of Part I do not show: every barrier stops the
whole threadgroup until its slowest SIMD-group arrives, nine times, and the levels between them
are so short that the waiting is most of the work. The cost table counts the barriers, and its
kernel time (the time apart from the fixed launch overhead) prices the waits: at this puzzle's
size, one threadgroup per GPU core with nothing else to run meanwhile, the nine barriers are the
tree's time. (The last five levels keep one SIMD-group busy with 16, 8, 4, 2 and 1 lanes of 32
while the other seven wait. SIMD efficiency does not show that: it counts the lanes of the
SIMD-groups that run a statement, not those waiting at a barrier, and the tree keeps about 98% of
those busy, more than the kernel below.)

`simd_sum(v)` adds `v` over the 32 lanes of a SIMD-group in registers, with no barrier at all.
So: `simd_sum` each thread's element; lane 0 of each SIMD-group (`thread_index_in_simdgroup`)
stores the sum in `partial[simdgroup_index_in_threadgroup]`; one barrier; then the first
SIMD-group adds the `SIMD_GROUPS = 8` partials (a second `simd_sum` over lanes 0 to 7, the
others contributing 0) and thread 0 writes `out`. MLX's reductions work this way.

**Budget**: at most 1 barrier per threadgroup (the cost model counts them), 1 read of `a` and at
most 1 write of `out` per thread, 1 threadgroup-memory write and 1 read per thread. The last is a
rule about structure, not speed: thread 0 adding the 8 partials one after another costs about
the same at this size (8 reads by one lane while the others wait), but its chain grows with the
threadgroup (32 partials at 1024 threads) where the second `simd_sum` stays one step. The budget
asks for the structure that scales.""",
    spec=block_sum_spec,
    spec_source=inspect.getsource(block_sum_spec).strip(),
    visible=VISIBLE,
    hidden=hidden,
    template=TEMPLATE,
    budget=Budget(global_reads=1, global_writes=1, shared_reads=1, shared_writes=1, max_barriers=1,
                  barriers_advice=SIMD_SUM_BARRIERS),
)


ENTRY = Entry(PUZZLE, setup=SETUP)
