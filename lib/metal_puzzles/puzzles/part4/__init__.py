"""Part IV of the book: whole shaders (kernel functions with their own signatures, as ``.metal``
files and ``torch.mps.compile_shader`` have them)."""

from __future__ import annotations

from ..catalogue.entry import Part
from . import whole_shaders

INTRO = """\
Until now you wrote kernel *bodies* and MLX wrote each signature. Shader files, porting guides and
PyTorch's `torch.mps.compile_shader` have **whole kernel functions**: the kernel declares its own
parameters, each buffer at an index (`device float* o [[buffer(5)]]`), numbers by constant
reference (`constant float& weight [[buffer(3)]]`), and the thread attributes it wants as
parameters with names and types of its own (`uint row [[thread_position_in_grid]]`). Here the
`source` is the whole shader, and each puzzle's host binds the arrays **by index**, as Metal host
code and `compile_shader` do: the puzzle says which array it puts at which `[[buffer(n)]]`, and a
kernel that declares a buffer at another index fails, naming the index, the parameter and what the
host puts there (on a Mac it would read and write the wrong buffers). Outside the book,
`metal_puzzles.compile_shader(source)` runs such a file as PyTorch does, with NumPy, MLX or CPU
torch arrays."""

PART_IV = Part(
    number=6,
    folder="part4",
    title="Part IV: Whole shaders",
    intro=INTRO,
    entries=(
        whole_shaders.MVMR_SHADER_ENTRY,
        whole_shaders.LERP_ENTRY,
    ),
)
