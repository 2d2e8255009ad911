"""A Gradescope autograder: ``metal-puzzles autograder --out autograder.zip`` builds it, and on
Gradescope its ``run_autograder`` calls ``metal-puzzles autograder-run``, which grades the
notebook in ``/autograder/submission/`` exactly as ``grade`` would and writes
``/autograder/results/results.json`` in Gradescope's format
(https://gradescope-autograders.readthedocs.io/en/latest/specs/): one test per puzzle (``name``,
``number``, ``score``, ``max_score``, ``status``, ``output`` with the verdict and what to fix,
``visibility``), the total ``score``, an ``output`` for the whole submission, ``visibility``,
``stdout_visibility`` and ``execution_time``.

The zip holds ``setup.sh`` (makes a virtual environment and installs the package from the wheel
in the zip, with its dependencies from PyPI: the wheel, not our repository, because Gradescope's
machines need not reach it), ``run_autograder``, the wheel, the points file and the settings of
the build (a secret chosen when the zip is built, and the version). Each submission's hidden
tests are seeded from the secret and the notebook's content (``submission_seed``): a changed
notebook gets new hidden tests, and feedback on a hidden test never shows its data
(``feedback.py``), so resubmitting cannot converge on them.

``METAL_PUZZLES_AUTOGRADER_ROOT`` replaces ``/autograder`` (to run and test it elsewhere). No
submission can make ``autograder-run`` fail to write a results.json: whatever goes wrong is a
score of 0 with the reason.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from enum import Enum
from importlib import metadata
from pathlib import Path

from ..checking import WiredPuzzle
from ..puzzles import PUZZLES
from ..version import __version__
from .feedback import feedback
from .grade import GradeRun, Student, UncheckedStatus, grade_submissions
from .limits import Limits
from .own_files import atomic_write
from .points import PointsConfig
from .report import num, status_text
from .safe_text import clip, printable
from .submissions import collect_submissions

ROOT_VARIABLE = "METAL_PUZZLES_AUTOGRADER_ROOT"
DEFAULT_ROOT = "/autograder"
SETTINGS_NAME = "metal_puzzles_autograder.json"
POINTS_NAME = "points.toml"
WHEELS_DIR = "wheels"
#: The notebook the book's learners submit, preferred when a submission holds several.
PREFERRED_NOTEBOOK = "puzzles.ipynb"
#: Characters of a test's output: Gradescope shows it whole, and a report is at most this long.
MAX_OUTPUT_CHARS = 20_000
#: Notes (files not graded, problems) listed in a submission's summary, and characters of each:
#: a submission of 3,000 files must not make a summary of hundreds of thousands of characters.
MAX_NOTES = 10
MAX_NOTE_CHARS = 300


class Visibility(str, Enum):
    """Gradescope's visibility settings (for a test, the results, or stdout)."""

    VISIBLE = "visible"
    HIDDEN = "hidden"
    AFTER_DUE_DATE = "after_due_date"
    AFTER_PUBLISHED = "after_published"


class TestStatus(str, Enum):
    PASSED = "passed"
    FAILED = "failed"


class AutograderError(Exception):
    """The autograder zip cannot be built (no wheel of the package, an unreadable points file)."""


# ---------------------------------------------------------------------------- building the zip
SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image.
set -euo pipefail
ROOT="${METAL_PUZZLES_AUTOGRADER_ROOT:-/autograder}"
python3 -m venv "$ROOT/venv" || { apt-get update && apt-get install -y python3-venv && python3 -m venv "$ROOT/venv"; }
"$ROOT/venv/bin/python" -m pip install --upgrade pip
# The package from the wheel in this zip; its dependencies (NumPy, MLX, ...) from PyPI.
"$ROOT/venv/bin/python" -m pip install "$ROOT/source/wheels/"*.whl
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission: grade /autograder/submission/, write
# /autograder/results/results.json (the grader itself never fails to write it).
ROOT="${METAL_PUZZLES_AUTOGRADER_ROOT:-/autograder}"
PYTHON="$ROOT/venv/bin/python"
if [ ! -x "$PYTHON" ]; then
    PYTHON="$(command -v python3)"  # outside Gradescope: the environment on PATH
fi
exec "$PYTHON" -c 'import sys; from metal_puzzles.cli import main; sys.exit(main())' \\
    autograder-run --root "$ROOT"
"""


def build_autograder(out: Path, *, points: Path | None = None, wheel: Path | None = None,
                     seed: int | None = None) -> Path:
    """Write the autograder zip to ``out``; returns the wheel's name inside it."""
    PointsConfig.load(points)  # refuse a bad points file now, not on every submission
    # The secret the hidden tests' seeds are drawn from (``submission_seed``); --seed makes it
    # repeatable, for tests and for an instructor who wants to rebuild the same zip.
    settings = {"secret": secrets.token_hex(32) if seed is None else str(seed), "version": __version__}
    with tempfile.TemporaryDirectory() as tmp:
        wheel = wheel or package_wheel(Path(tmp))
        if not wheel.is_file():
            raise AutograderError(f"--wheel {wheel}: no such file")
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
            _add(z, "setup.sh", SETUP_SH.encode(), executable=True)
            _add(z, "run_autograder", RUN_AUTOGRADER.encode(), executable=True)
            _add(z, SETTINGS_NAME, json.dumps(settings, indent=1).encode())
            if points is not None:
                _add(z, POINTS_NAME, Path(points).read_bytes())
            _add(z, f"{WHEELS_DIR}/{wheel.name}", wheel.read_bytes())
    return Path(wheel.name)


