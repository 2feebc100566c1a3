"""A ComputeDomain per multi-node job (Multi-Node NVLink, GB200 UltraServers), in one place.

The NVIDIA DRA driver that GPU Operator v26.7.0 installs (v0.5.0, through the GPUCluster's
draDriver.computeDomains.enabled, addons/gpu_operator/install.py; the chart sets no feature gate,
deployments/gpu-operator/values.yaml 587-589, so the driver's defaults hold) runs a ComputeDomain
controller. Read in kubernetes-sigs/dra-driver-nvidia-gpu (NVIDIA/k8s-dra-driver-gpu is the same
project under its old name) at v0.4.1, the newest tag of the snapshot, and at HEAD (0.5.0-dev,
Aug 2026), which agree on all of this: the v0.5.0 tag is not in it. Line numbers are v0.4.1's.

- For each ComputeDomain the controller creates the ResourceClaimTemplate that
  spec.channel.resourceClaimTemplate.name names, in the ComputeDomain's namespace
  (cmd/compute-domain-controller/computedomain.go 368), with a finalizer of its own
  (templates/compute-domain-workload-claim-template.tmpl.yaml 6-7). A job's pods claim that
  template; until it exists Kueue cannot count the claim (verify applies the ComputeDomain first and
  waits for it: manifests/checks/compute_domain.py). On deletion the controller deletes the template,
  takes its finalizer off and waits until it is gone before it takes the ComputeDomain's own
  finalizer off (computedomain.go 317-349): a ComputeDomain that is gone has no template left.
- An IMEX daemon runs on each node where a pod's channel claim is being prepared. The kubelet plugin
  holds a channel claim (the pod stays ContainerCreating) until the daemon on the pod's own node is
  Ready (cmd/compute-domain-kubelet-plugin/device_state.go 656; its computedomain.go 238-293). A
  daemon is Ready when its pod's readiness probe finds `nvidia-imex-ctl -q` saying READY
  (templates/compute-domain-daemon.tmpl.yaml 93-99, cmd/compute-domain-daemon/main.go 433-456,
  podmanager.go 129-149), which "probes if the local IMEX daemon is ready (not the entire domain)".
  Nothing holds a pod for its peers' daemons.
- spec.numNodes (required by the CRD recorded in tests/fixtures/crds/gpu-operator-v26.7.0.json,
  deprecated) holds nothing with the default IMEXDaemonsWithDNSNames gate (pkg/featuregates/
  featuregates.go 102-108; api/nvidia.com/resource/v1beta1/computedomain.go 64-91: numNodes "does not
  gate the startup of IMEX daemons ... any workload pod gets released right after its local IMEX
  daemon has started"). It only decides when status.status says Ready: with at least numNodes
  daemons listed in status.nodes, none of them NotReady (controller computedomain.go 254-268; the
  list is built from the ComputeDomainCliques, a default-on gate, featuregates.go 130-136, every
  2 s: cdstatus.go 36, 242-257). With
  numNodes 0, as the driver recommends, status.status says Ready before any daemon has started.

So the job-scoped domain sets numNodes to the job's node count: Ready then means that every node of
the job runs an IMEX daemon and each is ready, which verify waits for before it judges the run and
reports when it does not come. What keeps the NCCL launcher from starting mpirun before a peer's
daemon is ready is the chain above: a worker's sshd starts only once its own node's daemon is ready,
and the launcher runs mpirun only once every worker of the hostfile accepts SSH
(components/k8s/mpi.py; under Kueue the MPI Operator's WaitForWorkersReady does not hold), the
"source of truth for the number of workers online" the API's comment asks a workload to keep. A
daemon's readiness is its own: that it has reached its peers is reported nowhere.

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
# resourceclaimtemplate.go name it in the workload template (read at v25.8.1, v0.4.1 and HEAD; the v0.5.0
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


def compute_domain(namespace: str, job: str, nodes: int) -> dict[str, Any]:
    """The job's ComputeDomain; its controller makes the channel's ResourceClaimTemplate. `nodes`:
    the job's node count, so that status.status is Ready once every node's IMEX daemon is."""
    return {
        "apiVersion": COMPUTE_DOMAIN_API_VERSION,
        "kind": COMPUTE_DOMAIN_KIND,
        "metadata": {"name": compute_domain_name(job), "namespace": namespace},
        "spec": {"numNodes": nodes, "channel": {"resourceClaimTemplate": {"name": channel_template_name(job)}}},
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
