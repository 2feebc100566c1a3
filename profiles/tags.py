"""The profile's `tags`: every layer's AWS provider sets them as default tags on each resource it
creates, IAM roles included.

- Keys are compared without regard to case. IAM takes the tag keys of users and roles
  case-insensitively: "you cannot have separate Department and department tag keys", the later one
  replaces the first (https://docs.aws.amazon.com/IAM/latest/UserGuide/id_tags.html#case-sensitivity).
  Two keys that differ only in case would be one tag on the platform's roles and two elsewhere, and
  each plan would change the role's tag back and forth.
- Reserved keys and prefixes (aws:, the platform's own) are refused per key (profiles/reserved_keys.py).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator

from profiles.base import FieldProblem, TagKey, TagValue


def _one_key_per_case(tags: dict[str, str]) -> dict[str, str]:
    first: dict[str, str] = {}
    for key in tags:
        folded = key.casefold()
        if folded in first:
            raise FieldProblem(
                (key,),
                key,
                f"differs from tag key {first[folded]!r} only in letter case: IAM takes a role's tag keys without "
                "regard to case, so the platform's roles would keep one of the two",
                allowed="each tag key once, whatever its letter case",
            )
        first[folded] = key
    return tags


# The profile's tags: each key a valid, unreserved tag key, no two the same but for letter case.
Tags = Annotated[dict[TagKey, TagValue], AfterValidator(_one_key_per_case)]
