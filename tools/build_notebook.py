"""Build ``puzzles.ipynb`` from the puzzle catalogue.

    python tools/build_notebook.py                      # the learner's notebook (templates)
    python tools/build_notebook.py --solutions -o /tmp/solved.ipynb

Without ``-o`` it writes the book twice, byte for byte: ``puzzles.ipynb`` at the top level (where
people read it and Colab opens it) and ``lib/metal_puzzles/notebooks/puzzles.ipynb``, the package
data that ``metal-puzzles init`` copies for a learner.

Every puzzle becomes three cells: its text, a code cell in the original Metal-Puzzles notebook's
style (spec, a function returning the ``MetalKernel``, the visible inputs, ``MetalProblem(...)``
and ``problem.show()``), and ``problem.check()``. The kernel source in the code cell is the
puzzle's template, or with ``--solutions`` its reference solution. The output is deterministic
(fixed cell ids), so rebuilding an unchanged catalogue changes nothing.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

try:
    import tomllib  # novermin (3.11 and later; the backport below on 3.10)
except ModuleNotFoundError:  # Python 3.10: the backport (in the test extra)
    import tomli as tomllib

import nbformat
import numpy as np
from nbformat.notebooknode import NotebookNode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))
#: The book as package data (metal-puzzles init copies it); always identical to ROOT/puzzles.ipynb.
PACKAGED_NOTEBOOK = ROOT / "lib" / "metal_puzzles" / "notebooks" / "puzzles.ipynb"
#: The branch Colab opens the notebook from.
COLAB_BRANCH = "main"

from metal_puzzles.checking import GradPuzzle  # noqa: E402
from metal_puzzles.puzzles import (  # noqa: E402
    PUZZLES,
    Puzzle,
    part1,
    part2,
    part3,
    part4,
    part_debug,
    solution_header,
)

PART_III_INTRO = """\
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

DEBUG_INTRO = """\
Every kernel in this part is finished: it compiles, it runs, and most of them print the right
numbers on the visible test. Each is wrong in one way that a GPU hides (on real hardware it
would give the right answer today and a wrong one on another size, another machine or another
day), and `check()` fails it. Your job is the detective's: find the bug, then fix it with as
small a change as you can. The source is the buggy kernel itself; there is no `// FILL ME IN`.

The bugs are of the kinds Part I warned about. What is new is the method, which is the same
for every case:

1. **Read the finding whole.** Run the cell: under the diagram, `show()` lists what the
   sanitizer found, one line each: the kind, the line of your source, the thread (its position
   in its threadgroup and the threadgroup's position in the grid), the element and, for a race,
   the other thread and its line. Each is numbered and drawn where it happened.
2. **Look at the diagram.** Red marks sit on the elements and threads the findings name. Ask
   which thread you expected to touch that element, and which one did.
3. **Open the explorer.** `problem.explore()` lists the findings; click one and it shows that
   thread at that line, at that moment, with its variables. Step back to see how it got there,
   switch to the other thread the finding names, and step through it too.
4. **Say the bug in one sentence** before changing anything: "thread X reads Y before thread Z
   has written it, because ...". Then fix it, run the cell, and run `check()`.

The sanitizer's hints sometimes name the cure; the point is to see *why* it is the cure, with
your own eyes, in the explorer. Budgets are as in Part I."""


PART_IV_INTRO = """\
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

PART_TITLES = {
    1: ("Part I: Fundamentals", "From one thread per element to tiled matrix multiplication: guards, "
        "threadgroups, threadgroup memory and barriers, reductions."),
    2: ("Part II: Toward a sparse-convolution engine", "Scans, gathers and scatters, segment "
        "reductions, and the kernels of a sparse convolution with their gradients."),
    3: ("Bonus: SIMD-groups and layer norm", "Reductions with SIMD-group functions, and layer norm "
        "forward and backward as MLX's own kernels do them."),
    4: ("Part III: Performance", PART_III_INTRO),
    part_debug.DEBUG_PART: ("Debugging: detective puzzles", DEBUG_INTRO),
    part4.WHOLE_SHADERS_PART: ("Part IV: Whole shaders", PART_IV_INTRO),
}

INTRO = """\
# Metal Puzzles

{colab_badge}

