"""The book itself, as ``metal-puzzles lab`` / ``metal-puzzles notebook`` wrote it, in a browser:
run from its top down to the first puzzle with Shift+Enter, as a learner does, in JupyterLab and in
Notebook 7. The install cell does nothing (the package is installed), the signature demo prints
MLX's generated signature, and Map's cell prints the score table and draws its diagram."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from metal_puzzles.notebook.book import NOTEBOOK_NAME

from .conftest import JupyterServer
from .pages import Lab, error_outputs, wait_for_kernel

pytestmark = pytest.mark.e2e

FIRST_PUZZLE = "p1-code"
RUN_TIMEOUT_MS = 240_000  # the first cells import MLX and the simulator in a fresh kernel


def code_output(cell, mime: str):
    return cell.locator(f".jp-OutputArea-output[data-mime-type='{mime}']")


@pytest.fixture(scope="module")
def book(browser, jupyter_server: JupyterServer, artifacts_dir: Path) -> Iterator[tuple[Lab, dict[str, int]]]:
    """The book open with its cells run down to the first puzzle; the cells' positions by id."""
    from playwright.sync_api import expect

    path = jupyter_server.root_dir / NOTEBOOK_NAME
    assert path.is_file(), f"metal-puzzles {jupyter_server.ui.value} did not write the book into its folder"
    positions = {c.id: n for n, c in enumerate(nbformat.read(path, as_version=4).cells)}
    artifacts = artifacts_dir / jupyter_server.ui.value / "book"
    artifacts.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": 1400, "height": 1300})
    page = context.new_page()
    page.set_default_timeout(60_000)
    lab = Lab(page, artifacts)
    try:
        page.goto(jupyter_server.notebook_url(NOTEBOOK_NAME), timeout=120_000)
        expect(page.locator(".jp-NotebookPanel .jp-Cell")).to_have_count(len(positions), timeout=120_000)
        wait_for_kernel(lab, jupyter_server, NOTEBOOK_NAME, "Python 3")
        lab.shot("book-opened")
        # Select the first cell by its prompt (the intro has links: a click on its text could follow
        # one), then Shift+Enter down to the first puzzle's code cell, included.
        lab.cell(0).locator(".jp-InputPrompt").click()
        for _ in range(positions[FIRST_PUZZLE] + 1):
            page.keyboard.press("Shift+Enter")
        prompt = lab.cell(positions[FIRST_PUZZLE]).locator(".jp-InputPrompt")
        expect(prompt).to_have_text(re.compile(r"\[\d+\]:"), timeout=RUN_TIMEOUT_MS)
        lab.shot("book-first-puzzle-run", lab.cell(positions[FIRST_PUZZLE]))
        yield lab, positions
    except BaseException:
        lab.shot_quietly("FAILED-book-setup")
        raise
    finally:
        context.close()


def test_book_runs_to_the_first_puzzle_without_a_traceback(book) -> None:
    from playwright.sync_api import expect

    lab, positions = book
    assert error_outputs(lab.page) == []
    install = lab.cell(positions["install"])
    expect(install.locator(".jp-InputPrompt")).to_have_text(re.compile(r"\[\d+\]:"))
    expect(install.locator(".jp-OutputArea-output")).to_have_count(0)  # installed: nothing to do
    demo = lab.cell(positions["signature-demo"])
    expect(code_output(demo, "application/vnd.jupyter.stdout")).to_contain_text("device float* y")


def test_first_puzzle_shows_its_score_table_and_diagram(book) -> None:
    from playwright.sync_api import expect

    lab, positions = book
    cell = lab.cell(positions[FIRST_PUZZLE])
    # The score table is an HTML table in Jupyter (a text table wraps into garbage when narrow).
    table = cell.locator(".jp-OutputArea-output[data-mime-type='text/html'] .mp-table table").first
    expect(table).to_be_visible()
    expect(cell.locator(".mp-table").first).to_contain_text("Score (Max Per Thread):")
    # The diagram is the cell's result: an SVG drawing (both front ends render the HTML form, an
    # inline <svg>).
    drawn = cell.locator(".jp-OutputArea-executeResult .jp-OutputArea-output svg").first
    expect(drawn).to_be_visible()
    box = drawn.bounding_box()
    assert box["width"] > 200 and box["height"] > 100, f"the diagram is drawn {box['width']}x{box['height']} px"
    lab.shot("book-map-diagram", drawn)
