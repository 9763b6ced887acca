"""A real headless Chromium for the tests that look at the kit's HTML pages as a person would.

Debian's ``chromium`` package, driven by Playwright (``executable_path``: Playwright's own browser
download is never used). If Chromium is missing, the set-up installs it with apt-get (as root); only
where that cannot be done are the tests skipped, with the reason.

Use the ``browser`` fixture (see tests/conftest.py)::

    def test_page(browser, tmp_path):
        view = browser.open(tmp_path / "page.html")
        assert view.console_errors == []
        assert view.broken_images() == []
        view.screenshot(tmp_path / "page.png")
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
# Without the background-networking flags Chromium keeps trying to reach Google on a closed network.
FLAGS = ["--headless=new", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]


def find_or_install() -> tuple[str | None, str]:
    """(path to chromium, '') or (None, why it cannot be had here)."""
    found = shutil.which("chromium") or (CHROMIUM if os.path.exists(CHROMIUM) else None)
    if found:
        return found, ""
    if not shutil.which("apt-get"):
        return None, "Chromium is not installed and there is no apt-get to install Debian's chromium package"
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        return None, ("Chromium is not installed, and installing Debian's chromium package needs root "
                      "(sudo apt-get install chromium)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", "chromium"],
                             capture_output=True, text=True, env=env)
    if install.returncode != 0:  # the package lists may be stale on a fresh machine
        subprocess.run(["apt-get", "update"], capture_output=True, env=env)
        install = subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", "chromium"],
                                 capture_output=True, text=True, env=env)
    if install.returncode != 0 or not os.path.exists(CHROMIUM):
        return None, f"apt-get could not install chromium: {install.stderr.strip()[-300:]}"
    return CHROMIUM, ""


@dataclass
class View:
    """One page opened in Chromium, with what its console said."""

    page: object
    console_errors: list[str] = field(default_factory=list)

    def broken_images(self) -> list[str]:
        """The images that did not load or draw (no natural size), by their alt text or source."""
        return self.page.evaluate("""() => Array.from(document.images)
            .filter(img => !img.complete || img.naturalWidth === 0)
            .map(img => img.alt || img.src.slice(0, 60))""")

    def images(self) -> int:
        return self.page.evaluate("() => document.images.length")

    def text(self) -> str:
        return self.page.inner_text("body")

    def screenshot(self, path: Path, full_page: bool = True) -> Path:
        self.page.screenshot(path=str(path), full_page=full_page)
        return Path(path)


class Browser:
    """A headless Chromium, one new page per ``open``; no network beyond file:// and loopback."""

    def __init__(self, executable: str):
        from playwright.sync_api import sync_playwright  # noqa: PLC0415 - optional: the test extra's browser driver

        self._playwright = sync_playwright().start()
        args = FLAGS + (["--no-sandbox"] if hasattr(os, "geteuid") and os.geteuid() == 0 else [])
        self._browser = self._playwright.chromium.launch(executable_path=executable, args=args, headless=True)
        self._context = self._browser.new_context(viewport={"width": 1280, "height": 900}, java_script_enabled=True)

    def open(self, path: Path) -> View:
        page = self._context.new_page()
        view = View(page)
        page.on("console",
                lambda message: view.console_errors.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: view.console_errors.append(str(error)))
        page.on("requestfailed", lambda request: view.console_errors.append(f"request failed: {request.url}"))
        page.goto(Path(path).resolve().as_uri(), wait_until="load")
        return view

    def open_url(self, url: str) -> View:
        """A page served on loopback (a JupyterLab the test started), as ``open`` opens a file."""
        page = self._context.new_page()
        view = View(page)
        page.on("console",
                lambda message: view.console_errors.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: view.console_errors.append(str(error)))
        page.goto(url, wait_until="load")
        return view

    def close(self) -> None:
        self._context.close()
        self._browser.close()
        self._playwright.stop()
