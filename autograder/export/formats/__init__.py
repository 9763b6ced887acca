"""Gradebook file formats: ``canvas``, ``moodle`` and ``csv`` (a plain table for people)."""
from __future__ import annotations

from . import canvas, moodle, plain
from .options import ExportOptions

WRITERS = {"canvas": canvas.write, "moodle": moodle.write, "csv": plain.write}

__all__ = ["WRITERS", "ExportOptions"]
