"""Keep hidden inputs out of the feedback a student sees.

On a hidden case, whatever the student's code controls (an exception's message and class name, the
shape of what it returned, the names of its parameters) could carry a hidden input out to the student
(raise ValueError(str(x.tolist())) on a randomized case). On hidden cases those parts are shown only
in a form that cannot: digits masked, long tokens cut, class names only when they are Python's or
torch's own, dimensions only when they are among the case's own (``autograder.feedback.redact``, named
here too). And on the trusted side, no feedback quotes the reference solution (``reference_lines``).
"""
from __future__ import annotations

# What a hidden case's feedback may show of the student's own values: in ``autograder.feedback``, which
# every path words its feedback with; named here as before.
from autograder.feedback.redact import redact_dims as dims, redact_names as names, redact_text as text, \
    redact_type as type_name

__all__ = ["QUOTED", "dims", "names", "reference_lines", "text", "type_name"]


QUOTED = "[removed: this part of the message quoted the reference solution]"


def reference_lines(feedback: str, lines: set[str]) -> str:
    """Drop any part of ``feedback`` that quotes a line of the reference (as is, or reversed)."""
    if not lines:
        return feedback
    flat = " ".join(feedback.split())
    if not any(line in flat or line[::-1] in flat for line in lines) and "BEGIN SOLUTION" not in feedback:
        return feedback
    kept = []
    for part in feedback.split("\n"):
        norm = " ".join(part.split())
        quoted = "BEGIN SOLUTION" in part or "END SOLUTION" in part or any(
            line in norm or line[::-1] in norm or (len(norm) >= 16 and norm in line) for line in lines)
        kept.append(QUOTED if quoted else part)
    text = "\n".join(kept)
    # a quote spread over several lines of the message: remove the message's student-written part whole
    if any(line in " ".join(text.split()) for line in lines):
        text = "\n".join(QUOTED if part.startswith("  your code raised") else part for part in text.split("\n"))
    return text
