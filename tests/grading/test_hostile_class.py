"""A hostile class: one submission for every attack on the grader, graded together with a few
well-behaved students by the ``metal-puzzles grade`` command.

For every attack: the run completes, every well-behaved student's grades are exactly those of a
clean run (same seed), the hostile submission is reported with its reason, the CSV and JSON
parse, and nothing outside the submissions folder is read. Large files are built at test time.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from .conftest import (
    CLEAN_IDS,
    MAP_OK,
    SEED,
    Graded,
    clean_students,
    grade,
    grade_quietly,
    grades_of,
    kernel_cell,
    notebook_json,
    write_nb,
)


def call_tree(depth: int = 40) -> str:
    """A header whose f(x) makes 2**depth calls: no loop anywhere."""
    fns = "float f0(float x) { return x + 1.0f; }\n"
    fns += "".join(f"float f{k}(float x) {{ return f{k - 1}(x) + f{k - 1}(x); }}\n" for k in range(1, depth))
    return fns + f"float f(float x) {{ return f{depth - 1}(x); }}\n"


def template_chain(depth: int = 40) -> str:
    """The same through templates: each level a template instantiated from the one above."""
    fns = "template<typename T> T g0(T x) { return x + T(1); }\n"
    fns += "".join(f"template<typename T> T g{k}(T x) {{ return g{k - 1}(x) + g{k - 1}<T>(x); }}\n"
                   for k in range(1, depth))
    return fns + f"float f(float x) {{ return g{depth - 1}(x); }}\n"


def balanced_sum(terms: int) -> str:
    if terms == 1:
        return "x"
    return f"({balanced_sum(terms // 2)} + {balanced_sum(terms - terms // 2)})"


#: Kernels with work the step budget must bound, one for each kernel of a small notebook.
EXPONENTIAL_CELLS = [
    kernel_cell("map", "uint i = thread_position_in_grid.x;\nout[i] = f(a[i]);\n", call_tree()),
    kernel_cell("zip", "uint i = thread_position_in_grid.x;\nout[i] = f(a[i]) + b[i];\n", template_chain()),
    # Straight-line code as long as the compiler takes (about 45,000 tokens).
    kernel_cell("guard", "uint i = thread_position_in_grid.x;\nfloat x = 0.0f;\n" + "x++;\n" * 15_000
                + "if (i < a_shape[0]) { out[i] = x; }\n"),
    # A long expression in a loop: each iteration as much work as a thousand statements.
    kernel_cell("map_2D", "uint2 t = thread_position_in_grid.xy;\nfloat x = 1.0f;\n"
                f"for (int k = 0; k < 1000000; k++) {{ x = {balanced_sum(1000)} * 0.0f; }}\n"
                "out[t.y * a_shape[0] + t.x] = x;\n"),
    # Macros doubling 30 times.
    kernel_cell("broadcast", "#define D0 a[0]\n" + "".join(f"#define D{k} D{k - 1} + D{k - 1}\n" for k in range(1, 31))
                + "uint i = thread_position_in_grid.x;\nout[i] = D30;\n"),
]

SCRIPT_ID = "<script>alert(1)</script>"
MARKUP_ID = "[/x] [bold red]"
LONE_SURROGATE = "\ud800"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> tuple[Graded, Path]:
    root = tmp_path_factory.mktemp("hostile")
    d = root / "class"
    d.mkdir()
    clean_students(d)
    outside = root / "outside"
    outside.mkdir()
    write_nb(outside / "victim.ipynb", [kernel_cell("map", MAP_OK)])
    os.mkfifo(outside / "pipe.ipynb")

    # Malformed JSON and wrong types.
    (d / "deep_json.ipynb").write_text("[" * 200_000 + "]" * 200_000)
    (d / "bigint_json.ipynb").write_text('{"nbformat": ' + "9" * 5000 + ', "cells": []}')
    write_nb(d / "bigint_cell.ipynb", ["x = " + "1" * 5000, kernel_cell("map", MAP_OK)])
    (d / "cells5.ipynb").write_text('{"nbformat": 4, "nbformat_minor": 5, "cells": 5}')
    wrong = json.loads(notebook_json([kernel_cell("map", MAP_OK)]))
    wrong["cells"][:0] = [5, None, {"cell_type": "code", "source": {"a": 1}},
                          {"cell_type": "code", "source": [1, 2]}, {"cell_type": ["code"]}]
    (d / "wrong_types.ipynb").write_text(json.dumps(wrong))
    # Text that must not crash or act in any output.
    write_nb(d / "surrogate.ipynb", [kernel_cell("map", f"// {LONE_SURROGATE}\nuint i = thread_position_in_grid.x;\n"
                                                f"out[i] = a[i] {LONE_SURROGATE} 10;\n")])
    write_nb(os.fsencode(d) + b"/caf\xe9.ipynb", [kernel_cell("map", MAP_OK)])
    write_nb(d / '=HYPERLINK("evil.example","prize").ipynb', [kernel_cell("map", MAP_OK)])
    write_nb(d / "-5.ipynb", [kernel_cell("map", MAP_OK)])
    write_nb(d / "script.ipynb", [kernel_cell("map", "``` </script><script>alert(2)</script>\nnot a kernel")])
    write_nb(d / "markup.ipynb", [kernel_cell("map", MAP_OK)])
    write_nb(d / "a b.ipynb", [kernel_cell("map", "uint i = thread_position_in_grid.x;\nout[i] = 0;\n")])
    write_nb(d / "a_b.ipynb", [kernel_cell("map", MAP_OK)])
    # Files that are not the class's own regular files.
    (d / "linked_out.ipynb").symlink_to(outside / "victim.ipynb")
    (d / "linked_dir").symlink_to(outside, target_is_directory=True)
    (d / "zero.ipynb").symlink_to("/dev/zero")
    (d / "pipe_out.ipynb").symlink_to(outside / "pipe.ipynb")
    os.mkfifo(d / "fifo.ipynb")
    (d / "fifo_link.ipynb").symlink_to(d / "fifo.ipynb")
    (d / "alice_symlink.ipynb").symlink_to(d / "alice.ipynb")  # inside the tree: fine
    # Work the budgets must bound.
    write_nb(d / "exponential.ipynb", EXPONENTIAL_CELLS)
    # Large notebooks: 5 MB of Python in one cell (the parser would take gigabytes), 78 MB in all.
    write_nb(d / "big5.ipynb", ["x = 1\n" * 900_000, kernel_cell("map", MAP_OK)])
    with open(d / "big78.ipynb", "w") as f:
        f.write('{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [')
        cell = json.dumps({"cell_type": "code", "metadata": {}, "outputs": [], "source": "y = 2\n" * 100_000})
        f.write(",".join([cell] * 130))
        f.write("]}")

    mapping = root / "ids.csv"
    mapping.write_text(f'file,id\nscript.ipynb,"{SCRIPT_ID}"\nmarkup.ipynb,"{MARKUP_ID}"\n', encoding="utf-8")
    g = grade_quietly(tmp_path_factory, [d], root / "out", "--seed", SEED, "--mapping", str(mapping))
    return g, root


def _issues(g: Graded, sid: str) -> str:
    s = g.student(sid)
    return " | ".join(s["issues"] + [p.get("reason") or "" for p in s["puzzles"].values()])


def test_clean_run_with_a_one_second_limit_grades_correctly(clean_run: Graded) -> None:
    assert clean_run.status == 0, clean_run.stderr
    rows = clean_run.rows()
    assert (rows["alice"]["map"], rows["alice"]["zip"], rows["alice"]["guard"], rows["alice"]["total"]) == \
        ("1", "0", "0.5", "1.5")
    assert (rows["bob"]["map"], rows["bob"]["zip"], rows["bob"]["total"]) == ("1", "1", "2")
    assert grades_of(clean_run, "alice_link") == grades_of(clean_run, "alice")  # hard links are fine
    assert clean_run.results()["seed"] == int(SEED)


def test_hostile_run_completes_and_others_keep_their_grades(hostile, clean_run: Graded) -> None:
    g, root = hostile
    assert g.status == 0, g.stderr
    assert "Traceback" not in g.stderr
    for sid in CLEAN_IDS:
        assert grades_of(g, sid) == grades_of(clean_run, sid), sid
    assert grades_of(g, "alice_symlink") == grades_of(clean_run, "alice")  # a link inside the tree
    # Every file under the folder is a row, exactly once, and the JSON agrees with the CSV.
    rows = g.rows()
    data = g.results()
    assert len(rows) == len(data["students"]) == len([f for f in os.listdir(root / "class") if f.endswith(".ipynb")]) == 25
    assert data["complete"] is True and data["seed"] == int(SEED)


@pytest.mark.parametrize(("sid", "reason"), [
    ("deep_json", "nested too deeply"),
    ("bigint_json", "Exceeds the limit (4300"),  # Python 3.10 says "(4300) for", 3.11 "(4300 digits) for"
    ("cells5", "'cells' is a number, not a list"),
    ("linked_out", "outside the submissions folder"),
    ("zero", "outside the submissions folder"),
    ("pipe_out", "outside the submissions folder"),
    ("fifo", "a FIFO (named pipe), not a notebook file"),
    ("fifo_link", "a symbolic link to a FIFO"),
    ("big78", "over the 64 MiB limit per notebook"),
])
def test_unreadable_submission_is_reported_with_its_reason(hostile, sid: str, reason: str) -> None:
    g, _ = hostile
    assert reason in _issues(g, sid)
    s = g.student(sid)
    assert s["total"] == 0 and s["status"] == "complete"
    assert all(p["status"] == "missing" for p in s["puzzles"].values())


@pytest.mark.parametrize(("sid", "reason"), [
    ("bigint_cell", "code cell 2 is not valid Python"),
    ("wrong_types", "cell 1 is a number, not an object"),
    ("big5", "code cell 2 is 5273 KiB, longer than the grader reads"),
])
def test_bad_cells_are_skipped_and_the_rest_graded(hostile, sid: str, reason: str) -> None:
    g, _ = hostile
    assert reason in _issues(g, sid)
    assert g.rows()[sid]["map"] == "1"


def test_wrong_types_in_cells_are_each_reported(hostile) -> None:
    issues = _issues(hostile[0], "wrong_types")
    assert "cell 2 is null, not an object" in issues
    assert "code cell 1: its source is an object, not text" in issues
    assert "code cell 2: its source is a list, not text" in issues


def test_symlinks_out_of_the_tree_are_not_read(hostile) -> None:
    g, root = hostile
    # The victim's solved kernel would pass; the link's owner gets nothing from it.
    assert g.rows()["linked_out"]["map"] == "0"
    assert not any("victim" in s["file"] or "outside" in s["file"] for s in g.results()["students"])
    # A link to a directory outside is not followed, and the run says so.
    assert "linked_dir: a symbolic link to a directory; not followed" in g.stderr
    assert any("linked_dir" in p for p in g.results()["problems"])


def test_non_utf8_name_is_shown_escaped(hostile) -> None:
    g, _ = hostile
    rows = g.rows()
    assert rows["caf\\xe9"]["map"] == "1"
    assert re.fullmatch(r"reports/\d{3}-caf_\.md", rows["caf\\xe9"]["report"])
    assert "report for caf\\\\xe9" in g.report("caf\\xe9")  # Markdown for a literal backslash


def test_lone_surrogate_in_a_kernel_is_written_escaped(hostile) -> None:
    g, _ = hostile
    s = g.student("surrogate")
    assert s["puzzles"]["map"]["status"] == "compile-error"
    assert "\\ud800" in s["puzzles"]["map"]["report"]
    assert "\\ud800" in g.report("surrogate")
    (g.out / "results.json").read_bytes().decode("utf-8")  # valid UTF-8, no lone surrogate inside


def test_formula_ids_are_neutralised_in_the_csv(hostile) -> None:
    g, _ = hostile
    rows = g.rows()
    assert "'=HYPERLINK(\"evil.example\",\"prize\")" in rows
    assert "'-5" in rows
    assert not any(sid.startswith(("=", "+", "-", "@")) for sid in rows)
    assert not any(r["report"].startswith(("=", "+", "-", "@")) for r in rows.values())
    # The JSON keeps the id as it is (it is data, not a spreadsheet).
    assert any(s["id"] == '=HYPERLINK("evil.example","prize")' for s in g.results()["students"])


def test_html_in_a_report_field_is_escaped(hostile) -> None:
    g, _ = hostile
    text = g.report(SCRIPT_ID)
    outside = re.sub(r"^(`{3,})text\n.*?\n\1$", "", text, flags=re.S | re.M)
    assert "<" not in outside and "&lt;script&gt;" in outside
    # The kernel's own ``` cannot close the block that quotes it.
    quoted = [m for m in re.finditer(r"^(`{3,})text\n(.*?)\n\1$", text, flags=re.S | re.M) if "alert(2)" in m[2]]
    assert len(quoted) == 1 and len(quoted[0][1]) == 4 and "``` </script><script>" in quoted[0][2]


def test_rich_markup_in_a_name_is_printed_literally(hostile) -> None:
    g, _ = hostile
    assert MARKUP_ID in g.stdout
    assert g.rows()[MARKUP_ID]["map"] == "1"


def test_names_that_sanitise_alike_get_their_own_reports(hostile) -> None:
    g, _ = hostile
    rows = g.rows()
    assert rows["a b"]["report"] != rows["a_b"]["report"]
    assert (rows["a b"]["map"], rows["a_b"]["map"]) == ("0", "1")
    assert "report for a b" in g.report("a b") and "report for a\\_b" in g.report("a_b")
    reports = sorted(p.name for p in (g.out / "reports").iterdir())
    assert len(reports) == len(rows) == len(set(r["report"] for r in rows.values()))


def test_loop_free_exponential_kernels_stop_at_the_budget(hostile) -> None:
    g, _ = hostile
    p = g.student("exponential")["puzzles"]
    for pid in ("map", "zip", "map_2d"):
        kinds = {f["kind"] for t in p[pid]["tests"] for f in t["findings"]}
        assert p[pid]["status"] == "findings" and "step-budget" in kinds, pid
    assert p["guard"]["status"] == "wrong"  # 15,000 statements: within the budget, and quick
    assert p["broadcast"]["status"] == "compile-error" and "tokens" in p["broadcast"]["report"]


def test_78_mb_notebook_read_under_the_worker_limits(tmp_path, capsys) -> None:
    """Above the size cap, a 78 MB notebook is read in a worker, within its memory limit."""
    d = tmp_path / "class"
    d.mkdir()
    with open(d / "big78.ipynb", "w") as f:
        f.write('{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [')
        cell = json.dumps({"cell_type": "code", "metadata": {}, "outputs": [], "source": "y = 2\n" * 100_000})
        f.write(",".join([cell] * 130 + [json.dumps({"cell_type": "code", "source": kernel_cell("map", MAP_OK)})]))
        f.write("]}")
    assert (d / "big78.ipynb").stat().st_size > 78e6
    g = grade(capsys, [d], tmp_path / "out", "--max-notebook-size", "100", "--seed", SEED)
    assert g.status == 0, g.stderr
    issues = _issues(g, "big78")
    assert "code cell 1 is 585 KiB, longer than the grader reads" in issues
    assert "... and 100 more issue(s) like these" in issues
    assert g.rows()["big78"]["map"] == "1"


def test_device_file_is_not_read(tmp_path, capsys) -> None:
    d = tmp_path / "class"
    d.mkdir()
    try:
        os.mknod(d / "dev.ipynb", 0o600 | 0o020000, os.makedev(1, 5))  # a character device (/dev/zero's)
    except PermissionError:
        pytest.skip("creating a device file needs privileges this machine does not give")
    write_nb(d / "ok.ipynb", [kernel_cell("map", MAP_OK)])
    g = grade(capsys, [d], tmp_path / "out", "--seed", SEED)
    assert g.status == 0
    assert "a device, not a notebook file" in _issues(g, "dev")
    assert g.rows()["ok"]["map"] == "1"
