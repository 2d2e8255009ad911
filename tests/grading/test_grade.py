"""Grading a class: static extraction, safety, robustness and the written gradebook."""

from __future__ import annotations

import csv
import json
from itertools import pairwise
from pathlib import Path

import nbformat
import pytest

from metal_puzzles.checking import WiredPuzzle
from metal_puzzles.cli import main
from metal_puzzles.grading.extract import extract_kernels
from metal_puzzles.grading.grade import grade_submissions, write_outputs
from metal_puzzles.grading.points import PointsConfig
from metal_puzzles.grading.pool import Limits
from metal_puzzles.puzzles import PUZZLES, get_puzzle, solution_header, solution_source

LIMITS = Limits(wall_seconds=60, max_steps=20_000)
# The finale entries are Python wiring kernels together; the grader grades them from those kernels.
KERNEL_PUZZLES = [p for p in PUZZLES if not isinstance(p, WiredPuzzle)]


def kernel_cell(kernel_name: str, source: str, header: str = "", via_variable: bool = True) -> str:
    p = next(q for q in KERNEL_PUZZLES if q.kernel_name == kernel_name)
    names = list(p.input_names)
    outs = list(p.output_names)
    atomic = ", atomic_outputs=True" if p.atomic_outputs else ""
    if via_variable:
        return (f"def make_{kernel_name.lower()}_kernel(*inputs):\n"
                f"    header = {header!r}\n"
                f"    source = {source!r}\n"
                f"    return MetalKernel(name={kernel_name!r}, input_names={names!r}, output_names={outs!r},\n"
                f"                       source=source, header=header{atomic})\n")
    return f"k = MetalKernel({kernel_name!r}, {names!r}, {outs!r}, {source!r}, {header!r}{atomic})\n"


def write_nb(path: Path, cells: list[str]) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("from metal_puzzles import MetalKernel, MetalProblem")]
    nb.cells += [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, str(path))
    return path


def solution(pid: str) -> str:
    return solution_source(get_puzzle(pid))


def solved_cells() -> list[str]:
    seen, cells = set(), []
    for p in KERNEL_PUZZLES:
        if p.kernel_name not in seen:
            seen.add(p.kernel_name)
            cells.append(kernel_cell(p.kernel_name, solution(p.id), solution_header(p)))
    return cells


def template_cells() -> list[str]:
    seen, cells = set(), []
    for p in KERNEL_PUZZLES:
        if p.kernel_name not in seen:
            seen.add(p.kernel_name)
            cells.append(kernel_cell(p.kernel_name, p.template, p.header))
    return cells


@pytest.fixture(scope="module")
def class_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("class")
    write_nb(d / "solved.ipynb", solved_cells())
    write_nb(d / "template.ipynb", template_cells())
    map_ok = solution("map")
    zip_off_by_one = "uint i = thread_position_in_grid.x;\nout[i] = a[i] + b[i] + 1;\n"
    guard_over_budget = ("uint i = thread_position_in_grid.x;\nif (i < a_shape[0]) {\n  float x = a[i];\n"
                         "  out[i] = x + a[i] - x + 10;\n}\n")
    pool = get_puzzle("pooling")
    pooling_racy = solution("pooling").replace("threadgroup_barrier(mem_flags::mem_threadgroup);", "")
    map2d_typo = "uint tx = thread_position_in_grid.x;\nout[tx] = a[txx] + 10;\n"
    write_nb(d / "mixed.ipynb", [
        kernel_cell("map", map_ok),
        kernel_cell("zip", zip_off_by_one),
        kernel_cell("guard", guard_over_budget),
        kernel_cell("pooling", pooling_racy, pool.header),
        kernel_cell("map_2D", map2d_typo),
    ])
    # Python that would leave a file behind if the grader ever ran it.
    marker = d / "MARKER_FILE"
    write_nb(d / "malicious.ipynb", [
        f"open({str(marker)!r}, 'w').write('ran')\nimport os\nos.system('touch {marker}')",
        kernel_cell("map", map_ok),
    ])
    (d / "broken_json.ipynb").write_text("{\"cells\": [", encoding="utf-8")
    v3 = {"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"cells": [
        {"cell_type": "code", "input": kernel_cell("map", map_ok), "language": "python", "outputs": []}]}]}
    (d / "old_format.ipynb").write_text(json.dumps(v3), encoding="utf-8")
    write_nb(d / "empty.ipynb", ["", "   "])
    write_nb(d / "runtime_source.ipynb", [
        # A source read from a file when the notebook runs (issue 27: a join of known strings is read).
        "source = open('map.metal').read()\n"
        "k = MetalKernel(name='map', input_names=['a'], output_names=['out'], source=source)"])
    latin = write_nb(d / "latin1.ipynb", [kernel_cell("map", map_ok) + "# caf\u00e9\n"])
    latin.write_bytes(latin.read_bytes().replace("caf\u00e9".encode(), b"caf\xe9"))
    (d / "sub").mkdir()
    # Alone in its folder: a folder per student, named after the folder (duplicates: tests/grading/test_ids.py)
    write_nb(d / "sub" / "solved.ipynb", [kernel_cell("map", map_ok)])
    endless = "uint i = thread_position_in_grid.x;\nwhile (i < 10) { i = i * 1; }\nout[i] = 1;\n"
    write_nb(d / "endless.ipynb", [kernel_cell("map", endless)])
    run = grade_submissions([d], limits=LIMITS, progress=False)
    out = d / "out"
    write_outputs(run, out)
    return run, out, marker


