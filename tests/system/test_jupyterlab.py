"""``%grade check`` in a real JupyterLab 4, driven by headless Chromium as a student clicks it.

The test starts JupyterLab on loopback with a token of its own, opens a student's notebook (one for all modules,
carol's: she masks after the softmax without renormalizing), runs every cell from the Run menu, waits for the magic's
answer and takes a screenshot (docs/notebook-check.png with UPDATE_DOCS_SCREENSHOTS=1). No server extension is
installed: the magic is only ``%load_ext autograder`` in the kernel.
"""
from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
import urllib.request

import pytest

from .conftest import ROOT
from tests.support.submission_forms import one_notebook

SCREENSHOT = ROOT / "docs" / "notebook-check.png"


@pytest.fixture
def jupyterlab(tmp_path):
    """(the server's URL, its token, its root folder): JupyterLab on loopback, stopped after the test."""
    root = tmp_path / "student"
    root.mkdir()
    token = secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "config"), "JUPYTER_RUNTIME_DIR": str(tmp_path / "run"),
           "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "settings"), "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "ws")}
    news = tmp_path / "settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)
    (news / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false",
                                                                         "checkForUpdates": False}))
    # the preferred kernel started without a "Select Kernel" dialog, as JupyterLab does once a student ticks "Always
    # start the preferred kernel" (the dialog comes when the kernel list is slow to load, on a loaded machine)
    notebook = tmp_path / "settings" / "@jupyterlab" / "notebook-extension"
    notebook.mkdir(parents=True)
    (notebook / "tracker.jupyterlab-settings").write_text(json.dumps({"autoStartDefaultKernel": True}))
    log = open(tmp_path / "jupyterlab.log", "wb")  # noqa: SIM115 - the server writes it until it is stopped
    server = subprocess.Popen([sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", "--port=0",
                               f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
                               "--ServerApp.allow_root=True", "--LabApp.news_url=", "--LabApp.check_for_updates_class="
                               "jupyterlab.NeverCheckForUpdate"],
                              cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    # the server picks a free port itself (--port=0) and says which in its runtime file: a port picked here could be
    # taken by another process before the server binds it, and JupyterLab would move to another one unsaid
    info = tmp_path / "run" / f"jpserver-{server.pid}.json"
    deadline = time.monotonic() + 120
    while True:
        try:
            url = f"http://127.0.0.1:{json.loads(info.read_text())['port']}"
            with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=5):
                break
        except (OSError, ValueError, KeyError):  # no runtime file yet, half-written, or not serving yet
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                pytest.fail("JupyterLab did not start: " + (tmp_path / "jupyterlab.log").read_text()[-2000:])
            time.sleep(0.5)
    yield url, token, root
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
    log.close()


def _dialogs(page) -> str:
    """The text of the dialogs JupyterLab has up (for a failure's message)."""
    dialogs = page.locator(".jp-Dialog")
    return " | ".join(dialogs.nth(i).inner_text() for i in range(dialogs.count())) or "none"


def test_the_magic_in_jupyterlab_shows_the_verdict_and_the_heatmaps(jupyterlab, browser):
    url, token, root = jupyterlab
    path = one_notebook(ROOT / "samples" / "submissions" / "carol", root, name="attention.ipynb")
    data = json.loads(path.read_text())
    cell = {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": []}
    data["cells"].insert(0, {**cell, "source": "%load_ext autograder"})
    data["cells"].append({**cell, "source": "%grade check causal_attention"})
    data["metadata"]["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    path.write_text(json.dumps(data))

    view = browser.open_url(f"{url}/lab/tree/attention.ipynb?token={token}")
    page = view.page
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
    page.wait_for_selector("#jupyterlab-splash", state="detached", timeout=120_000)
    answer = page.locator(".jp-OutputArea-output:has-text('likely: masked after the softmax')").first
    # the kernel connected and idle, as the status bar says it to the student, before Run All (on a loaded machine a Run
    # All clicked while the kernel is still starting runs nothing)
    page.locator(".jp-StatusBar-TextItem:has-text('Python 3 (ipykernel) | Idle')").wait_for(timeout=180_000)
    for attempt in range(4):  # a click the page was too busy to take
        try:
            page.keyboard.press("Escape")  # an open menu in the way
            page.get_by_role("menuitem", name="Run", exact=True).click(timeout=30_000)
            page.get_by_role("menuitem", name="Run All Cells").first.click(timeout=30_000)
            answer.wait_for(timeout=120_000)
            break
        except Exception as error:
            if attempt == 3:
                page.screenshot(path=str(root.parent / "jupyterlab-failed.png"))
                raise AssertionError(f"JupyterLab's dialogs on the page: {_dialogs(page)}") from error
    text = answer.inner_text()
    assert "checked the" in text and "cells you ran" in text
    assert "causal_attention.CausalAttention" in text and "FAILED" in text
    assert "public checks passed" not in text  # control: carol's bug is said, not hidden behind a pass
    assert page.locator(".jp-OutputArea-output img[src^='data:image/png']").count() >= 1  # the heatmaps
    page.locator(".jp-Cell").last.evaluate("cell => cell.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(500)  # let the windowed notebook draw the cells scrolled in (not an assertion)
    shot = SCREENSHOT if os.environ.get("UPDATE_DOCS_SCREENSHOTS") else root.parent / SCREENSHOT.name
    page.screenshot(path=str(shot))
    assert shot.stat().st_size > 10_000
