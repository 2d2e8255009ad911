"""The generated notebook: up to date, runs top to bottom without a traceback, fails politely
with the templates and passes with the reference solutions."""

from __future__ import annotations

import importlib.util
from pathlib import Path

try:
    import tomllib  # novermin (3.11 and later; the backport below on 3.10)
except ModuleNotFoundError:  # Python 3.10: the backport (in the test extra)
    import tomli as tomllib

import nbformat
import pytest
from nbclient import NotebookClient

from metal_puzzles.checking import WiredPuzzle
from metal_puzzles.grading.extract import extract_kernels
from metal_puzzles.puzzles import (
    PUZZLES,
    get_puzzle,
    part1,
    part3,
    solution_header,
    solution_source,
)

ROOT = Path(__file__).resolve().parents[2]


def _load_builder():
    spec = importlib.util.spec_from_file_location("build_notebook", ROOT / "tools" / "build_notebook.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


builder = _load_builder()


def _execute(path: Path) -> nbformat.NotebookNode:
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    return nb


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("notebooks")
    paths = {"templates": out / "puzzles.ipynb", "solutions": out / "solved.ipynb"}
    assert builder.main(["-o", str(paths["templates"])]) == 0
    assert builder.main(["--solutions", "-o", str(paths["solutions"])]) == 0
    return paths


@pytest.fixture(scope="module")
def executed(built) -> dict[str, nbformat.NotebookNode]:
    return {state: _execute(path) for state, path in built.items()}


def _cells(nb, suffix: str) -> dict[str, nbformat.NotebookNode]:
    return {c.id: c for c in nb.cells if c.cell_type == "code" and c.id.endswith(suffix)}


def _kernel_cells(nb) -> dict[str, nbformat.NotebookNode]:
    """Puzzle cells that build a kernel problem (the finale's cells wire kernels with a GradProblem)."""
    return {k: c for k, c in _cells(nb, "-code").items() if "GradProblem(" not in c.source and "DecodeStepProblem(" not in c.source}


def _stdout(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream" and o.name == "stdout")


def _shown(cell) -> str:
    """What a cell printed and the text form of what it displayed (show()'s tables are displayed
    as HTML tables in Jupyter, with this text beside them)."""
    shown = [o.get("text", "") if o.output_type == "stream" else o.get("data", {}).get("text/plain", "")
             for o in cell.outputs if o.output_type in ("stream", "display_data")]
    return "\n".join(shown)


def _tables(cell) -> list[str]:
    return [o.data["text/html"] for o in cell.outputs
            if o.output_type == "display_data" and "mp-table" in o.get("data", {}).get("text/html", "")]


def _errors(nb) -> list[str]:
    return [f"{c.id}: {o.ename}: {o.evalue}" for c in nb.cells if c.cell_type == "code"
            for o in c.outputs if o.output_type == "error"]


def test_committed_notebook_is_up_to_date(built):
    committed = nbformat.read(ROOT / "puzzles.ipynb", as_version=4)
    fresh = nbformat.read(built["templates"], as_version=4)
    assert [(c.id, c.cell_type, c.source) for c in committed.cells] == \
        [(c.id, c.cell_type, c.source) for c in fresh.cells], "run: python tools/build_notebook.py"


def test_building_is_deterministic(built, tmp_path):
    builder.main(["-o", str(tmp_path / "again.ipynb")])
    assert (tmp_path / "again.ipynb").read_text() == built["templates"].read_text()


def test_layout_follows_the_book(built):
    nb = nbformat.read(built["templates"], as_version=4)
    assert [c.id for c in nb.cells[:3]] == ["intro", "install", "imports"]
    assert "from metal_puzzles import MetalKernel, MetalProblem" in nb.cells[2].source
    texts = [c.source for c in nb.cells if c.cell_type == "markdown" and c.source.startswith("## Puzzle")]
    assert [t.split("\n")[0] for t in texts] == [f"## Puzzle {p.number}: {p.title}" for p in PUZZLES]
    checks = _cells(nb, "-check")
    assert len(checks) == len(PUZZLES)
    # Each puzzle's problem has its own name, so that an earlier cell run again stays itself.
    assert {k: c.source for k, c in checks.items()} == \
        {builder._cell_id(p, "check"): f"{builder.problem_name(p)}.check()" for p in PUZZLES}
    own = [builder.problem_name(p) for p in PUZZLES if builder.problem_name(p) != "problem"]  # the finales' are theirs
    assert len(own) >= len(PUZZLES) - 2 and len(set(own)) == len(own)
    for p in part1.PART_I.puzzles:
        cell = next(c for c in nb.cells if c.id == f"p{p.number}-code")
        assert f'{p.id}_problem = MetalProblem(\n    "{p.title}",' in cell.source
        assert cell.source.rstrip().endswith(f"{p.id}_problem.show()")


def test_grader_reads_each_kernel_from_the_solved_notebook(built):
    found = extract_kernels(built["solutions"]).kernels
    for p in part1.PART_I.puzzles:
        kernel = found[p.kernel_name]
        assert kernel.source.strip() == solution_source(p).strip()
        assert kernel.header.strip() == p.header.strip()
        assert kernel.input_names == list(p.input_names)
    templates = extract_kernels(built["templates"]).kernels
    assert all("// FILL ME IN" in templates[p.kernel_name].source for p in part1.PART_I.puzzles)


def test_grader_reads_every_kernel_of_the_book_as_it_runs(built):
    # Issue 27: the evaluator follows the whole book (problem.show() and check() call each puzzle
    # function); every kernel is read, exactly the solution, with nothing to note.
    solved = extract_kernels(built["solutions"])
    assert solved.issues == []
    for p in PUZZLES:
        if isinstance(p, WiredPuzzle):
            continue
        kernel = solved.kernels[p.kernel_name]
        assert kernel.problem is None, (p.id, kernel.problem)
        assert kernel.source.strip() == solution_source(p).strip(), p.id
        assert kernel.header.strip() == (solution_header(p) or "").strip(), p.id
    assert extract_kernels(built["templates"]).issues == []


def test_templates_run_without_a_traceback_and_every_check_fails(executed):
    nb = executed["templates"]
    assert _errors(nb) == []
    for cell_id, cell in _cells(nb, "-check").items():
        assert _shown(cell).startswith("Failed:"), cell_id
    for cell_id, cell in _kernel_cells(nb).items():
        assert "Score (Max Per Thread):" in _shown(cell), cell_id
        assert any("<table>" in t and "Global Reads</th>" in t for t in _tables(cell)), cell_id


def test_solutions_pass_every_check(executed):
    nb = executed["solutions"]
    assert _errors(nb) == []
    for cell_id, cell in _cells(nb, "-check").items():
        assert _shown(cell).startswith("Passed:"), (cell_id, _shown(cell))
    assert len(_cells(nb, "-check")) == len(PUZZLES)


def test_each_check_leaves_a_witness_the_grader_agrees_with(executed, tmp_path):
    # Issue 27: check() records a digest of the kernel it checked; on the executed book it is
    # the kernel the grader reads, so no note says otherwise.
    nb = executed["solutions"]
    witnessed = {o.metadata["metal_puzzles"]["check"]["kernel"] for c in _cells(nb, "-check").values()
                 for o in c.outputs if "metal_puzzles" in o.get("metadata", {})}
    assert witnessed == {p.kernel_name for p in PUZZLES if not isinstance(p, WiredPuzzle)}
    path = tmp_path / "executed.ipynb"
    nbformat.write(nb, str(path))
    read = extract_kernels(path)
    assert not [i for i in read.issues if "check()" in i], read.issues


def test_show_draws_a_diagram(executed):
    nb = executed["solutions"]
    for cell_id, cell in _kernel_cells(nb).items():
        pages = [o.data.get("text/html", "") for o in cell.outputs if o.output_type == "execute_result"]
        assert any("<svg" in page for page in pages), cell_id
    demo = next(c for c in nb.cells if c.id == "signature-demo")
    assert "const constant float* x" in _stdout(demo) and "device float* y" in _stdout(demo)


#: What an executed book may weigh (issue 22, item 9; issue 32: Part V included).
EXECUTED_BOOK_MAX_BYTES = 3_000_000


def test_the_executed_book_stays_under_3_mb(executed, tmp_path):
    """The book as a learner has it after running every cell with the reference solutions: one
    diagram per puzzle from show(), of every part (benchmarks/bench_image_sizes.py --book weighs
    it before and after a change)."""
    nb = executed["solutions"]
    drawn = [cell_id for cell_id, c in _kernel_cells(nb).items()
             if any("<svg" in o.get("data", {}).get("text/html", "") for o in c.outputs)]
    assert any(cell_id.startswith("pV-") for cell_id in drawn), drawn  # Part V's diagrams are in it
    path = tmp_path / "executed.ipynb"
    nbformat.write(nb, str(path))
    assert path.stat().st_size < EXECUTED_BOOK_MAX_BYTES, path.stat().st_size


def test_part_three_shows_the_cost_table_and_the_occupancy_answer_is_in_the_header(built, executed):
    for state in ("templates", "solutions"):
        for p in part3.PART_III.puzzles:
            cell = next(c for c in executed[state].cells if c.id == f"p{p.number}-code".replace(".", "-"))
            out = _shown(cell)
            assert "Cost on a model of an Apple GPU" in out and "\nbudget |" in out, (state, p.id)
            assert sum("<table>" in t for t in _tables(cell)) == 2, (state, p.id)  # score and cost
    solved = extract_kernels(built["solutions"]).kernels["lookup_table"]
    assert "constant uint TG = 1024;" in solved.header


def test_score_table_shows_the_budget(executed):
    nb = executed["solutions"]
    cell = next(c for c in nb.cells if c.id == "p14b-code")
    table = _shown(cell)
    assert "\nbudget |            6 |             1 |" in table and "\nyours  |" in table
    assert get_puzzle("matmul_full").budget.global_reads == 6


# ----------------------------------------------------------------------------- Colab and installing
def _install_cell(nb) -> str:
    return next(c.source for c in nb.cells if c.id == "install")


def _pyproject_repository() -> str:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)["project"]["urls"]["Repository"]


def test_links_come_from_the_one_repository_url(built):
    repository = _pyproject_repository()
    assert builder.repository_url() == repository.rstrip("/")
    colab = builder.colab_url(repository)
    owner_and_name = repository.removeprefix("https://github.com/")
    assert colab == f"https://colab.research.google.com/github/{owner_and_name}/blob/main/puzzles.ipynb"
    nb = nbformat.read(built["templates"], as_version=4)
    assert f"]({colab})" in nb.cells[0].source
    assert f'"metal-puzzles @ git+{repository}"' in _install_cell(nb)
    readme = (ROOT / "README.md").read_text()
    assert f"]({colab})" in readme, "the README's Colab link must be the notebook's"
    assert f"metal-puzzles @ git+{repository}" in readme


def test_colab_needs_a_github_repository():
    with pytest.raises(ValueError, match="GitHub"):
        builder.colab_url("https://gitlab.com/someone/metal-puzzles")


def _run_install_cell(source: str, monkeypatch, installed: bool) -> list[list[str]]:
    """Run the cell's code here, with pip replaced by a recorder; ``installed`` says whether
    metal_puzzles is found."""
    import importlib.util
    import subprocess

    calls = []
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: calls.append((cmd, kw)))
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: real_find_spec(name, *a) if installed or name != "metal_puzzles" else None)
    exec(compile(source, "install-cell", "exec"), {})
    return calls


def test_install_cell_installs_only_when_the_package_is_missing(built, monkeypatch):
    import sys

    source = _install_cell(nbformat.read(built["templates"], as_version=4))
    assert _run_install_cell(source, monkeypatch, installed=True) == []
    (command, options), = _run_install_cell(source, monkeypatch, installed=False)
    assert command == [sys.executable, "-m", "pip", "install", "--quiet",
                       f"metal-puzzles @ git+{_pyproject_repository()}"]
    assert options == {"check": True}
