"""The words and the numbers of every grade: tolerances, comparisons, likely misconceptions, messages.

One package, used on every path a submission can take: ``grade check`` and the hidden suites judge a
worker's answer with it (``autograder/grading/judge.py``), and the nbgrader notebooks carry its source
in their checking helper cell (``grade nbgrader`` pastes these modules in, then the notebook-specific
runner, ``autograder/nbgrader_course/cell_runner.py``). The same wrong answer therefore gets the same lines,
and the same points, wherever it is graded.

Rules that keep the modules pasteable into a notebook cell:

- each module imports only the standard library, torch, and names of this package's other modules
  (``from .compare import compare_values``: never ``from . import compare``), and nothing else;
- no two modules define the same top-level name (they share one namespace in the notebook);
- ``from __future__ import annotations`` is the only future import, and is dropped when pasted.

This ``__init__`` is not pasted and imports nothing.
"""
