"""One registry of what a finding kind is (issue 31, item 2): every ``FindingKind`` has one
entry (its summary on diagrams, its verb in verdicts, its fix, how diagrams mark it), so a kind
cannot be half added, and no kind falls back to wording that says nothing ("have a problem")."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from metal_puzzles.checking.verdict import CaseStatus, Outcome, _note_line
from metal_puzzles.diagrams.marks import finding_sites
from metal_puzzles.msl import Finding, FindingKind, RaceKind, simulate
from metal_puzzles.msl.findings.registry import (
    FINDING_KINDS,
    ElementMark,
    SiteWords,
    ThreadMark,
    kind_entry,
)
from metal_puzzles.msl.lang.errors import Pos
from metal_puzzles.puzzles import get_puzzle

MISALIGNED_SRC = """uint i = thread_position_in_grid.x;
const device uint* u = (const device uint*)((const device uchar*)a + 1);
out[i] = u[i];
"""

SIMDGROUP_SRC = """uint lane = thread_index_in_simdgroup;
simdgroup_float8x8 m = simdgroup_float8x8(0.0f);
if (lane < 16) {
    simdgroup_load(m, a, 8);
}
simdgroup_store(m, out, 8);
"""


def _run(src: str, a: np.ndarray, n_out: int, dtype: str, threads: int):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return simulate("k", ["a"], ["out"], src, inputs=[a], output_shapes=[(n_out,)], output_dtypes=[dtype],
                        grid=(threads, 1, 1), threadgroup=(threads, 1, 1), trace=True, sanitize="warn")


def _verdict_line(finding) -> str:
    """What a verdict says about a hidden test beyond the contract that this finding failed."""
    case = next(c for c in get_puzzle("lookup_occupancy").cases(0) if c.beyond)
    return _note_line(Outcome(case, CaseStatus.WRONG, findings=[finding]))


@pytest.mark.parametrize("src, a, n_out, dtype, threads, kind, summary, verb", [
    (MISALIGNED_SRC, np.arange(8, dtype=np.uint32), 4, "uint32", 4, FindingKind.MISALIGNED,
     "misaligned access: thread 0 accesses a at a misaligned address at line 2",
     "it would access a at a misaligned address (line 2)"),
    (SIMDGROUP_SRC, np.arange(64, dtype=np.float32), 64, "float32", 32, FindingKind.SIMDGROUP_DIVERGENCE,
     "SIMD-group divergence at line 4: the SIMD-group of thread 0 runs a SIMD-group matrix operation without "
     "all 32 of its threads",
     "it would run a SIMD-group matrix operation without all 32 threads of a SIMD-group (line 4)"),
])
def test_kinds_that_fell_back_are_worded(src, a, n_out, dtype, threads, kind, summary, verb) -> None:
    result = _run(src, a, n_out, dtype, threads)
    (site,) = [s for s in finding_sites(result) if s.kind == kind]
    assert site.summary == summary
    line = _verdict_line(site.finding)
    assert "have a problem" not in line and line.endswith(verb), line


def _sample(kind: FindingKind) -> Finding:
    """A finding of ``kind`` with every field a kind may use."""
    thread = {"grid": (3, 0, 0), "group": (0, 0, 0), "local": (3, 0, 0)}
    return Finding(kind, "what happened", Pos("source", 6, 5), [thread], buffer="out", index=3,
                   race=RaceKind.WRITE_AFTER_WRITE if kind == FindingKind.RACE else None,
                   other_pos=Pos("source", 4, 5) if kind == FindingKind.RACE else None,
                   count=2 if kind == FindingKind.UNWRITTEN_OUTPUT else None, phase=1)


def test_every_finding_kind_has_a_complete_entry() -> None:
    assert set(FINDING_KINDS) == set(FindingKind)
    words = SiteWords(who="thread 3", located=True, them="thread 5", apart=False, access="reads",
                      named=("thread 3",))
    summaries, verbs = {}, {}
    for kind, entry in FINDING_KINDS.items():
        assert entry.kind == kind
        assert isinstance(entry.element, ElementMark) and isinstance(entry.threads, ThreadMark), kind
        assert entry.fix is None or entry.fix.strip(), kind
        summaries[kind] = entry.summary(_sample(kind), words)
        verbs[kind] = entry.verb(_sample(kind))
        assert "problem" not in summaries[kind] + verbs[kind] and summaries[kind] != f"{kind} at line 6", kind
    # No kind borrows another's wording: each says what is particular to it.
    assert len(set(summaries.values())) == len(FindingKind), summaries
    assert len(set(verbs.values())) == len(FindingKind), verbs


def test_a_kind_without_an_entry_is_an_error_not_a_fallback() -> None:
    with pytest.raises(ValueError):
        kind_entry("no-such-kind")


def test_a_report_that_gives_its_kinds_fix_says_it() -> None:
    """A kind whose every report gives the same advice takes it from the registry."""
    result = _run(SIMDGROUP_SRC, np.arange(64, dtype=np.float32), 64, "float32", 32)
    (found,) = result.findings
    assert found.message.endswith(f"{kind_entry(FindingKind.SIMDGROUP_DIVERGENCE).fix})")
