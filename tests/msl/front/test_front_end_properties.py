"""Property: no input reaches an internal error (issue 27, section 2).

Whatever text a student writes, the front end (lexer, preprocessor, parser, checker), code
generation and a run of what compiles end in one of three ways: a result, a ``CompileError``
located in the kernel's own text, or a run-time finding (``KernelRuntimeError``). Any other
exception escaping ``simulate`` is a simulator bug, which the grader would blame on itself.

Inputs come from a grammar of MSL (``fuzz_grammar``: literals of every kind, expressions,
statements, declarations, preprocessor lines, token soup) and from mutations of the book's
reference solutions. The run is bounded and derandomized (the same examples every time, so CI is
stable); ``benchmarks/fuzz_front_end.py`` runs the same property for as long as it is given.
"""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from msl.front.fuzz_grammar import (
    GENERATED,
    Outcome,
    book_launches,
    header_text,
    kernel_body,
    mutated,
    run_front_to_back,
    run_shader,
    well_formed_body,
    whole_shader,
)

# No shrinking: on a loaded machine it can take minutes; the failing input is printed as found.
BOUNDED = settings(max_examples=150, derandomize=True, deadline=None, database=None, print_blob=True,
                   phases=[Phase.explicit, Phase.generate],
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                          HealthCheck.filter_too_much])
LAUNCHES = book_launches()


def test_the_book_kernels_run_unmutated() -> None:
    """The mutations start from kernels that compile and run."""
    assert len(LAUNCHES) > 30
    for launch in LAUNCHES:
        assert run_front_to_back(launch, launch.source) == Outcome.RESULT, launch.name


@BOUNDED
@given(body=kernel_body())
def test_generated_bodies_end_in_a_result_or_a_located_error(body: str) -> None:
    assert run_front_to_back(GENERATED, body) in (Outcome.RESULT, Outcome.COMPILE_ERROR, Outcome.RUNTIME_FINDING)


@BOUNDED
@given(body=well_formed_body())
def test_well_formed_bodies_compile_and_run_to_a_result_or_a_finding(body: str) -> None:
    """Bodies over declared variables reach code generation and a run: no compile errors here."""
    assert run_front_to_back(GENERATED, body) in (Outcome.RESULT, Outcome.RUNTIME_FINDING)


@BOUNDED
@given(header=header_text(), body=kernel_body())
def test_generated_headers_end_in_a_result_or_a_located_error(header: str, body: str) -> None:
    assert run_front_to_back(GENERATED, body, header) in (Outcome.RESULT, Outcome.COMPILE_ERROR,
                                                          Outcome.RUNTIME_FINDING)


@BOUNDED
@given(data=st.data())
def test_mutated_book_kernels_end_in_a_result_or_a_located_error(data) -> None:
    launch = data.draw(st.sampled_from(LAUNCHES))
    source = data.draw(mutated(launch.source))
    assert run_front_to_back(launch, source) in (Outcome.RESULT, Outcome.COMPILE_ERROR, Outcome.RUNTIME_FINDING)


@BOUNDED
@given(text=whole_shader())
def test_whole_shaders_end_in_a_result_or_a_located_error(text: str) -> None:
    """The same through ``compile_shader``'s path: a shader file with its own kernel function."""
    assert run_shader(text) in (Outcome.RESULT, Outcome.COMPILE_ERROR, Outcome.RUNTIME_FINDING)
