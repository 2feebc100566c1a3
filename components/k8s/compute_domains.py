"""A ComputeDomain per multi-node job (Multi-Node NVLink, GB200 UltraServers), in one place.

The NVIDIA DRA driver that GPU Operator v26.7.0 installs (v0.5.0, through the GPUCluster's
draDriver.computeDomains.enabled, addons/gpu_operator/install.py) runs a ComputeDomain controller:
for each ComputeDomain it creates the ResourceClaimTemplate that spec.channel.resourceClaimTemplate.name
names, in the ComputeDomain's namespace (kubernetes-sigs/dra-driver-nvidia-gpu,
cmd/compute-domain-controller/computedomain.go), and the IMEX daemons on the nodes where pods claim
a channel from it. A job's pods claim that template; no scheduling gate is involved, so nothing
waits for a controller that is not there. The CRD (resource.nvidia.com/v1beta1, recorded in
tests/fixtures/crds/gpu-operator-v26.7.0.json) requires spec.numNodes and spec.channel; numNodes is
deprecated, and with the driver's default IMEXDaemonsWithDNSNames feature gate it is recommended
to be 0 (it then only feeds the ComputeDomain's status and gates nothing): the platform sets 0.

Which jobs get one: the platform's multi-node jobs on a node group of a type whose NVLink reaches
across nodes (the catalog's UltraServer types, P6e-GB200): verify's NCCL MPIJob
(manifests/checks/nccl.py). Such a group is one UltraServer Capacity Block (profiles/node_groups.py),
so its nodes are one NVLink domain and the job's node selector on the group keeps it inside one.
"""

from __future__ import annotations

import copy
from typing import Any

COMPUTE_DOMAIN_API_VERSION = "resource.nvidia.com/v1beta1"
COMPUTE_DOMAIN_KIND = "ComputeDomain"
CHANNEL_CLAIM_NAME = "compute-domain-channel"
# The DeviceClass the controller's channel template requests (one device, the channel): GPU Operator
# v26.7.0 manifests/state-dra-driver/0420_deviceclass-compute-domains.yaml defines it; the driver's
# cmd/compute-domain-controller/computedomain.go (computeDomainDefaultChannelDeviceClass) and
# resourceclaimtemplate.go name it in the workload template (read at v25.8.1 and HEAD; the v0.5.0
# tag is not in the snapshot, docs/gb200.md). Kueue must map it (addons/kueue/install.py).
CHANNEL_DEVICE_CLASS = "compute-domain-default-channel.nvidia.com"
# NCCL's multi-node NVLink switch (NCCL v2.27.5-1, the nccl-tests image's: src/init.cc 661
# NCCL_PARAM(MNNVLEnable, "MNNVL_ENABLE", 2), used at 747). The default, 2, tries MNNVL when a
# communicator spans nodes and goes without it quietly; 1 runs the check always, and where fabric
# memory cannot be exported and imported (no IMEX channel in the pod, no IMEX domain) NCCL fails the
# communicator with a WARN naming the IMEX configuration (src/mnnvl.cc 63, 74) instead of falling
# back to the network: a job meant for NVLink says so instead of running slower.
MNNVL_ENABLE = ("NCCL_MNNVL_ENABLE", "1")


def compute_domain_name(job: str) -> str:
    return f"{job}-compute-domain"


def channel_template_name(job: str) -> str:
    return f"{job}-channel"


def compute_domain(namespace: str, job: str) -> dict[str, Any]:
    """The job's ComputeDomain; its controller makes the channel's ResourceClaimTemplate."""
    return {
        "apiVersion": COMPUTE_DOMAIN_API_VERSION,
        "kind": COMPUTE_DOMAIN_KIND,
        "metadata": {"name": compute_domain_name(job), "namespace": namespace},
        "spec": {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": channel_template_name(job)}}},
    }


def with_channel(pod_spec: dict[str, Any], job: str) -> dict[str, Any]:
    """A copy of a worker pod's spec that claims the job's IMEX channel: a pod resourceClaims entry
    from the ComputeDomain's template, and that claim in every container's resources.claims (next to
    a GPU claim where the pod has one)."""
    spec = copy.deepcopy(pod_spec)
    claim = {"name": CHANNEL_CLAIM_NAME, "resourceClaimTemplateName": channel_template_name(job)}
    spec["resourceClaims"] = [*spec.get("resourceClaims", []), claim]
    for container in spec["containers"]:
        resources = container.setdefault("resources", {})
        resources["claims"] = [*resources.get("claims", []), {"name": CHANNEL_CLAIM_NAME}]
    return spec
