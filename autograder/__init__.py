"""Autograding kit for the attention unit (chapter 3 of *Build a Large Language Model (From Scratch)*)."""

__version__ = "0.2.0"


def load_ipython_extension(shell) -> None:
    """``%load_ext autograder``: the ``%grade check`` magic (``autograder/check/magic.py``)."""
    from autograder.check.magic import load  # noqa: PLC0415 - IPython only when loaded as an extension

    load(shell)
