"""The escaping functions every writer uses, one format at a time."""

from __future__ import annotations

import csv
import io

from metal_puzzles.grading.safe_text import (
    clean_strings,
    csv_cell,
    markup,
    md_code_block,
    md_inline,
    printable,
    report_file_name,
)


def test_printable_escapes_what_would_act_or_not_encode() -> None:
    assert printable("caf\udce9") == "caf\\xe9"  # a byte that was not UTF-8 (surrogateescape)
    assert printable("a\ud800b") == "a\\ud800b"  # a lone surrogate
    assert printable("red\x1b[31m") == "red\\x1b[31m"  # a terminal escape sequence
    assert printable("evil\u202etxt.exe") == "evil\\u202etxt.exe"  # a bidirectional override
    assert printable("a\nb\tc") == "a\\nb\\tc"
    assert printable("a\nb\tc", keep_newlines=True) == "a\nb\tc"
    assert printable("ordinary Ünïcode") == "ordinary Ünïcode"
    for s in ("\udcff", "\ud800\udfff", "\x00"):
        printable(s).encode("utf-8")  # never raises


def test_csv_cells_never_start_a_formula() -> None:
    for dangerous in ("=1+1", "+1", "-1", "@SUM(A1)", '=HYPERLINK("x","y")'):
        cell = csv_cell(dangerous)
        assert cell.startswith("'") and cell[1:] == dangerous
    # A leading tab or carriage return is written as a backslash escape, which starts nothing.
    assert csv_cell("\t=1") == "\\t=1" and csv_cell("\r=1") == "\\r=1"
    assert csv_cell("alice") == "alice"
    buf = io.StringIO()
    csv.writer(buf).writerow([csv_cell('=HYPERLINK("a,b")'), "1"])
    assert next(csv.reader(io.StringIO(buf.getvalue()))) == ["'=HYPERLINK(\"a,b\")", "1"]


def test_markdown_inline_renders_literally() -> None:
    s = md_inline("<script>alert(1)</script> *b* [l](u) | `c` & #h")
    assert "<" not in s and ">" not in s
    assert "&lt;script&gt;" in s and "\\*b\\*" in s and "\\[l\\]\\(u\\)" in s and "\\|" in s and "&amp;" in s


def test_markdown_code_block_cannot_be_closed_from_inside() -> None:
    block = md_code_block("a\n````\n<b>")
    fence = block.split("text\n", 1)[0]
    assert fence == "`````" and block.endswith("\n" + fence)
    assert block.count(fence) == 2


def test_rich_markup_is_escaped() -> None:
    from rich.console import Console

    console = Console(file=io.StringIO(), width=200)
    console.print(markup("[/x] [bold]y[/bold]"))
    assert "[/x] [bold]y[/bold]" in console.file.getvalue()


def test_report_names_are_unique_and_plain() -> None:
    names = {report_file_name(i, sid) for i, sid in enumerate(["a b", "a_b", "a/b", "..", "\udcff", ""], start=1)}
    assert len(names) == 6
    assert all(n.isascii() and "/" not in n and not n.startswith(".") for n in names)


def test_clean_strings_makes_any_record_utf8() -> None:
    record = {"id\ud800": ["x\udcff", {"k": "line\nnext"}], "n": 1}
    cleaned = clean_strings(record)
    assert cleaned == {"id\\ud800": ["x\\xff", {"k": "line\nnext"}], "n": 1}
