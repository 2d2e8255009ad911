"""Build ``puzzles.ipynb`` from the puzzle catalogue.

    python tools/build_notebook.py                      # the learner's notebook (templates)
    python tools/build_notebook.py --solutions -o /tmp/solved.ipynb

Without ``-o`` it writes the book twice, byte for byte: ``puzzles.ipynb`` at the top level (where
people read it and Colab opens it) and ``lib/metal_puzzles/notebooks/puzzles.ipynb``, the package
data that ``metal-puzzles init`` copies for a learner.

Every puzzle becomes three cells: its text, a code cell in the original Metal-Puzzles notebook's
style (spec, a function returning the ``MetalKernel``, the visible inputs, ``MetalProblem(...)``
bound to the puzzle's own name and its ``show()``), and its ``check()`` (``problem_name``). The kernel source in the code cell is the
puzzle's template, or with ``--solutions`` its reference solution. The output is deterministic
(fixed cell ids), so rebuilding an unchanged catalogue changes nothing.
"""

from __future__ import annotations

import argparse
import base64
import re
import sys
from collections.abc import Callable
from pathlib import Path

try:
    import tomllib  # novermin (3.11 and later; the backport below on 3.10)
except ModuleNotFoundError:  # Python 3.10: the backport (in the test extra)
    import tomli as tomllib

import nbformat
from nbformat.notebooknode import NotebookNode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))
#: The book as package data (metal-puzzles init copies it); always identical to ROOT/puzzles.ipynb.
PACKAGED_NOTEBOOK = ROOT / "lib" / "metal_puzzles" / "notebooks" / "puzzles.ipynb"
#: The branch Colab opens the notebook from.
COLAB_BRANCH = "main"

from metal_puzzles.checking import GradPuzzle  # noqa: E402
from metal_puzzles.notebook.images import figure_file, figure_svg  # noqa: E402
from metal_puzzles.puzzles import PARTS, PUZZLES, Entry, Part, Puzzle  # noqa: E402

INTRO = """\
# Metal Puzzles

{colab_badge}

Learn GPU programming by writing **Metal compute kernels** for [MLX](https://github.com/ml-explore/mlx),
one puzzle at a time. Part I climbs the ladder of Sasha Rush's GPU-Puzzles, by way of the original
Metal-Puzzles notebook: from one thread per element up to a tiled matrix multiplication. A part of
detective puzzles follows it: finished kernels with a hidden bug each, to find with the simulator's
findings and the explorer.

The parts after it build on those two: Part II writes the kernels of a sparse-convolution engine and
ends with gradients flowing through them (`mx.grad`), Part III makes kernels fast on a cost model of an
Apple GPU, and Part IV writes whole shaders, as `.metal` files and `torch.mps.compile_shader` have them.
Part V writes the kernels a language model runs for every token (RMSNorm, rotary embeddings, a 4-bit
quantized product and the gated MLP on it, attention over a KV cache, sampling), each checked against
MLX's own operation, and
ends with a tiny transformer producing its next token on your own kernels.

Every kernel in this notebook runs on a simulator of the Metal Shading Language, so it works on any
machine. The simulator counts what every thread reads and writes, draws it, and catches the mistakes a
GPU would silently hide. On a Mac with Metal, `check()` also runs your kernel on the GPU and tells you
whether the two agree; with an NVIDIA GPU (Colab's T4: a GPU runtime and `pip install
"metal-puzzles[cuda12]"`), it does the same through MLX's CUDA back end, your kernel translated to CUDA.

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

Run the cell after every change, then run `problem.check()` below it. Each puzzle's problem is named
after the puzzle (`map_problem` for Map, `zip_problem` for Zip, ...), so that a cell you run again, or a
`map_problem.explore()` you add under an earlier puzzle, stays with its own puzzle; in this text,
`problem` stands for that name.

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
- **Failed**: a wrong output, a sanitizer finding or a compile error. You see the first failing test:
  your output above the spec's (row by row when it has two dimensions or more) with the differing
  positions marked `^`; the error at each differing position beside the error allowed there, the worst
  one, and the tolerance the check used and where it comes from; a likely cause where the errors show
  one (NaN from an overflow, one ratio everywhere from a missing constant, the right values in another
  order); and the names of the other failing tests.

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


def _string_block(name: str, text: str) -> list[str]:
    """``name = \"\"\"`` + text + ``\"\"\"`` at one indent, in the original notebook's layout."""
    if '"""' in text or "\\" in text:
        raise ValueError(f"kernel text for {name} cannot sit in a plain triple-quoted string")
    body = text if text.endswith("\n") else text + "\n"
    return [f'    {name} = """', *body.rstrip("\n").split("\n"), '"""', ""]


def test_function(entry: Entry, source: str, header: str | None = None) -> str:
    puzzle = entry.puzzle
    header = puzzle.header if header is None else header
    args = ", ".join(f"{n}: mx.array" for n in puzzle.input_names)
    lines = [f"def {entry.kernel_function}({args}):"]
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


