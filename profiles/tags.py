r"""The profile's `tags`: every layer's AWS provider sets them as default tags on each resource it
creates, IAM roles included.

- AWS's tag pattern, the same in IAM, FSx, ELB, ACM, CloudWatch Logs and Resource Groups:
  `[\p{L}\p{Z}\p{N}_.:/=+\-@]`, letters, separators and numbers of any script plus _.:/=+-@
  (IAM Tag, https://docs.aws.amazon.com/IAM/latest/APIReference/API_Tag.html); keys of 1 to 128
  characters, values of 0 to 256. So `owner: Jürgen Müller` is a tag; `$`, `{` and `%` never are, and
  the profile's text check refuses the line and paragraph separators (Zl, Zp) and controls anyway.
- Keys are compared without regard to case. IAM takes the tag keys of users and roles
  case-insensitively: "you cannot have separate Department and department tag keys", the later one
  replaces the first (https://docs.aws.amazon.com/IAM/latest/UserGuide/id_tags.html#case-sensitivity).
  Two keys that differ only in case would be one tag on the platform's roles and two elsewhere, and
  each plan would change the role's tag back and forth.
- Reserved keys and prefixes (aws:, the platform's own) are refused per key (profiles/reserved_keys.py).
"""

from __future__ import annotations

import unicodedata
from typing import Annotated

from pydantic import AfterValidator, Field

from profiles.base import FieldProblem
from profiles.reserved_keys import ReservedTagKeys

TAG_KEY_MAX = 128
TAG_VALUE_MAX = 256
# Unicode's general categories of \p{L} (letters), \p{Z} (separators) and \p{N} (numbers), and the
# symbols AWS's tag pattern adds to them.
TAG_CATEGORIES = ("L", "Z", "N")
TAG_SYMBOLS = "_.:/=+-@"
TAG_CHARACTERS = "letters, numbers and spaces of any script and _ . : / = + - @"


def _tag_text(text: str) -> str:
    for char in text:
        if unicodedata.category(char)[0] not in TAG_CATEGORIES and char not in TAG_SYMBOLS:
            name = unicodedata.name(char, "")
            raise ValueError(
                f"the character {char!r} (U+{ord(char):04X}{' ' + name if name else ''}) is not one AWS takes in a "
                f"tag: {TAG_CHARACTERS}"
            )
    return text


# A tag key: 1 to 128 characters of AWS's tag pattern, not reserved (profiles/reserved_keys.py).
TagKey = Annotated[str, Field(min_length=1, max_length=TAG_KEY_MAX), AfterValidator(_tag_text), ReservedTagKeys]
# A tag value: 0 to 256 characters of the same pattern.
TagValue = Annotated[str, Field(max_length=TAG_VALUE_MAX), AfterValidator(_tag_text)]


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
