"""What the verbs print: results on standard output, progress and problems on standard error.

Colour only where the stream is a terminal and ``NO_COLOR`` is not set (https://no-color.org).
"""
from __future__ import annotations

import os
import sys

_COLORS = {"red": 31, "green": 32, "yellow": 33}


def colored(stream=sys.stdout) -> bool:
    """Whether to colour what goes to ``stream``: a terminal, and no ``NO_COLOR``."""
    return not os.environ.get("NO_COLOR") and getattr(stream, "isatty", lambda: False)()


def style(text: str, color: str) -> str:
    return f"\033[{_COLORS[color]}m{text}\033[0m"


def _styled(label: str, color: str, stream) -> str:
    return style(label, color) if colored(stream) else label


def say(line: str = "") -> None:
    """A result, on standard output."""
    print(line, flush=True)


def note(line: str) -> None:
    """Progress or a remark, on standard error."""
    print(line, file=sys.stderr, flush=True)


def warn(line: str, label: str = "warning: ") -> None:
    print(_styled(label, "yellow", sys.stderr) + line, file=sys.stderr, flush=True)


def error(line: str) -> None:
    print(_styled("error: ", "red", sys.stderr) + line, file=sys.stderr, flush=True)
