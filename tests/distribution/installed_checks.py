"""Checks run with the Python of a fresh virtual environment where metal-puzzles was installed from
its wheel, in a folder outside the checkout (``.ci/wheel-check`` copies this file there and runs it).

Each check proves that something a learner or an instructor does works from the installed package
alone; each fails loudly (an AssertionError, a traceback) and prints what it did and how long it took.

    python installed_checks.py first-check NOTEBOOK     # solve Map from the notebook's own cell
    python installed_checks.py ops                      # ops.mvmr / ops.segment_sum through mx.grad
    python installed_checks.py execute NOTEBOOK         # nbclient, templates as written
    python installed_checks.py solve-map NOTEBOOK OUT   # a copy of the book with Map solved
"""

from __future__ import annotations

import sys
import sysconfig
import time
from pathlib import Path

SOURCE_OPENING = 'source = """\n'


def _inside_this_environment(path: object) -> None:
    """The package's files must come from this environment's site-packages, not from a checkout."""
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    resolved = Path(str(path)).resolve()
    assert resolved.is_relative_to(site), f"{resolved} is not inside this environment ({site})"


def _map_cell_solved(notebook: Path) -> tuple[str, str]:
    """The notebook's imports cell, and its Map cell with the reference solution (read from the
    installed package data) in place of the template's source."""
    import nbformat

    from metal_puzzles.puzzles import get_puzzle, solution_source
    from metal_puzzles.puzzles.catalogue.solution_files import solutions_dir

    _inside_this_environment(solutions_dir())
    cells = {c.id: c.source for c in nbformat.read(notebook, as_version=4).cells}
    code = cells["p1-code"]
    start = code.index(SOURCE_OPENING) + len(SOURCE_OPENING)
    end = code.index('"""', start)
    assert "FILL ME IN" in code[start:end], "the Map cell should hold the template"
    return cells["imports"], code[:start] + solution_source(get_puzzle("map")) + code[end:]


def first_check(notebook: Path) -> None:
    """A learner's first success: the Map cell, solved, then problem.check() passes."""
    started = time.perf_counter()
    imports, cell = _map_cell_solved(notebook)
    scope: dict = {}
    exec(compile(imports, "imports", "exec"), scope)
    # The book binds each puzzle's problem to a name of its own (map_problem for Map).
    exec(compile(cell.replace("map_problem.show()", ""), "p1-code", "exec"), scope)
    result = scope["map_problem"].check()
    assert result.passed, result.report()
    print(f"first check passed: {time.perf_counter() - started:.2f} s in this process (imports included)")