def _add(z: zipfile.ZipFile, name: str, data: bytes, executable: bool = False) -> None:
    info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
    info.external_attr = (0o755 if executable else 0o644) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    z.writestr(info, data)


def package_wheel(into: Path) -> Path:
    """A wheel of the installed metal-puzzles: built from its source tree when it is installed
    from one (editable), repacked from its installed files otherwise."""
    dist = _installed_distribution()
    direct = dist.read_text("direct_url.json")
    info = json.loads(direct) if direct else {}
    if info.get("dir_info", {}).get("editable") and info.get("url", "").startswith("file://"):
        source = info["url"].removeprefix("file://")
        done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir",
                               str(into), source], capture_output=True, text=True)
        wheels = sorted(into.glob("metal_puzzles-*.whl"))
        if done.returncode != 0 or not wheels:
            raise AutograderError(f"could not build a wheel of metal-puzzles from {source} "
                                  f"({done.stderr.strip()[-500:]}); build one and pass it with --wheel")
        return wheels[0]
    return _repack(dist, into)


def _installed_distribution() -> metadata.Distribution:
    """The metal-puzzles that pip installed (its .dist-info has a RECORD), not the .egg-info a
    source checkout holds beside the code (found first when that folder is on sys.path)."""
    installed = [d for d in metadata.distributions(name="metal-puzzles") if d.read_text("RECORD") is not None]
    if not installed:
        raise AutograderError("no pip-installed metal-puzzles was found to build a wheel from; pass --wheel")
    return installed[0]


def _repack(dist: metadata.Distribution, into: Path) -> Path:
    """The installed distribution's files (as its RECORD lists them) back into a wheel."""
    files = [f for f in dist.files or [] if not str(f).endswith(".pyc") and "__pycache__" not in str(f)]
    wheel_meta = dist.read_text("WHEEL") or ""
    tag = next((line.split(":", 1)[1].strip() for line in wheel_meta.splitlines() if line.startswith("Tag:")),
               "py3-none-any")
    path = into / f"metal_puzzles-{dist.version}-{tag}.whl"
    record_name = next((str(f) for f in files if str(f).endswith(".dist-info/RECORD")), None)
    if record_name is None:
        raise AutograderError("the installed metal-puzzles has no RECORD to build a wheel from; pass --wheel")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for f in files:
            name = str(f)
            top = Path(name).parts[0]
            if top != "metal_puzzles" and not top.endswith(".dist-info"):
                continue  # console scripts pip wrote (the wheel holds their entry points instead)
            if name == record_name or name.endswith(("/INSTALLER", "/REQUESTED", "/direct_url.json")):
                continue  # pip's own notes about the install
            z.write(f.locate(), name)
        z.writestr(record_name, "")  # pip accepts an unsigned record (no hashes to check)
    return path


# ---------------------------------------------------------------------------- grading on Gradescope
@dataclass(frozen=True)
class AutograderPaths:
    root: Path

    @classmethod
    def from_environment(cls, root: str | None = None) -> AutograderPaths:
        return cls(Path(root or os.environ.get(ROOT_VARIABLE) or DEFAULT_ROOT))

    @property
    def source(self) -> Path:
        return self.root / "source"

    @property
    def submission(self) -> Path:
        return self.root / "submission"

    @property
    def results(self) -> Path:
        return self.root / "results" / "results.json"


def run_autograder(paths: AutograderPaths, *, limits: Limits | None = None, workers: int | None = None) -> dict:
    """Grade the submission and write results.json; returns what was written. Never raises for
    anything a submission does: a failure is a results.json with a score of 0 and the reason."""
    start = time.monotonic()
    config = PointsConfig()
    try:
        points_file = paths.source / POINTS_NAME
        config = PointsConfig.load(points_file if points_file.is_file() else None)
        results = _grade(paths, config, limits or Limits(), workers)
    except Exception as exc:  # the grader's own failure: still a valid results.json, never a crash
        results = failed_results(f"The autograder could not grade this submission ({type(exc).__name__}: "
                                 f"{printable(exc)}). This is not your kernel's fault: resubmit, or tell your "
                                 "instructor.", config)
    results["execution_time"] = round(time.monotonic() - start, 2)
    paths.results.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(paths.results, json.dumps(results, indent=1, ensure_ascii=True).encode("ascii"))
    return results


