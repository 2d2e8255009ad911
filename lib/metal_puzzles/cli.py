"""The ``metal-puzzles`` command line: ``grade`` (instructors), ``check``, ``init``, ``lab`` and
``notebook`` (learners), ``images`` (the book's authors)."""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import asdict
from enum import IntEnum
from pathlib import Path

from .grading.changes import CHANGES_NAME
from .grading.cluster import ClusterError
from .grading.console import print_check, print_summary
from .grading.grade import collect_notebooks, grade_submissions, new_seed
from .grading.gradebook import GRADEBOOK_NAME, LMS, lms_gradebook
from .grading.history import check_history, keep_baseline, record_changes
from .grading.ids import LOOK_ALIKE, TWICE, MappingError, assign_ids
from .grading.journal import Journal, JournalError, NeverStarted, RunSettings
from .grading.limits import DEFAULT_MEMORY_MIB, Limits, unenforced_limits
from .grading.output import (
    OutputError,
    check_apart,
    prepare_out,
    write_outputs,
)
from .grading.own_files import atomic_write
from .grading.points import PointsConfig, find_puzzle, unknown_puzzle
from .grading.results import UncheckedStatus
from .grading.results_file import RESULTS_NAME, ResultsFileError, read_results
from .grading.roster import load_roster, mapping_mismatch
from .grading.submissions import Submission
from .grading.task_backend import RunnerStopped
from .notebook import book
from .notebook.images import write_images
from .puzzles import PUZZLES
from .version import __version__


class ExitStatus(IntEnum):
    OK = 0  # everything graded (check: every puzzle the notebook attempts passes)
    INCOMPLETE = 1  # the run finished, but the grader failed on some puzzles (flagged, not scored)
    FAILED = 1  # check: a puzzle the notebook attempts fails, or it attempts none (as test runners do)
    USAGE = 2  # bad arguments, nothing to grade, or an unusable --out
    STOPPED = 3  # the run stopped early (output not writable, workers cannot start); --resume carries on
    INTERRUPTED = 130  # Ctrl-C; --resume carries on


#: Seeds NumPy's generators accept: the hidden tests' seed is one.
MAX_SEED = 2**32 - 1


