"""Function pointers (``T (*op)(T, T)``, as c10/metal/atomic.h passes an operation) are outside
the simulator's subset (issue 23): a precise compile error at the '(' of the declarator, naming
the way that works (a functor type as a template parameter), instead of a parse error.
"""

from __future__ import annotations

import pytest

from metal_puzzles.msl import CompileError

from .conftest import out0

ADD = "float add(float a, float b) { return a + b; }\n"


@pytest.mark.parametrize(("header", "body", "column"), [
    # A parameter: the error points at the '(' before '*op'.
    (ADD + "float apply(float x, float y, float (*op)(float, float)) { return op(x, y); }",
     "out[0] = apply(1.0f, 2.0f, add);", 37),
    # A local variable.
    (ADD, "float (*op)(float, float) = add; out[0] = op(1.0f, 2.0f);", 7),
])
def test_a_function_pointer_is_a_precise_error_at_its_parenthesis(header: str, body: str, column: int) -> None:
    with pytest.raises(CompileError, match="function pointers are not supported by the simulator") as info:
        out0(body, header=header)
    assert info.value.pos.col == column
