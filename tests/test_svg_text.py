"""The fast SVG writer writes the bytes chalk's backend writes (and steps aside when it cannot)."""

import math
import warnings

import numpy as np
import pytest
from chalk import circle

from metal_puzzles.draw import draw_run, to_svg
from metal_puzzles.msl import simulate
from metal_puzzles.svg_text import svg_text


def chalk_svg(diagram, tmp_path) -> tuple[str, int, int]:
    from chalk.backend.svg import render

    env = diagram.get_envelope()
    width, height = max(1, math.ceil(env.width * 1.05)), max(1, math.ceil(env.height * 1.05))
    path = tmp_path / "chalk.svg"
    render(diagram, str(path), height, width)
    return path.read_text(encoding="utf-8"), height, width


def traced(source, n_out, grid, tg, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return simulate("k", ["a"], ["out"], source, inputs=[np.arange(4, dtype=np.float32)],
                        output_shapes=[(n_out,)], output_dtypes=["float32"], grid=grid, threadgroup=tg, trace=True,
                        sanitize="warn", **kw)


RACY = """
threadgroup float s[4];
uint i = thread_position_in_grid.x;
s[i % 4] = a[i % 4];
out[i] = s[(i + 1) % 4] + a[i];
"""


@pytest.mark.parametrize("source, n_out, grid, title", [
    ("uint i = thread_position_in_grid.x;\nout[i] = a[i] + 10;\n", 4, 8, "out of bounds & <marks>"),
    (RACY, 4, 4, "a race \"quoted\""),
])
def test_the_same_bytes_as_chalk(source, n_out, grid, title, tmp_path):
    diagram = draw_run(traced(source, n_out, (grid, 1, 1), (grid, 1, 1)), title=title)
    want, height, width = chalk_svg(diagram, tmp_path)
    got = svg_text(diagram, height, width)
    assert got == want
    assert "stroke-dasharray" in got or "race" in got  # the findings' layer was written too


def test_the_access_map_too(tmp_path):
    from metal_puzzles.cost_diagram import draw_access_map

    run = traced("uint i = thread_position_in_grid.x;\nif (i < 4) out[i] = a[i];\n", 4, (32, 1, 1), (32, 1, 1),
                 cost=True)
    diagram = draw_access_map(run)
    want, height, width = chalk_svg(diagram, tmp_path)
    assert svg_text(diagram, height, width) == want


def test_a_shape_it_does_not_know_goes_to_chalk(tmp_path):
    diagram = circle(10.0)  # arcs
    want, height, width = chalk_svg(diagram, tmp_path)
    assert svg_text(diagram, height, width) is None
    assert to_svg(diagram).replace(f'viewBox="0 0 {width} {height}" ', "") == want