def student(run, sid):
    return next(s for s in run.students if s.id == sid)


def test_solved_notebook_gets_full_marks(class_run):
    run, _, _ = class_run
    st = student(run, "solved")
    assert st.total == run.max_total == len(PUZZLES)
    assert all(s["status"] == "passed" for s in st.puzzles.values())


def test_template_notebook_scores_zero(class_run):
    run, _, _ = class_run
    st = student(run, "template")
    assert st.total == 0
    assert all(not s["passed"] for s in st.puzzles.values())


def test_mixed_notebook_graded_kernel_by_kernel(class_run):
    run, _, _ = class_run
    p = student(run, "mixed").puzzles
    assert p["map"]["status"] == "passed" and p["map"]["points"] == 1
    assert p["zip"]["status"] == "wrong" and p["zip"]["points"] == 0
    assert p["guard"]["status"] == "over-budget" and p["guard"]["points"] == 0.5
    assert "global reads per thread" in p["guard"]["report"]
    assert p["pooling"]["status"] == "findings" and p["pooling"]["points"] == 0
    kinds = {f["kind"] for t in p["pooling"]["tests"] for f in t["findings"]}
    assert "race" in kinds
    assert p["map_2d"]["status"] == "compile-error"
    assert "use of undeclared identifier 'txx'" in p["map_2d"]["report"]
    assert p["dot_product"]["status"] == "missing" and "no MetalKernel named 'dot_product'" in p["dot_product"]["reason"]


def test_submission_python_is_never_run(class_run):
    run, _, marker = class_run
    assert not marker.exists()
    assert student(run, "malicious").puzzles["map"]["passed"]


def test_malformed_notebooks_are_reported_not_fatal(class_run):
    run, _, _ = class_run
    broken = student(run, "broken_json")
    assert any("invalid JSON" in i for i in broken.issues) and broken.total == 0
    old = student(run, "old_format")
    assert any("format 3" in i for i in old.issues) and old.puzzles["map"]["passed"]
    empty = student(run, "empty")
    assert empty.total == 0 and empty.puzzles["map"]["status"] == "missing"
    rt = student(run, "runtime_source")
    assert rt.puzzles["map"]["status"] == "missing" and "cannot be read without running the notebook" in rt.puzzles["map"]["reason"]
    latin = student(run, "latin1")
    assert any("UTF-8" in i for i in latin.issues) and latin.puzzles["map"]["passed"]
    own_folder = student(run, "sub")
    assert any("name of the folder" in i for i in own_folder.issues) and own_folder.puzzles["map"]["passed"]
    endless = student(run, "endless")
    assert endless.puzzles["map"]["status"] == "findings"
    assert any(f["kind"] == "step-budget" for t in endless.puzzles["map"]["tests"] for f in t["findings"])


def test_csv_gradebook_field_by_field(class_run):
    run, out, _ = class_run
    rows = list(csv.reader(open(out / "grades.csv", encoding="utf-8")))
    assert rows[0] == ["student", *[p.id for p in PUZZLES], "total", "passed", "not_attempted", "status", "report"]
    by_id = {r[0]: dict(zip(rows[0], r, strict=True)) for r in rows[1:]}
    assert len(by_id) == len(run.students)
    mixed = by_id["mixed"]
    assert (mixed["map"], mixed["zip"], mixed["guard"], mixed["pooling"]) == ("1", "0", "0.5", "0")
    assert mixed["total"] == "1.5" and mixed["status"] == "complete"
    assert by_id["solved"]["total"] == str(len(PUZZLES))
    # Every report file is named in the CSV, one per student, and exists.
    reports = [r["report"] for r in by_id.values()]
    assert len(set(reports)) == len(reports) and all((out / r).is_file() for r in reports)


def test_json_record_field_by_field(class_run):
    _, out, _ = class_run
    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert [p["id"] for p in data["puzzles"]] == [p.id for p in PUZZLES]
    mixed = next(s for s in data["students"] if s["id"] == "mixed")
    guard = mixed["puzzles"]["guard"]
    assert guard["points"] == 0.5 and guard["max_points"] == 1 and guard["correct"] and not guard["within_budget"]
    assert guard["counts_max"]["global_reads"] == 2 and guard["budget"]["global_reads"] == 1
    race = next(f for t in mixed["puzzles"]["pooling"]["tests"] for f in t["findings"] if f["kind"] == "race")
    assert race["buffer"] and race["line"] and race["threads"]
    assert "over budget" in data["rules"]


