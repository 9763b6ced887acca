"""Keep the reference solution out of the feedback a student sees.

A student's exception message can quote anything the worker could read; on the trusted side, no part of
the feedback may quote a line of the reference (as is, or reversed). What a hidden case's feedback may
show of the student's own values is ``autograder.feedback.redact``'s business.
"""
from __future__ import annotations

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
