"""Tolerances and the description of differing tensors: now in ``autograder.feedback``, named here too."""
from __future__ import annotations

from autograder.feedback.compare import describe_difference
from autograder.feedback.describe import fmt_dtype, fmt_index, fmt_shape, fmt_values
from autograder.feedback.tolerance import LOOSE, Tolerance, same

__all__ = ["LOOSE", "Tolerance", "describe_difference", "fmt_dtype", "fmt_index", "fmt_shape", "fmt_values", "same"]
