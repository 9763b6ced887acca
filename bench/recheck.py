"""Benchmark: the re-check after a save (``grade check --watch``) and ``%grade check`` against ``grade check``.

Usage: python bench/recheck.py [--repeat 10]

1. ``grade check DIR --watch --step CausalAttention`` runs in the background; each repeat saves
   ``causal_attention.py`` (carol's and alice's in turn) and times from just before the write to the line
   that says the re-check is done: detection, the 50 ms debounce, the intake, the check and the output.
2. In a real kernel (jupyter_client), with carol's one notebook for all modules run, ``%grade check
   causal_attention`` and, paired with it (A B A B ...), ``grade check carol.ipynb --step causal_attention``
   in a fresh process: the same check, the magic from its warm checking process. Medians; ratios pair by pair.
"""
from __future__ import annotations

import argparse
import json
import platform
import queue
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from tests.support.submission_forms import one_notebook

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples" / "submissions"
sys.path.insert(0, str(ROOT))


def watch_times(work: Path, repeat: int) -> list[float]:
    folder = work / "exercises"
    shutil.copytree(SAMPLES / "carol", folder)
    process = subprocess.Popen([sys.executable, "-m", "autograder.cli", "check", "--watch", str(folder), "--step",
                                "CausalAttention"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout], daemon=True).start()

    def until(words: str) -> None:
        while words not in lines.get(timeout=120):
            pass

    times = []
    try:
        until("watching")
        for i in range(repeat):
            source = (SAMPLES / ("alice" if i % 2 == 0 else "carol") / "causal_attention.py").read_bytes()
            started = time.perf_counter()
            (folder / "causal_attention.py").write_bytes(source)
            until("re-checked after a save")
            times.append(time.perf_counter() - started)
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
    return times


def magic_vs_cli(work: Path, repeat: int) -> tuple[list[float], list[float]]:
    from jupyter_client.manager import start_new_kernel

    path = one_notebook(SAMPLES / "carol", work, name="carol.ipynb")

    cells = ["%load_ext autograder"] + ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]
                                        if c["cell_type"] == "code"]
    manager, client = start_new_kernel(kernel_name="python3", cwd=str(work))
    magic, cli = [], []
    try:
        for code in cells:
            client.execute_interactive(code, timeout=120, output_hook=lambda msg: None)
        client.execute_interactive("%grade check causal_attention", timeout=300, output_hook=lambda msg: None)  # warm
        for _ in range(repeat):
            started = time.perf_counter()
            reply = client.execute_interactive("%grade check causal_attention", timeout=300,
                                               output_hook=lambda msg: None)
            magic.append(time.perf_counter() - started)
            assert reply["content"]["status"] == "ok", reply
            started = time.perf_counter()
            subprocess.run([sys.executable, "-m", "autograder.cli", "check", str(path), "--step", "causal_attention"],
                           capture_output=True, check=False, timeout=300)
            cli.append(time.perf_counter() - started)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    return magic, cli


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-recheck-"))
    try:
        saves = watch_times(work, args.repeat)
        magic, cli = magic_vs_cli(work, args.repeat)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ratios = [m / c for m, c in zip(magic, cli)]
    print(f"machine: {platform.platform()}, {platform.processor() or platform.machine()}, python "
          f"{platform.python_version()}")
    print(f"- `grade check --watch`, one step (CausalAttention), save to re-check done: median "
          f"{statistics.median(saves):.2f} s (min {min(saves):.2f}, max {max(saves):.2f}; {len(saves)} saves)")
    print(f"- `%grade check causal_attention` in a kernel: median {statistics.median(magic):.2f} s; "
          f"`grade check carol.ipynb --step causal_attention`: median {statistics.median(cli):.2f} s; "
          f"paired ratio median {statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f}; "
          f"{len(ratios)} pairs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
