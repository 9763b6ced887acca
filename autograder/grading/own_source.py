"""The student's own files as staged, read on the trusted side: their names, their lines, where each step is.

Parsed, never run. What a worker says about the student's code (a warning's file and line, the place an error was
raised) is a claim; what the feedback shows of those places comes from here: a warning is said only when its file
is one of the submission's modules and its line exists there, and the line's text is read from this copy, never
taken from the worker. The identifiers of these files are the student's own names, which a hidden count may show
(``feedback/redact.py``): written before any case ran, they hold no hidden input.
"""
from __future__ import annotations

from pathlib import Path

from autograder.feedback.redact import names_in_source
from autograder.feedback.warned import of_definition

#: the longest file read (a staged module is far smaller: intake's limits)
MAX_BYTES = 4 << 20


class OwnSource:
    """The staged modules of one submission (``folder``/``<module>.py``), read once, on first use."""

    def __init__(self, folder: Path, modules: list[str]):
        self.folder = Path(folder)
        self.modules = list(modules)
        self._lines: dict[str, list[str]] = {}
        self._names: frozenset | None = None
        self.import_warnings: list[dict] = []

    def lines(self, file: str) -> list[str]:
        """The lines of ``file`` (``causal_attention.py``) when it is one of the submission's modules, else none."""
        if file not in self._lines:
            path = self.folder / file
            text = ""
            if file in {f"{m}.py" for m in self.modules} and not path.is_symlink() and path.is_file():
                try:
                    with open(path, "rb") as fh:
                        text = fh.read(MAX_BYTES).decode("utf-8", errors="replace")
                except OSError:
                    text = ""
            self._lines[file] = text.splitlines()
        return self._lines[file]

    def line(self, file, number) -> str | None:
        """Line ``number`` of ``file``, stripped; None when the file is not the student's or has no such line."""
        if type(file) is not str or type(number) is not int:
            return None
        lines = self.lines(file)
        return lines[number - 1].strip()[:200] if 1 <= number <= len(lines) else None

    @property
    def names(self) -> frozenset:
        if self._names is None:
            found: set = set(self.modules)
            for module in self.modules:
                found |= names_in_source("\n".join(self.lines(f"{module}.py")))
            self._names = frozenset(found)
        return self._names

    def verified(self, claimed) -> list[dict]:
        """The warnings of ``claimed`` (a worker's, as ``answers.warnings_said`` cut them) that point at a line of the
        student's own files, each with that line's text read here; each once."""
        kept: list[dict] = []
        for warning in claimed or ():
            text = self.line(warning.get("file"), warning.get("line"))
            if text is None:
                continue
            found = {**warning, "text": text}
            if found not in kept:
                kept.append(found)
        return kept

    def for_step(self, step: str) -> list[dict]:
        """The warnings raised as the modules compiled (``import_warnings``) that belong to ``step``: those inside its
        definition, and those of its module outside every definition (``warned.of_definition``)."""
        module, name = step.split(".", 1)
        mine = [w for w in self.import_warnings if w.get("file") == f"{module}.py"]
        return of_definition(mine, "\n".join(self.lines(f"{module}.py")), name) if mine else []

    def annotate(self, step: str, answer: dict) -> dict:
        """``answer`` (as ``answers.taken`` took it) with what the trusted side knows from the files: the student's own
        names, their warnings verified (and those of compiling ``step``'s module), the line an error was raised at."""
        warnings = self.verified(answer.get("warnings")) + self.for_step(step)
        answer["warnings"] = [w for i, w in enumerate(warnings) if w not in warnings[:i]]
        answer["own_names"] = self.names
        error = answer.get("error") if not answer.get("ok") else None
        if isinstance(error, dict) and isinstance(error.get("where"), dict):
            line = self.line(error["where"].get("file"), error["where"].get("line"))
            if line is not None:
                error["source_line"] = line
        return answer
