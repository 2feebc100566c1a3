"""The EC2 quotas a profile needs before its first deploy: vCPUs per quota, at the profile's
largest sizes (quota_needs, what `make quotas` prints), and what the apply itself launches
(launch_needs, what the deploy checks). EC2 counts running instances in vCPUs per instance family
group (the P, the G and VT, and the Standard families), separately for On-Demand and Spot; new
accounts often start at 0 vCPUs of P and G instances, and a p5.48xlarge alone needs 192.

Instances in an On-Demand Capacity Reservation count against the On-Demand quotas; Capacity Blocks
are bought separately and are not counted here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from profiles.aws_facts import vcpus
from profiles.capacity import CapacityBlock, OdcrCapacity
from profiles.catalog import CATALOG
from profiles.gpus import karpenter_node_pools

if TYPE_CHECKING:
    from profiles.models import PlatformConfig

Market = Literal["on-demand", "spot"]
Family = Literal["P", "G", "Standard"]

# Service Quotas codes of EC2's vCPU quotas (service code ec2).
QUOTA_CODES: dict[tuple[Market, Family], tuple[str, str]] = {
    ("on-demand", "P"): ("L-417A185B", "Running On-Demand P instances"),
    ("on-demand", "G"): ("L-DB2E81BA", "Running On-Demand G and VT instances"),
    ("on-demand", "Standard"): ("L-1216C47A", "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances"),
    ("spot", "P"): ("L-7212CCBC", "All P Spot Instance Requests"),
    ("spot", "G"): ("L-3819A6DF", "All G and VT Spot Instance Requests"),
    ("spot", "Standard"): ("L-34B43A08", "All Standard (A, C, D, H, I, M, R, T, Z) Spot Instance Requests"),
}


def family(instance_type: str) -> Family:
    """Which vCPU quota an instance type counts against (the platform uses P, G and Standard types)."""
    letter = instance_type[0]
    return "P" if letter == "p" else "G" if letter == "g" else "Standard"


def quota_market(capacity_type: str) -> Market:
    """Karpenter's capacity types: spot counts against the Spot quotas; on-demand and reserved
    (instances in a Capacity Reservation) against the On-Demand ones."""
    return "spot" if capacity_type == "spot" else "on-demand"


@dataclass
class QuotaNeed:
    """The vCPUs one quota must allow, and what needs them."""

    market: Market
    family: Family
    vcpus: int = 0
    reasons: list[str] = field(default_factory=list)

    @property
    def code(self) -> str:
        return QUOTA_CODES[(self.market, self.family)][0]

    @property
    def name(self) -> str:
        return QUOTA_CODES[(self.market, self.family)][1]

    def add(self, vcpus: int, reason: str) -> None:
        self.vcpus += vcpus
        self.reasons.append(reason)


def quota_needs(config: PlatformConfig) -> list[QuotaNeed]:
    """Each quota the profile needs, with the vCPUs at its largest: every node group at max_size,
    Karpenter's pools at their limits (a Spot-or-On-Demand pool is counted against both)."""
    needs: dict[tuple[Market, Family], QuotaNeed] = {}

    def need(market: Market, fam: Family, count: int, reason: str) -> None:
        needs.setdefault((market, fam), QuotaNeed(market, fam)).add(count, reason)

    system = config.cluster.system_node_group
    largest = max(system.instance_types, key=vcpus)
    need("on-demand", family(largest), system.max_size * vcpus(largest), f"system: {system.max_size} x {largest}")
    for group in config.cluster.gpu_node_groups:
        if isinstance(group.capacity, CapacityBlock):
            continue  # bought as a Capacity Block, outside the On-Demand quotas
        count = group.max_size * group.catalog_entry.vcpus
        need("on-demand", family(group.instance_type), count, f"{group.name}: {group.max_size} x {group.instance_type}")
    if karpenter_node_pools(config):
        cpu, gpu = config.workloads.cpu_pool, config.workloads.gpu_pool
        for market in sorted({quota_market(kind) for kind in cpu.capacity_types}):
            need(market, "Standard", cpu.cpu_limit, f"Karpenter cpu pool: up to {cpu.cpu_limit} vCPUs")
        per_gpu = max(CATALOG[name].vcpus // CATALOG[name].gpu_count for name in gpu.instance_types)
        for market in sorted({quota_market(kind) for kind in gpu.capacity_types}):
            for fam in sorted({family(name) for name in gpu.instance_types}):
                need(market, fam, gpu.gpu_limit * per_gpu, f"Karpenter gpu pool: up to {gpu.gpu_limit} GPUs")
    return sorted(needs.values(), key=lambda n: (n.market, n.family))


def launch_needs(config: PlatformConfig) -> list[QuotaNeed]:
    """What the apply itself launches, per On-Demand quota: the system group and every On-Demand
    GPU group at desired_size (the size each deploy applies). Karpenter's pools launch nothing at
    apply, and a reservation (ODCR or Capacity Block) holds its quota already, so instances in it
    add none."""
    needs: dict[Family, QuotaNeed] = {}

    def need(fam: Family, count: int, reason: str) -> None:
        needs.setdefault(fam, QuotaNeed("on-demand", fam)).add(count, reason)

    system = config.cluster.system_node_group
    largest = max(system.instance_types, key=vcpus)
    need(family(largest), system.desired_size * vcpus(largest), f"system: {system.desired_size} x {largest}")
    for group in config.cluster.gpu_node_groups:
        if isinstance(group.capacity, OdcrCapacity | CapacityBlock) or not group.desired_size:
            continue
        size = group.desired_size
        need(
            family(group.instance_type),
            size * group.catalog_entry.vcpus,
            f"{group.name}: {size} x {group.instance_type}",
        )
    return sorted(needs.values(), key=lambda n: n.family)


def node_count_warnings(config: PlatformConfig) -> list[str]:
    """A warning when the GPU node groups may run more GPU nodes than the profile's threshold."""
    groups = config.cluster.gpu_node_groups
    nodes = sum(group.max_size for group in groups)
    threshold = config.cluster.gpu_node_warning_threshold
    if nodes <= threshold:
        return []
    sizes = ", ".join(f"{group.name} {group.max_size} x {group.instance_type}" for group in groups)
    gpus = sum(group.max_size * group.catalog_entry.gpu_count for group in groups)
    return [
        f"warning: the GPU node groups may run {nodes} nodes ({gpus} GPUs) at their max_size ({sizes}), more than "
        f"cluster.gpu_node_warning_threshold ({threshold}). If that is meant, raise the threshold; "
        "`make quotas` shows the EC2 vCPU quotas it needs."
    ]