def test_reports_say_what_to_fix(class_run):
    _, out, _ = class_run
    rows = list(csv.DictReader(open(out / "grades.csv", encoding="utf-8")))
    text = (out / next(r["report"] for r in rows if r["student"] == "mixed")).read_text(encoding="utf-8")
    assert "| 1 | Map | passed | 1 / 1 |" in text
    assert "## 2. Zip: what to fix" in text and "wrong output" in text


def test_points_file_changes_weights(tmp_path):
    cfg = tmp_path / "points.toml"
    cfg.write_text("[points]\ndefault = 2\nmap = 5\n[partial]\nover_budget = 0.25\n", encoding="utf-8")
    pc = PointsConfig.load(cfg)
    assert pc.max_points("map") == 5 and pc.max_points("zip") == 2
    assert pc.score("guard", {"passed": False, "correct": True}) == 0.5


def test_extraction_last_definition_wins(tmp_path):
    nb = write_nb(tmp_path / "x.ipynb", [kernel_cell("map", "first"), kernel_cell("map", "second", via_variable=False)])
    assert extract_kernels(nb).kernels["map"].source == "second"


def test_check_command_prints_a_table(tmp_path, capsys):
    nb = write_nb(tmp_path / "me.ipynb", [kernel_cell("map", solution("map"))])
    assert main(["check", str(nb), "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert "Map" in out and "passed" in out and "missing" in out


def test_check_command_exits_non_zero_when_a_puzzle_fails(tmp_path, capsys):
    # As test runners do, so that a learner's own CI can use it.
    wrong = "uint i = thread_position_in_grid.x;\nout[i] = a[i];"
    nb = write_nb(tmp_path / "me.ipynb", [kernel_cell("map", solution("map")), kernel_cell("zip", wrong)])
    assert main(["check", str(nb), "--workers", "1"]) == 1
    assert "Zip" in capsys.readouterr().out
    empty = write_nb(tmp_path / "empty.ipynb", [])
    assert main(["check", str(empty), "--workers", "1"]) == 1  # nothing attempted is not a pass


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _paragraph(lines: list[str], start: str) -> list[str]:
    """The printed lines of the report paragraph that begins with ``start``: its first line and
    the lines that hang under it (two spaces deeper)."""
    first = next(i for i, line in enumerate(lines) if line.lstrip().startswith(start))
    hang = _indent(lines[first]) + 2
    end = first + 1
    while end < len(lines) and lines[end].strip() and _indent(lines[end]) == hang:
        end += 1
    return lines[first:end]


def test_check_wraps_reports_once_at_the_terminal_width(tmp_path, capsys, monkeypatch):
    # Reports are stored broken at 100 columns; printed through rich in a 60-column terminal, each
    # 100-column line was folded again, leaving short ragged lines between full ones.
    monkeypatch.setenv("COLUMNS", "60")
    zip_wrong = "uint i = thread_position_in_grid.x;\nout[i] = a[i] + b[i] + 1;\n"
    guard_over = ("uint i = thread_position_in_grid.x;\nif (i < a_shape[0]) {\n  float x = a[i];\n"
                  "  out[i] = x + a[i] - x + 10;\n}\n")
    nb = write_nb(tmp_path / "me.ipynb", [kernel_cell("zip", zip_wrong), kernel_cell("guard", guard_over)])
    assert main(["check", str(nb), "--workers", "1", "--seed", "1"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= 60
    # (Prose whose next line is not indented deeper, such as a failure followed by its indented
    # table of values, cannot be told apart from a continuation in the printed text.)
    paragraphs = [_paragraph(lines, start) for start in ("Also failing:", "- it uses")]
    for para in paragraphs:
        assert len(para) > 1  # long enough to be broken, and its continuation hangs under it
        for line, after in pairwise(para):
            assert len(line) + 1 + len(after.split()[0]) > 60, f"broken short: {line!r} before {after!r}"
    also = " ".join(" ".join(paragraphs[0]).split())
    assert also.count("threadgroups of") == 3 and also.endswith("threadgroups of 32.")  # the whole paragraph


def test_grade_command_exit_status(tmp_path, capsys):
    assert main(["grade", str(tmp_path / "nothing"), "--out", str(tmp_path / "o")]) == 2
    nb = write_nb(tmp_path / "a.ipynb", [kernel_cell("map", solution("map"))])
    assert main(["grade", str(nb), "--out", str(tmp_path / "o"), "--quiet", "--workers", "1"]) == 0
    assert (tmp_path / "o" / "grades.csv").exists()
