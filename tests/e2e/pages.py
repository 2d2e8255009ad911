"""The notebook page as the browser tests see it, the same in JupyterLab and Notebook 7 (both
build the notebook from JupyterLab's components: cells, prompts, outputs and the toolbar)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from .conftest import JupyterServer


@dataclass
class Lab:
    """The notebook page, with numbered screenshots of everything done to it."""

    page: object
    artifacts: Path
    shots: list[Path] = field(default_factory=list)

    def shot(self, name: str, focus=None) -> Path:
        if focus is not None:
            focus.scroll_into_view_if_needed(timeout=5_000)
        path = self.artifacts / f"{len(self.shots) + 1:02d}-{name}.png"
        self.page.screenshot(path=str(path))
        self.shots.append(path)
        return path

    def shot_quietly(self, name: str) -> None:
        """A screenshot while something already failed: never raise over the real error."""
        try:
            self.shot(name)
        except Exception:  # best effort only
            pass

    def explorer(self, n: int):
        return self.page.locator(".mp-explorer").nth(n)

    def cell(self, n: int):
        return self.page.locator(".jp-Notebook .jp-Cell").nth(n)


def error_outputs(page) -> list[str]:
    """Tracebacks printed by the cells (error outputs are rendered as stderr)."""
    texts = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").all_inner_texts()
    return [t for t in texts if "Traceback" in t or "Cell In[" in t]


def wait_for_kernel(lab: Lab, server: JupyterServer, notebook: str, kernel_label: str,
                    timeout: float = 120.0) -> None:
    """Until the page shows the notebook's kernel and the server says it is idle and connected to
    the page (both front ends show the kernel's name in the notebook's toolbar; JupyterLab's status
    bar does not exist in Notebook 7)."""
    from playwright.sync_api import expect

    expect(lab.page.locator(".jp-Toolbar-kernelName", has_text=kernel_label)).to_be_visible(
        timeout=timeout * 1000)
    deadline = time.monotonic() + timeout
    while not server.kernel_ready(notebook):
        if time.monotonic() > deadline:
            lab.shot_quietly("FAILED-kernel")
            pytest.fail(f"the kernel was not idle and connected within {timeout:.0f} s:\n{server.log_tail()}")
        lab.page.wait_for_timeout(250)
