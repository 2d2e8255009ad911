"""The geometry of a launch: every thread of a dispatchThreads grid as a *lane*, with its grid
position, threadgroup, position in the threadgroup and SIMD-group lane. Lanes are numbered
threadgroup by threadgroup, so each threadgroup's lanes are contiguous."""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np

#: Threads per SIMD-group on Apple GPUs (``threads_per_simdgroup``).
SIMD_WIDTH = 32


class Lanes:
    """Geometry of the launch: for every lane its grid position, threadgroup, and SIMD lane."""

    def __init__(self, grid: tuple[int, int, int], tg: tuple[int, int, int]) -> None:
        gx, gy, gz = grid
        tx, ty, tz = tg
        self.grid = grid
        self.tg = tg
        ngx, ngy, ngz = -(-gx // tx), -(-gy // ty), -(-gz // tz)
        self.groups = (ngx, ngy, ngz)
        self.n_groups = ngx * ngy * ngz
        # Enumerate lanes threadgroup by threadgroup (so each group's lanes are contiguous).
        g = np.arange(self.n_groups, dtype=np.int64)
        gpx, gpy, gpz = g % ngx, (g // ngx) % ngy, g // (ngx * ngy)
        l = np.arange(tx * ty * tz, dtype=np.int64)
        lpx, lpy, lpz = l % tx, (l // tx) % ty, l // (tx * ty)
        px = (gpx[:, None] * tx + lpx[None, :]).ravel()
        py = (gpy[:, None] * ty + lpy[None, :]).ravel()
        pz = (gpz[:, None] * tz + lpz[None, :]).ravel()
        inside = (px < gx) & (py < gy) & (pz < gz)
        self.group = np.repeat(g, tx * ty * tz)[inside]
        self.pos = np.stack([px[inside], py[inside], pz[inside]], axis=1)
        self.local = np.stack([np.tile(lpx, self.n_groups)[inside], np.tile(lpy, self.n_groups)[inside],
                               np.tile(lpz, self.n_groups)[inside]], axis=1)
        self.group_pos = np.stack([gpx, gpy, gpz], axis=1)
        self.n = int(inside.sum())
        # Actual size of each threadgroup (edge groups of a dispatchThreads grid are partial).
        gsize = np.stack([np.minimum(tx, gx - gpx * tx), np.minimum(ty, gy - gpy * ty),
                          np.minimum(tz, gz - gpz * tz)], axis=1)
        self.group_size = gsize
        lsize = gsize[self.group]
        # Linear index within the threadgroup, dense over the threadgroup's actual extent.
        self.index_in_group = (self.local[:, 0] + self.local[:, 1] * lsize[:, 0]
                               + self.local[:, 2] * lsize[:, 0] * lsize[:, 1])
        self.threads_in_group = np.prod(gsize, axis=1)
        # SIMD groups: consecutive runs of 32 lanes of one threadgroup.
        simds_per_group = -(-self.threads_in_group // SIMD_WIDTH)
        first_simd = np.concatenate([[0], np.cumsum(simds_per_group)[:-1]])
        self.simd_in_group = self.index_in_group // SIMD_WIDTH
        self.simd_lane = self.index_in_group % SIMD_WIDTH
        self.simd_global = first_simd[self.group] + self.simd_in_group
        self.n_simds = int(simds_per_group.sum())
        self.simds_per_group = simds_per_group
        # Order lanes by (simd group, lane) for the padded SIMD layout.
        self.simd_table = np.full((max(self.n_simds, 1), SIMD_WIDTH), -1, dtype=np.int64)
        self.simd_table[self.simd_global, self.simd_lane] = np.arange(self.n)
        # Linear grid index of each lane (the order counts are reported in).
        self.grid_linear = px[inside] + py[inside] * gx + pz[inside] * gx * gy
        self.uniform_groups = bool(np.all(self.threads_in_group == tx * ty * tz))

    @cached_property
    def _quads(self) -> tuple[np.ndarray, np.ndarray]:
        """Quad-groups (4 consecutive threads of a threadgroup): each lane's global quad index,
        and the table of lanes per quad (-1 where a partial threadgroup leaves a gap)."""
        quads_per_group = -(-self.threads_in_group // 4)
        first = np.concatenate([[0], np.cumsum(quads_per_group)[:-1]])
        quad_global = first[self.group] + self.index_in_group // 4
        table = np.full((max(int(quads_per_group.sum()), 1), 4), -1, dtype=np.int64)
        table[quad_global, self.index_in_group % 4] = np.arange(self.n)
        return quad_global, table

    def quad_global(self) -> np.ndarray:
        return self._quads[0]

    def quad_table(self) -> np.ndarray:
        return self._quads[1]

    def describe(self, lane: int) -> dict:
        return {
            "grid": tuple(int(v) for v in self.pos[lane]),
            "group": tuple(int(v) for v in self.group_pos[self.group[lane]]),
            "local": tuple(int(v) for v in self.local[lane]),
        }

    @cached_property
    def dims(self) -> int:
        """How many axes the grid uses (1, 2 or 3): the axes a thread's name shows."""
        return 3 if self.grid[2] > 1 else 2 if self.grid[1] > 1 else 1

    def label(self, lane: int) -> str:
        """The one name of a thread for learners, in verdicts, diagrams and the explorer alike:
        its grid position (``thread_position_in_grid``, what diagrams write on its swatch), then,
        when the launch has several threadgroups, its position in its threadgroup and that
        threadgroup's position: "thread 7 = 3 of threadgroup 1", "thread (5,2) = (1,2) of
        threadgroup (1,0)". With one threadgroup the two positions agree: "thread 7"."""
        me = "thread " + fmt_position(self.pos[lane], self.dims)
        if self.n_groups == 1:
            return me
        local = fmt_position(self.local[lane], self.dims)
        return f"{me} = {local} of {self.group_label(int(self.group[lane]))}"

    def group_label(self, group: int) -> str:
        """A threadgroup's name in the same scheme, on the axes the grid uses:
        "threadgroup 1", "threadgroup (1,0)"."""
        return "threadgroup " + fmt_position(self.group_pos[group], self.dims)


def fmt_position(p: Any, dims: int) -> str:
    """A position on the axes the grid uses: "7" in one dimension, "(5,2)" in two."""
    values = [str(int(v)) for v in list(p)[:dims]]
    return values[0] if dims == 1 else "(" + ",".join(values) + ")"
