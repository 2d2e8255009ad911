"""What a translation to CUDA gives back: one kernel as a whole CUDA C++ translation unit (for
NVRTC, CuPy's RawKernel) and as the body and header ``mx.fast.cuda_kernel`` takes, plus what a
caller needs to launch either one exactly as Metal would have run the kernel.

The launch contract (the same for ``.unit`` and ``.body``):

* blocks are Metal's threadgroups, as MLX's ``cuda_kernel`` launches them: ``blockDim`` is the
  threadgroup size and the grid has ``ceil(grid / threadgroup)`` blocks in each dimension, so a
  partial last threadgroup is a whole block whose threads past the Metal grid do not run the body;
* the Metal grid (in threads) reaches the kernel as three numbers: in ``.unit`` the last three
  parameters (``unsigned int``), in ``.body`` the template constants named by
  :data:`GRID_CONSTANTS` (``template=translation.cuda_template(grid, template)`` builds them);
* inputs and outputs keep their names and order; an input whose source mentions ``x_shape``,
  ``x_strides`` or ``x_ndim`` gets them as MLX passes them: in ``.body`` MLX's own ``Shape``,
  ``Strides`` and ``int``; in ``.unit`` a pointer to ``int`` (shape), to ``long long`` (strides,
  in elements) and an ``int`` (ndim), right after the input, in that order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..lang.kernel_parameters import ParamRole

#: The template constants the ``.body`` reads the Metal grid (in threads) from.
GRID_CONSTANTS: tuple[str, str, str] = ("mp_grid_x", "mp_grid_y", "mp_grid_z")


@dataclass(frozen=True)
class CudaParam:
    """One parameter of the ``.unit``'s entry function, in order: its name, its CUDA type as
    written in the unit, and what it carries (an input, output, shape, strides, ndim, or the
    Metal grid: role ``None``)."""

    name: str
    ctype: str
    role: ParamRole | None
    #: The dtype (NumPy-style name) of an input's or output's elements; '' for the others.
    dtype: str = ""

    @property
    def pointer(self) -> bool:
        return self.ctype.endswith("*")


@dataclass(frozen=True)
class CudaTranslation:
    """A kernel translated to CUDA C++ (``kernel.to_cuda(...)``, ``compile_shader(src).to_cuda()``).

    ``unit``: a whole translation unit with one ``extern "C" __global__`` function named
    ``entry``, compilable by NVRTC alone (sm_75 and newer); ``params`` are its parameters in order.
    ``body`` / ``header``: the ``source`` and ``header`` for ``mx.fast.cuda_kernel`` with the
    same ``input_names`` and ``output_names`` (call it with ``template=cuda_template(...)``).
    """

    name: str
    entry: str
    unit: str
    body: str
    header: str
    input_names: tuple[str, ...]
    output_names: tuple[str, ...]
    params: tuple[CudaParam, ...]
    #: The template arguments the translation was made for (MLX's ``template=``), as given.
    template: tuple[tuple[str, Any], ...] = ()
    #: Bytes of ``__shared__`` memory the kernel declares (threadgroup memory).
    shared_bytes: int = 0
    #: Whether the kernel waits at barriers (the partial-threadgroup guard then keeps the threads
    #: past the grid at the barriers until the others are done, instead of returning).
    uses_barriers: bool = False
    #: Whether the kernel calls SIMD-group functions (warp shuffles).
    uses_simd: bool = False
    #: A whole shader's threadgroup memory sized at launch ([[threadgroup(n)]]), in index order:
    #: the unit takes each one's size in bytes last ('<name>_bytes'); launch it with
    #: ``dynamic_shared_bytes(sizes)`` bytes of dynamic shared memory.
    threadgroup_memory: tuple[str, ...] = ()

    def dynamic_shared_bytes(self, sizes: Sequence[int]) -> int:
        """The dynamic shared memory a launch needs for these sizes (each part 16-byte aligned)."""
        if len(sizes) != len(self.threadgroup_memory):
            raise ValueError(f"'{self.name}' takes {len(self.threadgroup_memory)} threadgroup memory size(s) "
                             f"({', '.join(self.threadgroup_memory) or 'none'}), {len(sizes)} given")
        return sum((int(n) + 15) // 16 * 16 for n in sizes)

    def check_launch(self, grid: Sequence[int], threadgroup: Sequence[int]) -> None:
        """Refuse a launch the translation cannot run as Metal would. Every launch MLX accepts
        runs: a partial threadgroup of several rows included (each CUDA thread plays the Metal
        thread of its own number, so SIMD-groups are warps there too; see ``kernel._GEOMETRY``)."""
        launch_dims(grid, threadgroup)  # MLX's own refusals: a zero or too large a threadgroup

    def cuda_template(self, grid: Sequence[int], template: Sequence[tuple[str, Any]] | None = None
                      ) -> list[tuple[str, Any]]:
        """The ``template=`` for ``mx.fast.cuda_kernel`` on this ``body``: the kernel's own
        template arguments, then the Metal grid's three sizes."""
        gx, gy, gz = _triple(grid)
        given = list(self.template if template is None else template)
        return given + list(zip(GRID_CONSTANTS, (gx, gy, gz), strict=True))


def launch_dims(grid: Sequence[int], threadgroup: Sequence[int]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(blocks, threads per block) for a Metal dispatch of ``grid`` threads in threadgroups of
    ``threadgroup``, as MLX's ``cuda_kernel`` launches it: each threadgroup dimension no larger
    than the grid's (Metal shrinks it so), then ceil(grid / threadgroup) blocks."""
    g = _triple(grid)
    t = tuple(max(1, min(tt, gg)) for tt, gg in zip(_triple(threadgroup), g, strict=True))
    blocks = tuple(-(-gg // tt) if gg > 0 else 0 for gg, tt in zip(g, t, strict=True))
    return (blocks[0], blocks[1], blocks[2]), (t[0], t[1], t[2])


def _triple(v: Sequence[int]) -> tuple[int, int, int]:
    vals = [int(x) for x in v] + [1] * (3 - len(v))
    if len(vals) != 3:
        raise ValueError(f"a grid or threadgroup has at most three sizes, got {tuple(v)}")
    return vals[0], vals[1], vals[2]
