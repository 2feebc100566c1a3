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
- A resource takes at most 50 user tags (EC2, "Tag restrictions",
  https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_Tags.html#tag-restrictions; IAM roles and
  users 50 too, https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html; aws:
  tags do not count). The profile's tags share them with the platform's on the most-tagged resource:
  the default tags (platform, layer) and, on the private subnets, Name and the discovery tags
  karpenter.sh/discovery and kubernetes.io/role/internal-elb (components/network.py). A test checks
  the synthesized stacks hold no resource with more of the platform's own.
"""

from __future__ import annotations

import unicodedata
from typing import Annotated

from pydantic import AfterValidator, Field

from profiles.base import FieldProblem
from profiles.reserved_keys import ReservedTagKeys, platform_tags

TAG_KEY_MAX = 128
TAG_VALUE_MAX = 256
AWS_MAX_TAGS_PER_RESOURCE = 50
# The most tags the platform sets on one resource itself, besides its default tags (the private subnets').
MOST_RESOURCE_TAGS = ("Name", "karpenter.sh/discovery", "kubernetes.io/role/internal-elb")
PLATFORM_TAGS_PER_RESOURCE = (*platform_tags("", ""), *MOST_RESOURCE_TAGS)
MAX_PROFILE_TAGS = AWS_MAX_TAGS_PER_RESOURCE - len(PLATFORM_TAGS_PER_RESOURCE)
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


def _checked_tags(tags: dict[str, str]) -> dict[str, str]:
    if len(tags) > MAX_PROFILE_TAGS:
        platform = len(PLATFORM_TAGS_PER_RESOURCE)
        raise FieldProblem(
            (),
            f"{len(tags)} tags",
            f"{len(tags)} tags and the {platform} the platform sets on one resource "
            f"({', '.join(PLATFORM_TAGS_PER_RESOURCE)}) make {len(tags) + platform}; AWS takes at most "
            f"{AWS_MAX_TAGS_PER_RESOURCE} tags per resource",
            allowed=f"at most {MAX_PROFILE_TAGS} tags",
        )
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


# The profile's tags: each key a valid, unreserved tag key, no two the same but for letter case, and
# no more than a resource can hold besides the platform's own.
Tags = Annotated[dict[TagKey, TagValue], AfterValidator(_checked_tags)]
