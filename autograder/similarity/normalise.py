"""Student code as a stream of normalised tokens: what survives renaming, comments, formatting and reordering.

Parsed with ``ast`` and ``tokenize`` only; nothing is imported or run. The rules:

- comments, blank lines, indentation and line breaks are dropped (they are not tokens here);
- docstrings are dropped (the stubs' docstrings are everyone's);
- a name the student chose (a variable, a parameter, a helper function) becomes ``V``; an attribute the
  student's class defines (``self.W_q = ...``, a registered buffer) becomes ``A``; what the course or
  Python names stays as it is (``torch``, ``nn``, ``softmax``, ``.T``, ``dim``, ``range``, the step names),
  since a different API call is a different program;
- a string becomes ``S``; numbers stay;
- a class's methods are taken in the order of their names, so reordering them changes nothing; steps are
  compared one by one, so the order of the functions in a file never matters.

Every token keeps its place in the file, so shared fragments can be shown in the student's own code.
"""
from __future__ import annotations

import ast
import builtins
import bisect
import io
import keyword
import tokenize
from dataclasses import dataclass

#: module aliases kept as they are even where a snippet does not import them (the book's fragments)
KNOWN_MODULES = {"torch", "nn", "F", "np", "numpy", "math", "functional"}
_BUILTINS = set(dir(builtins))
_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING,
         tokenize.ENDMARKER}


@dataclass(frozen=True)
class Token:
    text: str    # the normalised token (``V``, ``A``, ``S``, ``torch``, ``@``...)
    start: int   # character offsets in the module's source
    end: int


class Module:
    """One parsed source file: its tree, its raw tokens, and what it imports."""

    def __init__(self, source: str):
        self.source = source
        self.tree = ast.parse(source)  # SyntaxError, ValueError (null bytes), RecursionError: the caller says so
        self._line_starts = [0]
        for line in source.splitlines(keepends=True):
            self._line_starts.append(self._line_starts[-1] + len(line))
        self.tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type not in _SKIP]
        self._starts = [t.start for t in self.tokens]
        #: keyword arguments of calls (``dim=-1``, ``bias=False``): the API's names, kept as they are
        self.keywords = {(n.lineno, n.col_offset) for n in ast.walk(self.tree) if isinstance(n, ast.keyword) and n.arg}
        self.imported = set(KNOWN_MODULES)
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    self.imported.add((alias.asname or alias.name).split(".")[0])
        self.docstrings = {_pos(node.body[0].value) for node in ast.walk(self.tree)
                           if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module))
                           and node.body and isinstance(node.body[0], ast.Expr)
                           and isinstance(node.body[0].value, ast.Constant) and isinstance(node.body[0].value.value, str)}

    def offset(self, line: int, col: int) -> int:
        return self._line_starts[line - 1] + col

    def tokens_between(self, lo: tuple[int, int], hi: tuple[int, int]) -> list[tokenize.TokenInfo]:
        return self.tokens[bisect.bisect_left(self._starts, lo):bisect.bisect_left(self._starts, hi)]

    def definitions(self) -> dict[str, ast.AST]:
        """Top-level functions and classes by name; the last definition wins, as it would in Python."""
        found = {}
        for node in self.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found[node.name] = node
        return found


def _pos(node: ast.AST) -> tuple[int, int]:
    return node.lineno, node.col_offset


def units(node: ast.AST) -> list[ast.AST]:
    """What a definition is compared as: a function as itself; a class as its methods in the order of their names,
    after the rest of its body (class attributes), so reordering the methods changes nothing."""
    if not isinstance(node, ast.ClassDef):
        return [node]
    methods = sorted((n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))),
                     key=lambda n: n.name)
    others = [n for n in node.body if n not in methods]
    return others + methods


def defined_attributes(nodes: list[ast.AST]) -> set[str]:
    """Attributes the code itself sets (``self.x = ...``, ``register_buffer('mask', ...)``)."""
    found = set()
    for root in nodes:
        for node in ast.walk(root):
            targets = []
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name):
                        found.add(sub.attr)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr in ("register_buffer", "register_parameter", "setattr") and node.args and \
                    isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                found.add(node.args[0].value)
    return found


def tokens(module: Module, nodes: list[ast.AST], kept_names: set[str]) -> list[Token]:
    """The normalised tokens of ``nodes`` (each compared as its ``units``), in that order.

    ``kept_names``: names that stay as they are besides Python's and the imports (the course's step names)."""
    attrs = defined_attributes(nodes)
    keep = module.imported | _BUILTINS | kept_names
    out: list[Token] = []
    for node in nodes:
        for unit in units(node):
            first = getattr(unit, "decorator_list", None)
            start_node = unit.decorator_list[0] if first else unit
            lo = (start_node.lineno, start_node.col_offset)
            hi = (unit.end_lineno, unit.end_col_offset)
            previous = None
            for tok in module.tokens_between(lo, hi):
                text = tok.string
                if tok.type == tokenize.STRING:
                    if tok.start in module.docstrings:
                        previous = tok
                        continue
                    text = "S"
                elif tok.type == tokenize.NAME and not _keyword(text):
                    after_dot = previous is not None and previous.string == "."
                    if after_dot:
                        text = "A" if text in attrs else text
                    elif text not in keep and tok.start not in module.keywords:
                        text = "V"
                elif tok.type in (tokenize.FSTRING_START, tokenize.FSTRING_MIDDLE, tokenize.FSTRING_END) \
                        if hasattr(tokenize, "FSTRING_START") else False:
                    text = "S"
                start = module.offset(*tok.start)
                out.append(Token(text, start, module.offset(*tok.end)))
                previous = tok
    return out


def _keyword(text: str) -> bool:
    return keyword.iskeyword(text) or keyword.issoftkeyword(text)
