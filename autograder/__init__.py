"""Autograding kit for the attention unit (chapter 3 of *Build a Large Language Model (From Scratch)*)."""

__version__ = "0.2.0"
