"""How heavy the book's diagrams are, before and after a change, side by side: the bytes of every
image as committed at a git ref (``--before``, default ``main``: tests/notebook_face/test_images.py keeps the
committed images what that code draws) and as the code in this tree draws it now, the total of
imgs/, and with ``--book`` the executed book itself, built with the reference solutions and
executed with nbclient under each version of the package (as benchmarks/bench_notebook_size.py
does; the book holds one diagram per puzzle, drawn by show()).

    python benchmarks/bench_image_sizes.py [--before REF] [--book] [--top 20]

It prints figures and never judges them: tests/notebook_face/test_images.py bounds imgs/ and
tests/notebook_face/test_notebook.py the executed book (under 3 MB).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOOK_SIZE = """
import sys, tempfile, nbformat
from pathlib import Path
from nbclient import NotebookClient
sys.path.insert(0, sys.argv[1])
import bench_notebook_size as bench
with tempfile.TemporaryDirectory() as tmp:
    path = bench.solved_book(Path(tmp), None)
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": sys.argv[2]}}).execute()
    out = Path(tmp) / "executed.ipynb"
    nbformat.write(nb, out)
    print(out.stat().st_size)
"""


def committed_images(ref: str) -> dict[str, int]:
    """Path inside imgs/ -> bytes of every image in imgs/ at ``ref`` (its part folders included)."""
    listing = subprocess.run(["git", "ls-tree", "-r", "-l", ref, "imgs/"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout
    sizes = {}
    for line in listing.splitlines():
        meta, path = line.split("\t")
        if path.endswith(".svg"):
            sizes[path.removeprefix("imgs/")] = int(meta.split()[3])
    return sizes


def drawn_images() -> dict[str, int]:
    """Name -> bytes of every image as this tree's code draws it."""
    from metal_puzzles.notebook.images import image_files

    return {name: len(svg.encode("utf-8")) for name, svg in image_files().items()}


def executed_book_size(tree: Path) -> int:
    """Bytes of the executed book built and run with the package and tools under ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree / "lib")}  # before the installed package, in the kernel too
    out = subprocess.run([sys.executable, "-c", BOOK_SIZE, str(tree / "benchmarks"), str(tree)], env=env,
                         capture_output=True, text=True, cwd=tree)
    if out.returncode:
        raise SystemExit(f"the book did not execute under {tree}:\n{out.stderr[-3000:]}")
    return int(out.stdout.split()[-1])


def tree_at(ref: str, folder: Path) -> Path:
    """The repository as it is at ``ref``, unpacked into ``folder``."""
    archive = subprocess.run(["git", "archive", ref], cwd=ROOT, capture_output=True,
                             check=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(folder)
    return folder


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="main", help="git ref of the images (and code) before")
    ap.add_argument("--book", action="store_true", help="also execute the book under both versions")
    ap.add_argument("--top", type=int, default=20, help="images to list, heaviest after first")
    args = ap.parse_args(argv)
    before, after = committed_images(args.before), drawn_images()
    print(f"{'image':<36} {'before kB':>10} {'after kB':>10} {'after/before':>13}")
    for name in sorted(after, key=lambda n: -after[n])[:args.top]:
        b = before.get(name)
        ratio = f"{after[name] / b:.2f}" if b else "new"
        print(f"{name:<36} {(b or 0) / 1e3:10.1f} {after[name] / 1e3:10.1f} {ratio:>13}")
    total_b, total_a = sum(before.values()), sum(after.values())
    print(f"{'imgs/ (' + str(len(after)) + ' images)':<36} {total_b / 1e3:10.1f} {total_a / 1e3:10.1f} "
          f"{total_a / total_b:13.2f}")
    if args.book:
        with tempfile.TemporaryDirectory() as tmp:
            book_b = executed_book_size(tree_at(args.before, Path(tmp)))
        book_a = executed_book_size(ROOT)
        print(f"{'executed book':<36} {book_b / 1e3:10.1f} {book_a / 1e3:10.1f} {book_a / book_b:13.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
