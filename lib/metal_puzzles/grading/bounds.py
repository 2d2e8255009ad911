"""Every record the grader writes has a size bound, whatever a submission holds.

A kernel's messages quote its source: a 40,000-character identifier comes back in a compile
error, in each test's error, in the report, and then in the journal line, results.json and the
student's report. Summaries are cut here, field by field and then as a whole, before they are
shared, journalled or written, so that one student's record stays a few tens of KiB.
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


def bound_issues(issues: list[str]) -> list[str]:
    kept = [clip(str(i), MAX_ISSUE_CHARS) for i in issues[:MAX_ISSUES]]
    if len(issues) > MAX_ISSUES:
        kept.append(f"... and {len(issues) - MAX_ISSUES} more issues with this notebook")
    return kept
