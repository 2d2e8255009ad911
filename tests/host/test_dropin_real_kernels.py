"""The ``metal_kernel`` drop-in on production kernels (issue 23, item 5): no step budget by
default, MLX's rule for template values; puzzles keep their budget."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from metal_puzzles import metal_kernel
from metal_puzzles.host.kernel import interrupted_message
from metal_puzzles.msl import ArgumentError, SanitizerError, simulate
from metal_puzzles.msl.program import DEFAULT_MAX_STEPS

LONG_LOOP = """
uint i = thread_position_in_grid.x;
float s = 0.0f;
for (int j = 0; j < n; j++) { s += 1.0f; }
out[i] = s;
"""


def _call(kernel, n: int, **options):
    return kernel(inputs=[mx.array(n, dtype=mx.int32)], output_shapes=[(4,)], output_dtypes=[mx.float32],
                  grid=(4, 1, 1), threadgroup=(4, 1, 1), **options)


def test_the_drop_in_runs_a_kernel_past_the_simulators_general_budget() -> None:
    steps = DEFAULT_MAX_STEPS + 5_000
    out = _call(metal_kernel("long_loop", ["n"], ["out"], LONG_LOOP), steps)
    np.testing.assert_array_equal(np.array(out[0]), np.full(4, steps, dtype=np.float32))


def test_an_explicit_budget_still_stops_a_drop_in_run() -> None:
    with pytest.raises(SanitizerError, match="after 1000 steps"):
        _call(metal_kernel("long_loop", ["n"], ["out"], LONG_LOOP), 5_000, max_steps=1000, sanitize="error")


def test_simulate_keeps_its_budget_when_none_is_given() -> None:
    with pytest.raises(SanitizerError, match=f"after {DEFAULT_MAX_STEPS} steps"):
        simulate("long_loop", ["n"], ["out"], LONG_LOOP, inputs=[np.int32(DEFAULT_MAX_STEPS + 10)],
                 output_shapes=[(4,)], output_dtypes=["float32"], grid=(4, 1, 1), threadgroup=(4, 1, 1))


def test_the_interrupt_message_says_how_to_bound_the_run() -> None:
    text = interrupted_message("sinkhorn", None)
    assert "'sinkhorn'" in text and "no step budget" in text and "max_steps=N" in text
    assert "budget of 500 steps" in interrupted_message("sinkhorn", 500)


@pytest.mark.parametrize("value", [1e-10, 0.5, "not_a_dtype"])
def test_a_template_value_that_is_no_dtype_int_or_bool_is_refused_as_mlx_does(value) -> None:
    kernel = metal_kernel("eps", ["n"], ["out"], "out[thread_position_in_grid.x] = float(n);")
    with pytest.raises(ArgumentError, match="has to be a dtype, an int \\(32-bit\\) or a bool"):
        _call(kernel, 1, template=[("EPS", value)])


def test_template_dtypes_ints_and_bools_still_work() -> None:
    kernel = metal_kernel("tmpl", ["n"], ["out"], "out[thread_position_in_grid.x] = T(n) + K + (B ? 1 : 0);")
    out = _call(kernel, 1, template=[("T", mx.float32), ("K", 3), ("B", True)])
    np.testing.assert_array_equal(np.array(out[0]), np.full(4, 5, dtype=np.float32))
