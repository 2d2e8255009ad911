"""metal-puzzles init, lab and notebook: the book is written from the package, a learner's
notebook is never overwritten, and both Jupyter front ends really start on it (as root too)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from metal_puzzles.cli import main
from metal_puzzles.notebook import book
from metal_puzzles.notebook.book import InitOutcome, JupyterUI, init_book

ROOT = Path(__file__).resolve().parents[2]
SERVER_START_TIMEOUT = 180.0  # seconds: a cold first start of a Jupyter server can take 20-40 s


def test_packaged_book_is_the_top_level_notebook():
    assert book.packaged_notebook().read_bytes() == (ROOT / "puzzles.ipynb").read_bytes(), \
        "run: python tools/build_notebook.py"


def test_init_writes_the_book_into_a_new_folder(tmp_path, capsys):
    target = tmp_path / "course" / "week1"
    assert main(["init", str(target)]) == 0
    written = target / "puzzles.ipynb"
    assert written.read_bytes() == (ROOT / "puzzles.ipynb").read_bytes()
    out = capsys.readouterr().out
    assert f"wrote {written}" in out and f"metal-puzzles lab {target}" in out


def test_init_defaults_to_the_current_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["init"]) == 0
    assert (tmp_path / "puzzles.ipynb").is_file()


def test_init_never_overwrites_a_learners_notebook(tmp_path, capsys):
    mine = tmp_path / "puzzles.ipynb"
    mine.write_text("my work, half done")
    assert main(["init", str(tmp_path)]) == 0
    assert mine.read_text() == "my work, half done"
    out = capsys.readouterr().out
    assert "kept" in out and "never overwritten" in out and f"metal-puzzles init --fresh {tmp_path}" in out

    # --fresh writes a new copy beside it, under a name that is free, every time.
    first = init_book(tmp_path, fresh=True)
    second = init_book(tmp_path, fresh=True)
    assert (first.outcome, first.notebook.name) == (InitOutcome.WROTE, "puzzles-fresh.ipynb")
    assert (second.outcome, second.notebook.name) == (InitOutcome.WROTE, "puzzles-fresh-2.ipynb")
    assert first.notebook.read_bytes() == second.notebook.read_bytes() == book.packaged_notebook().read_bytes()
    assert mine.read_text() == "my work, half done"


def test_fresh_without_an_existing_notebook_writes_the_usual_name(tmp_path):
    result = init_book(tmp_path, fresh=True)
    assert result == book.InitResult(tmp_path / "puzzles.ipynb", InitOutcome.WROTE)


def test_init_into_a_file_is_a_clear_error(tmp_path, capsys):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a folder")
    assert main(["init", str(a_file)]) == 2
    assert f"{a_file} is a file, not a folder" in capsys.readouterr().err
    assert a_file.read_text() == "not a folder"


def test_init_where_a_folder_cannot_be_made_is_a_clear_error(tmp_path, capsys):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a folder")
    assert main(["init", str(a_file / "book")]) == 2
    assert f"cannot write the book into {a_file / 'book'}" in capsys.readouterr().err


def test_init_into_a_folder_named_like_an_option(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["init", "--", "-odd name"]) == 0
    assert (tmp_path / "-odd name" / "puzzles.ipynb").is_file()


@pytest.mark.parametrize("argv", [["lab", "--port", "8899"], ["lab", "--", "--port", "8899"],
                                  ["lab", "--fresh", "--port", "8899"], ["lab", ".", "--port", "8899"]])
def test_jupyter_options_without_a_folder_go_to_jupyter(argv, tmp_path, monkeypatch):
    # 'metal-puzzles lab --port 8899' (issue 22): the current folder, and the options for Jupyter.
    monkeypatch.chdir(tmp_path)
    opened = []
    monkeypatch.setattr(book, "open_in_jupyter", lambda ui, notebook, extra: opened.append((ui, notebook, extra)) or 0)
    assert main(argv) == 0
    ((ui, notebook, extra),) = opened
    assert ui is JupyterUI.LAB and notebook.resolve() == tmp_path / "puzzles.ipynb" and extra == ["--port", "8899"]


def test_the_link_jupyter_prints_opens_the_book():
    notebook = Path("/somewhere/puzzles.ipynb")
    lab = book.jupyter_command(JupyterUI.LAB, notebook, as_root=False)
    assert "--LabApp.default_url=/lab/tree/puzzles.ipynb" in lab
    classic = book.jupyter_command(JupyterUI.NOTEBOOK, notebook, as_root=False)
    assert "--JupyterNotebookApp.default_url=/notebooks/puzzles.ipynb" in classic
    own = book.jupyter_command(JupyterUI.LAB, notebook, ["--LabApp.default_url=/lab"], as_root=False)
    assert [o for o in own if "default_url" in o] == ["--LabApp.default_url=/lab"]  # the learner's choice wins


@pytest.mark.parametrize("ui", list(JupyterUI))
def test_jupyter_command_runs_this_environment_and_allows_root(ui):
    notebook = Path("/somewhere/puzzles.ipynb")
    as_root = book.jupyter_command(ui, notebook, ["--no-browser"], as_root=True)
    assert as_root == [sys.executable, "-m", ui.module, "puzzles.ipynb", "--allow-root",
                       f"--{ui.app_class}.default_url={ui.page('puzzles.ipynb')}", "--no-browser"]
    assert "--allow-root" not in book.jupyter_command(ui, notebook, as_root=False)


# ----------------------------------------------------------------------------- real servers
def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _private_environment(private: Path) -> dict[str, str]:
    """Jupyter's config, data, runtime and settings in a temporary folder: nothing of the user's
    is read or written."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "JPY_"))}
    for name in ("home", "config", "data", "runtime", "settings", "workspaces", "ipython"):
        (private / name).mkdir(parents=True, exist_ok=True)
    env.update(HOME=str(private / "home"), JUPYTER_CONFIG_DIR=str(private / "config"),
               JUPYTER_DATA_DIR=str(private / "data"), JUPYTER_RUNTIME_DIR=str(private / "runtime"),
               JUPYTERLAB_SETTINGS_DIR=str(private / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(private / "workspaces"), IPYTHONDIR=str(private / "ipython"),
               JUPYTER_PLATFORM_DIRS="1")
    return env


def _get(url: str, token: str, method: str = "GET") -> tuple[int, bytes]:
    request = urllib.request.Request(url, method=method, headers={"Authorization": f"token {token}"},
                                     data=b"" if method == "POST" else None)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: no proxy
    with opener.open(request, timeout=10) as response:
        return response.status, response.read()


@pytest.mark.parametrize("ui", list(JupyterUI))
def test_command_writes_the_book_and_serves_it(ui, tmp_path):
    """``metal-puzzles lab DIR`` / ``notebook DIR`` as a learner runs them (as root on CI and in
    containers): the book appears in DIR and the server started there opens it."""
    folder = tmp_path / "book"
    port, token = _free_port(), os.urandom(16).hex()
    log_path = tmp_path / "server.log"
    command = [sys.executable, "-m", "metal_puzzles.cli", ui.value, str(folder), "--no-browser",
               "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
               f"--IdentityProvider.token={token}"]
    with log_path.open("w") as log:
        server = subprocess.Popen(command, env=_private_environment(tmp_path / "private"), stdout=log,
                                  stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while True:
            assert server.poll() is None, f"{ui.title} exited early:\n{log_path.read_text()[-3000:]}"
            try:
                _get(f"{base}/api/status", token)
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                if time.monotonic() > deadline:
                    pytest.fail(f"{ui.title} did not answer in {SERVER_START_TIMEOUT:.0f} s:\n"
                                f"{log_path.read_text()[-3000:]}")
                time.sleep(0.5)
        assert (folder / "puzzles.ipynb").read_bytes() == book.packaged_notebook().read_bytes()
        # The server's root is the book's folder: the notebook is at the top of its file tree.
        status, body = _get(f"{base}/api/contents/puzzles.ipynb?content=0", token)
        assert (status, json.loads(body)["type"]) == (200, "notebook")
        page = {JupyterUI.LAB: "lab/tree/puzzles.ipynb", JupyterUI.NOTEBOOK: "notebooks/puzzles.ipynb"}[ui]
        status, html = _get(f"{base}/{page}", token)
        assert status == 200 and b"<html" in html.lower()
    finally:
        try:
            _get(f"{base}/api/shutdown", token, method="POST")
            server.wait(timeout=30)
        except (urllib.error.URLError, OSError, subprocess.TimeoutExpired):
            server.terminate()
            server.wait(timeout=30)
    log = log_path.read_text()
    assert f"wrote {folder / 'puzzles.ipynb'}" in log and "opening" in log
