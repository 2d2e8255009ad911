"""The front-end fuzz, long: issue 27's invariant (no input reaches an internal error) for as long
as it is given.

Run: python benchmarks/fuzz_front_end.py --minutes 30 [--report fuzz_report.txt]

The same property and generators as ``tests/msl/front/test_front_end_properties.py`` (grammar-built
kernel bodies, well-formed bodies that reach code generation and a run, generated headers,
mutations of the book's reference solutions, whole shader files), in turns of a few hundred inputs each, random this
time. Every input must end in a result, a located CompileError or a run-time finding; any other
exception is recorded (its type, where it was raised, the shortest input that raised it) and the
fuzz goes on. Prints how many inputs ran, their outcomes and what it found; exits 1 if it found
anything.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from msl.front.fuzz_grammar import (  # noqa: E402 - the grammar lives with the tests that share it
    GENERATED,
    book_launches,
    header_text,
    kernel_body,
    mutated,
    run_front_to_back,
    run_shader,
    well_formed_body,
    whole_shader,
)

TURN = 200  # inputs a turn of one generator


class Findings:
    """Outcomes counted, and internal errors by where they were raised (shortest input kept)."""

    def __init__(self) -> None:
        self.outcomes: Counter[str] = Counter()
        self.bugs: dict[str, tuple[int, str, str]] = {}  # signature -> (count, shortest input, traceback)
        self.slowest: tuple[float, str] = (0.0, "")  # the input that took longest, and its seconds

    def run(self, launch, source: str, header: str | None = None) -> None:
        start = time.perf_counter()
        try:
            self._run(launch, source, header)
        finally:
            took = time.perf_counter() - start
            if took > self.slowest[0]:
                self.slowest = (took, source if header is None else f"// header:\n{header}\n// source:\n{source}")

    def _run(self, launch, source: str, header: str | None) -> None:
        try:
            if launch is None:
                self.outcomes[run_shader(source)] += 1
            else:
                self.outcomes[run_front_to_back(launch, source, header)] += 1
        except Exception as exc:  # noqa: BLE001 - any other exception is what the fuzz hunts
            self.outcomes["INTERNAL ERROR"] += 1
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            signature = f"{type(exc).__name__} at {Path(frame.filename).name}:{frame.lineno}"
            text = source if header is None else f"// header:\n{header}\n// source:\n{source}"
            if signature not in self.bugs:  # shown at once: a long run's report comes only at its end
                print(f"NEW {signature}; input:\n{text}\n{traceback.format_exc(limit=-4)}", flush=True)
            count, shortest, tb = self.bugs.get(signature, (0, text, ""))
            if len(text) <= len(shortest) or not tb:
                shortest, tb = text, traceback.format_exc(limit=-4)
            self.bugs[signature] = (count + 1, shortest, tb)


def turns(findings: Findings):
    launches = book_launches()
    common = dict(max_examples=TURN, deadline=None, database=None, phases=[Phase.generate],
                  suppress_health_check=list(HealthCheck), derandomize=False)

    @settings(**common)
    @given(body=kernel_body())
    def generated(body):
        findings.run(GENERATED, body)

    @settings(**common)
    @given(body=well_formed_body())
    def well_formed(body):
        findings.run(GENERATED, body)

    @settings(**common)
    @given(header=header_text(), body=kernel_body())
    def with_header(header, body):
        findings.run(GENERATED, body, header)

    @settings(**common)
    @given(data=st.data())
    def mutation(data):
        launch = data.draw(st.sampled_from(launches))
        findings.run(launch, data.draw(mutated(launch.source)))

    @settings(**common)
    @given(text=whole_shader())
    def shader(text):
        findings.run(None, text)

    while True:
        yield from (generated, well_formed, with_header, mutation, shader)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=5.0, help="how long to fuzz")
    parser.add_argument("--report", type=Path, default=None, help="also write the findings to this file")
    args = parser.parse_args()
    findings = Findings()
    start = time.monotonic()
    deadline = start + args.minutes * 60
    for turn in turns(findings):
        if time.monotonic() >= deadline:
            break
        try:
            turn()
        except Exception:  # noqa: BLE001 - a generator's own fault must not end a long run
            print("a generator failed (not the simulator):\n" + traceback.format_exc(limit=-3), flush=True)
        ran = sum(findings.outcomes.values())
        print(f"{(time.monotonic() - start) / 60:6.1f} min  {ran:8d} inputs  internal errors: "
              f"{findings.outcomes['INTERNAL ERROR']} ({len(findings.bugs)} distinct)", flush=True)
    lines = [f"inputs run: {sum(findings.outcomes.values())} in {(time.monotonic() - start) / 60:.1f} min",
             "outcomes: " + ", ".join(f"{k} {v}" for k, v in findings.outcomes.most_common()),
             f"distinct internal errors: {len(findings.bugs)}",
             f"slowest input: {findings.slowest[0]:.2f} s ({len(findings.slowest[1])} characters)"]
    for signature, (count, shortest, tb) in sorted(findings.bugs.items(), key=lambda kv: -kv[1][0]):
        lines += ["", f"== {signature} ({count} inputs); shortest input:", shortest, tb]
    text = "\n".join(lines)
    print(text)
    if args.report is not None:
        args.report.write_text(text + "\n", encoding="utf-8")
    return 1 if findings.bugs else 0


if __name__ == "__main__":
    sys.exit(main())
