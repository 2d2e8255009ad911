"""Fixtures for the browser tests: a throw-away Jupyter server and a headless Chromium.

The server is started the way a learner starts it, with ``metal-puzzles lab DIR`` or
``metal-puzzles notebook DIR`` (so as root it gets ``--allow-root`` from the command itself); every
browser test runs once against JupyterLab and once against Jupyter Notebook 7.

Everything the server writes (config, data, runtime files, settings, workspaces, IPython history)
goes to one temporary directory, so a run leaves nothing in the user's home. Deselect these tests
with ``-m "not e2e"``; when they are selected and Chromium or Playwright is missing they FAIL,
saying how to install them (``bash .ci/install-browser <venv>``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from metal_puzzles.notebook.book import JupyterUI

REPO_ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO_ROOT / "test-artifacts" / "e2e"
KERNEL_NAME = "mp-e2e"
SERVER_START_TIMEOUT = 180.0  # seconds; a cold first start of a Jupyter server can take 20-40 s
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--no-proxy-server"]
LEFTOVERS_STOP_TIMEOUT = 10.0  # seconds a leftover kernel gets to stop on SIGTERM before SIGKILL
UI_TIMEOUT_MS = 30_000  # one widget round trip to the kernel and back (a Check runs the hidden tests)
INSTALL_HINT = ("install it with `bash .ci/install-browser <path-to-venv>`, or deselect the browser "
                "tests with `-m 'not e2e'`")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "e2e: end-to-end browser tests (JupyterLab and Notebook 7 + headless Chromium)")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    # Keep each phase's report on the item so fixtures can tell a failed test (to screenshot it).
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    """test-artifacts/e2e/ (a folder per front end inside), emptied of the previous run's
    screenshots and logs."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for old in ARTIFACTS.rglob("*"):
        if old.is_file() and old.suffix in {".png", ".log", ".ipynb"}:
            old.unlink()
    return ARTIFACTS


# ----------------------------------------------------------------------------- Jupyter
@dataclass
class JupyterServer:
    ui: JupyterUI
    base_url: str
    token: str
    root_dir: Path
    process: subprocess.Popen
    log_path: Path
    private_dir: Path

    def url(self, path: str) -> str:
        return f"{self.base_url}/{path.lstrip('/')}?token={self.token}"

    def notebook_url(self, name: str) -> str:
        """The page that opens one notebook: Notebook 7's own page, or JupyterLab in a workspace of
        that notebook's own (a shared workspace would reopen the notebooks of earlier pages)."""
        if self.ui is JupyterUI.NOTEBOOK:
            return self.url(f"notebooks/{name}")
        return self.url(f"lab/workspaces/{Path(name).stem}/tree/{name}")

    def kernel_ready(self, notebook: str) -> bool:
        """The notebook's kernel is started, idle and connected to a page (the server's view)."""
        try:
            sessions = json.loads(self.api("api/sessions"))
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError, ValueError):
            return False
        return any(s.get("path", "").endswith(notebook) and (s.get("kernel") or {}).get("execution_state") == "idle"
                   and (s.get("kernel") or {}).get("connections", 0) >= 1 for s in sessions)

    def api(self, path: str, method: str = "GET", timeout: float = 5.0) -> bytes:
        request = urllib.request.Request(f"{self.base_url}/{path.lstrip('/')}", method=method,
                                         headers={"Authorization": f"token {self.token}"},
                                         data=b"" if method == "POST" else None)
        # No proxies: the server is on the loopback interface.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(request, timeout=timeout) as response:
            return response.read()

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no server log)"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1))


def _prepare_private_dirs(private: Path, lib: Path | None = None) -> dict[str, str]:
    """Config, kernelspec and lab settings in a private directory; returns the environment. The
    kernel imports the package from ``lib`` (default: this checkout's lib/; a benchmark compares
    with another checkout's)."""
    dirs = {name: private / name for name in ("config", "data", "runtime", "settings", "workspaces",
                                              "ipython", "home", "root")}
    for d in dirs.values():
        d.mkdir(parents=True, exist_ok=True)
    # No calls home: no news feed, no update check, no extension catalogue.
    lab_config = {"LabApp": {"news_url": None, "check_for_updates_class": "jupyterlab.NeverCheckForUpdate",
                             "extension_manager": "readonly"}}
    _write_json(dirs["config"] / "jupyter_server_config.json", lab_config)
    _write_json(dirs["config"] / "jupyter_lab_config.json", lab_config)
    # A kernel that runs this interpreter on this checkout's lib/, whatever is installed.
    _write_json(dirs["data"] / "kernels" / KERNEL_NAME / "kernel.json", {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python (metal-puzzles e2e)",
        "language": "python",
        "env": {"PYTHONPATH": str(lib or REPO_ROOT / "lib"), "IPYTHONDIR": str(dirs["ipython"])},
    })
    # Settings: no news toast over the page; every cell attached to the DOM (no windowing), so
    # locators see all outputs.
    _write_json(dirs["settings"] / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings",
                {"fetchNews": "false", "checkForUpdates": False})
    _write_json(dirs["settings"] / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings",
                {"windowingMode": "none"})
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "JPY_"))}
    env.update(HOME=str(dirs["home"]), IPYTHONDIR=str(dirs["ipython"]),
               JUPYTER_CONFIG_DIR=str(dirs["config"]), JUPYTER_DATA_DIR=str(dirs["data"]),
               JUPYTER_RUNTIME_DIR=str(dirs["runtime"]), JUPYTERLAB_SETTINGS_DIR=str(dirs["settings"]),
               JUPYTERLAB_WORKSPACES_DIR=str(dirs["workspaces"]), JUPYTER_PLATFORM_DIRS="1",
               PYTHONUNBUFFERED="1")
    return env


