"""The GPU instance catalog: one table of EC2 facts that validation and the launch template share.

Every number here is checked against AWS at plan time by the cluster layer (a data source and a
lifecycle precondition on the EFA interface count), so a wrong entry fails `terraform plan`.

To add an instance type, append a `GpuInstanceType` to `_ENTRIES` with the values from
`aws ec2 describe-instance-types --instance-types <type>` (GpuInfo, NetworkInfo.EfaInfo,
NetworkInfo.MaximumNetworkCards, InstanceStorageInfo). A type missing from the DescribeInstanceTypes
data recorded here (moto's, tests/test_catalog_against_ec2.py) is taken from AWS's documentation
instead, and names the pages in `documented_at` (P6e-GB200: docs/gb200.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# The extended resources the device plugins advertise on these instances: NVIDIA's for GPUs, the
# EFA plugin's for EFA interfaces (what pods request, quotas limit and Kueue counts).
GPU_RESOURCE = "nvidia.com/gpu"
EFA_RESOURCE = "vpc.amazonaws.com/efa"

GpuModel = Literal["A10G", "L4", "L40S", "A100", "H100", "H200", "B200", "B300"]
# CUDA compute capability of each GPU (NVIDIA, "CUDA GPUs - Compute Capability",
# developer.nvidia.com/cuda-gpus): the architectures the project's images are built for.
COMPUTE_CAPABILITY: dict[str, tuple[int, int]] = {
    "A10G": (8, 6),
    "L4": (8, 9),
    "L40S": (8, 9),
    "A100": (8, 0),
    "H100": (9, 0),
    "H200": (9, 0),
    "B200": (10, 0),
    "B300": (10, 3),
}


@dataclass(frozen=True, kw_only=True)
class GpuInstanceType:
    name: str
    gpu_count: int
    gpu_model: GpuModel
    gpu_memory_gib: int  # per GPU
    # EC2 MaximumEfaInterfaces; 0 = no EFA. None: AWS's documentation gives no number, only which
    # cards carry EFA (then `efa_cards` says which the platform uses, and the plan checks that EC2
    # allows at least that many).
    max_efa_interfaces: int | None
    network_cards: int  # EC2 MaximumNetworkCards
    network_gbps: int  # aggregate instance bandwidth ("up to" figures as their maximum)
    local_nvme_disks: int
    local_nvme_disk_gb: int
    vcpus: int  # EC2 VCpuInfo.DefaultVCpus
    memory_gib: int  # EC2 MemoryInfo.SizeInMiB / 1024
    # Network card 0 of some types (p6-b300) carries ENA only; their EFA cards start at 1.
    first_efa_card: int = 0
    # EC2 ProcessorInfo.SupportedArchitectures: it picks the node group's AMI type
    # (profiles/versions.py, GPU_AMI_TYPES). Grace-based types (P6e-GB200) are arm64.
    architecture: Literal["x86_64", "arm64"] = "x86_64"
    # The network cards that take the platform's EFA interfaces where EC2's EFA guide prescribes
    # them, instead of one on every EFA-capable card from first_efa_card (P6e-GB200: one EFA-only
    # interface on one card of each GPU's pair). None: one per card, max_efa_interfaces of them.
    efa_cards: tuple[int, ...] | None = None
    # EFA bandwidth where EC2's guide gives it below the instance's network bandwidth (P6e-GB200:
    # 1,600 of 3,200 Gbps). None: network_gbps.
    efa_gbps: int | None = None
    # EC2 UltraServer types of this instance type -> instances in one (one NVLink domain across
    # them: multi-node NVLink through IMEX). Empty: NVLink stops at the node.
    ultraservers: tuple[tuple[str, int], ...] = ()
    # AWS pages the entry's facts were read from, for a type EC2's DescribeInstanceTypes data
    # recorded here lacks (tests/test_catalog_against_ec2.py). Empty: that data has the type.
    documented_at: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.max_efa_interfaces is None and self.efa_cards is None:
            raise ValueError(f"{self.name}: without EC2's MaximumEfaInterfaces the EFA cards must be named")
        cards = self.efa_network_cards
        if self.max_efa_interfaces is not None and len(cards) > self.max_efa_interfaces:
            raise ValueError(f"{self.name}: {len(cards)} EFA cards, EC2 allows {self.max_efa_interfaces}")
        if any(card >= self.network_cards for card in cards) or len(set(cards)) != len(cards):
            raise ValueError(f"{self.name}: EFA cards {cards} are not distinct cards of {self.network_cards}")

    @property
    def efa_network_cards(self) -> tuple[int, ...]:
        """Indices of the network cards that take one EFA interface each."""
        if self.efa_cards is not None:
            return self.efa_cards
        assert self.max_efa_interfaces is not None  # __post_init__
        return tuple(range(self.first_efa_card, self.first_efa_card + self.max_efa_interfaces))

    @property
    def efa_interfaces(self) -> int:
        """EFA interfaces the platform attaches to each node (and a pod taking the whole node requests)."""
        return len(self.efa_network_cards)

    @property
    def efa_supported(self) -> bool:
        return self.efa_interfaces > 0

    @property
    def efa_bandwidth_gbps(self) -> int:
        return self.efa_gbps if self.efa_gbps is not None else self.network_gbps

    @property
    def ultraserver_sizes(self) -> dict[str, int]:
        """UltraServer type -> its instances (empty: the type is sold as single instances)."""
        return dict(self.ultraservers)

    @property
    def multi_node_nvlink(self) -> bool:
        """NVLink reaches across nodes (the instances of one UltraServer): NCCL's MNNVL, through IMEX."""
        return bool(self.ultraservers)

    @property
    def nccl_min_busbw_gbytes_per_s(self) -> float:
        """Lowest acceptable NCCL all-reduce bus bandwidth between two nodes over EFA: 60% of the
        instance's EFA line rate in GB/s. Below it, EFA or NCCL's network plugin is misconfigured."""
        return round(self.efa_bandwidth_gbps / 8 * 0.6, 1)

    @property
    def family(self) -> str:
        return self.name.split(".", 1)[0]


