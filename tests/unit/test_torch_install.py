"""torch's CPU build, said in one line (autograder/release/torch_cpu.py: ``make install``'s first step, and the student
bundle's ``install_torch.py``): the CPU index is asked once, briefly; where it cannot be reached, pip is never pointed
at it (no minutes of retries), and the line says what was installed instead."""
from __future__ import annotations

import http.server
import socket
import subprocess
import sys
import threading
import time


from autograder.release import torch_cpu


def test_an_index_that_does_not_answer_is_said_unreachable_at_once():
    # a port bound and not listening: Linux refuses a connection to it, and no other process can take it meanwhile
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        start = time.monotonic()
        ok, why = torch_cpu.reachable(f"http://127.0.0.1:{bound.getsockname()[1]}/whl/cpu", timeout=5)
    assert not ok and "refused" in why.lower() and time.monotonic() - start < 5


def test_an_index_that_answers_for_torch_is_reachable():
    class Index(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/whl/cpu/torch/" else 404)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        assert torch_cpu.reachable(f"{base}/whl/cpu") == (True, "HTTP 200")
        assert torch_cpu.reachable(f"{base}/other")[0] is False  # control: an index without torch
    finally:
        server.shutdown()


def test_where_the_index_is_unreachable_pip_is_never_pointed_at_it(monkeypatch, capsys):
    monkeypatch.setattr(torch_cpu, "reachable", lambda: (False, "Name or service not known"))
    asked = []
    monkeypatch.setattr(torch_cpu.subprocess, "run", lambda argv, **kw: asked.append(argv) or
                        subprocess.CompletedProcess(argv, 0))
    monkeypatch.setattr(torch_cpu, "installed_build", lambda python=sys.executable: "2.13.0 (CUDA 12.8 build)")
    assert torch_cpu.install() == 0
    assert not any(torch_cpu.CPU_INDEX in " ".join(argv) for argv in asked)
    said = capsys.readouterr().out
    assert said == (f"torch 2.13.0 (CUDA 12.8 build), PyTorch's CPU index ({torch_cpu.CPU_INDEX}) cannot be reached "
                    "(Name or service not known); installed from pip's own sources instead\n")
    # control: where it answers, pip is pointed at it
    monkeypatch.setattr(torch_cpu, "reachable", lambda: (True, "HTTP 200"))
    asked.clear()
    torch_cpu.install()
    assert any(torch_cpu.CPU_INDEX in argv for argv in asked)


def test_the_installed_build_is_read_from_the_installed_torch():
    assert torch_cpu.installed_build() == f"{__import__('torch').__version__} (CPU build)"
    assert torch_cpu.TORCH == __import__("torch").__version__.split("+")[0]
