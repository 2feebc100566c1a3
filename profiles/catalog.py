"""The GPU instance catalog: one table of EC2 facts that validation and the launch template share.

Every number here is checked against AWS at plan time by the cluster layer (a data source and a
lifecycle precondition on the EFA interface count), so a wrong entry fails `terraform plan`.

To add an instance type, append a `GpuInstanceType` to `_ENTRIES` with the values from
`aws ec2 describe-instance-types --instance-types <type>` (GpuInfo, NetworkInfo.EfaInfo,
NetworkInfo.MaximumNetworkCards, InstanceStorageInfo).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

GpuModel = Literal["A10G", "L4", "L40S", "A100", "H100", "H200", "B200", "B300"]


@dataclass(frozen=True)
class GpuInstanceType:
    name: str
    gpu_count: int
    gpu_model: GpuModel
    gpu_memory_gib: int  # per GPU
    max_efa_interfaces: int  # EC2 MaximumEfaInterfaces; 0 = no EFA
    network_cards: int  # EC2 MaximumNetworkCards
    network_gbps: int  # aggregate instance bandwidth ("up to" figures as their maximum)
    local_nvme_disks: int
    local_nvme_disk_gb: int
    # Network card 0 of some types (p6-b300) carries ENA only; their EFA cards start at 1.
    first_efa_card: int = 0

    @property
    def efa_supported(self) -> bool:
        return self.max_efa_interfaces > 0

    @property
    def efa_network_cards(self) -> tuple[int, ...]:
        """Indices of the network cards that take one EFA interface each."""
        return tuple(range(self.first_efa_card, self.first_efa_card + self.max_efa_interfaces))

    @property
    def nccl_min_busbw_gbytes_per_s(self) -> float:
        """Lowest acceptable NCCL all-reduce bus bandwidth between two nodes over EFA: 60% of the
        instance's network line rate in GB/s. Below it, EFA or NCCL's network plugin is misconfigured."""
        return round(self.network_gbps / 8 * 0.6, 1)

    @property
    def family(self) -> str:
        return self.name.split(".", 1)[0]


def _p(name: str, model: GpuModel, mem: int, efa: int, cards: int, gbps: int, first_efa_card: int = 0):
    return GpuInstanceType(name, 8, model, mem, efa, cards, gbps, 8, 3800, first_efa_card)


def _g(family: str, model: GpuModel, mem: int, sizes: dict[str, tuple[int, int, int, int, int, int]]):
    """sizes: size -> (gpus, max EFA, network cards, Gbps, NVMe disks, NVMe disk GB)."""
    return [
        GpuInstanceType(f"{family}.{size}", gpus, model, mem, efa, cards, gbps, disks, disk_gb)
        for size, (gpus, efa, cards, gbps, disks, disk_gb) in sizes.items()
    ]


_ENTRIES: list[GpuInstanceType] = [
    GpuInstanceType("p4d.24xlarge", 8, "A100", 40, 4, 4, 400, 8, 1000),
    GpuInstanceType("p4de.24xlarge", 8, "A100", 80, 4, 4, 400, 8, 1000),
    _p("p5.48xlarge", "H100", 80, 32, 32, 3200),
    _p("p5e.48xlarge", "H200", 141, 32, 32, 3200),
    _p("p5en.48xlarge", "H200", 141, 16, 16, 3200),
    _p("p6-b200.48xlarge", "B200", 179, 8, 8, 3200),
    # 17 network cards, but card 0 is ENA only: 16 EFA interfaces on cards 1-16.
    _p("p6-b300.48xlarge", "B300", 268, 16, 17, 6400, first_efa_card=1),
    *_g("g5", "A10G", 24, {
        "xlarge": (1, 0, 1, 10, 1, 250), "2xlarge": (1, 0, 1, 10, 1, 450),
        "4xlarge": (1, 0, 1, 25, 1, 600), "8xlarge": (1, 1, 1, 25, 1, 900),
        "12xlarge": (4, 1, 1, 40, 1, 3800), "16xlarge": (1, 1, 1, 25, 1, 1900),
        "24xlarge": (4, 1, 1, 50, 1, 3800), "48xlarge": (8, 1, 1, 100, 2, 3800),
    }),
    *_g("g6", "L4", 24, {
        "xlarge": (1, 0, 1, 10, 1, 250), "2xlarge": (1, 0, 1, 10, 1, 450),
        "4xlarge": (1, 0, 1, 25, 1, 600), "8xlarge": (1, 1, 1, 25, 2, 450),
        "12xlarge": (4, 1, 1, 40, 4, 940), "16xlarge": (1, 1, 1, 25, 2, 940),
        "24xlarge": (4, 1, 1, 50, 4, 940), "48xlarge": (8, 1, 1, 100, 8, 940),
    }),
    *_g("g6e", "L40S", 48, {
        "xlarge": (1, 0, 1, 20, 1, 250), "2xlarge": (1, 0, 1, 20, 1, 450),
        "4xlarge": (1, 0, 1, 20, 1, 600), "8xlarge": (1, 1, 1, 25, 2, 450),
        "12xlarge": (4, 1, 1, 100, 2, 1900), "16xlarge": (1, 1, 1, 35, 2, 950),
        "24xlarge": (4, 2, 2, 200, 2, 1900), "48xlarge": (8, 4, 4, 400, 4, 1900),
    }),
]

CATALOG: dict[str, GpuInstanceType] = {entry.name: entry for entry in _ENTRIES}


def lookup(instance_type: str) -> GpuInstanceType:
    """The catalog entry; KeyError for a type the catalog does not know."""
    return CATALOG[instance_type]
