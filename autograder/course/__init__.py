"""course.yml: the unit's steps, points, tolerances, visibility and limits."""
from .load import CourseError, load_course  # noqa: F401 - the package's names
from .schema import Course  # noqa: F401 - the package's names
