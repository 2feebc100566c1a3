"""What a multi-node GPU pod on EFA nodes needs, for every kind of job the platform runs (the
validation MPIJob, the Trainer runtimes): libfabric's EFA environment, huge pages for its
buffers, and a memory-backed /dev/shm for NCCL's intra-node transport, which counts against the
pod's memory."""

from __future__ import annotations

from typing import Any

HUGEPAGES = "5120Mi"
EFA_ENV = [{"name": "FI_PROVIDER", "value": "efa"}, {"name": "FI_EFA_FORK_SAFE", "value": "1"}]
# A memory-backed /dev/shm counts against the container's memory limit: the limit is the shm
# size plus what the ranks themselves use (NCCL's host buffers, the MPI runtime).
SHM_GIB = 16
RANK_MEMORY_GIB = 4
BASE_MEMORY_GIB = 4


def worker_memory_gib(gpus: int) -> int:
    return SHM_GIB + gpus * RANK_MEMORY_GIB + BASE_MEMORY_GIB


def shm_volume() -> tuple[dict[str, Any], dict[str, Any]]:
    """The memory-backed /dev/shm: (volume, its mount)."""
    return (
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{SHM_GIB}Gi"}},
        {"name": "dshm", "mountPath": "/dev/shm"},
    )
