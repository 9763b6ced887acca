"""The course unit's content, instructor side only: what a course team edits to change the unit.

- ``suites/``: the hidden pytest suites, one file per module, one class per step, one test per count;
- ``mistakes.py``: the known misconceptions the suites name ("likely: ...") with the answer each gives;
- ``documents.py``: the course documents' tensors and seeds, the ground truth of the public cases;
- ``prose.py``: the notebooks' words for each part.

With ``solutions/`` and ``course.yml`` at the top of the repository, that is all of the unit; the rest of
``autograder/`` is machinery that reads it.
"""
