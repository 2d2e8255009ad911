"""Student ids: from the instructor's mapping file, or from the notebook's name, always unique.

The rules, in order (they are the README's too):

1. A file the ``--mapping`` names gets the id the mapping gives it. Those ids are taken first,
   so an unmapped file cannot claim one (``A001.ipynb`` does not become the mapped ``A001``).
2. Any other file gets its name without ``.ipynb``, except the only notebook of a sub-folder of
   the submissions, which gets the folder's path (a folder per student, as a course site's
   download makes them: ``alice/puzzles.ipynb`` -> ``alice``).
3. An id already taken by any other file gets the first free `` (N)`` suffix, checked against
   every id of the class (so ``alice (2).ipynb`` and a second ``alice`` never share one).

Every id given differently from the file's own name says so in the student's issues, and
results.json maps every id to its file.

Names are compared in Unicode's NFC form (files, ids, mapping entries): a mapping typed on
Windows (NFC) matches a file saved by macOS (NFD), and ``José`` spelt either way is one name,
so two such files get ``José`` and ``José (2)``. Ids that differ only in characters that look
alike (``alice`` and ``аlice`` with a Cyrillic ``а``: the same confusable skeleton, UTS #39)
are flagged in both students' issues and as a problem of the run.
"""

from __future__ import annotations

import csv
import functools
import io
import unicodedata
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from .safe_text import clip, printable
from .submissions import Submission, notebook_stem

#: First cells of a header row (compared case-insensitively); any other first row is data.
_HEADER_WORDS = frozenset({"file", "filename", "file name", "notebook", "path", "submission"})
#: Bytes of a mapping file read at most: a class's mapping is a few KiB.
MAX_MAPPING_BYTES = 16 * 2**20


#: How a problem of one id given to several notebooks starts (the command refuses to grade).
TWICE = "the mapping gives the id"
#: Characters of an id: a name, not a document.
MAX_ID_CHARS = 200
#: How a problem of ids that look alike starts (a warning: the run goes on).
LOOK_ALIKE = "student ids that look alike"


def nfc(text: str) -> str:
    """``text`` in Unicode's composed form (NFC), as names are compared here."""
    return unicodedata.normalize("NFC", text)


@functools.lru_cache(maxsize=1)
def _prototypes() -> dict[str, str]:
    """Each character of Unicode's confusables data mapped to one representative of the
    characters it is confusable with (the classes of confusables.txt, as the
    confusable_homoglyphs package ships them: its data lists every pair both ways)."""
    from confusable_homoglyphs.confusables import confusables_data

    parent: dict[str, str] = {}

    def find(c: str) -> str:
        while parent.get(c, c) != c:
            c = parent[c]
        return c

    for char, homoglyphs in confusables_data.items():
        for h in homoglyphs:
            other = h["c"].strip("\u200e\u200f")  # right-to-left glyphs come wrapped in direction marks
            if len(char) == 1 and len(other) == 1:
                a, b = sorted((find(char), find(other)))
                if a != b:
                    parent[b] = a
    return {c: find(c) for c in list(parent)}


def skeleton(text: str) -> str:
    """UTS #39's skeleton: two strings with the same skeleton look alike."""
    table = _prototypes()
    return unicodedata.normalize("NFD", "".join(table.get(c, c) for c in unicodedata.normalize("NFD", text)))


def _differences(a: str, b: str) -> str:
    """The characters of ``a`` that are not ``b``'s, named (``'а' U+0430 CYRILLIC SMALL LETTER A``)."""
    named = [f"{c!r} U+{ord(c):04X} {unicodedata.name(c, 'unnamed')}" for c in dict.fromkeys(a) if c not in b]
    return ", ".join(named[:5]) or "none"


class MappingError(Exception):
    """The mapping file cannot be used; the message names the file and line."""


@dataclass(frozen=True)
class IdAssignment:
    """An id for one submission, and why it is not simply the file's name (if it is not)."""

    id: str
    issues: list[str] = field(default_factory=list)


def load_mapping(path: str | Path | None) -> dict[str, str]:
    """A CSV of 'notebook file name, student id' rows, as a spreadsheet saves it: a header row or
    none, a byte-order mark or none, commas, semicolons or tabs. Raises ``MappingError``."""
    if path is None:
        return {}
    mapping: dict[str, str] = {}
    where: dict[str, int] = {}
    for line, row in mapping_rows(path):
        cells = [c.strip() for c in row]
        if line == 1 and cells[0].lower() in _HEADER_WORDS:
            continue
        if len(cells) < 2 or not cells[0] or not cells[1]:
            raise MappingError(f"{printable(path)}, line {line}: expected 'notebook file, student id', got "
                               f"{printable(row, limit=200)}")
        name, sid = nfc(cells[0]), nfc(cells[1])
        if len(sid) > MAX_ID_CHARS:
            raise MappingError(f"{printable(path)}, line {line}: the student id is {len(sid)} characters long; "
                               f"at most {MAX_ID_CHARS} are allowed")
        if name in mapping and mapping[name] != sid:
            raise MappingError(f"{printable(path)}, line {line}: {printable(name, limit=200)} is mapped twice "
                               f"(also on line {where[name]})")
        mapping[name] = sid
        where[name] = line
    if not mapping:
        raise MappingError(f"the mapping file {printable(path)} holds no 'notebook file, student id' rows")
    return mapping