def _start_server(ui: JupyterUI, private: Path, log_path: Path, lib: Path | None = None) -> JupyterServer:
    """``metal-puzzles lab|notebook ROOT`` with a port, a token and no browser: the learner's
    command, which also writes the book into ROOT. Its kernels import the package from ``lib``
    (default: this checkout's)."""
    env = _prepare_private_dirs(private, lib)
    root = private / "root"
    port = _free_port()
    token = os.urandom(24).hex()
    cmd = [sys.executable, "-m", "metal_puzzles.cli", ui.value, str(root), "--no-browser",
           "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
           f"--IdentityProvider.token={token}"]
    log = log_path.open("w")
    process = subprocess.Popen(cmd, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, start_new_session=True)
    log.close()
    server = JupyterServer(ui, f"http://127.0.0.1:{port}", token, root, process, log_path, private)
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while True:
        if process.poll() is not None:
            pytest.fail(f"{ui.title} exited with code {process.returncode} before it was ready:\n"
                        f"{server.log_tail()}")
        try:
            server.api("api/status")
            return server
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            pass
        if time.monotonic() > deadline:
            _stop_server(server)
            pytest.fail(f"{ui.title} did not answer within {SERVER_START_TIMEOUT:.0f} s:\n{server.log_tail()}")
        time.sleep(0.5)


def _processes_mentioning(marker: str) -> list[int]:
    """Our own leftovers (kernels): processes whose command line names our private directory."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            pids.append(int(entry.name))
    return pids


def _signal_all(pids: list[int], sig: signal.Signals) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def _stop_server(server: JupyterServer) -> None:
    """Ask the server to shut down (it stops its kernels), then make sure, one pid at a time."""
    process = server.process
    if process.poll() is None:
        try:
            server.api("api/shutdown", method="POST")
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            pass
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
    leftovers = _processes_mentioning(str(server.private_dir))
    if leftovers:
        _signal_all(leftovers, signal.SIGTERM)
        # Until they are gone (a kernel stops in well under a second), then kill what is left.
        deadline = time.monotonic() + LEFTOVERS_STOP_TIMEOUT
        while _processes_mentioning(str(server.private_dir)) and time.monotonic() < deadline:
            time.sleep(0.1)
        _signal_all(_processes_mentioning(str(server.private_dir)), signal.SIGKILL)


@pytest.fixture(scope="session", params=list(JupyterUI), ids=[ui.value for ui in JupyterUI])
def jupyter_server(request: pytest.FixtureRequest, artifacts_dir: Path) -> Iterator[JupyterServer]:
    """JupyterLab, then Notebook 7, on 127.0.0.1 at a free port, with a token, a temporary root
    and private dirs."""
    ui: JupyterUI = request.param
    with tempfile.TemporaryDirectory(prefix="mp-e2e-", ignore_cleanup_errors=True) as tmp:
        server = _start_server(ui, Path(tmp), artifacts_dir / f"jupyter-server-{ui.value}.log")
        try:
            yield server
        finally:
            _stop_server(server)


# ------------------------------------------------------------------------------- browser
def _chromium_path() -> str:
    path = os.environ.get("MP_E2E_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).exists():
        pytest.fail(f"Chromium is not installed (looked for {path}): {INSTALL_HINT}", pytrace=False)
    return path


@pytest.fixture(scope="session")
def browser():
    """Headless Chromium (the distribution's, not a Playwright download) driven by Playwright."""
    try:
        from playwright.sync_api import expect, sync_playwright
    except ImportError:
        pytest.fail(f"the Python package playwright is not installed in {sys.prefix}: {INSTALL_HINT}",
                    pytrace=False)
    executable = _chromium_path()
    expect.set_options(timeout=UI_TIMEOUT_MS)
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()
