"""The ``metal-puzzles`` command line: ``grade`` (instructors), ``check``, ``init``, ``lab`` and
``notebook`` (learners)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import book


def _add_limits(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workers", type=int, default=None, help="worker processes (default: all cores)")
    p.add_argument("--timeout", type=float, default=60.0, help="wall-time limit per kernel, seconds (default 60)")
    p.add_argument("--memory", type=int, default=3072, help="memory limit per worker, MiB (default 3072)")
    p.add_argument("--max-steps", type=int, default=20_000, help="loop-iteration budget per launch (default 20000)")
    p.add_argument("--points", default=None, help="TOML file with points per puzzle and partial credit")
    p.add_argument("--seed", type=int, default=0, help="seed of the hidden tests")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="metal-puzzles",
                                     description="Metal Puzzles: learn GPU programming with Metal kernels.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command")
    g = sub.add_parser("grade", help="grade a class's notebooks (their Python is never run)")
    g.add_argument("submissions", nargs="+", help="notebooks, or directories of notebooks")
    g.add_argument("--out", required=True, help="directory for grades.csv, results.json and reports/")
    g.add_argument("--mapping", default=None, help="CSV of 'notebook file name, student id' rows")
    g.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_limits(g)
    im = sub.add_parser("images", help="regenerate the book's images (logo and puzzle diagrams)")
    im.add_argument("--out", default="imgs", help="directory to write into (default: imgs)")
    c = sub.add_parser("check", help="check your own notebook and print a table of results (exit status 1 "
                                     "when a puzzle in it fails, as test runners do)")
    c.add_argument("notebook")
    _add_limits(c)
    book.add_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.version:
        from . import __version__

        print(__version__)
        return 0
    if args.command is None:
        build_parser().print_help()
        return 0
    if args.command in book.COMMANDS:
        return book.run_command(args)
    if args.command == "images":
        from .images import write_images

        for path in write_images(args.out):
            print(path)
        return 0
    from .grading.grade import grade_submissions, print_check, print_summary, write_outputs
    from .grading.points import PointsConfig
    from .grading.pool import Limits

    try:
        config = PointsConfig.load(args.points)
    except (OSError, ValueError) as exc:
        print(f"metal-puzzles: cannot read the points file: {exc}", file=sys.stderr)
        return 2
    limits = Limits(wall_seconds=args.timeout, memory_bytes=args.memory * 2**20, max_steps=args.max_steps)
    if args.command == "grade":
        from .grading.grade import collect_notebooks, load_mapping

        files, problems = collect_notebooks(args.submissions)
        for p in problems:
            print(f"metal-puzzles: {p}", file=sys.stderr)
        if not files:
            print("metal-puzzles: no notebooks to grade", file=sys.stderr)
            return 2
        try:
            mapping = load_mapping(args.mapping)
        except OSError as exc:
            print(f"metal-puzzles: cannot read the mapping file: {exc}", file=sys.stderr)
            return 2
        run = grade_submissions(args.submissions, config=config, mapping=mapping, limits=limits,
                                workers=args.workers, seed=args.seed, progress=not args.quiet)
        write_outputs(run, Path(args.out))
        print_summary(run)
        print(f"wrote {Path(args.out) / 'grades.csv'}, results.json and reports/ ({len(run.students)} students)")
        return 0
    if args.command == "check":
        if not Path(args.notebook).exists():
            print(f"metal-puzzles: {args.notebook}: no such file", file=sys.stderr)
            return 2
        run = grade_submissions([args.notebook], config=config, limits=limits, workers=args.workers,
                                seed=args.seed, progress=False)
        student = run.students[0]
        print_check(student, run)
        # Like a test runner: non-zero when a puzzle the notebook attempts fails (a missing one is not
        # tried), or when it attempts none (an unreadable notebook, or not a Metal Puzzles one).
        tried = [s for s in student.puzzles.values() if s.get("status") != "missing"]
        return 0 if tried and all(s.get("passed") for s in tried) else 1
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