def mapping_rows(path: str | Path) -> list[tuple[int, list[str]]]:
    """The non-blank rows of a mapping or roster CSV, with their line numbers, as a spreadsheet
    saves it: a byte-order mark or none, commas, semicolons or tabs. Raises ``MappingError``."""
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_MAPPING_BYTES + 1)
    except OSError as exc:
        raise MappingError(f"cannot read the mapping file {printable(path)}: {exc.strerror or exc}") from None
    if len(raw) > MAX_MAPPING_BYTES:
        raise MappingError(f"the mapping file {printable(path)} is larger than {MAX_MAPPING_BYTES >> 20} MiB")
    try:
        text = raw.decode("utf-8-sig")  # Excel's "CSV UTF-8" starts with a byte-order mark
    except UnicodeDecodeError as exc:
        raise MappingError(f"the mapping file {printable(path)} is not UTF-8 text (byte {exc.start}); save it "
                           "as 'CSV UTF-8'") from None
    # strict: a quote left open is an error, not a cell that swallows the rest of the file; and no
    # cell of a roster spans lines, so one that does is a quote left open that a later one closed.
    reader = csv.reader(io.StringIO(text), delimiter=_delimiter(text), strict=True)
    rows: list[tuple[int, list[str]]] = []
    line = 1
    try:
        for row in reader:
            if any("\n" in c or "\r" in c for c in row):
                raise MappingError(f"{printable(path)}, line {line}: a quoted cell runs on to line {reader.line_num} "
                                   "(a quote left open?): a cell holds no line break")
            if any(c.strip() for c in row):
                rows.append((line, row))
            line = reader.line_num + 1
    except csv.Error as exc:
        raise MappingError(f"{printable(path)}, line {line}: not CSV as a spreadsheet saves it ({exc}): a quote "
                           "left open, or text after a closing quote?") from None
    return rows


def _delimiter(text: str) -> str:
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    counts = {d: first.count(d) for d in (",", ";", "\t")}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] else ","


def _names(sub: Submission) -> tuple[str, ...]:
    """What a mapping entry may call a submission, in NFC (as ``load_mapping`` keeps its entries)."""
    return tuple(nfc(k) for k in (sub.relative, Path(sub.path).name, sub.path))


def _mapped_id(sub: Submission, mapping: dict[str, str]) -> str | None:
    mapping = {nfc(k): v for k, v in mapping.items()} if any(nfc(k) != k for k in mapping) else mapping
    for key in _names(sub):
        if key in mapping:
            return nfc(mapping[key])
    return None


def look_alike(ids: list[str]) -> list[list[int]]:
    """Groups of positions of ``ids`` that differ but look alike (the same skeleton)."""
    groups: dict[str, list[int]] = defaultdict(list)
    for i, sid in enumerate(ids):
        groups[skeleton(sid)].append(i)
    return [g for g in groups.values() if len({ids[i] for i in g}) > 1]


def assign_ids(submissions: list[Submission], mapping: dict[str, str]) -> tuple[list[IdAssignment], list[str]]:
    """An id per submission (in order), unique over the class, and problems with the mapping
    itself (ids given to two files, entries that match no file)."""
    problems: list[str] = []
    mapped = [_mapped_id(sub, mapping) for sub in submissions]
    stems = [nfc(notebook_stem(Path(sub.path).name)) for sub in submissions]
    folders = [nfc(str(PurePosixPath(sub.relative).parent)) for sub in submissions]
    per_folder = Counter(folders)
    wanted: list[str] = []
    notes: list[list[str]] = []
    for sub, stem, folder, mid in zip(submissions, stems, folders, mapped, strict=True):
        issues = []
        name = Path(sub.path).name
        if sub.readable and name != f"{stem}.ipynb":
            issues.append(f"the file name {printable(name, limit=200)!r} is not spelt '<name>.ipynb'; it was read "
                          "as a notebook anyway")
        if mid is not None:
            wanted.append(mid)
        else:
            if folder not in ("", ".") and per_folder[folder] == 1:
                wanted.append(clip(folder, MAX_ID_CHARS))
                issues.append(f"the id is the name of the folder that holds the notebook {printable(stem, limit=200)!r}")
            else:
                wanted.append(clip(stem, MAX_ID_CHARS))
            if mapping:
                issues.append("the file is not in the --mapping file; its id comes from its name")
        notes.append(issues)
    used_by_mapping = Counter(m for m in mapped if m is not None)
    problems += [f"{TWICE} {printable(sid, limit=200)!r} to {n} notebooks"
                 for sid, n in used_by_mapping.items() if n > 1]
    matched = {k for sub in submissions for k in _names(sub)}
    problems += [f"the mapping names {printable(name, limit=200)!r}, which is not among the submissions"
                 for name in mapping if nfc(name) not in matched]
    # Mapped ids are reserved first: they are the instructor's word, file names are not.
    order = sorted(range(len(submissions)), key=lambda i: mapped[i] is None)
    taken: set[str] = set()
    reserved = Counter(wanted)
    ids: list[str] = [""] * len(submissions)
    for i in order:
        sid = wanted[i]
        if sid in taken:
            n = 2
            while f"{sid} ({n})" in taken or f"{sid} ({n})" in reserved:
                n += 1
            new = f"{sid} ({n})"
            notes[i].append(f"duplicate student id {printable(sid, limit=200)!r} (also used by another notebook); "
                            f"graded as {printable(new, limit=200)!r}")
            sid = new
        taken.add(sid)
        ids[i] = sid
    for group in look_alike(ids):
        shown = ", ".join(repr(printable(ids[i], limit=200)) for i in group)
        problems.append(f"{LOOK_ALIKE}: {shown} (their files: "
                        f"{', '.join(repr(printable(submissions[i].relative, limit=200)) for i in group)})")
        for i in group:
            others = [j for j in group if ids[j] != ids[i]]
            notes[i].append("the id looks like another student's: " + "; ".join(
                f"{printable(ids[j], limit=200)!r} (this id has {_differences(ids[i], ids[j])})" for j in others))
    return [IdAssignment(sid, issues) for sid, issues in zip(ids, notes, strict=True)], problems