Learn GPU programming by writing **Metal compute kernels** for [MLX](https://github.com/ml-explore/mlx),
one puzzle at a time. Part I climbs the ladder of Sasha Rush's GPU-Puzzles, by way of the original
Metal-Puzzles notebook: from one thread per element up to a tiled matrix multiplication. A part of
detective puzzles follows it: finished kernels with a hidden bug each, to find with the simulator's
findings and the explorer.

Every kernel in this notebook runs on a simulator of the Metal Shading Language, so it works on any
machine. The simulator counts what every thread reads and writes, draws it, and catches the mistakes a
GPU would silently hide. On a Mac with Metal, `check()` also runs your kernel on the GPU and tells you
whether the two agree.

## How a puzzle works

Each puzzle's code cell has four parts:

- a **spec**: a few lines of MLX computing the right answer;
- a **test function** returning a `MetalKernel`: the kernel's `name`, the names of its inputs and
  outputs, an optional `header` (text placed before the kernel: constants, helper functions) and the
  `source`. **The source is what you write**: replace the `// FILL ME IN` line (the hint says roughly how
  many lines a solution takes);
- the inputs of the visible test;
- a `MetalProblem` that ties them together with the launch's `grid` and `threadgroup`, and
  `problem.show()`.

Run the cell after every change, then run `problem.check()` below it.

## The kernel body and its generated signature

The source is only the **body** of a kernel, exactly as `mx.fast.metal_kernel` takes it. MLX wraps it in
a function whose signature it writes for you:

- one parameter per input: `const device T* a` for an array (`const constant T* a` when it has fewer
  than 8 elements, which reads the same way), with `T` its element type (`int` for `mx.arange(4)`,
  `float` for `mx.ones(4)`);
- one per output: `device float* out` (outputs get no `out_shape`: only inputs have `_shape`,
  `_strides` and `_ndim`, so a kernel takes an output's size from an input's shape or a constant);
- a parameter for each thread attribute the body mentions (`thread_position_in_grid`,
  `thread_position_in_threadgroup`, `threadgroup_position_in_grid`, ...), and `a_shape`,
  `a_strides`, `a_ndim` when the body mentions them.

Buffers are flat: a matrix arrives as one array holding its rows one after another. Run the next two
cells to see a generated signature (`verbose=True` prints it).

## Grid and threadgroups

`grid=(x, y, z)` counts **threads**: the kernel runs once for every thread of that box, and each thread
finds its own position in `thread_position_in_grid` (a `uint3`). `threadgroup=(x, y, z)` cuts the grid
into **threadgroups**. Threads of one group can share `threadgroup` memory and wait for each other at a
`threadgroup_barrier`; threads of different groups cannot. When the grid is not a multiple of the group
size, the last group along that side is **partial**: it has fewer threads.

## What `show()` prints and draws

`problem.show()` runs your kernel on the visible test and prints the **score table**, for a
finished Map for instance:

|        | Global Reads | Global Writes | Shared Reads | Shared Writes |
|--------|-------------:|--------------:|-------------:|--------------:|
| yours  |            1 |             1 |            0 |             0 |
| budget |            1 |             1 |            0 |             0 |

Each number in the row `yours` is the largest count over all threads: how many elements one thread
read or wrote in global memory (the input and output buffers) and in shared memory (`threadgroup`
arrays). Local variables cost nothing. The row `budget` is the most the puzzle allows (`-` means no
limit).

It then draws the run: a panel per threadgroup (the first four), with the inputs, the threadgroup
memory as it stood after each barrier, and the outputs. Arrows run from the elements a value was
computed from to the element it was written to, in the colour of the thread that wrote it, and the
input elements the group read are shaded. A wrong diagram usually shows the bug at a glance: an arrow from the wrong
cell, an output cell nobody wrote, a shared cell written by two threads. What the sanitizer finds (see
below) is drawn in red where it happened: a ring on the element two threads race for or that was read
before anyone wrote it, dashed cells past the end of an array for the indices a thread reached outside
it, ringed swatches for the threads involved, struck ones for threads that miss a barrier; each finding
numbered and listed under its threadgroup. `show()` prints a line saying which marks the diagram has.
Outside Jupyter, save the diagram `show()` returns with `.render_svg("name.svg")` or
`.render_png("name.png")`. A kernel that does not compile has no run to draw: `show()` prints the
compiler's error and returns `None`. The explorer (`problem.explore()`) is interactive and needs
Jupyter.

## What `check()` says

`problem.check()` runs the visible test and several **hidden tests** (other sizes, random values, other
grids), so an answer typed in by hand fails. It prints one verdict:

- **Passed**: correct on every test and within budget.
- **Almost**: correct on every test but over budget; it says which count is too high, for example
  `it uses 2 global reads per thread; this puzzle needs at most 1`.
- **Failed**: a wrong output, a sanitizer finding or a compile error. You see the first failing test,
  your output above the spec's with the differing positions marked `^`, and the names of the other
  failing tests.

**The visible test is the contract.** Hidden tests change values and sizes, but keep the structure of
the visible test: whether the last threadgroup is partial, whether there are spare threads, one
threadgroup or several, square or not. A few hidden tests pose more than that (a partial threadgroup
where the visible test has none, say); they still run, and if your kernel would fail them the verdict
ends with a **Note** saying what would go wrong and why, without failing you. Notes from the
sanitizer (two threads storing one value, a benign race) are listed under the verdict the same way:
worth fixing, never failing. Where a puzzle wants you
to handle a condition, its visible test shows it.

Compile errors read like a compiler's: `source:3:19 (your cell, line 9): error: expected ';' after
expression`, then the line and a caret under the column. Line numbers count lines of the `source`
string (it starts with a line break, so your first line of code is line 2); the line in your cell
follows in brackets.

## Reading a sanitizer finding

On a GPU, a thread that reads past the end of a buffer or two threads that race for one element often
produce the right answer anyway, until another size or another machine. The simulator checks every
access instead and reports what it sees, for example:

```
out-of-bounds: line 2: thread 4 = 0 of threadgroup 1 reads a[4], outside the 4 elements of 'a'
```

That is: the kind of problem, the line of your source, which thread, and what it did. A thread is
named by its `thread_position_in_grid`, the number the diagrams write on its swatch; when the launch
has several threadgroups, its position inside its threadgroup and that threadgroup's position follow
(here thread 4 of the grid is thread 0 of threadgroup 1). In two dimensions each is an (x,y) pair:
`thread (5,2) = (1,2) of threadgroup (1,0)`. The kinds you will meet:
`out-of-bounds`; `race` (two threads touch one element, at least one writing, without a barrier between
them); `barrier-divergence` (some threads of a group reach a barrier that others skip);
`uninitialized-read` (reading shared memory or an output nobody wrote); `unwritten-output` (an output
element no thread wrote; on a GPU it would hold garbage); `division-by-zero`; and `step-budget` (a loop
that does not end). Any finding fails the test, even when the output happens to be right. Where it can,
the message also says why: an index of `4294967295` is `-1` in unsigned arithmetic, and the message
names the subtraction that went below zero. `problem.explore()` lists the findings; click one to see
its thread, its barrier phase and its line.

## Budgets

Getting the right answer is half of GPU programming; the other half is not wasting memory traffic.
Most puzzles state a **budget**, the most a single thread may read or write in global and shared
memory, and it is set so that the technique the puzzle teaches fits and the brute-force way does not.
A correct kernel over budget gets **Almost**; bring the counts down to pass.
"""

# The first code cell: on Colab (or any machine without the package) it installs metal-puzzles
# from the repository; where the package is installed it does nothing.
INSTALL = """\
# On Colab, or wherever metal-puzzles is not installed yet, this cell installs it (a minute or
# two). Where it is installed (pip install metal-puzzles, metal-puzzles init), it does nothing.
import importlib
import importlib.util
import subprocess
import sys

if importlib.util.find_spec("metal_puzzles") is None:
    package = "{requirement}"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", package], check=True)
    importlib.invalidate_caches()"""

IMPORTS = """\
import mlx.core as mx

from metal_puzzles import MetalKernel, MetalProblem"""

SIGNATURE_DEMO = """\
# A kernel that doubles every element; verbose=True prints the source MLX would compile.
demo = MetalKernel(
    name="double",
    input_names=["x"],
    output_names=["y"],
    source=\"\"\"
uint i = thread_position_in_grid.x;
y[i] = 2 * x[i];
\"\"\",
)
x = mx.arange(4, dtype=mx.float32)
(y,) = demo(inputs=[x], output_shapes=[(4,)], output_dtypes=[mx.float32],
            grid=(4, 1, 1), threadgroup=(4, 1, 1), verbose=True)
y"""


# ----------------------------------------------------------------------------- the repository
def repository_url(pyproject: Path = ROOT / "pyproject.toml") -> str:
    """The repository's address: ``[project.urls] Repository`` in pyproject.toml, the one place
    it is written."""
    with pyproject.open("rb") as f:
        urls = tomllib.load(f).get("project", {}).get("urls", {})
    if "Repository" not in urls:
        raise ValueError(f"{pyproject}: [project.urls] has no Repository entry")
    return urls["Repository"].rstrip("/")


def colab_url(repository: str) -> str:
    """Colab's address for the top-level notebook of a GitHub repository."""
    match = re.fullmatch(r"https://github\.com/([\w.-]+)/([\w.-]+?)(?:\.git)?", repository)
    if match is None:
        raise ValueError(f"Colab opens notebooks from GitHub repositories only, not from {repository!r}")
    owner, name = match.groups()
    return f"https://colab.research.google.com/github/{owner}/{name}/blob/{COLAB_BRANCH}/puzzles.ipynb"


def install_requirement(repository: str) -> str:
    """What the install cell hands to pip: the package, from the repository."""
    return f"metal-puzzles @ git+{repository}"


def colab_badge(repository: str) -> str:
    return (f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
            f"({colab_url(repository)})")


# ----------------------------------------------------------------------------- per puzzle
def spec_name(puzzle: Puzzle) -> str:
    """The name the spec's source defines (the function the notebook passes as spec=)."""
    found = re.findall(r"^def (\w+)\(", puzzle.spec_source, flags=re.M)
    if not found:
        raise ValueError(f"puzzle {puzzle.id}: spec_source defines no function")
    return found[-1]


def _part_tables() -> list:
    """Modules holding the per-puzzle notebook tables."""
    return [part1, part_debug, part2, part3, part4]


def _lookup(table: str, puzzle: Puzzle):
    for module in _part_tables():
        entries = getattr(module, table, {})
        if puzzle.id in entries:
            return module, entries[puzzle.id]
    return None, None


def kernel_function(puzzle: Puzzle) -> str:
    _, name = _lookup("KERNEL_FUNCTIONS", puzzle)
    return name or f"{puzzle.id}_test"


def _array_literal(x: np.ndarray) -> str:
    dtype = {"int32": "mx.int32", "float32": "mx.float32"}.get(str(x.dtype), f"mx.{x.dtype}")
    return f"mx.array({x.tolist()!r}, dtype={dtype})"


def setup_code(puzzle: Puzzle) -> str:
    """Notebook lines building the visible inputs and output_shape."""
    _, setup = _lookup("NOTEBOOK_SETUP", puzzle)
    if setup is not None:
        return setup
    # A puzzle without hand-written setup lines gets its visible inputs as literals.
    lines = [f"{name} = {_array_literal(np.asarray(x))}"
             for name, x in zip(puzzle.input_names, puzzle.visible.inputs, strict=True)]
    lines.append(f"output_shape = {tuple(puzzle.visible.output_shape)!r}")
    return "\n".join(lines)


def _string_block(name: str, text: str) -> list[str]:
    """``name = \"\"\"`` + text + ``\"\"\"`` at one indent, in the original notebook's layout."""
    if '"""' in text or "\\" in text:
        raise ValueError(f"kernel text for {name} cannot sit in a plain triple-quoted string")
    body = text if text.endswith("\n") else text + "\n"
    return [f'    {name} = """', *body.rstrip("\n").split("\n"), '"""', ""]


def test_function(puzzle: Puzzle, source: str, header: str | None = None) -> str:
    header = puzzle.header if header is None else header
    args = ", ".join(f"{n}: mx.array" for n in puzzle.input_names)
    lines = [f"def {kernel_function(puzzle)}({args}):"]
    if header:
        lines += _string_block("header", header)
    lines += _string_block("source", source)
    lines += [
        "    kernel = MetalKernel(",
        f"        name={puzzle.kernel_name!r},".replace("'", '"'),
        f"        input_names={list(puzzle.input_names)!r},".replace("'", '"'),
        f"        output_names={list(puzzle.output_names)!r},".replace("'", '"'),
    ]
    if header:
        lines.append("        header=header,")
    lines.append("        source=source,")
    if puzzle.atomic_outputs:
        lines.append("        atomic_outputs=True,")
    lines += ["    )", "    return kernel"]
    return "\n".join(lines)


def problem_call(puzzle: Puzzle) -> str:
    case = puzzle.visible
    inputs = ", ".join(puzzle.input_names)
    return "\n".join([
        "problem = MetalProblem(",
        f'    "{puzzle.title}",',
        f"    {kernel_function(puzzle)},",
        f"    [{inputs}],",
        "    output_shape,",
        f"    grid={tuple(case.grid)!r},",
        f"    threadgroup={tuple(case.threadgroup)!r},",
        f"    spec={spec_name(puzzle)},",
        ")",
        "problem.show()",
    ])


def puzzle_code(puzzle: Puzzle, source: str, define_kernel: bool, header: str | None = None) -> str:
    """The puzzle's main code cell. Entries sharing a kernel with the previous entry reuse its
    spec and test function, as the original notebook's second tests do."""
    if isinstance(puzzle, GradPuzzle):
        return source.rstrip("\n")  # the finale's cell is Python written by the learner, verbatim
    if define_kernel:
        head = "\n\n\n".join([puzzle.spec_source, test_function(puzzle, source, header), setup_code(puzzle)])
    else:
        head = f"# The same kernel as above ({kernel_function(puzzle)}), on a new test.\n{setup_code(puzzle)}"
    return head + "\n\n" + problem_call(puzzle)


def puzzle_text(puzzle: Puzzle) -> str:
    return f"## Puzzle {puzzle.number}: {puzzle.title}\n\n{puzzle.description}"


def template_source(puzzle: Puzzle) -> str:
    return puzzle.template


def reference_source(puzzle: Puzzle) -> str:
    module, _ = _lookup("SOLUTION_FILES", puzzle)
    if module is None:
        raise KeyError(f"no reference solution is listed for puzzle {puzzle.id!r}")
    return module.solution_source(puzzle)


# ----------------------------------------------------------------------------- notebook
def _md(cell_id: str, text: str) -> NotebookNode:
    cell = nbformat.v4.new_markdown_cell(text)
    cell["id"] = cell_id
    return cell


def _code(cell_id: str, text: str) -> NotebookNode:
    cell = nbformat.v4.new_code_cell(text)
    cell["id"] = cell_id
    return cell


def _cell_id(puzzle: Puzzle, what: str) -> str:
    return f"p{puzzle.number}-{what}".replace(".", "-")


def build(puzzles: list[Puzzle], source_for: Callable[[Puzzle], str],
          header_for: Callable[[Puzzle], str] | None = None, repository: str | None = None) -> NotebookNode:
    repository = repository or repository_url()
    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    cells = [_md("intro", INTRO.format(colab_badge=colab_badge(repository))),
             _code("install", INSTALL.format(requirement=install_requirement(repository))),
             _code("imports", IMPORTS), _code("signature-demo", SIGNATURE_DEMO)]
    part = None
    previous_kernel = None
    for p in puzzles:
        if p.part != part:
            part = p.part
            title, blurb = PART_TITLES.get(part, (f"Part {part}", ""))
            cells.append(_md(f"part-{part}", f"# {title}\n\n{blurb}".rstrip()))
        define = (p.kernel_name, kernel_function(p)) != previous_kernel
        previous_kernel = (p.kernel_name, kernel_function(p))
        cells.append(_md(_cell_id(p, "text"), puzzle_text(p)))
        header = header_for(p) if header_for is not None and not isinstance(p, GradPuzzle) else None
        cells.append(_code(_cell_id(p, "code"), puzzle_code(p, source_for(p), define, header)))
        cells.append(_code(_cell_id(p, "check"), "problem.check()"))
    nb.cells = cells
    nbformat.validate(nb)
    return nb


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--output", default=None,
                        help="notebook to write (default: puzzles.ipynb and its packaged copy)")
    parser.add_argument("--solutions", action="store_true", help="fill in the reference solutions")
    args = parser.parse_args(argv)
    nb = build(list(PUZZLES), reference_source if args.solutions else template_source,
               solution_header if args.solutions else None)
    if args.output is not None:
        outputs = [Path(args.output)]
    elif args.solutions:
        parser.error("--solutions needs -o: the book itself holds the templates")
    else:
        outputs = [ROOT / "puzzles.ipynb", PACKAGED_NOTEBOOK]
    for output in outputs:
        output.parent.mkdir(parents=True, exist_ok=True)
        with open(output, "w", encoding="utf-8") as f:
            nbformat.write(nb, f)
        print(f"wrote {output} ({len(nb.cells)} cells)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
