"""The shape of course.yml, validated with pydantic (unknown keys are errors, not ignored)."""
from __future__ import annotations

import re
from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator, model_validator

STEP_ID = re.compile(r"^[A-Za-z_]\w*\.[A-Za-z_]\w*$")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Tolerance(Strict):
    rtol: float = Field(ge=0)
    atol: float = Field(ge=0)


class Tolerances(Strict):
    float32: Tolerance = Tolerance(rtol=1e-4, atol=1e-5)
    float64: Tolerance = Tolerance(rtol=1e-7, atol=1e-9)


class Count(Strict):
    points: float = Field(ge=0)
    visibility: Literal["public", "hidden"] | None = None


class Step(Strict):
    title: str
    counts: dict[str, Count]
    time_limit: float | None = Field(default=None, gt=0)
    tolerance: Tolerances | None = None

    @field_validator("counts", mode="before")
    @classmethod
    def _points_shorthand(cls, value):
        # ``values: 2`` is short for ``values: {points: 2}``
        if isinstance(value, dict):
            return {k: ({"points": v} if isinstance(v, (int, float)) and not isinstance(v, bool) else v)
                    for k, v in value.items()}
        return value

    @field_validator("counts")
    @classmethod
    def _not_empty(cls, value):
        if not value:
            raise ValueError("a step needs at least one count")
        return value


class Limits(Strict):
    step_seconds: float = Field(default=20, gt=0)
    submission_seconds: float = Field(default=300, gt=0)
    memory_mb: int = Field(default=2048, gt=0)
    processes: int = Field(default=16, gt=0)
    output_mb: int = Field(default=4, gt=0)


class Defaults(Strict):
    tolerance: Tolerances = Tolerances()
    #: counts public unless a step says otherwise; every other count is hidden
    public_counts: list[str] = ["values", "gradients", "parameters", "forward", "properties"]
    #: Gradescope visibility of hidden counts; public counts are always "visible"
    hidden_visibility: Literal["hidden", "after_due_date", "after_published", "visible"] = "after_published"


class LatePolicy(Strict):
    """How ``grade export`` discounts late submissions (percentages of the score, not points)."""
    #: the deadline, an ISO-8601 date and time with its UTC offset (2025-03-14T23:59:00+01:00)
    due: AwareDatetime
    #: minutes after ``due`` that still count as on time
    grace_minutes: float = Field(default=0, ge=0)
    #: percent of the score taken off per late day (a day starts when the grace period ends)
    penalty_per_day: float = Field(ge=0, le=100)
    #: the penalty never exceeds this percent (100: a very late submission can score zero)
    max_penalty: float = Field(default=100, ge=0, le=100)
    #: ``ceil``: every started day counts in full; ``exact``: fractions of a day, pro rata
    late_days_rounding: Literal["ceil", "exact"] = "ceil"


class Lti(Strict):
    """How ``grade lti push`` posts to the LMS (docs/lti.md); its flags win over these."""
    #: the NRPS member field a submission name is matched against
    match: Literal["email", "login", "sourcedid", "user_id"] = "email"
    #: the line item's stable resourceId (default: ``unit``); the same id finds the same gradebook column every push
    resource_id: str | None = None
    #: the gradebook column's title (default: ``title``)
    label: str | None = None


class Course(Strict):
    unit: str
    title: str
    solutions: str = "solutions"
    exercises: str = "exercises"
    suites: str = "autograder/unit/suites"
    defaults: Defaults = Defaults()
    limits: Limits = Limits()
    late_policy: LatePolicy | None = None
    lti: Lti | None = None
    steps: dict[str, Step]

    @field_validator("steps")
    @classmethod
    def _step_ids(cls, value):
        for key in value:
            if not STEP_ID.match(key):
                raise ValueError(f"step id {key!r} must be module.name (for example simple_attention.attention_scores)")
        return value

    @model_validator(mode="after")
    def _visibility_defaults(self):
        for step in self.steps.values():
            for name, count in step.counts.items():
                if count.visibility is None:
                    count.visibility = "public" if name in self.defaults.public_counts else "hidden"
        return self

    # -- derived ---------------------------------------------------------------------------------
    @property
    def modules(self) -> list[str]:
        seen: list[str] = []
        for step in self.steps:
            module = step.split(".", 1)[0]
            if module not in seen:
                seen.append(module)
        return seen

    def step_time(self, step: str) -> float:
        return self.steps[step].time_limit or self.limits.step_seconds

    def tolerances(self, step: str) -> Tolerances:
        return self.steps[step].tolerance or self.defaults.tolerance

    def steps_by_module(self) -> dict[str, list[str]]:
        """module -> the names of its steps (``context_vector`` may be in two modules)."""
        found: dict[str, list[str]] = {m: [] for m in self.modules}
        for step in self.steps:
            module, name = step.split(".", 1)
            found[module].append(name)
        return found

    def max_points(self) -> float:
        return sum(c.points for s in self.steps.values() for c in s.counts.values())
