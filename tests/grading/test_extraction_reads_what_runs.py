"""The kernel graded is the kernel the notebook runs, or the report says why not (issue 27, item 1).

Ten correct notebooks that static extraction used to read wrongly, silently: each must now be
read as the notebook runs it. Constructs the grader cannot follow without running the notebook
must be named (cell, line, construct) in the notebook's issues, in results.json, in the report
and by ``metal-puzzles check``, never replaced by another kernel. The witness that check()
leaves in its output is compared with what the grader read, as a note that never changes a grade.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest

from metal_puzzles.checking.witness_record import METADATA_KEY, witness_record
from metal_puzzles.cli import main
from metal_puzzles.grading.evaluate import Evaluator
from metal_puzzles.grading.extract import extract_from_bytes
from metal_puzzles.grading.grade import grade_submissions, write_outputs
from metal_puzzles.grading.pool import Limits
from metal_puzzles.puzzles import get_puzzle, solution_source

SOL = solution_source(get_puzzle("map"))  # a correct kernel for Map
TEMPLATE = get_puzzle("map").template  # the template's kernel: "// FILL ME IN"
BROKEN = "uint i = thread_position_in_grid.x;\nout[i] = a[i] +;\n"  # an old attempt that does not compile
LIMITS = Limits(wall_seconds=60, max_steps=20_000)

IMPORTS = "import mlx.core as mx\nfrom metal_puzzles import MetalKernel, MetalProblem\n"
PROBLEM = ('problem = MetalProblem("Map", map_test, [mx.arange(4)], (4,), grid=(4, 1, 1), threadgroup=(4, 1, 1))\n'
           "problem.show()\n")
KERNEL = 'MetalKernel(name="map", input_names=["a"], output_names=["out"], source={})'


def notebook(*cells: str, outputs: dict[int, list] | None = None) -> bytes:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(IMPORTS)] + [nbformat.v4.new_code_cell(c) for c in cells]
    for index, outs in (outputs or {}).items():
        nb.cells[index].outputs = outs
        nb.cells[index].execution_count = index
    return nbformat.writes(nb).encode()


def read(*cells: str, **kwargs):
    return extract_from_bytes(notebook(*cells, **kwargs), "student.ipynb")


# The issue's ten notebooks, each correct when it runs.
TERNARY = "uint i = thread_position_in_grid.x;\nout[i] = true\n    ? a[i] + 10\n    : a[i];\n"
MODULO = ("uint i = thread_position_in_grid.x;\nbool skip = false;\nuint j = i\n% 4294967295u;\nif (\n"
          "!skip) {\n    out[i] = a[j] + 10;\n}\n")
CORRECT_NOTEBOOKS = {
    # A C ternary's continuation line starts with '?': IPython keeps it in the string.
    "ternary_continuation": (TERNARY, [
        f'def map_test(a):\n    source = """\n{TERNARY}"""\n    return {KERNEL.format("source")}\n\n\n{PROBLEM}',
        "problem.check()"]),
    # Lines starting with '%' and '!' inside the kernel's string.
    "modulo_and_not_continuations": (MODULO, [
        f'def map_test(a):\n    source = """\n{MODULO}"""\n    return {KERNEL.format("source")}\n\n\n{PROBLEM}']),
    "augmented_assignment": (SOL, [
        f"def map_test(a):\n    source = {SOL.splitlines(True)[0]!r}\n"
        f"    source += {''.join(SOL.splitlines(True)[1:])!r}\n    return {KERNEL.format('source')}\n\n\n{PROBLEM}"]),
    "tuple_unpacking": (SOL, [
        f"SOL = {SOL!r}\n",
        f"def map_test(a):\n    source = {TEMPLATE!r}\n    source, n = SOL, 2\n    return {KERNEL.format('source')}\n"
        f"\n\n{PROBLEM}"]),
    "for_over_a_literal_list": (SOL, [
        f"SOL = {SOL!r}\nsource = {TEMPLATE!r}\n",
        f"for source in [SOL]:\n    pass\n\n\ndef map_test(a):\n    return {KERNEL.format('source')}\n\n\n{PROBLEM}"]),
    "walrus": (SOL, [
        f"SOL = {SOL!r}\nsource = {TEMPLATE!r}\nprint(len(source := SOL))\n",
        f"def map_test(a):\n    return {KERNEL.format('source')}\n\n\n{PROBLEM}"]),
    # The module global is reassigned after the def, before the call (problem.show()).
    "global_reassigned_before_the_call": (SOL, [
        f"SOURCE = {TEMPLATE!r}\n\n\ndef map_test(a):\n    return {KERNEL.format('SOURCE')}\n",
        f"SOURCE = {SOL!r}\n",
        PROBLEM]),
    # A helper called earlier sets the global through a 'global' statement.
    "global_set_in_a_helper": (SOL, [
        f"SOURCE = {TEMPLATE!r}\n\n\ndef use_my_answer():\n    global SOURCE\n    SOURCE = {SOL!r}\n\n\n"
        "use_my_answer()\n",
        f"def map_test(a):\n    return {KERNEL.format('SOURCE')}\n\n\n{PROBLEM}"]),
    # An experiment behind a flag that is off: dead code is not graded.
    "debug_flag_off": (SOL, [
        "DEBUG = False\n",
        f"def map_test(a):\n    source = {SOL!r}\n    if DEBUG:\n        source = {BROKEN!r}\n"
        f"    return {KERNEL.format('source')}\n\n\n{PROBLEM}"]),
    # An old attempt kept in a cell that does not run as Python.
    "script_false_cell": (SOL, [
        f"def map_test(a):\n    return {KERNEL.format(repr(SOL))}\n\n\n{PROBLEM}",
        f"%%script false\ndef map_test(a):\n    return {KERNEL.format(repr(BROKEN))}\n\n\n{PROBLEM}"]),
}


@pytest.mark.parametrize("case", list(CORRECT_NOTEBOOKS))
def test_the_kernel_read_is_the_kernel_the_notebook_runs(case):
    expected, cells = CORRECT_NOTEBOOKS[case]
    nb = read(*cells)
    kernel = nb.kernels["map"]
    assert kernel.problem is None, kernel.problem
    assert kernel.source.strip() == expected.strip()
    assert nb.issues == []


def test_the_ten_correct_notebooks_all_pass_when_graded(tmp_path):
    for case, (_, cells) in CORRECT_NOTEBOOKS.items():
        (tmp_path / f"{case}.ipynb").write_bytes(notebook(*cells))
    run = grade_submissions([tmp_path], limits=LIMITS, workers=2, progress=False, seed=1)
    assert {st.id: st.puzzles["map"]["status"] for st in run.students} == dict.fromkeys(CORRECT_NOTEBOOKS, "passed")
    assert all(st.issues == [] for st in run.students)


def test_other_cell_magics_are_read_by_what_they_run():
    # %%capture and %%time run their body as the notebook's Python; %%bash and %%writefile do not.
    nb = read(f"%%capture out\nSOURCE = {SOL!r}\n",
              f"%%bash\nSOURCE={BROKEN!r}\n",
              f"%%writefile old.py\nSOURCE = {BROKEN!r}\n",
              f"%%time\ndef map_test(a):\n    return {KERNEL.format('SOURCE')}\n\n\n{PROBLEM}")
    assert nb.kernels["map"].source == SOL and nb.issues == []


def test_line_magics_are_read_by_what_they_run():
    # %time runs its statement in the notebook; %timeit in a function of its own (its names do
    # not stay); %matplotlib and !ls change no variable; %store -r may change any.
    nb = read(f"%time SOURCE = {SOL!r}\n%timeit SOURCE = {BROKEN!r}\n%matplotlib inline\n!ls\n"
              f"k = {KERNEL.format('SOURCE')}\n")
    assert nb.kernels["map"].source == SOL and nb.issues == []
    nb = read(f"SOURCE = {SOL!r}\n%store -r SOURCE\nk = {KERNEL.format('SOURCE')}\n")
    assert "the magic %store" in nb.kernels["map"].problem


def test_formatting_and_string_methods_of_known_values_are_computed():
    nb = read("import textwrap\nOFFSET = 10\nNAME = 'a'\n",
              "def map_test(a):\n"
              "    body = textwrap.dedent('''\n        uint i = thread_position_in_grid.x;\n        out[i] = {x}[i] + %d;\n"
              "    ''') % OFFSET\n"
              "    source = body.format(x=NAME).replace('uint i', 'uint i')\n"
              f"    source = f'{{source}}'\n    return {KERNEL.format('source')}\n\n\n{PROBLEM}")
    assert nb.kernels["map"].source == "\nuint i = thread_position_in_grid.x;\nout[i] = a[i] + 10;\n"


@pytest.mark.parametrize("cells", [
    # A loop that leaves by its break; a try around check(); the problem's own function.
    [f"while True:\n    source = {SOL!r}\n    break\nk = {KERNEL.format('source')}\n"],
    [f"def map_test(a):\n    return {KERNEL.format(repr(SOL))}\n\n\n{PROBLEM}",
     "try:\n    problem.check()\nexcept Exception as exc:\n    print(exc)\n"],
    [f"SOURCES = {{'map': {SOL!r}}}\nsource = {SOL!r}\nsources = [source]\n"
     f"def map_test(a):\n    return {KERNEL.format('sources[0]')}\n\n\n{PROBLEM}", "problem.fn(None)"],
    # Lines gathered in a list, changed in place (every name holding that list sees the change).
    ["lines = []\nalias = lines\n" + "".join(f"lines.append({line!r})\n" for line in SOL.split("\n")[:-1])
     + "alias += ['']\nsource = '\\n'.join(lines)\n" + f"k = {KERNEL.format('source')}\n"],
    # Two branches that agree; a condition on a known value inside a function's default.
    [f"import random\nif random.random() < 0.5:\n    source = {SOL!r}\nelse:\n    source = {SOL!r}\n"
     f"k = {KERNEL.format('source')}\n"],
])
def test_more_constructs_read_as_they_run(cells):
    nb = read(*cells)
    assert nb.kernels["map"].source == SOL and nb.issues == []


# ------------------------------------------------------------------ what cannot be read is named
UNREADABLE = {
    "a file read when the notebook runs": (
        "source = open('map.metal').read()\n", "open('map.metal').read()"),
    "a comprehension": (
        "parts = ['uint i = thread_position_in_grid.x;', 'out[i] = a[i] + 10;']\n"
        "source = '\\n'.join(p for p in parts)\n", "list comprehension|generator"),
    "a condition the grader cannot know": (
        f"import random\nsource = {TEMPLATE!r}\nif random.random() < 2:\n    source = {SOL!r}\n",
        "condition of the 'if' at line 3"),
    "exec": (f"source = {SOL!r}\nexec('source = source.upper()')\n", "exec"),
    "a magic that may change any variable": (f"source = {SOL!r}\n%run other.py\n", "%run"),
    "a loop over values the grader cannot know": (
        f"import sys\nsource = {TEMPLATE!r}\nfor arg in sys.argv:\n    source = {SOL!r}\n", "loop at line 3"),
}


@pytest.mark.parametrize("case", list(UNREADABLE))
def test_a_kernel_the_grader_cannot_read_is_named_with_the_cell_line_and_construct(case):
    cell, construct = UNREADABLE[case]
    nb = read(cell + f"k = {KERNEL.format('source')}\n")
    kernel = nb.kernels["map"]
    assert kernel.source is None
    assert "cannot be read without running the notebook" in kernel.problem
    assert "code cell 2, line" in kernel.problem
    assert any(c in kernel.problem for c in construct.split("|")), kernel.problem
    assert 'source = """..."""' in kernel.problem  # the way to write it that the grader reads
    assert any(kernel.problem in issue and issue.startswith("kernel 'map'") for issue in nb.issues)


@pytest.mark.parametrize(("cell", "construct"), [
    (f"make = lambda: {KERNEL.format(repr(BROKEN))}\n", "a lambda"),
    (f"class Kernels:\n    def build(self):\n        return {KERNEL.format(repr(BROKEN))}\n",
     "the method Kernels.build()"),
    (f"def kernels():\n    yield {KERNEL.format(repr(BROKEN))}\n\n\nfor k in kernels():\n    pass\n",
     "the generator kernels()"),
    (f"import functools\n@functools.cache\ndef cached(a):\n    return {KERNEL.format(repr(BROKEN))}\n",
     "the decorated function cached()"),
])
def test_a_kernel_also_built_by_code_the_grader_does_not_follow_is_not_read(cell, construct):
    # The correct kernel is built first; code that may build another one at a time the grader
    # cannot know follows: the grader must not claim either.
    nb = read(f"k = {KERNEL.format(repr(SOL))}\n", cell)
    kernel = nb.kernels["map"]
    assert kernel.source is None and construct in kernel.problem, kernel.problem


def test_check_runs_the_kernel_the_puzzle_function_returns():
    # Two kernels of the name are built; check() runs the one returned.
    nb = read(f"def map_test(a):\n    good = {KERNEL.format(repr(SOL))}\n    other = {KERNEL.format(repr(BROKEN))}\n"
              f"    return good\n\n\n{PROBLEM}")
    assert nb.kernels["map"].source == SOL and nb.issues == []


def test_a_cell_stops_at_an_error_as_python_stops_it():
    # The division fails, so the rest of the cell never runs: the kernel is the one built before.
    nb = read(f"k = {KERNEL.format(repr(SOL))}\n1 / 0\nk = {KERNEL.format(repr(BROKEN))}\n",
              "source = 'next cell runs'\n")
    assert nb.kernels["map"].source == SOL


def test_a_module_global_set_through_main_is_read():
    nb = read(f"import __main__\n__main__.SOURCE = {SOL!r}\nk = {KERNEL.format('SOURCE')}\n")
    assert nb.kernels["map"].source == SOL


@pytest.mark.parametrize(("cell", "construct"), [
    # The kernel object changed after it was built, or handed to code that may return another.
    (f"k = {KERNEL.format('SOURCE')}\nk.source = {BROKEN!r}\n", "changed by `k.source = ...`"),
    (f"import dataclasses\ndef map_test(a):\n    k = {KERNEL.format('SOURCE')}\n"
     f"    return dataclasses.replace(k, source={BROKEN!r})\n\n\n{PROBLEM}", "the kernel map_test() returns"),
    # A list changed in a way the grader does not follow (sort), after an alias was taken.
    ("lines = SOURCE.split('\\n')\nkept = lines\nlines.sort()\nk = " + KERNEL.format("'\\n'.join(kept)") + "\n",
     ".sort()"),
    # The notebook's variables changed through a handle on its namespace.
    (f"import sys\nsys.modules['__main__'].SOURCE = {BROKEN!r}\nk = {KERNEL.format('SOURCE')}\n", "sys.modules"),
    (f"import inspect\ninspect.currentframe().f_globals['SOURCE'] = {BROKEN!r}\nk = {KERNEL.format('SOURCE')}\n",
     "currentframe"),
    (f"get_ipython().user_ns['SOURCE'] = {BROKEN!r}\nk = {KERNEL.format('SOURCE')}\n", "user_ns"),
    (f"import builtins\ngetattr(builtins, 'exec')('SOURCE = 1')\nk = {KERNEL.format('SOURCE')}\n", "getattr"),
    # A name nothing bound raises NameError (or was bound by something not followed): either may be.
    (f"k = {KERNEL.format('SOURCE')}\nundefined_helper\nk = {KERNEL.format(repr(BROKEN))}\n",
     "whether code cell 3 stops at an error (at line 2)"),
    # A library function or MetalKernel itself replaced.
    (f"import textwrap\ntextwrap.dedent = str.upper\nk = {KERNEL.format('textwrap.dedent(SOURCE)')}\n",
     "the value of `textwrap.dedent(SOURCE)`"),
    (f"import metal_puzzles\nmetal_puzzles.MetalKernel = dict\nk = {KERNEL.format('SOURCE')}\n",
     "changes what MetalKernel or MetalProblem do"),
    # MetalKernel handed to code that may call it with any source.
    (f"k = {KERNEL.format('SOURCE')}\nimport functools\nfunctools.partial(MetalKernel, name='map')(source={BROKEN!r})\n",
     "MetalKernel handed to"),
])
def test_changes_the_grader_cannot_follow_make_the_kernel_unreadable(cell, construct):
    nb = read(f"SOURCE = {SOL!r}\n", cell)
    kernel = nb.kernels["map"]
    assert kernel.source is None and construct in kernel.problem, kernel.problem


def test_the_note_reaches_results_json_the_report_and_metal_puzzles_check(tmp_path, capsys):
    path = tmp_path / "student.ipynb"
    path.write_bytes(notebook(f"source = open('map.metal').read()\nk = {KERNEL.format('source')}\n"))
    run = grade_submissions([path], limits=LIMITS, workers=1, progress=False, seed=1)
    out = tmp_path / "out"
    write_outputs(run, out)
    student = json.loads((out / "results.json").read_text(encoding="utf-8"))["students"][0]
    assert student["puzzles"]["map"]["status"] == "missing"
    assert "cannot be read without running the notebook" in student["puzzles"]["map"]["reason"]
    assert any("cannot be read without running the notebook" in i and "code cell 2, line 1" in i
               for i in student["issues"])
    report = (out / student["report"]).read_text(encoding="utf-8")
    assert "cannot be read without running the notebook" in report
    assert main(["check", str(path), "--workers", "1"]) == 1
    printed = " ".join(capsys.readouterr().out.split())
    assert "cannot be read without running the notebook" in printed and "open('map.metal').read()" in printed


def test_the_students_python_is_never_run(tmp_path):
    marker = tmp_path / "ran"
    nb = read(f"import os\nos.system('touch {marker}')\nopen({str(marker)!r}, 'w').close()\n"
              f"def map_test(a):\n    open({str(marker)!r}, 'w').close()\n    return {KERNEL.format(repr(SOL))}\n\n\n"
              f"{PROBLEM}")
    assert nb.kernels["map"].source == SOL and not marker.exists()


# ------------------------------------------------------------------ the witness of check()
def check_output(source: str, kernel: str = "map") -> dict:
    return nbformat.v4.new_output("display_data", data={"text/plain": "Passed: ..."},
                                  metadata={METADATA_KEY: witness_record(kernel, source, "")})


def test_a_witness_that_agrees_adds_no_note():
    nb = read(f"def map_test(a):\n    return {KERNEL.format(repr(SOL))}\n\n\n{PROBLEM}", "problem.check()",
              outputs={2: [check_output(SOL)]})
    assert nb.kernels["map"].source == SOL and nb.issues == []


def test_a_witness_of_another_kernel_is_a_note_naming_the_first_line_that_differs():
    # The notebook's last check() ran an earlier version (the cell was edited and not run again).
    ran = SOL.replace("+ 10", "+ 11")
    line = next(n for n, text in enumerate(SOL.split("\n"), start=1) if "+ 10" in text)
    nb = read(f"def map_test(a):\n    return {KERNEL.format(repr(SOL))}\n\n\n{PROBLEM}", "problem.check()",
              outputs={2: [check_output(ran)]})
    assert nb.kernels["map"].source == SOL  # the grade is the grader's reading
    (note,) = nb.issues
    assert "your notebook's last check() (code cell 3) ran a different kernel from the one the grader read" in note
    assert f"line {line} of the kernel's source" in note


def test_the_last_check_by_execution_count_is_the_one_compared():
    early, late = check_output(SOL.replace("+ 10", "+ 11")), check_output(SOL)
    nb = extract_from_bytes(notebook(f"def map_test(a):\n    return {KERNEL.format(repr(SOL))}\n\n\n{PROBLEM}",
                                     "problem.check()", "problem.check()",
                                     outputs={3: [early], 2: [late]}), "x.ipynb")
    assert [i for i in nb.issues if "check()" in i]  # cell 3 ran last (execution count 3)
    nb = extract_from_bytes(notebook(f"def map_test(a):\n    return {KERNEL.format(repr(SOL))}\n\n\n{PROBLEM}",
                                     "problem.check()", "problem.check()",
                                     outputs={2: [early], 3: [late]}), "x.ipynb")
    assert nb.issues == []


@pytest.mark.parametrize("metadata", [
    {METADATA_KEY: "not a record"},
    {METADATA_KEY: {"check": {"kernel": "map", "sha256": "zz", "source_lines": [], "header_lines": []}}},
    {METADATA_KEY: {"check": {"kernel": ["map"], "sha256": "ab", "source_lines": [], "header_lines": []}}},
    {METADATA_KEY: {"check": {"kernel": "map", "sha256": "ab", "source_lines": [1], "header_lines": []}}},
])
def test_a_malformed_witness_is_ignored(metadata):
    output = nbformat.v4.new_output("display_data", data={"text/plain": "x"}, metadata=metadata)
    nb = read(f"def map_test(a):\n    return {KERNEL.format(repr(SOL))}\n", outputs={1: [output]})
    assert nb.kernels["map"].source == SOL and nb.issues == []


def test_check_in_jupyter_records_the_witness_of_the_kernel_it_checked(tmp_path: Path):
    nbclient = pytest.importorskip("nbclient")
    cells = [f"def map_test(a):\n    return {KERNEL.format(repr(SOL))}\n\n\n{PROBLEM}", "problem.check()"]
    nb = nbformat.reads(notebook(*cells).decode(), as_version=4)
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    (output,) = [o for o in nb.cells[2].outputs if METADATA_KEY in o.get("metadata", {})]
    assert output.data["text/plain"].startswith("Passed:")
    assert output.metadata[METADATA_KEY] == witness_record("map", SOL, "")
    # Edited after it ran: the grader reads the new text, and says the last check() ran another.
    nb.cells[1].source = nb.cells[1].source.replace("+ 10", "+ 10 + 0")
    read_back = extract_from_bytes(nbformat.writes(nb).encode(), "x.ipynb")
    assert "+ 10 + 0" in read_back.kernels["map"].source
    assert any("ran a different kernel" in i for i in read_back.issues)


# ------------------------------------------------------------------ the evaluator's own bounds
#: What the reader is meant to say about a cell: a diagnostic that names the cell (and the kernel and its
#: line where there is one).
LOCATED = re.compile(r"code cell \d+ |kernel '[^']*' \(code cell \d+, line \d+\): ")
#: extract.py's safety net: any ValueError, OverflowError, RecursionError, MemoryError or UnicodeError that
#: escapes the reader's own handling becomes this note, so that a grading run goes on. It names the cell
#: but explains nothing: on real Python it is the reader failing, whatever the exception's type.
SAFETY_NET = re.compile(r"code cell \d+ could not be read \(")


def internal_errors(raw: bytes, name: str) -> list[str]:
    """What went wrong inside the reader on notebook ``raw``: an exception that escaped it, or a
    note that is not one of the located diagnostics it is meant to give (the safety net's above all)."""
    try:
        nb = extract_from_bytes(raw, name)
    except Exception as exc:  # noqa: BLE001 - any escape is the finding
        return [f"{name}: {type(exc).__name__}: {exc}"]
    return [f"{name}: {issue}" for issue in nb.issues if SAFETY_NET.match(issue) or not LOCATED.match(issue)]


def stdlib_notebooks(count: int) -> list[tuple[bytes, str]]:
    """Real modules (the standard library's) as notebooks, one cell per part between blank lines."""
    notebooks = []
    for module in sorted(Path(json.__file__).parent.parent.glob("*.py"))[:count]:
        text = module.read_text(encoding="utf-8", errors="replace")
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(part) for part in text.split("\n\n\n")]
        notebooks.append((nbformat.writes(nb).encode(), module.name))
    return notebooks


