"""Part I of the book: the fundamentals (the original fourteen puzzles)."""

from __future__ import annotations

from ..catalogue.entry import Part
from . import (
    axis_sum,
    broadcast,
    conv,
    dot_product,
    guard,
    map,
    map_2d,
    matmul,
    pooling,
    prefix_sum,
    threadgroup_memory,
    threadgroups,
    threadgroups_2d,
    zip,
)

PART_I = Part(
    number=1,
    folder="part1",
    title="Part I: Fundamentals",
    intro="From one thread per element to tiled matrix multiplication: guards, threadgroups, threadgroup "
          "memory and barriers, reductions.",
    entries=(
        map.ENTRY,
        zip.ENTRY,
        guard.ENTRY,
        map_2d.ENTRY,
        broadcast.ENTRY,
        threadgroups.ENTRY,
        threadgroups_2d.ENTRY,
        threadgroup_memory.ENTRY,
        pooling.ENTRY,
        dot_product.ENTRY,
        conv.SIMPLE_ENTRY,
        conv.FULL_ENTRY,
        prefix_sum.SIMPLE_ENTRY,
        prefix_sum.FULL_ENTRY,
        axis_sum.ENTRY,
        matmul.SIMPLE_ENTRY,
        matmul.FULL_ENTRY,
    ),
)
