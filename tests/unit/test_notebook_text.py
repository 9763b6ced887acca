"""An autograded notebook's file is written a cell at a time (``nbgrader_course/notebook_text.py``): the very bytes
nbformat writes, for every kind of cell and output, whether a cell's text is new or kept from an earlier notebook,
and a notebook nbformat would refuse is refused."""
from __future__ import annotations

import base64

import nbformat
import pytest
from nbformat import v4

from autograder.nbgrader_course import notebook_text


def every_kind() -> nbformat.NotebookNode:
    """A notebook with each kind of cell and output, text nbformat splits into lines and text it does not, metadata
    it leaves out of the file (``trusted``, ``orig_nbformat``), and characters JSON escapes or keeps."""
    picture = base64.b64encode(bytes(range(256)) * 100).decode("ascii")  # a long cell: written, not kept
    code = v4.new_code_cell("x = 1\nprint('héllo \\u2028 \"q\" \\t')\n", execution_count=3,
                            metadata={"trusted": True, "nbgrader": {"grade": True, "grade_id": "c1", "points": 2}})
    code.outputs = [
        v4.new_output("stream", name="stdout", text="passed (1/1)\nsecond line\n"),
        v4.new_output("display_data", data={"image/png": picture, "text/plain": "a\npicture"}, metadata={}),
        v4.new_output("execute_result", data={"text/plain": "3", "application/json": {"a": [1, 2.5, None]}},
                      execution_count=3),
        v4.new_output("error", ename="CheckFailed", evalue="wrong ✗", traceback=["CheckFailed (0/2)", "wrong ✗"]),
    ]
    markdown = v4.new_markdown_cell("# Title\n\nemoji 🧪, tab\there, a backslash \\ and a NUL-free end")
    markdown.attachments = {"a.png": {"image/png": "iVBORw0KGgo="}}
    nb = v4.new_notebook(cells=[markdown, code, v4.new_raw_cell(""), v4.new_code_cell(""),
                                v4.new_code_cell("x = 1\nprint('héllo')")],
                         metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                                   "orig_nbformat": 3, "zeta": [], "alpha": {}})
    return nb


def test_the_text_is_nbformats_byte_for_byte_new_or_kept():
    nb = every_kind()
    expected = nbformat.writes(nb)
    notebook_text._kept.cache_clear()
    assert notebook_text.writes(nb) == expected  # every cell new
    hits = notebook_text._kept.cache_info().hits
    assert notebook_text.writes(nb) == expected  # every short cell kept from the first
    assert notebook_text._kept.cache_info().hits > hits
    assert notebook_text.writes(v4.new_notebook()) == nbformat.writes(v4.new_notebook())  # no cells
    # the control: a cell changed in place is a new cell, not the kept text of the old one
    nb.cells[3].source = "y = 2"
    assert notebook_text.writes(nb) == nbformat.writes(nb) != expected


def test_a_notebook_nbformat_refuses_is_refused():
    nb = every_kind()
    notebook_text.writes(nb)  # the control: as it is, it is written (and its cells kept)
    broken = every_kind()
    broken.cells[1].outputs[0]["name"] = 3  # a stream's name must be a string
    with pytest.raises(nbformat.ValidationError):
        nbformat.validate(broken)
    with pytest.raises(nbformat.ValidationError):
        notebook_text.writes(broken)
    broken = every_kind()
    broken.metadata["kernelspec"] = "python3"  # the notebook's own metadata, not a cell's
    with pytest.raises(nbformat.ValidationError):
        notebook_text.writes(broken)
