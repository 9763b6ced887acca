"""What every submission may share without anyone copying: excluded before anything is compared.

- the released stubs (``exercises/``): signatures, ``raise NotImplementedError``;
- the docstrings (dropped by the normaliser, everywhere);
- the reference solutions' code (``solutions/``);
- the book's own chapter 3 code, as the course documents print it (``book_ch03.json``, see ``book_code.py``).

A fragment is excluded when its k-gram (normalised tokens: ``V = torch . softmax ( V``) occurs in any of
them, wherever it occurs in a student's file.
"""
from __future__ import annotations

import ast
from pathlib import Path

from . import book_code
from .extract import parse, read_folder
from .fingerprint import Alphabet, all_kgrams
from .normalise import defined_attributes, tokens


def _book_kgrams(alphabet: Alphabet, kept: set[str]) -> set[int]:
    found: set[int] = set()
    for n, code in enumerate(book_code.load()):
        module, _ = parse(code, f"book snippet {n}")
        if module is None:
            continue
        defs = [node for node in module.tree.body
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        rest = [node for node in module.tree.body if node not in defs]
        for nodes in [[d] for d in defs] + [rest]:
            if nodes:
                found |= all_kgrams(alphabet.text(tokens(module, nodes, kept)))
        # the statements inside a definition, as a student would write them at the top of a function
        for d in defs:
            for method in ([d] if not isinstance(d, ast.ClassDef)
                           else [m for m in d.body if isinstance(m, ast.FunctionDef)]):
                found |= all_kgrams(alphabet.text(tokens(module, method.body, kept, defined_attributes(module, [d]))))
    return found


def kgrams(root: Path, exercises: str, solutions: str, steps_by_module: dict[str, list[str]],
           alphabet: Alphabet) -> tuple[set[int], list[str]]:
    """The boilerplate k-grams, and what was used (for the report)."""
    kept = {name for names in steps_by_module.values() for name in names}
    found: set[int] = set()
    used = []
    for label, folder in (("the released stubs", root / exercises), ("the reference solutions", root / solutions)):
        steps, _ = read_folder(folder, steps_by_module, kept)
        if steps:
            used.append(f"{label} ({folder.name}/, {len(steps)} steps)")
        for code in steps.values():
            found |= all_kgrams(alphabet.text(code.tokens))
    book = _book_kgrams(alphabet, kept)
    used.append(f"the book's chapter 3 code from the course documents ({len(book_code.load())} snippets)")
    return found | book, used
