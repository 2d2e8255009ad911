"""Part I of the book: the fundamentals (the original fourteen puzzles)."""

from __future__ import annotations

from . import (
    p01_map,
    p02_zip,
    p03_guard,
    p04_map_2d,
    p05_broadcast,
    p06_threadgroups,
    p07_threadgroups_2d,
    p08_threadgroup_memory,
    p09_pooling,
    p10_dot_product,
    p11_conv,
    p12_prefix_sum,
    p13_axis_sum,
    p14_matmul,
)
from .entry import Part

PART_I = Part(
    number=1,
    title="Part I: Fundamentals",
    intro="From one thread per element to tiled matrix multiplication: guards, threadgroups, threadgroup "
          "memory and barriers, reductions.",
    entries=(
        p01_map.ENTRY,
        p02_zip.ENTRY,
        p03_guard.ENTRY,
        p04_map_2d.ENTRY,
        p05_broadcast.ENTRY,
        p06_threadgroups.ENTRY,
        p07_threadgroups_2d.ENTRY,
        p08_threadgroup_memory.ENTRY,
        p09_pooling.ENTRY,
        p10_dot_product.ENTRY,
        p11_conv.SIMPLE_ENTRY,
        p11_conv.FULL_ENTRY,
        p12_prefix_sum.SIMPLE_ENTRY,
        p12_prefix_sum.FULL_ENTRY,
        p13_axis_sum.ENTRY,
        p14_matmul.SIMPLE_ENTRY,
        p14_matmul.FULL_ENTRY,
    ),
)