def _p_instance(
    name: str,
    model: GpuModel,
    *,
    gpu_memory_gib: int,
    max_efa: int,
    network_cards: int,
    network_gbps: int,
    first_efa_card: int = 0,
    memory_gib: int = 2048,
) -> GpuInstanceType:
    """A P-family 48xlarge: 8 GPUs, 192 vCPUs and 8 x 3800 GB local NVMe."""
    return GpuInstanceType(
        name=name,
        gpu_count=8,
        gpu_model=model,
        gpu_memory_gib=gpu_memory_gib,
        max_efa_interfaces=max_efa,
        network_cards=network_cards,
        network_gbps=network_gbps,
        local_nvme_disks=8,
        local_nvme_disk_gb=3800,
        first_efa_card=first_efa_card,
        vcpus=192,
        memory_gib=memory_gib,
    )


@dataclass(frozen=True, kw_only=True)
class _GSize:
    gpus: int
    max_efa: int
    network_cards: int
    network_gbps: int
    nvme_disks: int
    nvme_disk_gb: int


# G-family sizes: vCPUs by size name; memory is a fixed GiB per vCPU within a family.
_G_VCPUS = {
    "xlarge": 4,
    "2xlarge": 8,
    "4xlarge": 16,
    "8xlarge": 32,
    "12xlarge": 48,
    "16xlarge": 64,
    "24xlarge": 96,
    "48xlarge": 192,
}


def _g_family(
    family: str, model: GpuModel, gpu_memory_gib: int, sizes: dict[str, _GSize], *, memory_gib_per_vcpu: int
) -> list[GpuInstanceType]:
    return [
        GpuInstanceType(
            name=f"{family}.{size}",
            gpu_count=s.gpus,
            gpu_model=model,
            gpu_memory_gib=gpu_memory_gib,
            max_efa_interfaces=s.max_efa,
            network_cards=s.network_cards,
            network_gbps=s.network_gbps,
            local_nvme_disks=s.nvme_disks,
            local_nvme_disk_gb=s.nvme_disk_gb,
            vcpus=_G_VCPUS[size],
            memory_gib=_G_VCPUS[size] * memory_gib_per_vcpu,
        )
        for size, s in sizes.items()
    ]


