"""How late a submission is under course.yml's ``late_policy``, and what it costs."""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from autograder.course.schema import LatePolicy

DAY = timedelta(days=1)

ON_TIME = "on_time"          # at or before the due date
IN_GRACE = "in_grace"        # after the due date, within the grace period: no penalty
LATE = "late"                # after the grace period: penalised
UNDATED = "undated"          # results.json does not say when it was submitted: treated as on time
NO_POLICY = "submitted"      # course.yml has no late_policy: scores are exported as they are


@dataclass(frozen=True)
class Lateness:
    status: str
    late_days: float = 0.0   # days counted against the submission (whole days unless rounding is exact)
    penalty: float = 0.0     # fraction of the score taken off, 0..1

    def apply(self, raw: float) -> float:
        return raw * (1.0 - self.penalty)


def assess(policy: LatePolicy | None, submitted_at: datetime | None) -> Lateness:
    """Lateness of a submission made at ``submitted_at`` (timezone-aware, or None when unknown)."""
    if policy is None:
        return Lateness(NO_POLICY)
    if submitted_at is None:
        return Lateness(UNDATED)
    if submitted_at <= policy.due:
        return Lateness(ON_TIME)
    grace_end = policy.due + timedelta(minutes=policy.grace_minutes)
    if submitted_at <= grace_end:
        return Lateness(IN_GRACE)
    days = (submitted_at - grace_end) / DAY
    if policy.late_days_rounding == "ceil":
        days = float(math.ceil(days))
    penalty = min(days * policy.penalty_per_day, policy.max_penalty) / 100.0
    return Lateness(LATE, days, penalty)


def describe(policy: LatePolicy | None) -> str:
    if policy is None:
        return "no late_policy in course.yml: scores exported as they are"
    rounding = "per started day" if policy.late_days_rounding == "ceil" else "pro rata per day"
    return (f"due {policy.due.isoformat()}, grace {policy.grace_minutes:g} min, "
            f"{policy.penalty_per_day:g}% {rounding} after the grace period, at most {policy.max_penalty:g}%")
