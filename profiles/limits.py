"""The numeric limits of the services a profile's numbers reach, each with the page that documents
it. Every whole number a profile sets is bounded (tests/test_strict_input.py checks that no
integer field is left without an upper bound): a number beyond the service's limit fails at load,
not at apply, and no number is beyond what the service's API type holds.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Annotated

from pydantic import AfterValidator, Field

# AWS APIs type their numbers as Integer (32-bit) or Long (64-bit); Kubernetes' int32 and int64
# fields and resource quantities (resource.Quantity keeps its value as an int64 of its unit, and
# MilliValue as an int64 of thousandths) hold no more either.
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1

# EKS service quotas, "Nodes per managed node group": 450 by default, adjustable (Service Quotas), so
# the profile names its account's value (cluster.managed_node_group_node_quota).
# https://docs.aws.amazon.com/eks/latest/userguide/service-quotas.html
EKS_DEFAULT_NODES_PER_MANAGED_NODE_GROUP = 450
# NodegroupScalingConfig's sizes are Integers (the quota bounds them below that).
# https://docs.aws.amazon.com/eks/latest/APIReference/API_NodegroupScalingConfig.html
# NodegroupUpdateConfig.maxUnavailable: 1 to 100 nodes.
# https://docs.aws.amazon.com/eks/latest/APIReference/API_NodegroupUpdateConfig.html
EKS_MAX_UNAVAILABLE_NODES = 100

# EBS gp3 volumes: 1 to 65,536 GiB (64 TiB; 16 TiB before AWS raised gp3's size, IOPS and throughput
# limits in 2025). The current EC2 API reference gives "gp3: 1 - 65,536 GiB" for CreateVolume's Size
# (a PersistentVolume the EBS CSI driver creates) and for a launch template's or an instance's block
# device (the node groups' root volumes); older SDK pages still print 16,384.
# https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateVolume.html
# https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_LaunchTemplateEbsBlockDeviceRequest.html
EBS_GP3_MAX_GIB = 65536

# FSx CreateFileSystem StorageCapacity: an Integer, 0 to 2147483647 GiB; FSx for Lustre's valid
# steps per deployment type (1200, 2400, then multiples of 2400; EFA units) are checked in
# profiles/storage.py from the same page.
# https://docs.aws.amazon.com/fsx/latest/APIReference/API_CreateFileSystem.html
FSX_MAX_STORAGE_CAPACITY_GIB = INT32_MAX
# Lustre per-unit storage throughput (the most of PERSISTENT_2) and metadata IOPS (the most of a
# PERSISTENT_2 file system's metadata configuration).
# https://docs.aws.amazon.com/fsx/latest/APIReference/API_CreateFileSystemLustreConfiguration.html
# https://docs.aws.amazon.com/fsx/latest/APIReference/API_FileSystemLustreMetadataConfiguration.html
FSX_MAX_THROUGHPUT_MBPS_PER_TIB = 1000
FSX_MAX_METADATA_IOPS = 192000

# EC2 CreateCapacityReservation InstanceCount: 1 to 1000 (a Capacity Block holds fewer).
# https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateCapacityReservation.html
EC2_MAX_RESERVATION_INSTANCES = 1000

# S3 lifecycle rules' Days / DaysAfterInitiation / NoncurrentDays are Integers.
# https://docs.aws.amazon.com/AmazonS3/latest/API/API_LifecycleExpiration.html
S3_MAX_LIFECYCLE_DAYS = INT32_MAX

# Karpenter's consolidateAfter and expireAfter are Go durations: an int64 of nanoseconds.
# https://pkg.go.dev/time#Duration
_NANOSECONDS_PER_MINUTE = 60 * 10**9
GO_DURATION_MAX_MINUTES = INT64_MAX // _NANOSECONDS_PER_MINUTE
GO_DURATION_MAX_HOURS = GO_DURATION_MAX_MINUTES // 60

# Upper bounds only: a field gives its own lower bound (Field(..., ge=N)), which a lower bound here
# would override. Sizes of EKS managed node groups: the API's Integer here; max_size within the
# profile's managed_node_group_node_quota (profiles/cluster.py), min and desired within max_size.
NodeCount = Annotated[int, Field(le=INT32_MAX)]
# A Kubernetes count (a quota's object count, a GPU count, a parallelism, seconds of a deadline):
KubernetesCount = Annotated[int, Field(le=INT64_MAX)]


_QUANTITY_SUFFIXES: dict[str, int | Fraction] = {
    "": 1,
    "m": Fraction(1, 1000),
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}


def exact_quantity(quantity: str) -> Fraction:
    """A Kubernetes quantity (a decimal number and an optional suffix) as an exact number: '500m' -> 1/2."""
    number = quantity.rstrip("kmMGTPEi")
    return Fraction(number) * _QUANTITY_SUFFIXES[quantity[len(number) :]]


def quantity_value(quantity: str) -> float:
    """A Kubernetes quantity as a float: '500m' -> 0.5, '2Gi' -> 2**31."""
    return float(exact_quantity(quantity))


# What Kubernetes keeps of a quantity (apimachinery resource.Quantity): the scheduler and ResourceQuota
# count CPU in thousandths of a core (MilliValue, an int64) and memory in bytes (Value, an int64).
MAX_CPU_CORES = INT64_MAX // 1000
MAX_MEMORY_BYTES = INT64_MAX


def _cpu_bound(quantity: str) -> str:
    if exact_quantity(quantity) * 1000 > INT64_MAX:
        raise ValueError(
            f"{quantity!r} is beyond what Kubernetes counts of CPU (an int64 of thousandths of a core): "
            f"at most {MAX_CPU_CORES} cores"
        )
    return quantity


def _memory_bound(quantity: str) -> str:
    if exact_quantity(quantity) > MAX_MEMORY_BYTES:
        raise ValueError(
            f"{quantity!r} is beyond what Kubernetes counts of memory (an int64 of bytes): at most "
            f"{MAX_MEMORY_BYTES} bytes (8Ei less one byte)"
        )
    return quantity


# The bounds, applied after a quantity's pattern (profiles.base.CpuQuantity / MemoryQuantity, the tenant quotas).
CpuBound = AfterValidator(_cpu_bound)
MemoryBound = AfterValidator(_memory_bound)
