"""Second red team, ids and files: every student id is unique whatever the files are called,
results.json maps each id to its file, and no file that looks like a notebook vanishes."""

from __future__ import annotations

import contextlib
import csv
import os
import unicodedata
from pathlib import Path

import pytest

from metal_puzzles.grading.ids import MappingError, assign_ids, load_mapping
from metal_puzzles.grading.submissions import collect_submissions

from .conftest import MAP_OK, grade, kernel_cell, notebook_json, write_nb


def _ok() -> list[str]:
    return [kernel_cell("map", MAP_OK)]


def _ids(root: Path, mapping: dict[str, str] | None = None) -> dict[str, str]:
    subs, _ = collect_submissions([root])
    assigned, _ = assign_ids(subs, mapping or {})
    return {a.id: s.relative for s, a in zip(subs, assigned, strict=True)}


def test_a_suffixed_name_and_a_duplicate_never_share_an_id(tmp_path) -> None:
    (tmp_path / "sub").mkdir()
    for name in ("alice.ipynb", "alice (2).ipynb", "sub/alice.ipynb"):
        write_nb(tmp_path / name, [])
    write_nb(tmp_path / "sub" / "alice (2).ipynb", [])  # two notebooks: not a student's own folder
    ids = _ids(tmp_path)
    assert len(ids) == 4
    assert ids["alice"] == "alice.ipynb" and ids["alice (2)"] == "alice (2).ipynb"


def test_two_copies_of_one_name_and_its_suffixed_form(tmp_path) -> None:
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        write_nb(tmp_path / d / "x.ipynb", [])
        write_nb(tmp_path / d / "y.ipynb", [])  # two notebooks a folder: ids cannot be the folder's
    write_nb(tmp_path / "x (2).ipynb", [])
    ids = _ids(tmp_path)
    assert len(ids) == 5 and ids["x (2)"] == "x (2).ipynb"


def test_per_student_folders_are_named_after_the_folder(tmp_path) -> None:
    for who in ("alice", "bob"):
        (tmp_path / who).mkdir()
        write_nb(tmp_path / who / "puzzles.ipynb", [])
    assert _ids(tmp_path) == {"alice": "alice/puzzles.ipynb", "bob": "bob/puzzles.ipynb"}


def test_an_unmapped_file_cannot_take_a_mapped_id(tmp_path) -> None:
    write_nb(tmp_path / "A001.ipynb", [])  # sorts first, but the mapping's id wins
    write_nb(tmp_path / "alice.ipynb", [])
    subs, _ = collect_submissions([tmp_path])
    assigned, _ = assign_ids(subs, {"alice.ipynb": "A001"})
    by_file = {s.relative: a for s, a in zip(subs, assigned, strict=True)}
    assert by_file["alice.ipynb"].id == "A001"
    assert by_file["A001.ipynb"].id == "A001 (2)"
    assert any("not in the --mapping" in i for i in by_file["A001.ipynb"].issues)


@pytest.mark.parametrize("text", [
    "\ufeffalice.ipynb,A001\r\nbob.ipynb,A002\r\n",  # Excel's CSV UTF-8: a BOM, no header
    "\ufeffFile;Student\r\nalice.ipynb;A001\r\nbob.ipynb;A002\r\n",  # a header, semicolons
    "alice.ipynb\tA001\nbob.ipynb\tA002\n",  # tabs
])
def test_a_spreadsheets_mapping_is_read(tmp_path, text) -> None:
    path = tmp_path / "ids.csv"
    path.write_bytes(text.encode("utf-8"))
    assert load_mapping(path) == {"alice.ipynb": "A001", "bob.ipynb": "A002"}


@pytest.mark.parametrize("text, says", [
    ("", "holds no"),
    ("alice.ipynb\n", "line 1"),
    ("alice.ipynb,A1\nalice.ipynb,A2\n", "mapped twice"),
    ("alice.ipynb," + "x" * 500 + "\n", "characters long"),
])
def test_a_mapping_it_cannot_use_is_refused_with_where(tmp_path, text, says) -> None:
    path = tmp_path / "ids.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(MappingError, match=says):
        load_mapping(path)


