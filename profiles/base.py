"""What every profile module shares: the strict model base, the field-level problem, and the
constrained string types of AWS and Kubernetes vocabulary. Binding-free, like all of profiles/."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field


class FieldProblem(ValueError):
    """A validation problem in one named field of the model that raises it."""

    def __init__(self, field: str | tuple[str | int, ...], value: Any, message: str, allowed: str = ""):
        self.field = (field,) if isinstance(field, str) else tuple(field)
        self.value = value
        self.allowed = allowed
        super().__init__(message)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


Name = Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,30}[a-z0-9]$")]
Region = Annotated[
    str, Field(pattern=r"^[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-\d$", description="AWS region, e.g. us-east-1.")
]
# Kubernetes label: optional DNS-subdomain prefix and a name of up to 63 characters; value up to 63.
LabelKey = Annotated[
    str, Field(pattern=r"^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
]
LabelValue = Annotated[str, Field(pattern=r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")]
Cidr = Annotated[str, Field(description="An IPv4 CIDR block, e.g. 10.0.0.0/16")]
IamPrincipalArn = Annotated[str, Field(pattern=r"^arn:aws[a-z-]*:iam::\d{12}:(role|user)/[\w+=,.@/-]+$")]
HttpsUrl = Annotated[str, Field(pattern=r"^https://[^\s/]+(/\S*)?$")]
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