def problem_name(puzzle: Puzzle) -> str:
    """The name a puzzle's cells bind its problem to: its own (``map_problem``), so that running an
    earlier puzzle's cell, or its ``explore()``, again stays with that puzzle rather than the last
    one run. The finale's cell is the learner's Python and binds ``problem`` itself."""
    return "problem" if isinstance(puzzle, GradPuzzle) else f"{puzzle.id}_problem"


def problem_call(entry: Entry) -> str:
    puzzle = entry.puzzle
    case = puzzle.visible
    inputs = ", ".join(puzzle.input_names)
    name = problem_name(puzzle)
    return "\n".join([
        f"{name} = MetalProblem(",
        f'    "{puzzle.title}",',
        f"    {entry.kernel_function},",
        f"    [{inputs}],",
        "    output_shape,",
        f"    grid={tuple(case.grid)!r},",
        f"    threadgroup={tuple(case.threadgroup)!r},",
        f"    spec={spec_name(puzzle)},",
        ")",
        f"{name}.show()",
    ])


def puzzle_code(entry: Entry, source: str, define_kernel: bool, header: str | None = None) -> str:
    """The puzzle's main code cell. Entries sharing a kernel with the previous entry reuse its
    spec and test function, as the original notebook's second tests do."""
    if entry.setup is None:
        return source.rstrip("\n")  # the finale's cell is Python written by the learner, verbatim
    if define_kernel:
        head = "\n\n\n".join([entry.puzzle.spec_source, test_function(entry, source, header), entry.setup])
    else:
        head = f"# The same kernel as above ({entry.kernel_function}), on a new test.\n{entry.setup}"
    if entry.debugging:  # before the problem, whose show() is the cell's last value (its diagram)
        head += f"\n\n{entry.debugging}"
    return head + "\n\n" + problem_call(entry)


def puzzle_text(puzzle: Puzzle) -> str:
    return f"## Puzzle {puzzle.number}: {puzzle.title}\n\n{puzzle.description}"


def template_source(entry: Entry) -> str:
    return entry.puzzle.template


def reference_source(entry: Entry) -> str:
    return entry.solution_source()


def reference_header(entry: Entry) -> str:
    return entry.solution_header()


# ----------------------------------------------------------------------------- notebook
def _text_cell(entry: Entry) -> NotebookNode:
    """A puzzle's text and, after it, the figure its entry names, embedded as the cell's attachment
    (the book travels alone: `metal-puzzles init` and Colab copy the notebook, not imgs/)."""
    cell = _md(_cell_id(entry.puzzle, "text"), puzzle_text(entry.puzzle))
    path = figure_file(entry)
    if path is not None:
        name = path.rsplit("/", 1)[-1]  # an attachment's name is a plain file name
        cell.source += f"\n\n![{entry.figure_alt}](attachment:{name})"
        svg = base64.b64encode(figure_svg(entry).encode("utf-8")).decode("ascii")
        cell["attachments"] = {name: {"image/svg+xml": svg}}
    return cell


def _md(cell_id: str, text: str) -> NotebookNode:
    cell = nbformat.v4.new_markdown_cell(text)
    cell["id"] = cell_id
    return cell


def _code(cell_id: str, text: str) -> NotebookNode:
    cell = nbformat.v4.new_code_cell(text)
    cell["id"] = cell_id
    return cell


def _cell_id(puzzle: Puzzle, what: str) -> str:
    # By number; by number and id where two puzzles share a number (while a part is renumbered), so
    # that every cell keeps an id of its own and a rebuild stays byte for byte the same.
    shared = sum(p.number == puzzle.number for p in PUZZLES) > 1
    return (f"p{puzzle.number}-{puzzle.id}-{what}" if shared else f"p{puzzle.number}-{what}").replace(".", "-")


def build(parts: list[Part], source_for: Callable[[Entry], str],
          header_for: Callable[[Entry], str] | None = None, repository: str | None = None) -> NotebookNode:
    repository = repository or repository_url()
    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    cells = [_md("intro", INTRO.format(colab_badge=colab_badge(repository))),
             _code("install", INSTALL.format(requirement=install_requirement(repository))),
             _code("imports", IMPORTS), _code("signature-demo", SIGNATURE_DEMO)]
    previous_kernel = None
    for part in parts:
        cells.append(_md(f"part-{part.number}", f"# {part.title}\n\n{part.intro}".rstrip()))
        for entry in part.entries:
            p = entry.puzzle
            define = (p.kernel_name, entry.kernel_function) != previous_kernel
            previous_kernel = (p.kernel_name, entry.kernel_function)
            cells.append(_text_cell(entry))
            header = header_for(entry) if header_for is not None and entry.setup is not None else None
            cells.append(_code(_cell_id(p, "code"), puzzle_code(entry, source_for(entry), define, header)))
            cells.append(_code(_cell_id(p, "check"), f"{problem_name(p)}.check()"))
    nb.cells = cells
    nbformat.validate(nb)
    return nb


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--output", default=None,
                        help="notebook to write (default: puzzles.ipynb and its packaged copy)")
    parser.add_argument("--solutions", action="store_true", help="fill in the reference solutions")
    args = parser.parse_args(argv)
    nb = build(PARTS, reference_source if args.solutions else template_source,
               reference_header if args.solutions else None)
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
