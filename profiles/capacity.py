"""How a GPU node group's instances are bought: On-Demand, an On-Demand Capacity Reservation, or an
EC2 Capacity Block for ML, whose window (start and end) decides when the group may hold nodes.

What AWS documents about a block's end, and what the platform does about it:
- EC2 sends the "Capacity Block Expiration Warning" event 40 minutes before the end, saying that
  the instances still running in it begin to terminate 10 minutes later, i.e. 30 minutes before
  the end (EC2 User Guide, "Monitor Capacity Blocks using EventBridge",
  https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-monitor.html); when the block
  expires, all its instances are terminated (EC2 API Reference, CapacityBlock.endDate,
  https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CapacityBlock.html).
- EKS suggests scheduling a scale to zero more than 30 minutes before the end, to leave time to
  drain the nodes (EKS User Guide, "Create self-managed nodes with Capacity Blocks for ML",
  https://docs.aws.amazon.com/eks/latest/userguide/capacity-blocks.html), and a desired size of 0
  while a group is created before its block is active (same page).
- For a managed group, EKS adds a scheduled action that scales the group to 0 40 minutes before the
  end ("Amazon EKS Node Group Capacity Scaledown Before Reservation End"), and names a scheduled
  action at the block's start as one way to scale a group created at 0 up (EKS User Guide, "Create a
  managed node group with Capacity Blocks for ML",
  https://docs.aws.amazon.com/eks/latest/userguide/capacity-blocks-mng.html; source
  awsdocs/amazon-eks-user-guide latest/ug/nodes/capacity-blocks-mng.adoc). The platform schedules
  both ends itself (components/node_groups.py), its drain before EKS's; EKS's action is a backstop.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, field_validator, model_validator

from profiles.base import FieldProblem, Strict, worded
from profiles.limits import EC2_MAX_RESERVATION_INSTANCES

RESERVATION_ID = re.compile(r"^cr-[0-9a-f]{17}$")
# EC2 begins to terminate a block's instances this many minutes before its end (see the module docstring).
EC2_TERMINATES_BEFORE_END_MINUTES = 30
# The shortest drain: EC2's termination start plus a quarter hour for pods to stop and nodes to drain.
MIN_DRAIN_MINUTES = EC2_TERMINATES_BEFORE_END_MINUTES + 15
STAMP = "%Y-%m-%dT%H:%M:%SZ"

BlockState = Literal["scheduled", "active", "draining", "ended"]


def _iso_time(value: object) -> object:
    """A profile's time is text (the loader keeps YAML timestamps as text); strict models take no
    text for a datetime, so it is parsed here, and only here: a number (a Unix time) is refused."""
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"{value!r} is not an ISO 8601 time, e.g. 2027-03-01T11:30:00Z") from None
    return value


UtcTime = Annotated[datetime, BeforeValidator(_iso_time)]
ResourceGroupArn = Annotated[
    str,
    worded(
        r"^arn:aws[a-z-]*:resource-groups:[a-z0-9-]+:[0-9]{12}:group/[A-Za-z0-9_.-]+$",
        "a resource group ARN, e.g. arn:aws:resource-groups:us-east-1:123456789012:group/training-reservations",
    ),
]


class OnDemandCapacity(Strict):
    type: Literal["on_demand"] = "on_demand"
    """Plain On-Demand instances, no reservation."""


class OdcrCapacity(Strict):
    """On-Demand Capacity Reservation: one reservation, or a resource group of reservations
    (more capacity later needs no node-group change)."""

    type: Literal["odcr"]
    """An On-Demand Capacity Reservation."""
    reservation_id: str | None = None
    """The reservation's id (cr-...); give this or resource_group_arn."""
    resource_group_arn: ResourceGroupArn | None = None
    """ARN of a resource group of reservations; give this or reservation_id."""
    availability_zone: str = Field(...)
    """The AZ the reservation was made in, named as cluster.vpc names its zones (zone ID or name)."""

    @model_validator(mode="after")
    def _one_target(self) -> OdcrCapacity:
        if (self.reservation_id is None) == (self.resource_group_arn is None):
            raise FieldProblem(
                "reservation_id",
                self.reservation_id,
                "an ODCR targets exactly one of reservation_id or resource_group_arn",
                allowed="reservation_id: cr- and 17 hex digits, or resource_group_arn: a resource group's ARN",
            )
        if self.reservation_id is not None:
            check_reservation_id(self.reservation_id)
        return self