def test_names_that_are_not_quite_notebooks_are_graded_or_reported(tmp_path) -> None:
    write_nb(tmp_path / "frank.IPYNB", [])
    write_nb(tmp_path / "dave.ipynb ", [])
    (tmp_path / "carol.ipynb.zip").write_bytes(b"PK\x05\x06" + bytes(18))
    (tmp_path / "notes.txt").write_text("not a submission")
    subs, _ = collect_submissions([tmp_path])
    by_name = {os.path.basename(s.path): s for s in subs}
    assert set(by_name) == {"frank.IPYNB", "dave.ipynb ", "carol.ipynb.zip"}
    assert by_name["frank.IPYNB"].readable and by_name["dave.ipynb "].readable
    assert "does not end in '.ipynb'" in by_name["carol.ipynb.zip"].problem
    assert set(_ids(tmp_path)) == {"frank", "dave", "carol"}
    subs, _ = collect_submissions([tmp_path])
    assigned, _ = assign_ids(subs, {})
    issues = {a.id: " ".join(a.issues) for a in assigned}
    assert "is not spelt" in issues["frank"] and "is not spelt" in issues["dave"]


def test_a_thousand_nested_folders_are_walked(tmp_path) -> None:
    deep = str(tmp_path)
    for _ in range(1100):  # one level at a time: makedirs itself recurses
        deep = os.path.join(deep, "d")
        os.mkdir(deep)
    write_nb(Path(deep) / "deep.ipynb", [])
    try:
        subs, problems = collect_submissions([tmp_path])
        assert problems == [] and [Path(s.path).name for s in subs] == ["deep.ipynb"] and subs[0].readable
    finally:  # bottom up, one level at a time: pytest's own clean-up (shutil.rmtree) recurses too
        os.unlink(os.path.join(deep, "deep.ipynb"))
        while deep != str(tmp_path):
            os.rmdir(deep)
            deep = os.path.dirname(deep)


