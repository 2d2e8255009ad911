"""Part III of the book: performance. Each template leaves the heart of the kernel to the learner
and describes the slow, correct way in its comments; the budgets are stated in the cost model's
terms: memory segments per SIMD-group access, bank conflicts, SIMD efficiency, barriers,
occupancy, reads per element."""

from __future__ import annotations

from ..catalogue.entry import Part
from . import (
    block_sum,
    fused_softmax,
    lookup_occupancy,
    simdgroup_matmul,
    transpose,
    uniform_branches,
)

INTRO = """\
Every kernel so far was judged on what each thread reads and writes. Part III judges what a GPU
spends: the simulator sees every lane's address and mask, and prices each run on a **model** of
an Apple GPU (the M1's published and measured parameters; the model says what it assumes):

- **segments**: a SIMD-group's 32 device-memory accesses are served in 128-byte segments; 32
  neighbouring floats cost one, 32 floats a row apart cost 32;
- **bank conflicts**: threadgroup memory is split into 32 banks; lanes that need different words
  of one bank wait for each other;
- **SIMD efficiency**: the share of a SIMD-group's 32 lanes doing work in the statements it runs;
- **barriers**, **occupancy** (how many SIMD-groups a GPU core keeps in flight) and **reads per
  element**, and a roofline estimate of the time, naming what bounds it.

Each template here leaves the heart of the kernel to you (`// FILL ME IN`); its comments describe
the slow way, which would be correct, and the budget says, in those terms, what a fast kernel
spends. `problem.show()` prints a cost table beside the score table, `problem.show(colour_by=
"segment")` or `"bank"` draws which segments and banks each SIMD-group touches, and
`problem.profile()` prints the cost of every line. (On NVIDIA hardware the same counting rules
match Nsight Compute's counters; `benchmarks/gpu_evidence` has the comparison.)"""

PART_III = Part(
    number=5,
    folder="part3",
    title="Part III: Performance",
    intro=INTRO,
    entries=(
        transpose.TILED_ENTRY,
        transpose.PADDED_ENTRY,
        block_sum.ENTRY,
        uniform_branches.ENTRY,
        lookup_occupancy.ENTRY,
        fused_softmax.ENTRY,
        simdgroup_matmul.ENTRY,
    ),
)