def ops() -> None:
    """ops.mvmr and ops.segment_sum, values and gradients (mx.grad), against dense MLX references."""
    import mlx.core as mx
    import numpy as np

    from metal_puzzles import ops as metal_ops

    started = time.perf_counter()
    rng = np.random.default_rng(12)

    def normal(*shape: int) -> mx.array:
        return mx.array(rng.standard_normal(shape).astype(np.float32))

    def close(name: str, got: mx.array, want: mx.array) -> None:
        assert got.shape == want.shape, (name, got.shape, want.shape)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5, err_msg=name)

    # MVMR: o[o_idx[t], g] += b[b_idx[t], g] @ a[a_idx[t], g]; densely, a one-hot matrix scatters
    # the pairs' products into the output rows.
    na, nb, g, c, m, pairs, n = 5, 6, 2, 3, 4, 9, 4
    a, b, w = normal(na, g, c, m), normal(nb, g, c), normal(n, g, m)
    a_idx, b_idx, o_idx = (mx.array(rng.integers(0, k, pairs).astype(np.int32)) for k in (na, nb, n))

    def mvmr_dense(a, b):
        products = mx.einsum("tgc,tgcm->tgm", b[b_idx], a[a_idx])
        scatter = (o_idx[None, :] == mx.arange(n)[:, None]).astype(mx.float32)
        return (scatter @ products.reshape(pairs, -1)).reshape(n, g, m)

    def mvmr_kernel(a, b):
        return metal_ops.mvmr(a, a_idx, b, b_idx, o_idx, n)

    close("mvmr", mvmr_kernel(a, b), mvmr_dense(a, b))
    grads = {name: mx.grad(lambda a, b, f=f: (f(a, b) * w).sum(), argnums=(0, 1))(a, b)
             for name, f in (("kernel", mvmr_kernel), ("dense", mvmr_dense))}
    for k, what in enumerate(("d a", "d b")):
        close(f"mvmr {what}", grads["kernel"][k], grads["dense"][k])

    # Segment sums, short segments (a thread per output) and long ones (a threadgroup per segment).
    for lengths in ([3, 0, 5, 1], [40, 70, 50]):
        rows, cols = sum(lengths), 3
        x, wy = normal(rows, cols), normal(len(lengths), cols)
        ends = np.cumsum(lengths)
        member = np.zeros((len(lengths), rows), dtype=np.float32)
        for k, (start, end) in enumerate(zip(ends - lengths, ends, strict=True)):
            member[k, start:end] = 1
        member_mx, lengths_mx = mx.array(member), mx.array(np.array(lengths, dtype=np.int32))

        def segment_kernel(x, lengths_mx=lengths_mx):
            return metal_ops.segment_sum(x, lengths_mx)

        def segment_dense(x, member_mx=member_mx):
            return member_mx @ x

        close(f"segment_sum {lengths}", segment_kernel(x), segment_dense(x))
        grads = [mx.grad(lambda x, f=f, wy=wy: (f(x) * wy).sum())(x) for f in (segment_kernel, segment_dense)]
        close(f"segment_sum {lengths} d x", *grads)
    print(f"ops: mvmr and segment_sum values and gradients match the dense references "
          f"({time.perf_counter() - started:.2f} s)")


def execute(notebook: Path) -> None:
    """The book as written (templates): every cell runs without a traceback, every check fails."""
    import nbformat
    from nbclient import NotebookClient

    started = time.perf_counter()
    nb = nbformat.read(notebook, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(notebook.parent)}}).execute()
    errors = [f"{c.id}: {o.ename}: {o.evalue}" for c in nb.cells if c.cell_type == "code"
              for o in c.outputs if o.output_type == "error"]
    assert not errors, "cells raised:\n" + "\n".join(errors)
    checks = [c for c in nb.cells if c.cell_type == "code" and c.id.endswith("-check")]
    # check() shows its verdict as display data in Jupyter (with the witness of the kernel it ran in
    # the output's metadata), as printed text elsewhere.
    shown = ["".join(o.get("text", "") if o.output_type == "stream" else o.get("data", {}).get("text/plain", "")
                     for o in c.outputs if o.output_type in ("stream", "display_data")) for c in checks]
    not_failed = [c.id for c, text in zip(checks, shown, strict=True) if not text.startswith("Failed:")]
    assert checks and not not_failed, f"template checks that did not fail politely: {not_failed}"
    print(f"executed {notebook.name}: {len(nb.cells)} cells, no traceback, {len(checks)} checks all "
          f"'Failed:' ({time.perf_counter() - started:.1f} s)")


def solve_map(notebook: Path, out: Path) -> None:
    """A copy of the book with Map solved (for metal-puzzles check)."""
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    _, solved = _map_cell_solved(notebook)
    next(c for c in nb.cells if c.id == "p1-code").source = solved
    nbformat.write(nb, out)
    print(f"wrote {out}: the book with Map solved")


def main(argv: list[str]) -> int:
    commands = {"first-check": (first_check, 1), "ops": (ops, 0), "execute": (execute, 1),
                "solve-map": (solve_map, 2)}
    if not argv or argv[0] not in commands or len(argv) - 1 != commands[argv[0]][1]:
        print(__doc__, file=sys.stderr)
        return 2
    function, _ = commands[argv[0]]
    function(*(Path(a) for a in argv[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