def positive_int(text: str) -> int:
    """An argument that counts something: a whole number of at least 1 (argparse reports a
    ValueError as 'invalid positive_int value', naming the option)."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return value


def positive_number(text: str) -> float:
    """A limit in seconds or MiB: a finite number above 0 (0, a negative, nan or inf would
    remove the limit or fail every task)."""
    value = float(text)
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number above 0")
    return value


def seed_value(text: str) -> int:
    value = int(text)
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from 0 to {MAX_SEED}")
    return value


def _add_limits(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workers", type=positive_int, default=None, help="worker processes (default: all cores)")
    p.add_argument("--timeout", type=positive_number, default=60.0,
                   help="time limit per kernel, CPU seconds (default 60; a worker's start-up and time the machine was suspended are not counted)")
    p.add_argument("--read-timeout", type=positive_number, default=30.0,
                   help="time limit for reading one notebook, CPU seconds (default 30)")
    p.add_argument("--memory", type=positive_int, default=DEFAULT_MEMORY_MIB,
                   help=f"memory (address space) per worker process, MiB (default {DEFAULT_MEMORY_MIB})")
    p.add_argument("--max-steps", type=positive_int, default=20_000,
                   help="simulator steps per launch: statements, calls, loop iterations (default 20000)")
    p.add_argument("--max-notebook-size", type=positive_number, default=64.0,
                   help="larger notebook files are not read, MiB (default 64)")
    p.add_argument("--points", default=None, help="TOML file with points per puzzle and partial credit")
    p.add_argument("--seed", type=seed_value, default=None,
                   help="seed of the hidden tests (default: a new random seed each run, recorded in the results)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="metal-puzzles",
                                     description="Metal Puzzles: learn GPU programming with Metal kernels.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command")
    g = sub.add_parser("grade", help="grade a class's notebooks (their Python is never run)")
    g.add_argument("submissions", nargs="+", help="notebooks, or directories of notebooks")
    g.add_argument("--out", required=True, help="directory for grades.csv, results.json, reports/ and the journal")
    g.add_argument("--mapping", default=None,
                   help="CSV of 'notebook file name, student id' rows, or a roster whose header names its columns "
                        "(File, ID and optionally Name, in any order)")
    g.add_argument("--lms", type=LMS, choices=list(LMS), default=LMS.CANVAS,
                   help="the shape of gradebook.csv: canvas (default), moodle or plain (README: Importing grades)")
    again = g.add_mutually_exclusive_group()
    again.add_argument("--resume", action="store_true",
                       help="carry on with the run journalled in --out (same seed; finished students are kept)")
    again.add_argument("--force", action="store_true", help="replace the results already in --out")
    g.add_argument("--quiet", action="store_true", help="no progress bar")
    g.add_argument("--cluster", default=None, metavar="local[:N] | tcp://HOST:PORT",
                   help="grade on a Dask cluster: a LocalCluster of N worker processes (default: --workers or all "
                        "cores), or the scheduler at that address (needs metal-puzzles[cluster])")
    _add_limits(g)
    a = sub.add_parser("autograder", help="build a Gradescope autograder zip (it grades as 'grade' does)")
    a.add_argument("--out", default="autograder.zip", help="the zip to write (default: autograder.zip)")
    a.add_argument("--points", default=None, help="TOML file with points per puzzle and partial credit")
    a.add_argument("--wheel", default=None,
                   help="the metal-puzzles wheel to install on Gradescope (default: one of the installed package)")
    a.add_argument("--seed", type=seed_value, default=None,
                   help="the zip's secret, for a repeatable build (default: a new random secret); each submission's "
                        "hidden tests are seeded from the secret and the notebook's content")
    r = sub.add_parser("autograder-run", help="what the autograder zip's run_autograder runs on Gradescope: grade "
                                              "ROOT/submission/, write ROOT/results/results.json")
    r.add_argument("--root", default=None,
                   help="the autograder folder (default: $METAL_PUZZLES_AUTOGRADER_ROOT, or /autograder)")
    r.add_argument("--workers", type=positive_int, default=None, help="worker processes (default: all cores)")
    gb = sub.add_parser("gradebook", help="export a graded run's gradebook for an LMS, from its results.json")
    gb.add_argument("out", help="the --out folder of a grading run")
    gb.add_argument("--lms", type=LMS, choices=list(LMS), default=LMS.CANVAS, help="canvas (default), moodle or plain")
    gb.add_argument("--to", default=None, help="the CSV to write (default: print it)")
    pz = sub.add_parser("puzzles", help="list the puzzles: the ids a points file and check --puzzle take, and "
                                         "each one's points")
    pz.add_argument("--points", default=None, help="TOML file with points per puzzle (default: 1 point each)")
    sub.add_parser("backends", help="say which back ends this machine has: the simulator (always), real Metal "
                                    "(backend='metal'), an NVIDIA GPU through MLX's CUDA back end (backend='cuda'), "
                                    "and NVRTC to compile CUDA translations")
    im = sub.add_parser("images", help="regenerate the book's images (logo and puzzle diagrams)")
    im.add_argument("--out", default="imgs", help="directory to write into (default: imgs)")
    c = sub.add_parser("check", help="check your own notebook and print a table of results (exit status 1 "
                                     "when a puzzle in it fails, as test runners do)")
    c.add_argument("notebook")
    c.add_argument("--puzzle", default=None, metavar="ID",
                   help="check this puzzle alone, and no other: its id or its number, in any case, as "
                        "metal-puzzles puzzles lists them (map, V.12)")
    _add_limits(c)
    book.add_commands(sub)
    return parser


def backends_report() -> str:
    """What ``metal-puzzles backends`` prints: each back end and whether this machine has it."""
    from .host.metal_backend import cuda_available, metal_available
    from .host.nvrtc import NvrtcUnavailable, load_nvrtc

    lines = ["simulator  yes   every kernel, everywhere (the default)"]
    lines.append("metal      " + ("yes   backend='metal' runs on this Mac's GPU" if metal_available()
                                  else "no    needs a Mac with Apple silicon (mx.metal.is_available() is False)"))
    lines.append("cuda       " + ("yes   backend='cuda' runs the CUDA translation through mx.fast.cuda_kernel"
                                  if cuda_available() else
                                  "no    needs Linux, an NVIDIA GPU (SM 7.5+) and pip install \"metal-puzzles[cuda12]\" "
                                  "or \"[cuda13]\" (mx.cuda.is_available() is False)"))
    try:
        nv = load_nvrtc()
        major, minor = nv.version()
        lines.append(f"nvrtc      yes   CUDA {major}.{minor} ({nv.path}): kernel.to_cuda() translations compile here")
    except NvrtcUnavailable:
        lines.append("nvrtc      no    pip install nvidia-cuda-nvrtc nvidia-cuda-runtime to compile translations here")
    return "\n".join(lines)


def _error(message: str) -> None:
    print(f"metal-puzzles: {message}", file=sys.stderr)


#: Problems of one kind printed before the rest are counted: a 10,000-row roster for a class of 30
#: names 9,970 notebooks that are not among the submissions (results.json lists every problem).
SHOWN_PER_KIND = 5


def problem_kind(problem: str) -> str:
    """What ``problem`` says with what it quotes left out: problems that differ only in the file or
    id they name are one kind."""
    return re.sub(r"'[^']*'|\"[^\"]*\"", "'...'", problem)


def _error_lines(problems: Sequence[str]) -> None:
    """Print ``problems``, at most ``SHOWN_PER_KIND`` of each kind, then how many more of it."""
    kinds: dict[str, list[str]] = {}
    for p in problems:
        kinds.setdefault(problem_kind(p), []).append(p)
    for kind, said in kinds.items():
        for p in said[:SHOWN_PER_KIND]:
            _error(p)
        if len(said) > SHOWN_PER_KIND:
            _error(f"... and {len(said) - SHOWN_PER_KIND:,} more like these ({kind}); a graded run's results.json lists every one")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] and argv[0] in (ui.value for ui in book.JupyterUI):  # Jupyter's options need no folder
        argv = book.folder_first(argv[0], argv[1:])
    args = build_parser().parse_args(argv)
    if args.version:
        print(__version__)
        return ExitStatus.OK
    if args.command is None:
        build_parser().print_help()
        return ExitStatus.OK
    if args.command in book.COMMANDS:
        return book.run_command(args)
    if args.command == "autograder":
        return _autograder(args)
    if args.command == "autograder-run":
        from .grading.gradescope import AutograderPaths, run_autograder

        results = run_autograder(AutograderPaths.from_environment(args.root), workers=args.workers)
        print(f"score {results['score']:g}; {sum(t['status'] == 'passed' for t in results['tests'])} of "
              f"{len(results['tests'])} puzzles passed")
        return ExitStatus.OK
    if args.command == "gradebook":
        return _gradebook(args)
    if args.command == "puzzles":
        return _puzzles(args)
    if args.command == "backends":
        print(backends_report())
        return ExitStatus.OK
    if args.command == "images":
        for path in write_images(args.out):
            print(path)
        return ExitStatus.OK
    try:
        config = PointsConfig.load(args.points)
    except (OSError, ValueError) as exc:
        _error(f"cannot read the points file: {exc}")
        return ExitStatus.USAGE
    limits = Limits(wall_seconds=args.timeout, memory_bytes=args.memory * 2**20, max_steps=args.max_steps,
                    read_seconds=args.read_timeout)
    max_bytes = int(args.max_notebook_size * 2**20)
    for gap in unenforced_limits():
        _error(f"note: {gap}")
    if args.command == "grade":
        return _grade(args, config, limits, max_bytes)
    if args.command == "check":
        return _check(args, config, limits, max_bytes)
    return ExitStatus.USAGE


def _grade(args, config: PointsConfig, limits: Limits, max_bytes: int) -> int:
    out = Path(args.out)
    collected = collect_notebooks(args.submissions, max_bytes)
    files, problems = collected
    _error_lines(problems)
    if not files:
        _error("no notebooks to grade")
        return ExitStatus.USAGE
    try:
        roster = load_roster(args.mapping)
    except MappingError as exc:
        _error(str(exc))
        return ExitStatus.USAGE
    mapping = roster.mapping
    mismatch = mapping_mismatch(mapping, files)
    if mismatch is not None:
        _error(f"--mapping: {mismatch}")
        return ExitStatus.USAGE
    _, id_problems = assign_ids(files, mapping)
    _error_lines([p if p.startswith(LOOK_ALIKE) else f"--mapping: {p}" for p in id_problems])
    if any(p.startswith(TWICE) for p in id_problems):
        _error("a student id must name one notebook: fix the mapping file")
        return ExitStatus.USAGE
    try:
        # Before anything in --out is opened: a student's folder given as --out may hold a FIFO there.
        check_apart(out, args.submissions, [f.path for f in files])
        prepare_out(out, students=len(files), resume=args.resume, force=args.force)  # removes nothing
        check_history(out)  # changes.csv, kept across --force: refused now if it could not be added to
        # The results this run's changes are counted from, kept (changes-baseline.json) until changes.csv
        # holds them: a run stopped before then (Ctrl-C, changes.csv unwritable) leaves them to its --resume.
        previous = keep_baseline(out, replacing=args.force or args.resume)
        journal = _open_journal(args, out, files, limits)
    except ResultsFileError as exc:
        _error(f"{exc}\nnothing was graded: a regrade compares its grades with the results it replaces, to record "
               f"each change in {CHANGES_NAME}; correct the file, or move it out of {out} to grade with no record of "
               "changes")
        return ExitStatus.USAGE
    except (OutputError, JournalError) as exc:
        _error(str(exc))
        return ExitStatus.USAGE
    except OSError as exc:
        _error(f"cannot write the journal in {out}: {exc.strerror or exc}")
        return ExitStatus.USAGE
    try:
        runner, runner_name = _cluster_runner(args.cluster, args.workers, limits)
    except ClusterError as exc:
        _error(str(exc))
        return ExitStatus.USAGE
    except RunnerStopped as exc:
        _error(f"{exc}\nnothing was graded; run the same command with --resume once the cluster is up")
        return ExitStatus.STOPPED
    try:
        run = grade_submissions(args.submissions, config=config, mapping=mapping, limits=limits,
                                workers=args.workers, progress=not args.quiet, max_notebook_bytes=max_bytes,
                                journal=journal, collected=collected, runner=runner, runner_name=runner_name,
                                names=roster.names, lms_ids=roster.lms)
        written = write_outputs(run, out, args.lms, previous)
        record_changes(out, written.changes)
    except KeyboardInterrupt:
        _error(f"interrupted; {len(journal.records)} notebook(s) graded so far are kept in {journal.path}: "
               "run the same command with --resume to carry on")
        return ExitStatus.INTERRUPTED
    except (OutputError, RunnerStopped) as exc:
        _error(f"{exc}\nstopped; {len(journal.records)} notebook(s) graded so far are kept in {journal.path}: "
               "fix the problem and run the same command with --resume to carry on")
        return ExitStatus.STOPPED
    print_summary(run)
    reused = f", {run.reused} taken from the journal" if args.resume else ""
    print(f"wrote {out / 'grades.csv'}, gradebook.csv, results.json, summary.md and .svg, cost.json and reports/ "
          f"({len(run.students)} students{reused}; "
          f"hidden-test seed {run.seed})")
    print(run.cost.summary())
    if written.changes:
        print(f"{len(written.changes)} grade change(s) recorded in {out / CHANGES_NAME} (who, which puzzle, old and "
              "new, why)")
    _left_out_note(written.left_out_of_gradebook, str(out / GRADEBOOK_NAME))
    if not run.complete:
        faults = sum(1 for st in run.students for s in st.puzzles.values() if s.get("status") == "grader-fault")
        _error(f"grading did not complete: the grader failed on {faults} puzzle(s) (marked 'grader-fault', "
               "not scored); run the same command with --resume to try them again")
        return ExitStatus.INCOMPLETE
    return ExitStatus.OK


def _open_journal(args, out: Path, files: Sequence[Submission], limits: Limits) -> Journal:
    """The journal a run records its students in: the one in ``out`` carried on (``--resume``),
    or a new one. Raises ``JournalError`` for a journal that cannot be carried on as asked."""
    seed = new_seed() if args.seed is None else args.seed
    if not args.resume:
        return Journal.create(out, RunSettings(seed, limits.max_steps, __version__))
    try:
        journal = Journal.resume(out)
    except NeverStarted as exc:  # nothing to carry on with, and nothing lost: start from the beginning
        _error(f"note: {exc}; grading every notebook from the beginning (hidden-test seed {seed})")
        return Journal.create(out, RunSettings(seed, limits.max_steps, __version__))
    mine = RunSettings(journal.settings.seed if args.seed is None else args.seed, limits.max_steps, __version__)
    if mine != journal.settings:
        raise JournalError(f"{settings_difference(journal.settings, mine)}; a resumed run must grade as the "
                           "journalled one did: resume with the same settings (and version), or start "
                           "again with --force")
    note = resume_note(journal, files)
    if note is not None:
        _error(note)
    return journal


def _gradebook(args) -> int:
    path = Path(args.out) / RESULTS_NAME
    try:
        results = read_results(path)
    except FileNotFoundError:
        _error(f"{path}: no such file; gradebook exports the results.json of a grading run's --out folder")
        return ExitStatus.USAGE
    except ResultsFileError as exc:
        _error(f"{exc}\nnothing was exported: correct the file, or grade again to write the results anew")
        return ExitStatus.USAGE
    book = lms_gradebook(results, args.lms)
    text = book.text
    _left_out_note(book.left_out, args.to or "the gradebook")
    if args.to is None:
        sys.stdout.write(text)
    else:
        try:
            atomic_write(Path(args.to), text.encode("utf-8"))
        except OSError as exc:
            _error(f"cannot write {args.to}: {exc.strerror or exc}")
            return ExitStatus.USAGE
        print(f"wrote {args.to} ({args.lms.value} gradebook of {len(results.get('students', []))} students)")
    return ExitStatus.OK


def _left_out_note(left_out: list[str], path: str) -> None:
    """The students a gradebook leaves out, on stderr: their grades go into the LMS by hand."""
    if not left_out:
        return
    _error(f"{len(left_out)} student(s) left out of {path}; enter their grades in the LMS by hand:")
    for why in left_out[:20]:
        _error(f"  {why}")
    if len(left_out) > 20:
        _error(f"  ... and {len(left_out) - 20} more")


def _puzzles(args) -> int:
    """One line a puzzle: its id (what a points file and ``check --puzzle`` take), number, title
    and points."""
    try:
        config = PointsConfig.load(args.points)
    except (OSError, ValueError) as exc:
        _error(f"cannot read the points file: {exc}")
        return ExitStatus.USAGE
    width = max(len(p.id) for p in PUZZLES)
    for p in PUZZLES:
        print(f"{p.id:<{width}}  {p.number:>6}  {config.max_points(p.id):>5g}  {p.title}")
    print(f"{'total':<{width}}  {'':>6}  {sum(config.max_points(p.id) for p in PUZZLES):>5g}")
    return ExitStatus.OK


#: What each of a run's settings is called where an instructor sets it.
_SETTING_WORDS = {"seed": "--seed", "max_steps": "--max-steps", "version": "metal-puzzles version",
                  "format": "journal format"}


def settings_difference(journalled: RunSettings, now: RunSettings) -> str:
    """'the journalled run used metal-puzzles version 0.1.0, this one 0.2.0', one clause a setting
    that differs (not a dataclass's repr)."""
    old, new = asdict(journalled), asdict(now)
    differ = [k for k in old if old[k] != new[k]]
    return "the journalled run used " + ", ".join(
        f"{_SETTING_WORDS.get(k, k)} {old[k]} (this one: {new[k]})" for k in differ)


def resume_note(journal: Journal, files: Sequence[Submission]) -> str | None:
    """Why ``--resume`` will take nothing from a journal that holds students: none of its files is
    at a path graded now (records are matched by path, then content)."""
    if not journal.records or any(f.key in journal.records for f in files):
        return None
    hashes = {r.get("sha256") for r in journal.records.values()}
    same = sum(1 for f in files if f.sha256 in hashes)
    return (f"none of the {len(journal.records)} notebooks in the journal is at the path graded now "
            f"({same} of the {len(files)} notebooks graded have a journalled notebook's content): were the "
            "submissions moved or copied? The journal matches notebooks by their absolute path, so every notebook "
            "is graded again; resume with the folder the run started with to reuse its results")


def _autograder(args) -> int:
    from .grading.gradescope import AutograderError, build_autograder

    out = Path(args.out)
    try:
        wheel = build_autograder(out, points=Path(args.points) if args.points else None,
                                 wheel=Path(args.wheel) if args.wheel else None, seed=args.seed)
    except (AutograderError, OSError, ValueError) as exc:
        _error(f"cannot build the autograder: {exc}")
        return ExitStatus.USAGE
    print(f"wrote {out} (installs {wheel}); upload it as the assignment's autograder on Gradescope")
    return ExitStatus.OK


def _cluster_runner(spec: str | None, workers: int | None, limits: Limits):
    """The Dask runner ``--cluster`` asks for, and its name for the cost report; (None, None)
    without ``--cluster`` (the local pool; Dask is not imported at all)."""
    if spec is None:
        return None, None
    from .grading.cluster import ClusterSpec, DaskRunner

    parsed = ClusterSpec.parse(spec, workers or os.cpu_count() or 1)
    if parsed.address is not None and parsed.address.startswith("tcp://"):
        _error(f"warning: {parsed.address} is unencrypted and unauthenticated: anyone who can reach the scheduler "
               "can run code on its workers (and read the class's notebooks); use it only on a network of your own, "
               "or a tls:// scheduler (README: Grading a class)")
    return DaskRunner(parsed, limits), parsed.describe()


def _check(args, config: PointsConfig, limits: Limits, max_bytes: int) -> int:
    if not Path(args.notebook).exists():
        _error(f"{args.notebook}: no such file")
        return ExitStatus.USAGE
    only = None if args.puzzle is None else find_puzzle(args.puzzle)  # an id or a number, as listed
    if args.puzzle is not None and only is None:
        _error(f"--puzzle: {unknown_puzzle(args.puzzle, numbers=True)}")
        return ExitStatus.USAGE
    try:
        run = grade_submissions([args.notebook], config=config, limits=limits, workers=args.workers,
                                seed=args.seed, progress=False, max_notebook_bytes=max_bytes,
                                report_width=None,  # print_check folds them to the terminal's width
                                only=None if only is None else (only,))  # that puzzle's kernels alone
    except RunnerStopped as exc:
        _error(str(exc))
        return ExitStatus.STOPPED
    student = run.students[0]
    print_check(student, run, only=only)
    if not run.complete:
        return ExitStatus.INCOMPLETE
    # A puzzle the notebook does not attempt is not a failure; attempting none is.
    asked = [s for pid, s in student.puzzles.items() if only in (None, pid)]
    tried = [s for s in asked if s.get("status") not in (UncheckedStatus.MISSING, UncheckedStatus.NOT_ATTEMPTED)]
    return ExitStatus.OK if tried and all(s.get("passed") for s in tried) else ExitStatus.FAILED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
