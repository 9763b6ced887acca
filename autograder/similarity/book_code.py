"""The book's chapter 3 code, as the course documents print it: found by parsing, never run.

The documents (``../shared/seeds/*.txt``) are prose with code in them: notebook cells (``In [3]:``),
indented listings, fenced blocks. A run of lines is taken as code when, dedented, it parses as Python and
does something (an assignment, a call, a loop, a definition, an import); prose rarely parses, and a bare
name or number is not kept. ``python -m autograder.similarity.book_code`` rewrites ``book_ch03.json``,
which ships with the kit (students never see these documents' paths; the instructor's machine has them).
"""
from __future__ import annotations

import ast
import json
import re
import sys
import textwrap
from pathlib import Path

DATA = Path(__file__).with_name("book_ch03.json")
_PROMPT = re.compile(r"^\s*(In \[[^\]]*\]:\s?|>>> |\.\.\. )")  # a notebook's or a console's prompt
_FENCE = re.compile(r"^\s*```")
#: a line a code block can start with (saves parsing from every line of prose)
_STARTS = re.compile(r"[=(@]|^\s*(import|from|def|class|for|while|with|return|if)\b")
_DOES = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.While, ast.If, ast.With, ast.FunctionDef,
         ast.ClassDef, ast.Import, ast.ImportFrom, ast.Return)


def _clean(line: str) -> str:
    line = line.replace("\u00a0", " ").rstrip()
    return "" if _FENCE.match(line) else _PROMPT.sub("", line)


def _parses(lines: list[str]) -> ast.Module | None:
    text = textwrap.dedent("\n".join(lines))
    if not text.strip():
        return None
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None


def _does_something(tree: ast.Module) -> bool:
    for node in tree.body:
        if isinstance(node, _DOES):
            return True
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            return True
    return False


def snippets(text: str) -> list[str]:
    """The longest runs of lines that parse and do something, in the order of the document."""
    lines = [_clean(line) for line in text.splitlines()]
    found, i = [], 0
    while i < len(lines):
        best = None
        if _STARTS.search(lines[i]):
            end = i + 1
            while end <= len(lines) and end - i <= 80:
                if _parses(lines[i:end]) is not None:
                    best = end
                end += 1
        if best is not None:
            block = lines[i:best]
            while block and not block[-1].strip():
                block.pop()
            tree = _parses(block)
            if tree is not None and _does_something(tree):
                found.append(textwrap.dedent("\n".join(block)).strip("\n"))
                i = best
                continue
        i += 1
    return found


def build(seeds: Path) -> list[dict]:
    out = []
    for doc in sorted(seeds.glob("*.txt")):
        for n, code in enumerate(snippets(doc.read_text(encoding="utf-8")), start=1):
            out.append({"document": doc.name, "snippet": n, "code": code})
    return out


def load() -> list[str]:
    """The snippets' code, as shipped."""
    return [entry["code"] for entry in json.loads(DATA.read_text(encoding="utf-8"))]


if __name__ == "__main__":  # pragma: no cover - run by hand when the documents change
    seeds = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[3] / "shared" / "seeds"
    DATA.write_text(json.dumps(build(seeds), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {DATA}")
