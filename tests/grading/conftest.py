"""Helpers for the hostile-class tests: notebooks built at test time, and a way to run the
``metal-puzzles grade`` command and read back what it wrote.

Tests import these with ``from .conftest import ...`` (the suite is a package)."""

from __future__ import annotations

import contextlib
import csv
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from metal_puzzles.checking import WiredPuzzle
from metal_puzzles.cli import main
from metal_puzzles.puzzles import PUZZLES, get_puzzle, solution_source

KERNEL_PUZZLES = [p for p in PUZZLES if not isinstance(p, WiredPuzzle)]
SEED = "7"


def kernel_cell(kernel_name: str, source: str, header: str | None = None) -> str:
    """A notebook cell defining a kernel the way the book does (the source held in a variable)."""
    p = next(q for q in KERNEL_PUZZLES if q.kernel_name == kernel_name)
    header = p.header if header is None else header
    atomic = ", atomic_outputs=True" if p.atomic_outputs else ""
    return (f"def make_{kernel_name.lower()}_kernel(*inputs):\n"
            f"    header = {header!r}\n"
            f"    source = {source!r}\n"
            f"    return MetalKernel(name={kernel_name!r}, input_names={list(p.input_names)!r}, "
            f"output_names={list(p.output_names)!r},\n"
            f"                       source=source, header=header{atomic})\n")


def notebook_json(cells: list[str]) -> str:
    """A version-4 notebook of code cells, as JSON text (written by hand so that any string,
    lone surrogates included, gets in)."""
    return json.dumps({
        "nbformat": 4, "nbformat_minor": 5, "metadata": {},
        "cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                   "source": c} for c in ["from metal_puzzles import MetalKernel", *cells]],
    })


def write_nb(path: Path | bytes, cells: list[str]) -> Path | bytes:
    data = notebook_json(cells).encode("ascii")
    with open(path, "wb") as f:
        f.write(data)
    return path


def solution(pid: str) -> str:
    return solution_source(get_puzzle(pid))


MAP_OK = solution("map")
ZIP_WRONG = "uint i = thread_position_in_grid.x;\nout[i] = a[i] + b[i] + 1;\n"
GUARD_OVER_BUDGET = ("uint i = thread_position_in_grid.x;\nif (i < a_shape[0]) {\n  float x = a[i];\n"
                     "  out[i] = x + a[i] - x + 10;\n}\n")


def clean_students(d: Path) -> dict[str, list[str]]:
    """Three well-behaved students (one a hard link of another): the grades every hostile run
    must reproduce exactly for them."""
    cells = {
        "alice": [kernel_cell("map", MAP_OK), kernel_cell("zip", ZIP_WRONG), kernel_cell("guard", GUARD_OVER_BUDGET)],
        "bob": [kernel_cell("map", MAP_OK), kernel_cell("zip", solution("zip"))],
    }
    for name, c in cells.items():
        write_nb(d / f"{name}.ipynb", c)
    (d / "alice_link.ipynb").hardlink_to(d / "alice.ipynb")
    return cells


CLEAN_IDS = ("alice", "bob", "alice_link")


@dataclass
class Graded:
    status: int
    out: Path
    stdout: str
    stderr: str

    def rows(self) -> dict[str, dict[str, str]]:
        with open(self.out / "grades.csv", newline="", encoding="utf-8") as f:
            return {r["student"]: r for r in csv.DictReader(f)}

    def results(self) -> dict:
        return json.loads((self.out / "results.json").read_text(encoding="utf-8"))

    def student(self, sid: str) -> dict:
        return next(s for s in self.results()["students"] if s["id"] == sid)

    def report(self, sid: str) -> str:
        return (self.out / self.rows()[sid]["report"]).read_text(encoding="utf-8")


def grade(capsys, submissions: list[Path], out: Path, *extra: str) -> Graded:
    status = main(["grade", *map(str, submissions), "--out", str(out), "--quiet", "--workers", "2", *extra])
    captured = capsys.readouterr()
    return Graded(int(status), out, captured.out, captured.err)


def grades_of(g: Graded, sid: str) -> tuple:
    """A student's grades as the CSV and JSON say, without what depends on the run (report name)."""
    row = dict(g.rows()[sid])
    row.pop("report")
    row.pop("student")
    puzzles = g.student(sid)["puzzles"]
    return row, {pid: (s["status"], s["points"], s.get("report")) for pid, s in puzzles.items()}


def grade_quietly(tmp_path_factory, submissions: list[Path], out: Path, *extra: str) -> Graded:
    """``grade`` for fixtures wider than one test (capsys is per test)."""
    log = tmp_path_factory.mktemp("log")
    with open(log / "out", "w") as so, open(log / "err", "w") as se:
        with contextlib.redirect_stdout(so), contextlib.redirect_stderr(se):
            status = main(["grade", *map(str, submissions), "--out", str(out), "--quiet", "--workers", "2", *extra])
    return Graded(int(status), out, (log / "out").read_text(), (log / "err").read_text())


@pytest.fixture(scope="session")
def clean_run(tmp_path_factory) -> Graded:
    """The well-behaved students alone, graded with a one-second time limit per kernel (a
    worker's start-up must not count against it): the grades every other run must reproduce."""
    d = tmp_path_factory.mktemp("clean")
    (d / "class").mkdir()
    clean_students(d / "class")
    return grade_quietly(tmp_path_factory, [d / "class"], d / "out", "--seed", SEED, "--timeout", "1")


def same_as_clean(g: Graded, clean: Graded, ids=CLEAN_IDS) -> None:
    for sid in ids:
        assert grades_of(g, sid) == grades_of(clean, sid), sid
