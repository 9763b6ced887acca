"""The likely misconception behind a wrong result: now ``autograder.feedback.diagnose``, named here too."""
from __future__ import annotations

from autograder.feedback.diagnose import likely, likely_from_mistakes as known, likely_from_values as generic
from autograder.feedback.tolerance import LOOSE

__all__ = ["LOOSE", "generic", "known", "likely"]
