"""The ``metal-puzzles`` command line."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="metal-puzzles", description="Metal Puzzles: learn GPU programming with Metal kernels.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command")
    run = sub.add_parser("run", help="run a kernel file on the simulator and print its outputs and counts")
    run.add_argument("source", help="file with the kernel body")
    run.add_argument("--grid", default="1,1,1")
    run.add_argument("--threadgroup", default="1,1,1")
    args = parser.parse_args(argv)
    if args.version:
        from . import __version__

        print(__version__)
        return 0
    parser.print_help()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
