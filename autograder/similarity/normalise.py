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
        self._lines = source.splitlines()
        self._definitions: dict[str, ast.AST] | None = None
        #: keyword arguments of calls (``dim=-1``, ``bias=False``): the API's names, kept as they are
        self.keywords: set[tuple[int, int]] = set()
        self.imported = set(KNOWN_MODULES)
        self.docstrings: set[tuple[int, int]] = set()
        #: per top-level definition: the names it reads, the attributes it sets (one walk of the tree)
        self.names_in: dict[ast.AST, set[str]] = {}
        self.attributes_in: dict[ast.AST, set[str]] = {}
        for top in self.tree.body:
            names, attrs = self.names_in.setdefault(top, set()), self.attributes_in.setdefault(top, set())
            for node in ast.walk(top):
                if isinstance(node, ast.Name):
                    names.add(node.id)
                elif isinstance(node, ast.keyword) and node.arg:
                    self.keywords.add(self.start(node))
                elif isinstance(node, (ast.Import, ast.ImportFrom)):
                    self.imported.update((a.asname or a.name).split(".")[0] for a in node.names)
                elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                    for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                        attrs.update(sub.attr for sub in ast.walk(target)
                                     if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name))
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                        node.func.attr in ("register_buffer", "register_parameter", "setattr") and node.args and \
                        isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                    attrs.add(node.args[0].value)
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body and \
                        isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant) and \
                        isinstance(node.body[0].value.value, str):
                    self.docstrings.add(self.start(node.body[0].value))

    def _chars(self, line: int, byte_col: int) -> int:
        """``ast`` counts columns in UTF-8 bytes, ``tokenize`` in characters."""
        text = self._lines[line - 1] if 0 < line <= len(self._lines) else ""
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore")) if not text.isascii() else byte_col

    def start(self, node: ast.AST) -> tuple[int, int]:
        return node.lineno, self._chars(node.lineno, node.col_offset)

    def end(self, node: ast.AST) -> tuple[int, int]:
        return node.end_lineno, self._chars(node.end_lineno, node.end_col_offset)

    def offset(self, line: int, col: int) -> int:
        return self._line_starts[line - 1] + col

    def tokens_between(self, lo: tuple[int, int], hi: tuple[int, int]) -> list[tokenize.TokenInfo]:
        return self.tokens[bisect.bisect_left(self._starts, lo):bisect.bisect_left(self._starts, hi)]

    def definitions(self) -> dict[str, ast.AST]:
        """Top-level functions, classes and lambdas (``f = lambda x: ...``) by name; the last definition wins,
        as it would in Python."""
        if self._definitions is None:
            self._definitions = {}
            for node in self.tree.body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    self._definitions[node.name] = node
                elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda):
                    for target in node.targets:
                        if isinstance(target, ast.Name):
                            self._definitions[target.id] = node
        return self._definitions


def units(node: ast.AST) -> list[ast.AST]:
    """What a definition is compared as: a function as itself; a class as its methods in the order of their names,
    after the rest of its body (class attributes), so reordering the methods changes nothing."""
    if not isinstance(node, ast.ClassDef):
        return [node]
    methods = sorted((n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))),
                     key=lambda n: n.name)
    others = [n for n in node.body if n not in methods]
    return others + methods


def defined_attributes(module: Module, nodes: list[ast.AST]) -> set[str]:
    """Attributes the code itself sets (``self.x = ...``, ``register_buffer('mask', ...)``)."""
    found: set[str] = set()
    for node in nodes:
        found |= module.attributes_in.get(node, set())
    return found


def tokens(module: Module, nodes: list[ast.AST], kept_names: set[str], attrs: set[str] | None = None) -> list[Token]:
    """The normalised tokens of ``nodes`` (each compared as its ``units``), in that order.

    ``kept_names``: names that stay as they are besides Python's and the imports (the course's step names);
    ``attrs``: the attributes the code defines, when ``nodes`` are not top-level definitions."""
    attrs = defined_attributes(module, nodes) if attrs is None else attrs
    keep = module.imported | _BUILTINS | kept_names
    out: list[Token] = []
    for node in nodes:
        for unit in units(node):
            first = getattr(unit, "decorator_list", None)
            start_node = unit.decorator_list[0] if first else unit
            lo, hi = module.start(start_node), module.end(unit)
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
