"""How heavy an executed book is: builds the book with the reference solutions, executes it with
nbclient (as tests/notebook_face/test_notebook.py does) and prints the notebook's size and the size of every
display output (the diagrams and tables), largest first (issue 22, item 9: under 3 MB).

    python benchmarks/bench_notebook_size.py [--keep executed.ipynb] [--top 15] [--only 1,2,III.1]

``--only`` keeps the cells of the named puzzles (and the book's text and setup), for a quick look
at a few diagrams. The script prints figures and never judges them: it exits 1 only when the book
does not execute.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]


def _builder():
    spec = importlib.util.spec_from_file_location("build_notebook", ROOT / "tools" / "build_notebook.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def solved_book(folder: Path, only: set[str] | None) -> Path:
    """The book with every reference solution filled in, optionally cut down to some puzzles."""
    path = folder / "solved.ipynb"
    if _builder().main(["--solutions", "-o", str(path)]) != 0:
        raise SystemExit("tools/build_notebook.py --solutions failed")
    if only:
        nb = nbformat.read(path, as_version=4)
        ids = {f"p{n}".replace(".", "-") for n in only}
        nb.cells = [c for c in nb.cells if not c.id.startswith("p") or c.id.rsplit("-", 1)[0] in ids]
        nbformat.write(nb, path)
    return path


def output_sizes(nb: nbformat.NotebookNode) -> list[tuple[str, str, int]]:
    """(cell id, mime types, bytes as stored) for every display output of the executed book."""
    sizes = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for out in cell.outputs:
            if out.output_type in ("display_data", "execute_result"):
                data = out.get("data", {})
                sizes.append((cell.id, ",".join(sorted(data)), len(json.dumps(data))))
    return sizes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", help="also write the executed book here")
    ap.add_argument("--top", type=int, default=15, help="outputs to list, largest first")
    ap.add_argument("--only", help="comma-separated puzzle numbers to keep (default: the whole book)")
    args = ap.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    with tempfile.TemporaryDirectory() as tmp:
        path = solved_book(Path(tmp), only)
        unexecuted = path.stat().st_size
        nb = nbformat.read(path, as_version=4)
        start = time.perf_counter()
        NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                       resources={"metadata": {"path": str(ROOT)}}).execute()
        took = time.perf_counter() - start
        errors = [f"{c.id}: {o.ename}: {o.evalue}" for c in nb.cells if c.cell_type == "code"
                  for o in c.outputs if o.output_type == "error"]
        executed = Path(tmp) / "executed.ipynb"
        nbformat.write(nb, executed)
        total = executed.stat().st_size
        if args.keep:
            nbformat.write(nb, args.keep)
    sizes = output_sizes(nb)
    display_total = sum(s for _, _, s in sizes)
    print(f"executed in {took:.0f} s")
    print(f"book before execution: {unexecuted / 1e6:.2f} MB")
    print(f"executed book:         {total / 1e6:.2f} MB (target: under 3 MB)")
    print(f"display outputs:       {len(sizes)}, {display_total / 1e6:.2f} MB in all, "
          f"largest {max((s for _, _, s in sizes), default=0) / 1e3:.0f} kB")
    print(f"\n{'cell':<20} {'mime types':<40} {'kB':>8}")
    for cell_id, mimes, size in sorted(sizes, key=lambda s: -s[2])[:args.top]:
        print(f"{cell_id:<20} {mimes:<40} {size / 1e3:8.1f}")
    if errors:
        print("\nthe book raised:", *errors, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
