"""course.yml: the unit's steps, points, tolerances, visibility and limits."""
from .load import CourseError, load_course
from .schema import Course

__all__ = ["Course", "CourseError", "load_course"]
