"""Every record the grader writes has a size bound, whatever a submission holds.

A kernel's messages quote its source: a 40,000-character identifier comes back in a compile
error, in each test's error, in the report, and then in the journal line, results.json and the
student's report. Summaries are cut here, field by field and then as a whole, before they are
shared, journalled or written, so that one student's record stays a few tens of KiB.

Characters are not bytes: the journal writes JSON with every non-ASCII character escaped (six
bytes, twelve beyond the BMP), so a summary cut to so many characters of emoji is twelve times
larger on disk. ``bound_record`` therefore bounds a student's whole record by its size as ASCII
JSON, the largest way it is written, to ``MAX_RECORD_BYTES``: with results.json's copy and the
report, a student stays within the 1 MiB a student the grader reserves on disk
(``output.BYTES_PER_STUDENT``).
"""

from __future__ import annotations

import json

from .safe_text import clip

#: Characters of one test's error, one finding's message, a test's label and a puzzle's report.
MAX_ERROR_CHARS = 2_000
MAX_MESSAGE_CHARS = 500
MAX_LABEL_CHARS = 200
MAX_REPORT_CHARS = 8_000
#: A puzzle's whole summary as JSON: past this, tests keep only their first finding and a short error.
MAX_SUMMARY_CHARS = 32_000
MAX_SHORT_CHARS = 200
#: A student's notebook issues: how many, and characters of each.
MAX_ISSUES = 50
MAX_ISSUE_CHARS = 500


def bound_summary(summary: dict) -> dict:
    """``summary`` (as ``tasks.summarize`` makes it) with every string field cut to its bound,
    an error repeated on several tests kept once, and the whole cut again if still too large."""
    seen_errors: dict[str, int] = {}
    for n, test in enumerate(summary.get("tests", []), start=1):
        test["label"] = clip(str(test.get("label", "")), MAX_LABEL_CHARS)
        error = test.get("error")
        if error:
            first = seen_errors.setdefault(error, n)
            test["error"] = clip(error, MAX_ERROR_CHARS) if first == n else f"(the same error as test {first})"
        for f in test.get("findings", []):
            f["message"] = clip(str(f.get("message", "")), MAX_MESSAGE_CHARS)
    summary["notes"] = [clip(str(n), MAX_MESSAGE_CHARS) for n in summary.get("notes", [])]
    summary["report"] = clip(str(summary.get("report", "")), MAX_REPORT_CHARS)
    if len(json.dumps(summary, default=str)) > MAX_SUMMARY_CHARS:
        for test in summary.get("tests", []):
            test["findings"] = test.get("findings", [])[:1]
            for f in test["findings"]:
                f["message"] = clip(f["message"], MAX_SHORT_CHARS)
            if test.get("error"):
                test["error"] = clip(test["error"], MAX_SHORT_CHARS)
        summary["notes"] = [clip(n, MAX_SHORT_CHARS) for n in summary["notes"][:5]]
    return summary


#: A student's record (every puzzle's summary and the notebook's issues) as ASCII JSON.
MAX_RECORD_BYTES = 256 * 1024
#: Of which the notebook's issues may take at most.
MAX_ISSUES_BYTES = 32 * 1024
#: Room kept for the marker that says how much of a string was cut.
_MARKER_BYTES = 48


def json_size(value: object) -> int:
    """Bytes of ``value`` as ASCII JSON (every non-ASCII character escaped)."""
    return len(json.dumps(value, ensure_ascii=True, default=str))


def _escaped_bytes(c: str) -> int:
    o = ord(c)
    if o < 0x20 or c in '"\\':
        return 2 if c in '"\\\n\r\t\b\f' else 6
    return 1 if o < 0x80 else 12 if o > 0xFFFF else 6


def clip_bytes(text: str, limit: int) -> str:
    """``text`` cut so that it takes at most about ``limit`` bytes as ASCII JSON, then how many
    characters were left out (``safe_text.clip``, counted in bytes rather than characters)."""
    if json_size(text) <= limit:
        return text
    room, keep = max(0, limit - _MARKER_BYTES), 0
    for c in text:
        room -= _escaped_bytes(c)
        if room < 0:
            break
        keep += 1
    return f"{text[:keep]}... ({len(text) - keep} more characters)"


def bound_record(puzzles: dict[str, dict], issues: list[str]) -> None:
    """Cut a student's record in place until it takes at most ``MAX_RECORD_BYTES`` as ASCII
    JSON: the issues to ``MAX_ISSUES_BYTES``, then each puzzle's summary that is over its share,
    step by step (short errors and findings, then no findings, then the tests' list replaced
    by a note), its status, points and a clipped report always kept."""
    if json_size([puzzles, issues]) <= MAX_RECORD_BYTES:
        return
    each = MAX_ISSUES_BYTES // max(1, len(issues))
    issues[:] = [clip_bytes(i, each) for i in issues]
    share = (MAX_RECORD_BYTES - json_size(issues)) // max(1, len(puzzles)) - 32  # 32: the puzzle's key
    for summary in puzzles.values():
        _fit_summary(summary, share)


def _fit_summary(summary: dict, share: int) -> None:
    for step in range(3):
        if json_size(summary) <= share:
            return
        short = MAX_SHORT_CHARS // (step + 1)
        tests = summary.get("tests") or []
        for test in tests:
            test["label"] = clip_bytes(str(test.get("label", "")), short)
            test["findings"] = test.get("findings", [])[:1 - min(step, 1)]
            for f in test["findings"]:
                f["message"] = clip_bytes(str(f.get("message", "")), short)
            if test.get("error"):
                test["error"] = clip_bytes(str(test["error"]), short)
        for key in ("notes", "sanitizer_notes"):
            summary[key] = [clip_bytes(str(n), short) for n in (summary.get(key) or [])[:5 - 2 * step]]
        summary["report"] = clip_bytes(str(summary.get("report", "")), share // (2 + step))
        if step == 2 and tests and json_size(summary) > share:
            summary["tests"] = []
            summary["notes"] = summary["notes"][:1] + [f"{len(tests)} tests not shown: this notebook's record "
                                                       "was too large"]


def bound_issues(issues: list[str]) -> list[str]:
    kept = [clip(str(i), MAX_ISSUE_CHARS) for i in issues[:MAX_ISSUES]]
    if len(issues) > MAX_ISSUES:
        kept.append(f"... and {len(issues) - MAX_ISSUES} more issues with this notebook")
    return kept