_ENTRIES: list[GpuInstanceType] = [
    GpuInstanceType(
        name="p4d.24xlarge",
        gpu_count=8,
        gpu_model="A100",
        gpu_memory_gib=40,
        max_efa_interfaces=4,
        network_cards=4,
        network_gbps=400,
        local_nvme_disks=8,
        local_nvme_disk_gb=1000,
        vcpus=96,
        memory_gib=1152,
    ),
    GpuInstanceType(
        name="p4de.24xlarge",
        gpu_count=8,
        gpu_model="A100",
        gpu_memory_gib=80,
        max_efa_interfaces=4,
        network_cards=4,
        network_gbps=400,
        local_nvme_disks=8,
        local_nvme_disk_gb=1000,
        vcpus=96,
        memory_gib=1152,
    ),
    _p_instance("p5.48xlarge", "H100", gpu_memory_gib=80, max_efa=32, network_cards=32, network_gbps=3200),
    _p_instance("p5e.48xlarge", "H200", gpu_memory_gib=141, max_efa=32, network_cards=32, network_gbps=3200),
    _p_instance("p5en.48xlarge", "H200", gpu_memory_gib=141, max_efa=16, network_cards=16, network_gbps=3200),
    _p_instance("p6-b200.48xlarge", "B200", gpu_memory_gib=179, max_efa=8, network_cards=8, network_gbps=3200),
    # 17 network cards, but card 0 is ENA only: 16 EFA interfaces on cards 1-16.
    _p_instance(
        "p6-b300.48xlarge",
        "B300",
        gpu_memory_gib=268,
        max_efa=16,
        network_cards=17,
        network_gbps=6400,
        first_efa_card=1,
        memory_gib=4096,
    ),
    # Sold only as UltraServers, through Capacity Blocks; absent from the DescribeInstanceTypes data
    # recorded here. Every fact from AWS's documentation (docs/gb200.md cites each one):
    # - EC2 Instance Types, "Specifications for Amazon EC2 accelerated computing instances": 144 vCPUs
    #   (144 cores, 1 thread each), 960 GiB, 4 x NVIDIA B200 GPU with 185 GiB each, NVIDIA Grace
    #   (arm64), 3200 Gigabit, EFA, 17 network cards, 3 x 7500 GB NVMe SSD;
    # - EC2 User Guide, "Maximize network bandwidth ... with multiple network cards", section "EFA
    #   configuration for a P6e-GB200 instances": card 0 ENA only (100 Gbps); EFA-only on cards 1, 3,
    #   ..., 15; each GPU reaches EFA through one pair of them ([1, 3], [5, 7], [9, 11], [13, 15]),
    #   400 Gbps per GPU, 1,600 Gbps of EFA in all; the guide's configuration: ENA on card 0 and one
    #   EFA-only interface on cards 1, 5, 9 and 13 (4 x 400 Gbps). EC2's MaximumEfaInterfaces itself
    #   is published nowhere read: the plan checks it is at least 4;
    # - EKS User Guide, "Use P6e-GB200 UltraServers with Amazon EKS": u-p6e-gb200x36 has 9 instances,
    #   u-p6e-gb200x72 has 18.
    GpuInstanceType(
        name="p6e-gb200.36xlarge",
        gpu_count=4,
        gpu_model="B200",
        gpu_memory_gib=185,
        max_efa_interfaces=None,
        efa_cards=(1, 5, 9, 13),
        network_cards=17,
        network_gbps=3200,
        efa_gbps=1600,
        local_nvme_disks=3,
        local_nvme_disk_gb=7500,
        vcpus=144,
        memory_gib=960,
        architecture="arm64",
        ultraservers=(("u-p6e-gb200x36", 9), ("u-p6e-gb200x72", 18)),
        documented_at=(
            "https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html",
            "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html#efa-for-p6e",
            "https://docs.aws.amazon.com/eks/latest/userguide/ml-eks-nvidia-ultraserver.html",
        ),
    ),
    *_g_family(
        "g5",
        "A10G",
        24,
        {
            "xlarge": _GSize(gpus=1, max_efa=0, network_cards=1, network_gbps=10, nvme_disks=1, nvme_disk_gb=250),
            "2xlarge": _GSize(gpus=1, max_efa=0, network_cards=1, network_gbps=10, nvme_disks=1, nvme_disk_gb=450),
            "4xlarge": _GSize(gpus=1, max_efa=0, network_cards=1, network_gbps=25, nvme_disks=1, nvme_disk_gb=600),
            "8xlarge": _GSize(gpus=1, max_efa=1, network_cards=1, network_gbps=25, nvme_disks=1, nvme_disk_gb=900),
            "12xlarge": _GSize(gpus=4, max_efa=1, network_cards=1, network_gbps=40, nvme_disks=1, nvme_disk_gb=3800),
            "16xlarge": _GSize(gpus=1, max_efa=1, network_cards=1, network_gbps=25, nvme_disks=1, nvme_disk_gb=1900),
            "24xlarge": _GSize(gpus=4, max_efa=1, network_cards=1, network_gbps=50, nvme_disks=1, nvme_disk_gb=3800),
            "48xlarge": _GSize(gpus=8, max_efa=1, network_cards=1, network_gbps=100, nvme_disks=2, nvme_disk_gb=3800),
        },
        memory_gib_per_vcpu=4,
    ),
    *_g_family(
        "g6",
        "L4",
        24,
        {
            "xlarge": _GSize(gpus=1, max_efa=0, network_cards=1, network_gbps=10, nvme_disks=1, nvme_disk_gb=250),
            "2xlarge": _GSize(gpus=1, max_efa=0, network_cards=1, network_gbps=10, nvme_disks=1, nvme_disk_gb=450),
            "4xlarge": _GSize(gpus=1, max_efa=0, network_cards=1, network_gbps=25, nvme_disks=1, nvme_disk_gb=600),
            "8xlarge": _GSize(gpus=1, max_efa=1, network_cards=1, network_gbps=25, nvme_disks=2, nvme_disk_gb=450),
            "12xlarge": _GSize(gpus=4, max_efa=1, network_cards=1, network_gbps=40, nvme_disks=4, nvme_disk_gb=940),
            "16xlarge": _GSize(gpus=1, max_efa=1, network_cards=1, network_gbps=25, nvme_disks=2, nvme_disk_gb=940),
            "24xlarge": _GSize(gpus=4, max_efa=1, network_cards=1, network_gbps=50, nvme_disks=4, nvme_disk_gb=940),
            "48xlarge": _GSize(gpus=8, max_efa=1, network_cards=1, network_gbps=100, nvme_disks=8, nvme_disk_gb=940),
        },
        memory_gib_per_vcpu=4,
    ),
    *_g_family(
        "g6e",
        "L40S",
        48,
        {
            "xlarge": _GSize(gpus=1, max_efa=0, network_cards=1, network_gbps=20, nvme_disks=1, nvme_disk_gb=250),
            "2xlarge": _GSize(gpus=1, max_efa=0, network_cards=1, network_gbps=20, nvme_disks=1, nvme_disk_gb=450),
            "4xlarge": _GSize(gpus=1, max_efa=0, network_cards=1, network_gbps=20, nvme_disks=1, nvme_disk_gb=600),
            "8xlarge": _GSize(gpus=1, max_efa=1, network_cards=1, network_gbps=25, nvme_disks=2, nvme_disk_gb=450),
            "12xlarge": _GSize(gpus=4, max_efa=1, network_cards=1, network_gbps=100, nvme_disks=2, nvme_disk_gb=1900),
            "16xlarge": _GSize(gpus=1, max_efa=1, network_cards=1, network_gbps=35, nvme_disks=2, nvme_disk_gb=950),
            "24xlarge": _GSize(gpus=4, max_efa=2, network_cards=2, network_gbps=200, nvme_disks=2, nvme_disk_gb=1900),
            "48xlarge": _GSize(gpus=8, max_efa=4, network_cards=4, network_gbps=400, nvme_disks=4, nvme_disk_gb=1900),
        },
        memory_gib_per_vcpu=8,
    ),
]

CATALOG: dict[str, GpuInstanceType] = {entry.name: entry for entry in _ENTRIES}


def lookup(instance_type: str) -> GpuInstanceType:
    """The catalog entry; KeyError for a type the catalog does not know."""
    return CATALOG[instance_type]


def natural_key(instance_type: str) -> tuple[str, int, str]:
    """g5.2xlarge before g5.12xlarge: family, then the size's number, then the rest."""
    family, _, size = instance_type.partition(".")
    digits = "".join(ch for ch in size if ch.isdigit())
    return family, int(digits) if digits else (0 if size == "xlarge" else -1), size


INSTANCE_TYPES = tuple(sorted(CATALOG, key=natural_key))
