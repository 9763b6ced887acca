"""The student's own warnings: Python's and torch's words about a line of the student's files, said once.

A worker collects the warnings raised while the student's modules compile and while their code runs
(``worker/warnings_seen.py``), and reports each as data: file, line, category, message. The trusted side keeps
those whose file is one of the student's own staged files and whose line exists there, and reads the line from
its own copy (``grading/own_source.py``); a notebook's helper collects them from the student's cells. Said here,
they are the student's words, not printed output: ``warning_lines`` shows each where it points, redacted on a
hidden count as any text of the student's (its category named only when Python's or torch's, or the student's
own), and ``warning_hints`` reads the likely mistake out of the ones that name one. Who shows them says each once
per submission (``unsaid``).
"""
from __future__ import annotations

import ast
import builtins

from .catalogue import Likely, hint
from .redact import redact_text
from .runtime_errors import transposed_batch

#: what a warning line starts with (``unsaid`` finds them by it)
WARNED = "warning about your code: "
_KNOWN = {name for name, value in vars(builtins).items() if isinstance(value, type) and issubclass(value, Warning)}
#: the most warnings said for one case
MAX_SAID = 5


def warning_lines(warnings, public) -> list[str]:
    """Each warning as two lines: where it points, its category and message; then the line of the student's file."""
    lines: list[str] = []
    for seen in list(warnings or ())[:MAX_SAID]:
        category = str(seen.get("category") or "Warning")
        if not public and category not in _KNOWN and category not in getattr(public, "names", ()):
            category = "a warning of a class defined in your code"
        message = str(seen.get("message") or "").split("\n", 1)[0].split(" (Triggered internally at ", 1)[0]
        message = redact_text(message, public, 400)
        lines.append(f"{WARNED}{seen.get('file')}, line {seen.get('line')}: {category}: {message}")
        if seen.get("text"):
            lines.append(f"    {str(seen['text']).strip()[:200]}")
    return lines


def warning_hints(warnings) -> list[Likely]:
    """The likely mistakes the warnings name: an assert on a tuple (Python's SyntaxWarning), ``x.T`` on a batch
    (torch's UserWarning)."""
    found: list[Likely] = []
    for seen in warnings or ():
        if seen.get("category") == "SyntaxWarning" and "assertion is always true" in str(seen.get("message")):
            found.append(hint("assert-on-a-tuple"))
            break
    transposed = transposed_batch(warnings)
    if transposed is not None:
        found.append(transposed)
    return [Likely("likely: " + h, h.mid) for h in found]


def of_definition(warnings, source: str, name: str) -> list[dict]:
    """The warnings raised as ``source`` compiled that belong to its top-level function or class ``name``: those
    inside its definition, and those outside every top-level definition (a module's own lines)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        tree = ast.Module(body=[], type_ignores=[])
    spans = {node.name: (node.lineno, node.end_lineno or node.lineno) for node in tree.body
             if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    mine = []
    for seen in warnings or ():
        inside = [n for n, (start, end) in spans.items() if start <= seen.get("line", 0) <= end]
        if name in inside or not inside:
            mine.append(seen)
    return mine


def pending(said: dict, step: str) -> list[str]:
    """The warning lines about ``step`` collected but not shown yet (kept in ``said``, per submission): a failing count
    of the step shows them under its own lines; what no count showed is shown as a note of the step's last count."""
    return said.setdefault(("warnings pending", step), [])


def unsaid(lines, said: dict) -> list[str]:
    """``lines`` less the warnings (and the source line under each) already said in this submission; the others are
    noted in ``said`` (kept per submission by whoever shows them) as said now."""
    done = said.setdefault("warnings said", set())
    out: list[str] = []
    skipping = False
    for line in lines:
        if str(line).startswith(WARNED):
            skipping = line in done
            done.add(line)
        elif not str(line).startswith("    "):
            skipping = False
        if not skipping:
            out.append(line)
    return out