def failed_results(reason: str, config: PointsConfig) -> dict:
    """A submission that cannot be graded at all: every puzzle 0, the reason said once."""
    return {
        "score": 0.0,
        "output": reason,
        "visibility": Visibility.VISIBLE.value,
        "stdout_visibility": Visibility.HIDDEN.value,
        "tests": [_test(p, 0.0, config.max_points(p.id), TestStatus.FAILED, f"Result: not graded. {reason}")
                  for p in PUZZLES],
    }


def _grade(paths: AutograderPaths, config: PointsConfig, limits: Limits, workers: int | None) -> dict:
    settings = json.loads((paths.source / SETTINGS_NAME).read_text(encoding="utf-8"))
    submissions, problems = collect_submissions([paths.submission])
    readable = [s for s in submissions if s.readable]
    if not submissions:
        return failed_results("no notebook (.ipynb file) was found in your submission: submit your puzzles.ipynb",
                              config)
    chosen = min(readable or submissions, key=lambda s: (Path(s.path).name != PREFERRED_NOTEBOOK, s.path))
    notes = [printable(p, limit=MAX_NOTE_CHARS) for p in problems[:MAX_NOTES]]
    if len(problems) > MAX_NOTES:
        notes.append(f"... and {len(problems) - MAX_NOTES} more problems with the files.")
    others = [s for s in submissions if s is not chosen]
    if others:
        named = ", ".join(printable(os.path.relpath(s.path, paths.submission), limit=MAX_NOTE_CHARS)
                          for s in others[:MAX_NOTES])
        more = f" and {len(others) - MAX_NOTES} more" if len(others) > MAX_NOTES else ""
        notes.append(f"Your submission holds {len(submissions)} notebooks; graded "
                     f"{printable(os.path.relpath(chosen.path, paths.submission), limit=MAX_NOTE_CHARS)}, not "
                     f"{named}{more}.")
    seed = submission_seed(_secret(settings), chosen.sha256)
    run = grade_submissions([chosen.path], config=config, limits=limits, workers=workers,
                            seed=seed, progress=False, collected=([chosen], []))
    return gradescope_results(run, run.students[0], notes)


def gradescope_results(run: GradeRun, st: Student, notes: list[str]) -> dict:
    """One student's grading as Gradescope's results.json."""
    tests = []
    for p in PUZZLES:
        s = st.puzzles[p.id]
        status = TestStatus.PASSED if s.get("passed") else TestStatus.FAILED
        verdict = status_text(s)
        if s.get("status") == UncheckedStatus.GRADER_FAULT:
            verdict += " (not your kernel's fault: resubmit, or tell your instructor)"
        text = f"Result: {verdict}."
        fix = feedback(s, visible_known=not isinstance(p, WiredPuzzle)) if not s.get("passed") else ""
        if fix:
            text += "\n\nWhat to fix:\n" + fix
        tests.append(_test(p, float(s.get("points") or 0.0), float(s["max_points"]), status, text))
    summary = [f"Metal Puzzles: {num(st.total)} / {num(run.max_total)} points.", run.config.rules()]
    summary += [printable(i, limit=MAX_NOTE_CHARS) for i in st.issues[:MAX_NOTES]] + notes[:MAX_NOTES]
    if len(st.issues) + len(notes) > 2 * MAX_NOTES:
        summary.append("(more notes not shown)")
    if not st.complete:
        summary.append("Grading did not complete: the grader failed on the puzzles marked so (not your kernels' "
                       "fault); resubmit to have them graded.")
    return {
        "score": float(st.total),
        "output": clip("\n".join(summary), MAX_OUTPUT_CHARS),
        "visibility": Visibility.VISIBLE.value,
        "stdout_visibility": Visibility.HIDDEN.value,
        "tests": tests,
    }


def _secret(settings: dict) -> str:
    """The zip's secret (a zip built before secrets had a seed: that seed is the secret)."""
    secret = settings.get("secret", settings.get("seed"))
    if not isinstance(secret, str | int) or isinstance(secret, bool) or secret == "":
        raise ValueError(f"{SETTINGS_NAME} has no 'secret'")
    return str(secret)


def submission_seed(secret: str, content_sha256: str) -> int:
    """The hidden tests' seed for one submission: a hash of the zip's secret and the notebook's
    content. Students cannot compute it (the secret is only in the autograder); the same
    notebook always gets the same tests (a regrade agrees); any change to the notebook, such as
    pasting in values from earlier feedback, gets new ones, so resubmissions cannot converge on
    the hidden tests."""
    digest = hashlib.sha256(f"metal-puzzles hidden tests\0{secret}\0{content_sha256}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def _test(p, score: float, max_score: float, status: TestStatus, output: str) -> dict:
    text = printable(output, keep_newlines=True)
    if len(text) > MAX_OUTPUT_CHARS:
        text = text[:MAX_OUTPUT_CHARS] + "\n... (cut short)"
    return {"name": f"{p.number}. {p.title}", "number": p.number, "score": score, "max_score": max_score,
            "status": status.value, "output": text, "output_format": "text",
            "visibility": Visibility.VISIBLE.value}
