"""S3's rules for general purpose bucket names, for every bucket name a profile sets or the
platform derives (S3 User Guide, "General purpose bucket naming rules",
https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html):

- 3 to 63 characters: lowercase letters, digits, dots and hyphens;
- beginning and ending with a letter or a digit;
- no two adjacent periods;
- not formatted as an IP address (192.168.5.4);
- not beginning with xn--, sthree- or amzn-s3-demo-;
- not ending with -s3alias, --ol-s3, .mrap, --x-s3 or --table-s3 (access point aliases, Object
  Lambda, Multi-Region Access Points, directory and table buckets).
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

RESERVED_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
RESERVED_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")
_FORM = re.compile(r"[a-z0-9][a-z0-9.-]*[a-z0-9]")
_IP_ADDRESS = re.compile(r"[0-9]{1,3}(\.[0-9]{1,3}){3}")
RULES_URL = "https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html"


def bucket_name_problem(name: str) -> str | None:
    """What S3 refuses in `name` as a general purpose bucket name, or None."""
    if not 3 <= len(name) <= 63:
        return f"S3 bucket name {name!r} is {len(name)} characters long; S3 takes 3 to 63"
    if not _FORM.fullmatch(name):
        return (
            f"S3 bucket name {name!r} is not valid: lowercase letters, digits, dots and hyphens, "
            "beginning and ending with a letter or digit"
        )
    if ".." in name:
        return f"S3 bucket name {name!r} has two adjacent periods"
    if _IP_ADDRESS.fullmatch(name):
        return f"S3 bucket name {name!r} is formatted as an IP address"
    prefix = next((p for p in RESERVED_PREFIXES if name.startswith(p)), None)
    suffix = next((s for s in RESERVED_SUFFIXES if name.endswith(s)), None)
    if prefix or suffix:
        return f"S3 bucket name {name!r} uses a prefix or suffix S3 reserves ({prefix or suffix!r})"
    return None


def _bucket_name(name: str) -> str:
    problem = bucket_name_problem(name)
    if problem:
        raise ValueError(f"{problem} ({RULES_URL})")
    return name


# A bucket name a profile sets (the state bucket).
BucketName = Annotated[str, AfterValidator(_bucket_name)]
