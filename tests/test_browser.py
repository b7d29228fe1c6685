"""One real-browser test: headless system Chromium drives a running JupyterLab through notebook 00's explorer.

JupyterLab (from .venv, on 127.0.0.1, a random token, isolated config/runtime dirs) serves a temporary copy of
``notebooks/00_quickstart.ipynb`` — the committed notebook is never touched.  Playwright opens it in the system
Chromium (never a downloaded browser), runs all cells, checks that the Figure-1 explorer shows ``DISPATCH``,
clicks the ``action_permission`` toggle, waits for the rendered terminal to become ``REJECT``, and then asks the
kernel (an extra cell in the copy) for the explorer's own state (``$ROUTEBR_SCREENS``: a folder for a screenshot
of the explorer after the click).  Without Chromium the test is skipped with a
plain message — except under ``CI``, where it fails: CI must run it (``tools/ensure_chromium.sh`` installs it).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "00_quickstart.ipynb"
CHROMIUM_CANDIDATES = (os.environ.get("CHROMIUM", ""), "/usr/bin/chromium", "/usr/bin/chromium-browser")
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
KERNEL_PROBE = 'print("KERNEL_TERMINAL=" + explorer.decision.terminal.value)'
SERVER_START_S, NOTEBOOK_RUN_S, CLICK_S = 40, 70, 20


def chromium() -> str:
    """The system Chromium, or a skip (a failure under CI) that says what is missing."""
    for candidate in CHROMIUM_CANDIDATES:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    message = ("Chromium is not installed (looked for $CHROMIUM, /usr/bin/chromium, /usr/bin/chromium-browser): the "
               "real-browser widget test did not run. Install it with tools/ensure_chromium.sh "
               "(apt-get install chromium).")
    if os.environ.get("CI"):
        pytest.fail(message + " CI must run this test.")
    pytest.skip(message)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def notebook_copy(folder: Path) -> Path:
    """Notebook 00 with absolute data/output paths, no outputs, and the kernel probe as its last cell."""
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    params = next(c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
    source = "".join(params["source"])
    source = source.replace('"../routebr_kit/resources"', json.dumps(str(ROOT / "routebr_kit" / "resources")))
    source = source.replace('"../outputs/notebooks/00_quickstart"', json.dumps(str(folder / "out")))
    assert str(folder / "out") in source, "notebook 00's parameters changed: update tests/test_browser.py"
    params["source"] = source
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
    nb["cells"].append({"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                        "source": KERNEL_PROBE, "id": "kernel-probe"})
    path = folder / "00_quickstart.ipynb"
    path.write_text(json.dumps(nb, indent=1), encoding="utf-8")
    return path


def start_lab(folder: Path, port: int, token: str) -> subprocess.Popen:
    env = {**os.environ, "TQDM_DISABLE": "1", "MPLBACKEND": "Agg", "PYTHONHASHSEED": "0",
           "JUPYTER_CONFIG_DIR": str(folder / "jupyter-config"), "JUPYTER_RUNTIME_DIR": str(folder / "runtime"),
           "JUPYTERLAB_SETTINGS_DIR": str(folder / "lab-settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(folder / "lab-workspaces"), "JUPYTER_PLATFORM_DIRS": "1"}
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
           f"--ServerApp.root_dir={folder}", "--LabApp.expose_app_in_browser=True",
           "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    log = open(folder / "lab.log", "wb")  # noqa: SIM115 - closed with the process in stop_lab
    proc = subprocess.Popen(cmd, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    proc.log = log  # type: ignore[attr-defined]
    deadline = time.monotonic() + SERVER_START_S
    url = f"http://127.0.0.1:{port}/api/status?token={token}"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return proc
        except OSError:
            time.sleep(0.3)
    stop_lab(proc)
    pytest.fail(f"JupyterLab did not start within {SERVER_START_S} s:\n{(folder / 'lab.log').read_text()[-3000:]}")


def stop_lab(proc: subprocess.Popen) -> None:
    """Stop the server and its kernels (its own process group, started by this test)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
    proc.log.close()  # type: ignore[attr-defined]


KERNEL_IDLE = """() => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!(k && k.status === 'idle' && w.content && w.content.widgets.length > 0);
}"""
RUN_LAST_CELL = """async () => {
  const app = window.jupyterapp, nb = app.shell.currentWidget.content;
  nb.activeCellIndex = nb.widgets.length - 1;
  await app.commands.execute('notebook:run-cell');
}"""


def test_toggling_action_permission_in_jupyterlab_turns_dispatch_into_reject(tmp_path):
    executable = chromium()
    from playwright.sync_api import expect, sync_playwright

    started = time.monotonic()
    notebook_copy(tmp_path)
    port, token = free_port(), secrets.token_hex(16)
    lab = start_lab(tmp_path, port, token)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch_persistent_context(
                str(tmp_path / "chromium-profile"), executable_path=executable, headless=True, args=CHROMIUM_FLAGS,
                viewport={"width": 1400, "height": 1000})
            try:
                page = browser.pages[0] if browser.pages else browser.new_page()
                page.set_default_timeout(NOTEBOOK_RUN_S * 1000)
                page.goto(f"http://127.0.0.1:{port}/lab/tree/00_quickstart.ipynb?token={token}")
                page.wait_for_function(KERNEL_IDLE, timeout=SERVER_START_S * 1000)
                page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
                terminal = page.locator(".routebr-terminal-box").first
                expect(terminal).to_contain_text("DISPATCH(A5_PROTECTED_ACTION", timeout=NOTEBOOK_RUN_S * 1000)
                toggle = page.locator(".routebr-state-action_permission").first
                expect(toggle).to_be_visible()
                page.wait_for_function(KERNEL_IDLE, timeout=NOTEBOOK_RUN_S * 1000)  # the probe ran: DISPATCH
                expect(page.get_by_text("KERNEL_TERMINAL=DISPATCH")).to_be_visible()
                toggle.scroll_into_view_if_needed()
                toggle.click()
                expect(terminal).to_contain_text("REJECT", timeout=CLICK_S * 1000)
                expect(terminal).not_to_contain_text("DISPATCH(")
                if os.environ.get("ROUTEBR_SCREENS"):  # what a maintainer looks at: the explorer after the click
                    terminal.scroll_into_view_if_needed()
                    page.screenshot(path=str(Path(os.environ["ROUTEBR_SCREENS"]) / "lab_00_explorer_reject.png"))
                page.wait_for_function(KERNEL_IDLE, timeout=CLICK_S * 1000)
                page.evaluate(RUN_LAST_CELL)  # the kernel-side state agrees with what the page shows
                expect(page.get_by_text("KERNEL_TERMINAL=REJECT")).to_be_visible(timeout=CLICK_S * 1000)
            finally:
                browser.close()
    finally:
        stop_lab(lab)
        shutil.rmtree(tmp_path / "chromium-profile", ignore_errors=True)
    elapsed = time.monotonic() - started
    print(f"browser test: {elapsed:.1f} s (JupyterLab start, run all cells, click, kernel probe)")


def test_without_chromium_the_test_skips_plainly_but_fails_under_ci(monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "CHROMIUM_CANDIDATES", ("", "/nonexistent/chromium"))
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="Chromium is not installed"):
        chromium()
    monkeypatch.setenv("CI", "1")
    with pytest.raises(pytest.fail.Exception, match="CI must run this test"):
        chromium()
