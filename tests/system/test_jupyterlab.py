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
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from .conftest import ROOT
from tests.support.submission_forms import one_notebook

SCREENSHOT = ROOT / "docs" / "notebook-check.png"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def jupyterlab(tmp_path):
    """(the server's URL, its token, its root folder): JupyterLab on loopback, stopped after the test."""
    root = tmp_path / "student"
    root.mkdir()
    port, token = _free_port(), secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "config"), "JUPYTER_RUNTIME_DIR": str(tmp_path / "run"),
           "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "settings"), "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "ws")}
    news = tmp_path / "settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)
    (news / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false",
                                                                         "checkForUpdates": False}))
    log = open(tmp_path / "jupyterlab.log", "wb")  # noqa: SIM115 - the server writes it until it is stopped
    server = subprocess.Popen([sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
                               f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
                               "--ServerApp.allow_root=True", "--LabApp.news_url=", "--LabApp.check_for_updates_class="
                               "jupyterlab.NeverCheckForUpdate"],
                              cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=5):
                break
        except OSError:
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


def _kernel_chosen_in_dialog(page) -> bool:
    """JupyterLab's "Select Kernel" dialog (shown when the kernel is slow to start, on a loaded machine), answered as a
    student would: Select, the kernel it offers; whether there was one. It may come at any moment after the page
    loads: each attempt of the test answers it first."""
    accept = page.locator(".jp-Dialog .jp-mod-accept")
    if not accept.count():
        return False
    # the topmost dialog (JupyterLab may have put up two, one over the other): its "Always start the preferred
    # kernel" ticked, so that it is not asked again, then Select
    always = page.locator(".jp-Dialog input[type=checkbox]")
    if always.count() and not always.last.is_checked():
        always.last.check(timeout=30_000)
    accept.last.click(timeout=30_000)
    return True


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
    for attempt in range(4):  # a Run All clicked under a dialog, or before the kernel is connected, runs nothing
        try:
            if not _kernel_chosen_in_dialog(page):
                page.keyboard.press("Escape")  # an open menu in the way (never a dialog: Escape there is No Kernel)
            page.get_by_role("menuitem", name="Run", exact=True).click(timeout=30_000)
            page.get_by_role("menuitem", name="Run All Cells").first.click(timeout=30_000)
            _kernel_chosen_in_dialog(page)
            answer.wait_for(timeout=120_000)
            break
        except Exception:
            if attempt == 3:
                page.screenshot(path=str(root.parent / "jupyterlab-failed.png"))
                raise
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