def test_the_class_gets_unique_ids_mapped_to_files_and_totals_that_match(capsys, tmp_path) -> None:
    d = tmp_path / "class"
    (d / "sub").mkdir(parents=True)
    (d / "frank").mkdir()
    for name in ("alice.ipynb", "alice (2).ipynb", "sub/alice.ipynb", "frank/puzzles.ipynb"):
        write_nb(d / name, _ok())
    (d / "carol.ipynb.zip").write_bytes(b"zip")
    g = grade(capsys, [d], tmp_path / "out", "--seed", "3")
    assert g.status == 0, g.stderr
    with open(g.out / "grades.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    results = g.results()
    ids = [r["student"] for r in rows]
    assert len(ids) == len(set(ids)) == 5
    assert sorted(results["ids"]) == sorted(ids)
    assert {Path(p).relative_to(d).as_posix() for p in results["ids"].values()} == {
        "alice.ipynb", "alice (2).ipynb", "sub/alice.ipynb", "frank/puzzles.ipynb", "carol.ipynb.zip"}
    for r in rows:
        st = g.student(r["student"])
        assert float(r["total"]) == st["total"] == sum(p["points"] for p in st["puzzles"].values())
        assert f"Total: {r['total']} /" in g.report(r["student"])
    assert "does not end in '.ipynb'" in " ".join(g.student("carol")["issues"])
    assert g.student("frank")["total"] == 1.0  # graded as the folder's notebook


def test_one_file_named_twice_is_graded_once_and_the_run_says_so(capsys, tmp_path) -> None:
    """`grade class class/alice.ipynb` (issue 27 §5b): alice once, not `alice` and `alice (2)`."""
    d = tmp_path / "class"
    d.mkdir()
    for who in ("alice", "bob"):
        write_nb(d / f"{who}.ipynb", _ok())
    subs, problems = collect_submissions([d, d / "alice.ipynb", str(d) + "/./bob.ipynb", d])
    assert sorted(s.relative for s in subs) == ["alice.ipynb", "bob.ipynb"]
    assert len(problems) == 3 and "alice.ipynb: already named as part of" in problems[0]
    assert "2 of its notebook(s) were already named" in problems[2]
    g = grade(capsys, [d, d / "alice.ipynb"], tmp_path / "out", "--seed", "3")
    assert g.status == 0, g.stderr
    assert sorted(g.rows()) == ["alice", "bob"]
    assert "alice.ipynb: already named as part of" in g.stderr


def test_a_mapping_typed_in_nfc_matches_a_file_saved_in_nfd(tmp_path) -> None:
    """Issue 27 §5a: a mapping typed on Windows (NFC) matches a file macOS saved (NFD)."""
    nfd = unicodedata.normalize("NFD", "José.ipynb")
    write_nb(tmp_path / nfd, _ok())
    mapping = tmp_path / "map.csv"
    mapping.write_text("file,id\n" + unicodedata.normalize("NFC", "José.ipynb") + ",S042\n", encoding="utf-8")
    subs, _ = collect_submissions([tmp_path / nfd])
    assigned, problems = assign_ids(subs, load_mapping(mapping))
    assert problems == [] and [a.id for a in assigned] == ["S042"]


def test_names_spelt_in_nfc_and_nfd_are_one_name_and_get_ids_told_apart(tmp_path) -> None:
    for form in ("NFC", "NFD"):
        write_nb(tmp_path / unicodedata.normalize(form, "José.ipynb"), _ok())
    ids = _ids(tmp_path)
    assert sorted(ids) == ["José", "José (2)"] and all(unicodedata.is_normalized("NFC", i) for i in ids)


def test_ids_that_look_alike_are_flagged_in_results_reports_and_on_stderr(capsys, tmp_path) -> None:
    d = tmp_path / "class"
    d.mkdir()
    cyrillic = "\u0430lice"  # the first letter is CYRILLIC SMALL LETTER A
    for who in ("alice", cyrillic, "bob"):
        write_nb(d / f"{who}.ipynb", _ok())
    g = grade(capsys, [d], tmp_path / "out", "--seed", "3")
    assert g.status == 0, g.stderr
    assert sorted(g.rows()) == sorted(["alice", cyrillic, "bob"])
    assert "student ids that look alike: 'alice', 'аlice'" in g.stderr.replace("\n", " ") or \
        "student ids that look alike: 'аlice', 'alice'" in g.stderr.replace("\n", " ")
    assert any("look alike" in p for p in g.results()["problems"])
    for sid, other in (("alice", cyrillic), (cyrillic, "alice")):
        flagged = " ".join(g.student(sid)["issues"])
        assert f"the id looks like another student's: {other!r}" in flagged
        assert "looks like another student" in g.report(sid)
    assert "U+0430 CYRILLIC SMALL LETTER A" in " ".join(g.student(cyrillic)["issues"])
    assert not any("looks like" in i for i in g.student("bob")["issues"])


@contextlib.contextmanager
def _folders_deeper_than_path_max(root: Path, levels: int, name: str):
    """``levels`` nested folders called ``name`` under ``root``, made and removed a level at a
    time through directory descriptors (their paths are too long to open by name); yields the
    deepest folder's descriptor."""
    fds = [os.open(root, os.O_RDONLY | os.O_DIRECTORY)]
    try:
        for _ in range(levels):
            os.mkdir(name, dir_fd=fds[-1])
            fds.append(os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fds[-1]))
            if len(fds) > 2:  # keep the root, the parent and the child open
                os.close(fds.pop(-2))
        yield fds[-1]
    finally:
        for fd in fds:
            os.close(fd)
        for depth in range(levels, 0, -1):  # bottom up
            fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
            try:
                for _ in range(depth - 1):
                    nxt = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
                    os.close(fd)
                    fd = nxt
                sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
                try:
                    for leftover in os.listdir(sub):  # the files left in it (deeper folders are gone)
                        os.unlink(leftover, dir_fd=sub)
                finally:
                    os.close(sub)
                os.rmdir(name, dir_fd=fd)
            finally:
                os.close(fd)


def test_a_notebook_deeper_than_path_max_beside_alice_and_bob_is_graded(capsys, tmp_path) -> None:
    """Issue 27 §6c: 1,100 folders deep (a path of 8,800 characters, over PATH_MAX) it was
    neither graded nor reported. Every file the walk meets is graded or named."""
    d = tmp_path / "class"
    d.mkdir()
    for who in ("alice", "bob"):
        write_nb(d / f"{who}.ipynb", _ok())
    with _folders_deeper_than_path_max(d, 1100, "folder7") as deepest:
        fd = os.open("deep.ipynb", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=deepest)
        with os.fdopen(fd, "wb") as f:
            f.write(notebook_json(_ok()).encode())
        os.symlink(str(d / "alice.ipynb"), "link.ipynb", dir_fd=deepest)  # too deep to resolve: not followed
        g = grade(capsys, [d], tmp_path / "out", "--seed", "3")
    assert g.status == 0, g.stderr
    rows = g.rows()
    assert len(rows) == 4 and {"alice", "bob"} <= set(rows)
    by_file = {Path(path).name: sid for sid, path in g.results()["ids"].items()}
    assert g.student(by_file["deep.ipynb"])["puzzles"]["map"]["passed"]
    assert g.student(by_file["link.ipynb"])["issues"] == [
        "a symbolic link in a folder nested too deep to resolve it; not read"]
    assert g.results()["problems"] == []