class CapacityBlock(Strict):
    """EC2 Capacity Block for ML: a fixed number of instances for a fixed window. The group holds no
    node before starts_at, scales to its sizes at starts_at and to zero drain_minutes before ends_at."""

    type: Literal["capacity_block"]
    """EC2 Capacity Block for ML: a reservation bought for a fixed window."""
    reservation_id: str | None = Field(None)
    """The Capacity Block's reservation id (cr-...)."""
    instance_count: int = Field(..., ge=1, le=EC2_MAX_RESERVATION_INSTANCES)
    """Instances in the block; node group sizes stay within it. An UltraServer block holds the UltraServer's
    instances (u-p6e-gb200x36: 9, u-p6e-gb200x72: 18)."""
    ultraserver_type: (
        Annotated[str, worded(r"^u-[a-z0-9-]+x[0-9]+$", "an UltraServer type, e.g. u-p6e-gb200x72")] | None
    ) = None
    """The block's UltraServer type (ultraserverType in aws ec2 describe-capacity-blocks), e.g. u-p6e-gb200x72: one
    block is one UltraServer, whose instances share one NVLink domain. Required for types sold only as UltraServers
    (p6e-gb200.36xlarge); unset for a block of single instances."""
    availability_zone: str = Field(...)
    """The AZ the block was bought in, named as cluster.vpc names its zones (zone ID or name)."""
    starts_at: UtcTime = Field(...)
    """When the block starts, in UTC (its StartDate in aws ec2 describe-capacity-reservations), e.g.
    2027-02-22T11:30:00Z. The group holds no node before it; a scheduled action scales it up at this time."""
    ends_at: UtcTime = Field(...)
    """When the block ends, in UTC (its EndDate in aws ec2 describe-capacity-reservations), e.g.
    2027-03-01T11:30:00Z. EC2 terminates the instances at the end whatever runs on them."""
    drain_minutes: int = Field(60, ge=MIN_DRAIN_MINUTES, le=24 * 60)
    """Minutes before ends_at at which the group scales to zero, so its pods drain and jobs can checkpoint. EC2 begins
    to terminate a block's instances 30 minutes before its end; this comes earlier. Default: 60; at least 45.
    """
    warn_minutes: int = Field(30, ge=5, le=24 * 60)
    """Minutes before the drain at which jobs still running on the block are warned (an alert and a Kubernetes event
    with the time left), so they can checkpoint. Default: 30.
    """

    @model_validator(mode="after")
    def _has_reservation(self) -> CapacityBlock:
        if self.reservation_id is None:
            raise FieldProblem(
                "reservation_id",
                None,
                "a Capacity Block node group needs the block's reservation id",
                allowed="cr- followed by 17 hex digits",
            )
        check_reservation_id(self.reservation_id)
        if self.ends_at <= self.starts_at:
            raise FieldProblem(
                "ends_at",
                self.ends_at.strftime(STAMP),
                "the block ends before it starts",
                allowed=f"a time after starts_at ({self.starts_at.strftime(STAMP)})",
            )
        length = int((self.ends_at - self.starts_at).total_seconds() // 60)
        if self.drain_minutes >= length:
            raise FieldProblem(
                "drain_minutes",
                self.drain_minutes,
                f"the drain would begin before the block starts (the block lasts {length} minutes)",
                allowed=f"{MIN_DRAIN_MINUTES} to {length - 1}",
            )
        return self

    @field_validator("starts_at", "ends_at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        if value.utcoffset() is None:
            raise ValueError("give the time zone: UTC, as EC2 reports it (e.g. 2027-03-01T11:30:00Z)")
        return value.astimezone(UTC)

    @property
    def drain_starts(self) -> datetime:
        """When the group scales to zero: drain_minutes before the block ends."""
        return self.ends_at - timedelta(minutes=self.drain_minutes)

    @property
    def warning_starts(self) -> datetime:
        """When jobs still running on the block are warned: warn_minutes before the drain."""
        return self.drain_starts - timedelta(minutes=self.warn_minutes)

    def state(self, now: datetime) -> BlockState:
        """scheduled (not started), active (nodes allowed), draining (scaled to zero, not yet ended), ended."""
        if now < self.starts_at:
            return "scheduled"
        if now < self.drain_starts:
            return "active"
        return "draining" if now < self.ends_at else "ended"

    def holds_nodes(self, now: datetime) -> bool:
        """Whether the group may hold nodes now: only between the start and the drain."""
        return self.state(now) == "active"

    def drain_passed(self, now: datetime) -> bool:
        """The drain time is past: the scheduled action has run (or can no longer be scheduled)."""
        return self.drain_starts <= now

    def minutes_to_drain(self, now: datetime) -> int:
        """Whole minutes until the group scales to zero (0 once it has)."""
        return max(0, int((self.drain_starts - now).total_seconds() // 60))


def check_reservation_id(value: str, field: str = "reservation_id") -> None:
    if not RESERVATION_ID.fullmatch(value):
        raise FieldProblem(field, value, "not a capacity reservation id", allowed="cr- followed by 17 hex digits")


Capacity = Annotated[OnDemandCapacity | OdcrCapacity | CapacityBlock, Field(discriminator="type")]


def block_sizes(capacity: object, sizes: tuple[int, int, int], now: datetime) -> tuple[int, int, int]:
    """A GPU group's (min, desired, max) at `now`: a Capacity Block's group holds no node outside its
    window (its maximum stays: EKS requires at least 1); any other group keeps its profile's sizes."""
    if isinstance(capacity, CapacityBlock) and not capacity.holds_nodes(now):
        return 0, 0, sizes[2]
    return sizes


class ReservationSelector(Strict):
    """One way Karpenter selects capacity reservations (ODCRs or Capacity Blocks) for a pool: by id,
    or by tags (every reservation carrying all of them). Karpenter ORs the terms (EC2NodeClass
    capacityReservationSelectorTerms, karpenter-provider-aws v1.14.1 pkg/apis/v1/ec2nodeclass.go)."""

    id: str | None = None
    """The reservation's id (cr-...)."""
    tags: dict[str, str] | None = Field(None, min_length=1, max_length=20)
    """Tags every selected reservation carries (a value of '*' matches any value of that key)."""

    @model_validator(mode="after")
    def _one_way(self) -> ReservationSelector:
        if (self.id is None) == (self.tags is None):
            raise FieldProblem(
                "id", self.id, "a reservation selector gives exactly one of id or tags", allowed="id: cr-..., or tags"
            )
        if self.id is not None:
            check_reservation_id(self.id, "id")
        if self.tags is not None and any(not key or not value for key, value in self.tags.items()):
            raise FieldProblem("tags", self.tags, "empty tag keys or values select nothing", allowed="non-empty")
        return self


def check_reserved_pool(capacity_types: list[str], reservations: list[ReservationSelector]) -> None:
    """A pool that buys `reserved` capacity must say which reservations it may launch into, and a
    pool given reservations must be allowed to use them."""
    if "reserved" in capacity_types and not reservations:
        raise FieldProblem(
            "capacity_reservations",
            [],
            "capacity type reserved needs the reservations Karpenter may launch into",
            allowed="a list of {id: cr-...} or {tags: {...}}",
        )
    if reservations and "reserved" not in capacity_types:
        raise FieldProblem(
            "capacity_types",
            capacity_types,
            "capacity_reservations are used only with capacity type reserved",
            allowed="add reserved (alone: wait for the reservation; with on-demand or spot: fall back to them)",
        )


def check_reservation_placement(capacity: object, placement_group: str | None) -> None:
    """The reservation's own placement group is used only with a reservation to launch into."""
    if placement_group == "reservation" and isinstance(capacity, OnDemandCapacity):
        raise FieldProblem(
            "placement_group",
            "reservation",
            "On-Demand capacity has no reservation whose placement group the group could use",
            allowed="cluster or none, or capacity of type odcr or capacity_block with its reservation",
        )