def test_any_python_is_read_without_an_internal_error():
    # Every construct either is followed or makes what it changes unknown, with a located note;
    # nothing escapes, and nothing is swallowed by the safety net.
    failures = [f for raw, name in stdlib_notebooks(60) for f in internal_errors(raw, name)]
    assert failures == []


@pytest.mark.parametrize("planted", [ValueError("planted"), OverflowError("planted"), KeyError("planted")])
def test_an_internal_error_of_any_kind_is_caught_by_the_check(monkeypatch, planted):
    # The check above would pass a reader whose ValueError the safety net turned into a note:
    # plant one where the reader follows an assignment, and the check must name it.
    def fail(self, stmt, scope):
        raise planted
    monkeypatch.setattr(Evaluator, "stmt_Assign", fail)
    (raw, name), = stdlib_notebooks(1)
    failures = internal_errors(raw, name)
    assert failures and all(type(planted).__name__ in f for f in failures), failures


@pytest.mark.parametrize(("cells", "note"), [
    (["\n".join(f"v{i} = 'x{i}'" for i in range(5000)),
      "import random\nfor i in range(10000):\n    if random.random():\n        v1 = 'y'\n"], "more than 400,000 steps"),
    (["s = ''\nfor i in range(10000):\n    for j in range(10000):\n        s = s\n"], "more than 400,000 steps"),
    (["def f(n):\n    return f(n)\nf(1)\n"], "calls nested more than 40 deep"),
    (["while True:\n    pass\n"], "never finishes"),
])
def test_work_without_end_stops_at_the_evaluators_bounds_and_is_reported(cells, note):
    nb = read(*cells, f"k = {KERNEL.format(repr(SOL))}\n")
    assert any(note in issue for issue in nb.issues), nb.issues
    assert nb.kernels["map"].source == SOL  # what comes after is read again


def test_a_string_that_doubles_past_the_bound_is_not_built():
    nb = read(f"s = {SOL!r}\nfor i in range(64):\n    s = s + s\nk = {KERNEL.format('s')}\n")
    assert "longer than the grader keeps" in nb.kernels["map"].problem
