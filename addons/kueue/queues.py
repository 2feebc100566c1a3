"""Kueue's queues for the profile's tenants, as Kubernetes objects (kueue.x-k8s.io/v1beta2):

- a ResourceFlavor per GPU flavour, whose node labels and tolerations Kueue adds to an admitted
  job's GPU pods, so they land on the nodes the quota was counted against;
- a ClusterQueue per tenant, all in one cohort (named after the platform): the tenant's nominal
  share of each flavour's GPUs and EFA interfaces, borrowing what other tenants leave idle, and
  reclaiming its own share from borrowers by preemption;
- a LocalQueue named `default` in each tenant namespace: Kueue puts a job without a queue name
  there (its LocalQueue defaulting), so every GPU job of a tenant is queued.

GPUs and EFA interfaces are what the queues share out. CPU and memory sit in a flavour of their
own, `default`, without node labels and with a quota Kueue never runs out of: every pod set of a
job (an MPI launcher, a Ray head) must get a flavour for Kueue to admit the job, and the tenant's
ResourceQuota is what caps CPU and memory. Other resources (huge pages, ephemeral storage) are not
counted (Kueue's IgnoreUndeclared quota check).
"""

from __future__ import annotations

from typing import Any

from addons.kueue import Flavor, Share, flavors, shares
from components.labels import GPU_TOLERATION, NODE_GROUP_LABEL, NODE_POOL_LABEL, TENANT_LABEL
from profiles import PlatformConfig
from profiles.catalog import EFA_RESOURCE, GPU_RESOURCE

API_VERSION = "kueue.x-k8s.io/v1beta2"
# Kueue gives a job without a queue name the LocalQueue of this name in its namespace, if one exists.
LOCAL_QUEUE = "default"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


# The namespaces Kueue manages jobs in: the tenants'. The chart makes this selector the
# namespaceSelector of its pod, deployment and statefulset webhooks too (kueue v0.19.2
# charts/kueue/templates/webhook/manifests.yaml 315-330), so the API server never calls Kueue for a
# pod of kube-system, kueue-system, the add-ons or the validation namespace.
TENANT_NAMESPACES = {"matchExpressions": [{"key": TENANT_LABEL, "operator": "Exists"}]}


# The flavour of CPU and memory: any node; its quota is not a limit (the ResourceQuota is).
DEFAULT_FLAVOR = "default"
UNBOUNDED = {"cpu": "1000000", "memory": "1000Ti"}


def default_flavor() -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": DEFAULT_FLAVOR}, "spec": {}}


def resource_flavor(flavor: Flavor) -> dict[str, Any]:
    labels = {NODE_GROUP_LABEL: flavor.node_group} if flavor.node_group else {NODE_POOL_LABEL: "gpu"}
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceFlavor",
        "metadata": {"name": flavor.name},
        "spec": {"nodeLabels": labels, "tolerations": [dict(GPU_TOLERATION)]},
    }


def _quota(name: str, nominal: int, borrowing: int | None, lending: int | None) -> dict[str, Any]:
    quota: dict[str, Any] = {"name": name, "nominalQuota": str(nominal)}
    if borrowing is not None:
        quota["borrowingLimit"] = str(borrowing)
    if lending is not None:
        quota["lendingLimit"] = str(lending)
    return quota


def _flavor_quotas(share: Share) -> dict[str, Any]:
    return {
        "name": share.flavor.name,
        "resources": [
            _quota(GPU_RESOURCE, share.gpus, share.borrowing_limit, share.lending_limit),
            # EFA interfaces go with the nodes' GPUs: no separate borrowing rule.
            _quota(EFA_RESOURCE, share.efa, None, None),
        ],
    }


def cluster_queue(tenant: str, cohort: str, tenant_shares: tuple[Share, ...]) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "ClusterQueue",
        "metadata": {"name": tenant},
        "spec": {
            "cohortName": cohort,
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": tenant}},
            "queueingStrategy": "BestEffortFIFO",
            "resourceGroups": [
                {
                    "coveredResources": list(UNBOUNDED),
                    "flavors": [
                        {
                            "name": DEFAULT_FLAVOR,
                            "resources": [{"name": name, "nominalQuota": quota} for name, quota in UNBOUNDED.items()],
                        }
                    ],
                },
                *(
                    [
                        {
                            "coveredResources": [GPU_RESOURCE, EFA_RESOURCE],
                            "flavors": [_flavor_quotas(share) for share in tenant_shares],
                        }
                    ]
                    if tenant_shares
                    else []
                ),
            ],
            "preemption": {
                # A tenant gets its own share back from borrowers; inside its queue, a higher
                # priority job may displace a lower one.
                "reclaimWithinCohort": "Any",
                "withinClusterQueue": "LowerPriority",
            },
        },
    }


def local_queue(tenant: str) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "LocalQueue",
        "metadata": {"name": LOCAL_QUEUE, "namespace": tenant},
        "spec": {"clusterQueue": tenant},
    }


def cluster_objects(config: PlatformConfig) -> list[dict[str, Any]]:
    """The cluster-scoped objects: every flavour, then each tenant's ClusterQueue."""
    objects = [default_flavor(), *(resource_flavor(flavor) for flavor in flavors(config))]
    return objects + [cluster_queue(tenant, config.name, found) for tenant, found in shares(config).items()]


def local_queues(config: PlatformConfig) -> list[dict[str, Any]]:
    """Each tenant namespace's LocalQueue (created once the namespace exists)."""
    return [local_queue(tenant.name) for tenant in config.workloads.tenants]


def queue_objects(config: PlatformConfig) -> list[dict[str, Any]]:
    return cluster_objects(config) + local_queues(config)
