"""What every profile module shares: the strict model base, the field-level problem, and the
constrained string types of AWS and Kubernetes vocabulary. Binding-free, like all of profiles/."""

from __future__ import annotations

import difflib
import ipaddress
from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import InitErrorDetails

from profiles.limits import CpuBound, MemoryBound


def did_you_mean(value: object, choices: Sequence[str]) -> str:
    """A "did you mean 'x'?" hint for a near-miss, or '' when nothing is close."""
    # Numbers and versions ('1.20' vs '1.32') look alike to difflib without being typos.
    if not isinstance(value, str) or not choices or not any(char.isalpha() for char in value):
        return ""
    close = difflib.get_close_matches(value, list(choices), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else ""


class FieldProblem(ValueError):
    """A validation problem in one named field of the model that raises it."""

    def __init__(self, field: str | tuple[str | int, ...], value: Any, message: str, allowed: str = ""):
        self.field = (field,) if isinstance(field, str) else tuple(field)
        self.value = value
        self.allowed = allowed
        super().__init__(message)


def raise_all(problems: Sequence[FieldProblem], *, title: str) -> None:
    """Raise every problem at once, each as its own error (a validator's `raise` reports one)."""
    if problems:
        errors = [InitErrorDetails(type="value_error", loc=(), input=p.value, ctx={"error": p}) for p in problems]
        raise ValidationError.from_exception_data(title, errors)


class Strict(BaseModel):
    # Field docstrings become the schema descriptions editors show (profiles/schema.py reads them,
    # profiles/docstrings.py says why pydantic does not). strict: a value is taken as YAML wrote it,
    # never converted: a quoted "no" is text, not false; "3", 3.0 and true are not 3. Literal
    # choices still take their strings; a time is parsed from text by its own field type.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


NAME_PATTERN = r"^[a-z][a-z0-9-]{0,30}[a-z0-9]$"
Name = Annotated[str, Field(pattern=NAME_PATTERN)]


# Regions outside the commercial partition, by name prefix: their ARNs (arn:aws-us-gov:...), VPC
# endpoint service names (cn.com.amazonaws...) and reachable registries (public.ecr.aws, nvcr.io)
# differ from what the stacks write.
OTHER_PARTITIONS = {"cn-": "aws-cn", "us-gov-": "aws-us-gov", "us-iso-": "aws-iso", "us-isob-": "aws-iso-b"}


def partition_of(region: str) -> str:
    """The AWS partition a region belongs to (aws for the commercial regions)."""
    for prefix, partition in OTHER_PARTITIONS.items():
        if region.startswith(prefix):
            return partition
    return "aws-iso-e" if region.startswith("eu-isoe-") else "aws-iso-f" if "-isof-" in region else "aws"


def _known_region(region: str) -> str:
    from profiles.aws_facts import regions

    commercial = [r for r in regions() if partition_of(r) == "aws"]
    if region not in regions():
        hint = did_you_mean(region, commercial)
        raise ValueError(
            f"{region!r} is not an AWS region{'; ' + hint if hint else ''} (known: {', '.join(commercial)})"
        )
    if partition_of(region) != "aws":
        raise ValueError(
            f"{region!r} is in the {partition_of(region)} partition; the platform writes ARNs, endpoint service "
            "names and image references for the commercial aws partition only "
            f"(commercial regions: {', '.join(commercial)})"
        )
    return region


Region = Annotated[
    str,
    Field(pattern=r"^[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-[0-9]$"),
    AfterValidator(_known_region),
]
# An IPv4 CIDR block, e.g. 10.0.0.0/16 (checked by check_cidr where used).
Cidr = str


def quoted_version(choices: Sequence[str]) -> BeforeValidator:
    """A version field's check that it was written as text: YAML reads an unquoted 1.30 as the number
    1.3, so the version the user meant cannot be told from the number (it is never guessed)."""

    def check(value: object) -> object:
        if isinstance(value, int | float) and not isinstance(value, bool):
            raise FieldProblem(
                (),
                value,
                f"write the version in quotes: YAML reads an unquoted {value!r} as a number, and a number loses "
                "a version's trailing zeros (1.30 becomes 1.3)",
                allowed=", ".join(f"'{choice}'" for choice in choices) + ", in quotes",
            )
        return value

    return BeforeValidator(check)


def _quoted_account_id(value: object) -> object:
    # The ID meant cannot be told from the number, so none is suggested: a number drops an ID's leading
    # zeros, and YAML 1.1 reads digits after a leading 0 (all of them 0-7) as an octal number, so an
    # unquoted 012345670123 arrives as 1402433619; padding that would name another account.
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise FieldProblem(
            (),
            value,
            "write the account ID in quotes: YAML read the unquoted digits as a number, which drops an ID's "
            "leading zeros (and reads digits after a leading 0 as an octal number), so the ID cannot be told "
            "from it",
            allowed="the 12-digit account ID in quotes, exactly as AWS shows it",
        )
    return value


# A 12-digit AWS account ID, in ASCII digits only (\d would admit other scripts' digits).
AccountId = Annotated[str, BeforeValidator(_quoted_account_id), Field(pattern=r"^[0-9]{12}$")]
# An IAM role or user ARN, arn:aws:iam::<account>:role|user/<path/><name>, as IAM's API takes it
# (Role and User data types, https://docs.aws.amazon.com/IAM/latest/APIReference/API_Role.html and
# API_User.html; "IAM identifiers", https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html;
# "IAM and AWS STS quotas", https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html):
# a name of 1 to 64 of [A-Za-z0-9_+=,.@-]; a path `/` or `/.../` of at most 512 characters whose
# parts are never empty (so no `//` and no `/` at the end, which would leave the name empty); an
# ARN of at most 2048. The partition is aws only: the platform writes ARNs and endpoints for the
# commercial partition (partition_of, _known_region), and an access entry's principal must be in
# its cluster's partition. An STS assumed-role ARN is no access entry principal (EKS takes the role).
IAM_NAME_MAX = 64
IAM_PATH_MAX = 512
ARN_MAX = 2048
_KNOWN_PARTITIONS = {*OTHER_PARTITIONS.values(), "aws-iso-e", "aws-iso-f", "aws-eusc"}


def _principal_partition(value: object) -> object:
    partition = (
        value.split(":")[1] if isinstance(value, str) and value.startswith("arn:") and ":" in value[4:] else None
    )
    if partition is None or partition == "aws":
        return value
    allowed = "an ARN in the aws partition, arn:aws:iam::<account>:role/<name> or arn:aws:iam::<account>:user/<name>"
    if partition in _KNOWN_PARTITIONS:
        message = (
            f"the ARN is in the {partition} partition; the platform's cluster is in the commercial aws partition "
            "(its region is a commercial one), whose access entries take principals of that partition only"
        )
    else:
        message = f"{partition!r} is not an AWS partition (aws, aws-cn, aws-us-gov, ...)"
    raise FieldProblem((), value, message, allowed=allowed)


def _principal_lengths(value: str) -> str:
    resource = value.split(":", 5)[5]  # role/<path/>name
    _, _, rest = resource.partition("/")
    inner, _, name = rest.rpartition("/")
    path = f"/{inner}/" if inner else "/"
    if len(name) > IAM_NAME_MAX:
        raise FieldProblem(
            (), value, f"the name {name!r} is {len(name)} characters", allowed=f"an IAM name of 1 to {IAM_NAME_MAX}"
        )
    if len(path) > IAM_PATH_MAX:
        raise FieldProblem(
            (), value, f"the path is {len(path)} characters", allowed=f"a path of at most {IAM_PATH_MAX}"
        )
    if len(value) > ARN_MAX:
        raise FieldProblem((), value, f"the ARN is {len(value)} characters", allowed=f"at most {ARN_MAX}")
    return value


IamPrincipalArn = Annotated[
    str,
    Field(pattern=r"^arn:aws:iam::[0-9]{12}:(role|user)(/[A-Za-z0-9_+=,.@-]+)+$"),
    BeforeValidator(_principal_partition),  # runs first: names the partition before the pattern
    AfterValidator(_principal_lengths),
]
SecurityGroupId = Annotated[str, Field(pattern=r"^sg-([0-9a-f]{8}|[0-9a-f]{17})$")]


HttpsUrl = Annotated[str, Field(pattern=r"^https://[!-.0-~]+(/[!-~]*)?$")]
K8sName = Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")]


def check_cidr(value: str) -> str:
    try:
        ipaddress.IPv4Network(value, strict=True)
    except ValueError as exc:
        raise ValueError(f"not an IPv4 CIDR block with its host bits zero ({exc})") from None
    return value


def check_sizes(min_size: int, desired_size: int, max_size: int) -> None:
    if min_size > max_size:
        raise FieldProblem("min_size", min_size, "min_size is above max_size", allowed=f"0..{max_size}")
    if not min_size <= desired_size <= max_size:
        raise FieldProblem(
            "desired_size",
            desired_size,
            "desired_size must lie between min_size and max_size",
            allowed=f"{min_size}..{max_size}",
        )


def check_unique(names: Sequence[str], *, field: str, what: str) -> None:
    """Raise for the first repeated name, at `<field>.<index>.name`."""
    seen: set[str] = set()
    for index, name in enumerate(names):
        if name in seen:
            raise FieldProblem((field, index, "name"), name, f"{what} names must be unique")
        seen.add(name)


# Plain words for the patterns above: users see these, never the regular expressions.
PATTERN_WORDS: dict[str, str] = {
    NAME_PATTERN: "2-32 lowercase letters, digits and hyphens, starting with a letter "
    "and ending alphanumeric, e.g. gpu-platform",
    r"^[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-[0-9]$": "an AWS region, e.g. us-east-1",
    r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$": "a Kubernetes name: up to 63 lowercase letters, digits and inner "
    "hyphens, e.g. ml-team",
    r"^https://[!-.0-~]+(/[!-~]*)?$": "an https:// URL in ASCII (a Unicode host in its xn-- form)",
    r"^https://[!-~]+$": "an https:// URL in ASCII (a Unicode host in its xn-- form)",
    r"^arn:aws:iam::[0-9]{12}:(role|user)(/[A-Za-z0-9_+=,.@-]+)+$": "an IAM role or user ARN: "
    "arn:aws:iam::, the 12-digit account, :role/ or :user/, an optional path of /-separated parts, then the name, "
    "each part letters, digits and _+=,.@- (no empty part, no / at the end), "
    "e.g. arn:aws:iam::123456789012:role/admins",
    r"^sg-([0-9a-f]{8}|[0-9a-f]{17})$": "a security group ID, e.g. sg-0123456789abcdef0",
    r"^[0-9]{12}$": "an AWS account ID: 12 digits, in quotes, e.g. '123456789012'",
    r"^[0-9]+\.[0-9]+\.[0-9]+-[0-9]{8}$": "an EKS AMI release version, e.g. 1.34.2-20251120",
    r"^[A-Za-z0-9_-][A-Za-z0-9_.-]*(/[A-Za-z0-9_-][A-Za-z0-9_.-]*)*$": "/-separated names of letters, digits and "
    "_.-, none starting with a dot, e.g. platform/state",
    r"^(/[A-Za-z0-9_-][A-Za-z0-9_.-]*)+$": "an absolute path without . or .. segments, e.g. /datasets",
    r"^([A-Za-z0-9_-][A-Za-z0-9_.-]*/)*$": "empty, or names ending in /, none starting with a dot, e.g. training/",
}


def worded(pattern: str, words: str) -> FieldInfo:
    """A field's pattern with the words a user reads when a value does not match it (PATTERN_WORDS),
    declared where the type is, e.g. Annotated[str, worded(r"^v[0-9]+$", "v and a number")]."""
    PATTERN_WORDS[pattern] = words
    info: FieldInfo = Field(pattern=pattern)
    return info


# Kubernetes quantities, each resource with its own grammar and bound (profiles/limits.py). CPU: cores
# with at most three decimals, or whole thousandths (Kubernetes takes no finer CPU than 1m). Memory:
# whole bytes, or a whole number of a decimal or binary unit (no m, which would be thousandths of a byte).
CpuQuantity = Annotated[
    str,
    worded(r"^([0-9]+(\.[0-9]{1,3})?|[0-9]+m)$", "cores (up to 3 decimals) or thousandths, e.g. 64, 0.5 or 500m"),
    CpuBound,
]
MemoryQuantity = Annotated[
    str,
    worded(
        r"^[0-9]+(k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$",
        "whole bytes or a whole number of k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi or Ei, e.g. 256Gi",
    ),
    MemoryBound,
]
