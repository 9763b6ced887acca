"""A notebook run in a real kernel by the user this process runs as:
``python -m tests.support.notebook_as_user REQUEST``.

``tests/system/test_normal_user_journeys.py`` runs it as a normal user (``local_users.run_as``), with the system's
Python and ``PYTHONPATH`` on this environment's packages and the kit: so the kernel (jupyter_client's own ``python3``,
the interpreter that runs this) is that user's, as a student's is. REQUEST names a JSON file: ``{"notebook": PATH,
"cells": [SOURCE, ...]}``; the notebook runs top to bottom with ``%load_ext autograder`` first and the cells at the end,
in the notebook's folder; standard output is one JSON line: for each added cell, what it showed (its text, and what it
wrote on standard error apart).
"""
from __future__ import annotations

import json
import sys


def main(request_file: str) -> int:
    import nbformat  # noqa: PLC0415 - Jupyter's, from the test extra
    from tests.support.kernels import notebook_client  # noqa: PLC0415 - Jupyter's, from the test extra

    with open(request_file, encoding="utf-8") as f:
        request = json.load(f)
    path = request["notebook"]
    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell("%load_ext autograder"))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    first = len(nb.cells)
    nb.cells += [nbformat.v4.new_code_cell(source) for source in request["cells"]]
    folder = path.rsplit("/", 1)[0]
    notebook_client(nb, timeout=600, kernel_name="python3", iopub_timeout=120, raise_on_iopub_timeout=True,
                    resources={"metadata": {"path": folder}}).execute()
    shown = []
    for cell in nb.cells[first:]:
        text, errors = [], []
        for out in cell.outputs:
            (errors if out.get("name") == "stderr" else text).append(
                out.get("text", "") + out.get("data", {}).get("text/plain", ""))
        shown.append({"text": "".join(text), "stderr": "".join(errors)})
    print(json.dumps(shown))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
