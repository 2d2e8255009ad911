"""Part II of the book: toward a sparse-convolution engine, and its bonus section.

Scans, gathers and scatters, segment sums and their gradient, MVMR, VVOR and MVMR's backward,
and the finale that wires kernels into ``mx.custom_function``; then a short bonus section
(SIMD-group reductions, layer norm forward and backward).
"""

from __future__ import annotations

from ..catalogue.entry import Part
from . import (
    autodiff,
    block_scan,
    gather_rows,
    layer_norm,
    mvmr,
    mvmr_backward_b,
    scatter_add,
    segment_sum,
    segment_sum_backward,
    segment_sum_large,
    simd_row_sum,
    vvor,
)

PART_II = Part(
    number=3,
    folder="part2",
    title="Part II: Toward a sparse-convolution engine",
    intro="Scans, gathers and scatters, segment reductions, and the kernels of a sparse convolution with "
          "their gradients.",
    entries=(
        block_scan.SCAN_ENTRY,
        block_scan.OFFSETS_ENTRY,
        gather_rows.ENTRY,
        scatter_add.ENTRY,
        segment_sum.ENTRY,
        segment_sum_large.ENTRY,
        segment_sum_backward.ENTRY,
        mvmr.SIMPLE_ENTRY,
        mvmr.FAST_ENTRY,
        vvor.ENTRY,
        mvmr_backward_b.ENTRY,
        autodiff.MVMR_AUTODIFF_ENTRY,
        autodiff.SEGMENT_SUM_AUTODIFF_ENTRY,
    ),
)

BONUS = Part(
    number=4,
    folder="part2",
    title="Bonus: SIMD-groups and layer norm",
    intro="Reductions with SIMD-group functions, and layer norm forward and backward as MLX's own kernels "
          "do them.",
    entries=(
        simd_row_sum.ENTRY,
        layer_norm.FORWARD_ENTRY,
        layer_norm.BACKWARD_ENTRY,
    ),
)
