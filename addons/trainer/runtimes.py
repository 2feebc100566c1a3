"""The platform's ClusterTrainingRuntimes (trainer.kubeflow.org/v1alpha1): one per GPU node group,
`torch-<group>`, running torchrun with one process per GPU on that group's nodes.

Each node pod takes all of its node's GPUs and EFA interfaces (from the GPU catalog), huge pages
and libfabric's EFA environment, a memory-backed /dev/shm, and the tenant's volumes: the FSx
directory at /fsx (when the file system has tenant directories) and the checkpoints bucket at
/checkpoints. The volumes are the claims every tenant namespace has under the same names
(profiles/tenancy.py), so one cluster-wide runtime mounts each tenant's own data. A TrainJob names
the runtime, its image and command, and how many nodes; Kueue queues it in the tenant's queue.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from addons.trainer import TrainerConfig
from components.k8s.efa_pods import EFA_ENV, HUGEPAGES, shm_volume, worker_memory_gib
from components.labels import GPU_TOLERATION, NODE_GROUP_LABEL, NODE_POOL_LABEL
from profiles import tenancy
from profiles.catalog import EFA_RESOURCE, GPU_RESOURCE
from profiles.cluster import GpuNodeGroupConfig

API_VERSION = "trainer.kubeflow.org/v1alpha1"
FSX_MOUNT = "/fsx"
CHECKPOINTS_MOUNT = "/checkpoints"
CHECKPOINTS = tenancy.s3_volume("checkpoints")
NOT_ON_KARPENTER_NODES = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": NODE_POOL_LABEL, "operator": "DoesNotExist"}]}]
        }
    }
}


@dataclass(frozen=True, kw_only=True)
class TenantVolumes:
    """Which of the tenant volumes exist (every tenant namespace has the same ones)."""

    fsx: bool
    """The FSx file system has tenant directories (each tenant's `fsx` claim)."""
    checkpoints: bool
    """The checkpoints bucket exists (each tenant's `s3-checkpoints` claim)."""


def runtime_name(group: GpuNodeGroupConfig) -> str:
    return f"torch-{group.name}"


def torch_runtime(group: GpuNodeGroupConfig, settings: TrainerConfig, volumes: TenantVolumes) -> dict[str, Any]:
    entry = group.catalog_entry
    gpus, efa = entry.gpu_count, entry.max_efa_interfaces if group.efa_enabled else 0
    devices = {GPU_RESOURCE: str(gpus), **({EFA_RESOURCE: str(efa), "hugepages-2Mi": HUGEPAGES} if efa else {})}
    shm, shm_mount = shm_volume()
    pod_volumes, mounts = [shm], [shm_mount]
    if volumes.fsx:
        pod_volumes.append({"name": "fsx", "persistentVolumeClaim": {"claimName": tenancy.FSX_VOLUME}})
        mounts.append({"name": "fsx", "mountPath": FSX_MOUNT})
    if volumes.checkpoints:
        pod_volumes.append({"name": "checkpoints", "persistentVolumeClaim": {"claimName": CHECKPOINTS}})
        mounts.append({"name": "checkpoints", "mountPath": CHECKPOINTS_MOUNT})
    container = {
        "name": "node",  # the container Trainer runs torchrun in
        "image": settings.torch_image,
        "env": list(EFA_ENV) if efa else [],
        # No memory limit: loading a model takes what it takes; the request keeps room for /dev/shm.
        "resources": {
            "requests": {**devices, "memory": f"{worker_memory_gib(gpus)}Gi"},
            "limits": dict(devices),
        },
        "volumeMounts": mounts,
    }
    return {
        "apiVersion": API_VERSION,
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": runtime_name(group), "labels": {"trainer.kubeflow.org/framework": "torch"}},
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                                "spec": {
                                    "template": {
                                        "spec": {
                                            "nodeSelector": {NODE_GROUP_LABEL: group.name},
                                            # Kueue matches a flavour on the flavour's own label keys:
                                            # without this, the Karpenter pool's flavour (which has no
                                            # group label) would look like a fit for a job that named
                                            # fewer resources, and its pods could never schedule.
                                            "affinity": NOT_ON_KARPENTER_NODES,
                                            "tolerations": [dict(GPU_TOLERATION)],
                                            "containers": [container],
                                            "volumes": pod_volumes,
                                        }
                                    }
                                },
                            },
                        }
                    ]
                }
            },
        },
    }


def runtime_objects(
    groups: list[GpuNodeGroupConfig], settings: TrainerConfig, volumes: TenantVolumes
) -> list[dict[str, Any]]:
    return [torch_runtime(group, settings, volumes) for group in groups]
