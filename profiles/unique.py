"""Lists whose items AWS takes once: a repeat fails the apply (or is silently dropped), so a
profile that repeats one is refused at load, at the repeated item.

- EKS takes one access entry per principal ("ResourceInUseException"), and IAM names ignore case
  (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html#reference_iam-quotas-names).
- EKS's logging types are a set (UpdateClusterConfig, LogSetup.types,
  https://docs.aws.amazon.com/eks/latest/APIReference/API_LogSetup.html).
- A security group refuses a rule it already has ("InvalidPermission.Duplicate",
  https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html): the CIDRs and security
  groups the platform turns into rules (the private API endpoint's, JupyterHub's load balancer's).
- EKS's publicAccessCidrs, a node group's instance types and Karpenter's requirement values are
  sets: a repeat is a typo for a value that was meant.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

from pydantic import AfterValidator

from profiles.base import FieldProblem

T = TypeVar("T", bound=Hashable)


def unique(*, ignore_case: bool = False, why: str = "AWS takes each once") -> AfterValidator:
    """A list validator refusing the second of two equal items (equal ignoring case, if asked)."""

    def check(items: Sequence[T]) -> Sequence[T]:
        fold: Callable[[T], Hashable] = (lambda item: str(item).lower()) if ignore_case else (lambda item: item)
        first: dict[Hashable, int] = {}
        for index, item in enumerate(items):
            key = fold(item)
            if key in first:
                spelled = " (names ignore case)" if ignore_case and items[first[key]] != item else ""
                raise FieldProblem(
                    (index,),
                    item,
                    f"repeats item {first[key]}{spelled}: {why}",
                    allowed="each value once",
                )
            first[key] = index
        return items

    return AfterValidator(check)
