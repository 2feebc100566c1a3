"""A cluster's node groups: the system group and the GPU groups with their capacity."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from profiles.aws_facts import instance_types
from profiles.base import FieldProblem, Name, Strict, check_sizes, did_you_mean, worded
from profiles.capacity import Capacity, CapacityBlock, OnDemandCapacity, block_sizes, check_reservation_placement
from profiles.catalog import CATALOG, INSTANCE_TYPES, GpuInstanceType, lookup
from profiles.limits import EBS_GP3_MAX_GIB, EKS_MAX_UNAVAILABLE_NODES, NodeCount
from profiles.node_labels import LabelKey, LabelValue
from profiles.reserved_keys import NodeLabels
from profiles.unique import unique

# EC2 CreatePlacementGroup GroupName, "Constraints: Up to 255 ASCII characters"
# (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreatePlacementGroup.html); printable ones.
PlacementGroupName = Annotated[
    str, worded(r"^[ -~]{1,255}$", "1 to 255 printable ASCII characters (EC2's limit for a placement group name)")
]


class SystemNodeGroupConfig(Strict):
    instance_types: Annotated[list[str], unique()] = Field(["m6i.xlarge"], min_length=1)
    """Instance types for cluster services."""
    min_size: NodeCount = Field(2, ge=1)
    """Fewest system nodes."""
    desired_size: NodeCount = Field(2, ge=1)
    """System nodes to start with."""
    max_size: NodeCount = Field(4, ge=1)
    """Most system nodes (at most cluster.managed_node_group_node_quota, EKS's nodes per managed node group)."""
    disk_size_gib: int = Field(100, ge=20, le=EBS_GP3_MAX_GIB)
    """Encrypted gp3 root volume."""

    @field_validator("instance_types")
    @classmethod
    def _known_types(cls, types: list[str]) -> list[str]:
        known = instance_types()
        for name in types:
            if name not in known:
                hint = did_you_mean(name, sorted(known))
                raise ValueError(f"{name!r} is not an EC2 instance type{'; ' + hint if hint else ''}")
        return types

    @model_validator(mode="after")
    def _sizes(self) -> SystemNodeGroupConfig:
        check_sizes(self.min_size, self.desired_size, self.max_size)
        return self


class GpuNodeGroupConfig(Strict):
    name: Name
    """Node group name, unique in the profile and not 'system'."""
    instance_type: str = Field(..., json_schema_extra={"enum": list(INSTANCE_TYPES)})
    """A type from the GPU instance catalog (profiles/catalog.py)."""
    efa_enabled: bool = Field(False)
    """Attach one EFA interface per EFA-capable network card. Only on types with EFA."""
    min_size: NodeCount = Field(0, ge=0)
    """Fewest nodes the group scales to."""
    desired_size: NodeCount = Field(0, ge=0)
    """Nodes the group runs, applied on every deploy (no autoscaler manages GPU groups; on a Capacity Block, only in
    its window). Lowering it removes nodes and their jobs. make pause scales it to 0 until the next resume or apply.
    """
    max_size: NodeCount = Field(2, ge=1)
    """Most nodes the group scales to (at most cluster.managed_node_group_node_quota, EKS's nodes per managed node
    group)."""
    root_volume_size_gib: int = Field(200, ge=50, le=EBS_GP3_MAX_GIB)
    """Encrypted gp3 root volume (images are large)."""
    capacity: Capacity = Field(default_factory=OnDemandCapacity)
    """How the instances are bought: on_demand, odcr or capacity_block."""
    placement_group: Literal["cluster", "none", "reservation"] | None = None
    """cluster: a new cluster placement group; none: no placement group; reservation: the one named in
    existing_placement_group. Default: cluster for on-demand capacity, none for reserved capacity (forcing a group
    onto a reservation bought without one fails to launch).
    """
    existing_placement_group: PlacementGroupName | None = Field(None)
    """Placement group that came with the reservation: its name, up to 255 ASCII characters."""
    labels: Annotated[dict[LabelKey, LabelValue], NodeLabels] = Field(default_factory=dict)
    """Extra Kubernetes node labels, as EKS takes them: keys of at most 63 characters with any prefix (a DNS
    subdomain, e.g. example.com/team), values of 1 to 63. Not `role` or `platform/...` (the platform's own, which
    schedulers select on), nor a prefix ending in kubernetes.io, k8s.io or eks.amazonaws.com (EKS refuses them;
    profiles/reserved_keys.py)."""

    max_unavailable: int = Field(1, ge=1, le=EKS_MAX_UNAVAILABLE_NODES)
    """Nodes replaced at once during an update."""

    @field_validator("instance_type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        if value not in CATALOG:
            hint = did_you_mean(value, INSTANCE_TYPES)
            raise ValueError(
                f"unknown GPU instance type {value!r}; {hint + ' ' if hint else ''}"
                f"The catalog knows {', '.join(INSTANCE_TYPES)}. "
                "To add one, append its EC2 facts to profiles/catalog.py"
            )
        return value

    @model_validator(mode="after")
    def _consistent(self) -> GpuNodeGroupConfig:
        entry = lookup(self.instance_type)
        if self.efa_enabled and not entry.efa_supported:
            with_efa = [n for n in INSTANCE_TYPES if CATALOG[n].family == entry.family and CATALOG[n].efa_supported]
            raise FieldProblem(
                "efa_enabled",
                True,
                f"{self.instance_type} has no EFA",
                allowed=f"efa_enabled: false, or a size with EFA: {', '.join(with_efa) or 'none in this family'}",
            )
        check_sizes(self.min_size, self.desired_size, self.max_size)
        check_ultraserver(self.instance_type, entry, self.capacity)
        if isinstance(self.capacity, CapacityBlock) and self.max_size > self.capacity.instance_count:
            raise FieldProblem(
                "max_size",
                self.max_size,
                "the node group is larger than its Capacity Block",
                allowed=f"at most capacity.instance_count ({self.capacity.instance_count})",
            )
        reserved = not isinstance(self.capacity, OnDemandCapacity)
        if self.placement_group == "cluster" and reserved:
            raise FieldProblem(
                "placement_group",
                "cluster",
                "reserved capacity comes with its own placement group or none; forcing a new one fails to launch",
                allowed="none, reservation",
            )
        if (self.placement_group == "reservation") != (self.existing_placement_group is not None):
            raise FieldProblem(
                "existing_placement_group",
                self.existing_placement_group,
                "existing_placement_group is set exactly when placement_group is 'reservation'",
            )
        check_reservation_placement(self.capacity, self.placement_group)
        return self

    @property
    def catalog_entry(self) -> GpuInstanceType:
        return lookup(self.instance_type)

    @property
    def placement(self) -> Literal["cluster", "none", "reservation"]:
        if self.placement_group is not None:
            return self.placement_group
        return "cluster" if isinstance(self.capacity, OnDemandCapacity) else "none"

    def sizes_at(self, now: datetime) -> tuple[int, int, int]:
        """(min, desired, max) at `now`: a Capacity Block's group is at 0 outside its window."""
        return block_sizes(self.capacity, (self.min_size, self.desired_size, self.max_size), now)


def check_ultraserver(instance_type: str, entry: GpuInstanceType, capacity: object) -> None:
    """A type sold only as UltraServers (P6e-GB200: through Capacity Blocks, one block per UltraServer,
    EC2 User Guide "How Capacity Blocks work"; EKS User Guide "Use P6e-GB200 UltraServers with Amazon
    EKS") runs on a block of one of its UltraServer types, holding that UltraServer's instances."""
    sizes = entry.ultraserver_sizes
    kinds = " or ".join(f"{kind} ({count} instances)" for kind, count in sizes.items())
    ultraserver = capacity.ultraserver_type if isinstance(capacity, CapacityBlock) else None
    if sizes and ultraserver is None:
        raise FieldProblem(
            "capacity",
            getattr(capacity, "type", capacity),
            f"{instance_type} is sold only as UltraServers, through Capacity Blocks for ML",
            allowed=f"capacity: {{type: capacity_block, ultraserver_type: {' or '.join(sizes)}, ...}}",
        )
    if ultraserver is None:
        return
    assert isinstance(capacity, CapacityBlock)
    if ultraserver not in sizes:
        raise FieldProblem(
            ("capacity", "ultraserver_type"),
            ultraserver,
            f"not an UltraServer type of {instance_type}"
            + ("" if sizes else ": it is sold as single instances, not UltraServers"),
            allowed=kinds or "no ultraserver_type",
        )
    if capacity.instance_count != sizes[ultraserver]:
        raise FieldProblem(
            ("capacity", "instance_count"),
            capacity.instance_count,
            f"an UltraServer Capacity Block is one {ultraserver}, which has {sizes[ultraserver]} instances",
            allowed=str(sizes[ultraserver]),
        )
