"""A small failing public case in the terminal: expected and yours as coloured grids side by side (rich).

Only for cases of at most 8 x 8 entries (one head); plain numbers when the output is not a terminal or
``NO_COLOR`` is set (the caller says which: ``console.colored``).
"""
from __future__ import annotations

import io
import math

MAX_SIDE = 8
#: the grid's decimals: 3, widened up to this many until every entry marked as differing differs on screen
MAX_DECIMALS = 8


def _differs(e: float, y: float) -> bool:
    return not (abs(y - e) <= 1e-5 + 1e-4 * abs(e) or (e == y))


def decimals(expected, yours) -> int:
    """The fewest decimals (3 or more) at which each differing entry shows a different number than expected."""
    pairs = [(float(e), float(y)) for e, y in zip(expected.flatten().tolist(), yours.flatten().tolist())
             if _differs(e, y)]
    for places in range(3, MAX_DECIMALS + 1):
        if all(f"{e:.{places}f}" != f"{y:.{places}f}" for e, y in pairs):
            return places
    return MAX_DECIMALS


def fits(evidence: dict | None) -> bool:
    if not evidence or not evidence.get("public") or "expected" not in evidence:
        return False
    heads, rows, cols = evidence["expected"].shape
    return heads == 1 and rows <= MAX_SIDE and cols <= MAX_SIDE and len(evidence["shape"]) <= 3


def render(evidence: dict, color: bool) -> str:
    """The grid as text: with ANSI colours (a cell's background: its value; red marks a mismatch) or plain."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    expected, yours = evidence["expected"][0], evidence["yours"][0]
    finite = [v for v in expected.flatten().tolist() + yours.flatten().tolist() if math.isfinite(v)]
    low, high = (min(finite), max(finite)) if finite else (0.0, 1.0)
    span = (high - low) or 1.0
    places = decimals(expected, yours)

    def cell(value: float, wrong: bool) -> Text:
        text = f"{value:{places + 3}.{places}f}" if math.isfinite(value) else f"{value:>{places + 3}}"
        if not color:
            return Text(text + ("*" if wrong else " "))
        level = 0 if not math.isfinite(value) else int(232 + 23 * (value - low) / span)
        fg = "black" if level > 243 else "white"
        style = f"{fg} on color({level})" + (" bold underline" if wrong else "")
        return Text(text + ("*" if wrong else " "), style=style + (" red" if wrong and fg == "black" else ""))

    table = Table(show_header=True, box=None, pad_edge=False, padding=(0, 1))
    table.add_column(f"{evidence['what']}, row")
    cols = expected.shape[1]
    for name in ("expected", "yours"):
        for c in range(cols):
            table.add_column(f"{name}" if c == 0 else "", justify="right", no_wrap=True)
        if name == "expected":
            table.add_column(" ")
    for r in range(expected.shape[0]):
        row = [str(r)]
        for c in range(cols):
            row.append(cell(float(expected[r, c]), False))
        row.append(Text("|"))
        for c in range(cols):
            e, y = float(expected[r, c]), float(yours[r, c])
            wrong = _differs(e, y)
            row.append(cell(y, wrong))
        table.add_row(*row)
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=color, no_color=not color, color_system="256" if color else None,
                      width=200, highlight=False)
    console.print(table)
    note = "  (* marks an entry that differs" + (
        f"; the first of a batch of {evidence['shape'][0]})"
        if len(evidence["shape"]) == 3 and evidence["shape"][0] > 1 else ")")
    return buf.getvalue().rstrip("\n") + "\n" + note
