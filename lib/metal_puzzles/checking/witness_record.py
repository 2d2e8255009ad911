"""The witness ``check()`` leaves in a notebook: a digest of the kernel it checked.

``MetalProblem.check()`` in Jupyter shows its verdict with this record in the output's metadata;
the grader compares it with the digest of the kernel it read from the notebook's code
(``grading/witness_comparison.py``). Outputs can be forged, so the witness never changes a grade: it shows a
gap between what the grader read and what the notebook last ran.
"""

from __future__ import annotations

import hashlib

#: The key of the record in a display output's metadata.
METADATA_KEY = "metal_puzzles"
#: Lines of a kernel whose digests are kept (a longer kernel's later lines are not compared).
MAX_LINES = 4096
#: Hex digits kept of each line's digest: enough to tell lines apart, small in the notebook.
LINE_DIGITS = 12


def kernel_digest(source: str, header: str) -> str:
    """The digest of a kernel's text: its header and source."""
    h = hashlib.sha256()
    for part in (header, source):
        data = part.encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()


def line_digests(text: str) -> list[str]:
    """A short digest per line, so that a difference can be named by its line."""
    return [hashlib.sha256(line.encode("utf-8", "surrogatepass")).hexdigest()[:LINE_DIGITS]
            for line in text.split("\n")[:MAX_LINES]]


def witness_record(kernel_name: str, source: str, header: str) -> dict:
    """What check() records in its output's metadata (under ``METADATA_KEY``)."""
    return {"check": {"kernel": kernel_name, "sha256": kernel_digest(source, header),
                      "source_lines": line_digests(source), "header_lines": line_digests(header)}}
