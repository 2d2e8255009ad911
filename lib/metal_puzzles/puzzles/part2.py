"""Part II of the book: toward a sparse-convolution engine, and its bonus section.

Scans, gathers and scatters, segment sums and their gradient, MVMR, VVOR and MVMR's backward,
and the finale that wires kernels into ``mx.custom_function``; then a short bonus section
(SIMD-group reductions, layer norm forward and backward).
"""

from __future__ import annotations

from . import (
    finale,
    q01_scan,
    q02_gather,
    q03_scatter_add,
    q04_segment_sum,
    q05_segment_sum_large,
    q06_segment_sum_backward,
    q07_mvmr,
    q08_vvor,
    q09_mvmr_backward,
    q11_simd_row_sum,
    q12_layer_norm,
)
from .entry import Part

PART_II = Part(
    number=2,
    title="Part II: Toward a sparse-convolution engine",
    intro="Scans, gathers and scatters, segment reductions, and the kernels of a sparse convolution with "
          "their gradients.",
    entries=(
        q01_scan.SCAN_ENTRY,
        q01_scan.OFFSETS_ENTRY,
        q02_gather.ENTRY,
        q03_scatter_add.ENTRY,
        q04_segment_sum.ENTRY,
        q05_segment_sum_large.ENTRY,
        q06_segment_sum_backward.ENTRY,
        q07_mvmr.SIMPLE_ENTRY,
        q07_mvmr.FAST_ENTRY,
        q08_vvor.ENTRY,
        q09_mvmr_backward.ENTRY,
        finale.MVMR_AUTODIFF_ENTRY,
        finale.SEGMENT_SUM_AUTODIFF_ENTRY,
    ),
)

BONUS = Part(
    number=3,
    title="Bonus: SIMD-groups and layer norm",
    intro="Reductions with SIMD-group functions, and layer norm forward and backward as MLX's own kernels "
          "do them.",
    entries=(
        q11_simd_row_sum.ENTRY,
        q12_layer_norm.FORWARD_ENTRY,
        q12_layer_norm.BACKWARD_ENTRY,
    ),
)
