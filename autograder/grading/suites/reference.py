"""The reference side: run a request against the solutions, in the trusted process."""
from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
import sys
from pathlib import Path

from autograder.sandbox import answers
from autograder.worker import runtime


class Reference:
    """The solution modules of a course, loaded as a package, and their stand-in sources."""

    def __init__(self, solutions_dir: Path, modules: list[str], steps: list[str]):
        solutions_dir = Path(solutions_dir).resolve()
        if not (solutions_dir / "__init__.py").is_file():
            raise FileNotFoundError(f"the reference solutions are missing: no {solutions_dir / '__init__.py'}")
        package = "_reference_" + solutions_dir.name
        if package not in sys.modules:
            spec = importlib.util.spec_from_file_location(package, solutions_dir / "__init__.py",
                                                          submodule_search_locations=[str(solutions_dir)])
            module = importlib.util.module_from_spec(spec)
            sys.modules[package] = module
            spec.loader.exec_module(module)
        self.modules = {name: importlib.import_module(f"{package}.{name}") for name in modules}
        self.steps = steps
        objects = {}
        for step in steps:
            module, name = step.split(".", 1)
            if not hasattr(self.modules[module], name):
                raise LookupError(f"course.yml names step {step}, but {solutions_dir.name}/{module}.py defines no "
                                  f"{name}")
            objects[step] = getattr(self.modules[module], name)
        self.workspace = runtime.Workspace(None, self.modules, objects)
        self._sources: dict[str, str] | None = None

    def run(self, request: dict) -> dict:
        """The reference's answer, in this (trusted) process: whether it changed its arguments in place is read from
        its copies of them (``modified_args``, as the argument buffer gives it for a student)."""
        answer = runtime.run(request, self.workspace)
        after = answer.pop("args_after", None)
        if answer.get("ok"):
            answer["modified_args"] = answers.modified_by_word(request, after)
        return answer

    def source(self, step: str) -> str:
        """The step's code as shipped to a worker: no comments, no docstrings, no markers."""
        tree = ast.parse(textwrap.dedent(inspect.getsource(self.workspace.standins[step])))
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                    and isinstance(getattr(body[0], "value", None), ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
        return ast.unparse(tree) + "\n"

    def standin_sources(self) -> dict[str, str]:
        """Each step's ``source``, made once (the stand-in policy and the lines feedback must not quote both ask)."""
        if self._sources is None:
            self._sources = {step: self.source(step) for step in self.steps}
        return dict(self._sources)

    def standin_kinds(self) -> dict[str, str]:
        """Each step as its stand-in proxy stands in for it: a ``class`` (an ``nn.Module``) or a ``function``.

        The proxies hold no reference code: the reference worker runs it (``sandbox/reference_server.py``).
        """
        return {step: "class" if isinstance(self.workspace.standins[step], type) else "function" for step in self.steps}

    def module_sources(self) -> dict[str, str]:
        """The solution modules' source, for the reference worker (which no student's code can reach)."""
        return {name: inspect.getsource(module) for name, module in self.modules.items()}

    def uses(self) -> dict[str, set[str]]:
        """For each step, the names its reference code uses (to find the stand-ins a stand-in needs)."""
        return {step: {n.id for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Name)}
                for step, src in self.standin_sources().items()}

    def body_lines(self) -> set[str]:
        """Every substantial line of the reference's code, whitespace-normalized: feedback must quote none."""
        lines = set()
        for module in self.modules.values():
            for line in inspect.getsource(module).splitlines():
                text = " ".join(line.split())
                if len(text) >= 16 and not text.startswith(("#", '"', "'")):
                    lines.add(text)
        for src in self.standin_sources().values():
            lines |= {" ".join(line.split()) for line in src.splitlines() if len(line.strip()) >= 16}
        return lines
