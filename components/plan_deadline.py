"""Objects computed for the moment of synthesis (a Capacity Block's window) go stale at a time: a
plan after it is refused, so they are synthesized again instead of applied stale. Binding-free."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from components.expressions import expression


@dataclass(frozen=True, kw_only=True)
class PlanDeadline:
    """A plan after `at` is refused with `why` (Terraform's plantimestamp(); a destroy plan is not)."""

    at: datetime
    why: str

    @property
    def stamp(self) -> str:
        """`at` as Terraform's timecmp reads it (RFC 3339)."""
        return self.at.strftime("%Y-%m-%dT%H:%M:%SZ")

    @staticmethod
    def condition(reference: str) -> str:
        """The precondition's condition: the plan was made before the time `reference` (HCL, e.g.
        local.x) holds. Terraform refuses a condition that refers to nothing in the configuration
        ("or else its result would not be checking anything"), so the time is a local value."""
        return expression(f"timecmp(plantimestamp(), {reference}) < 0")
