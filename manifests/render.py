"""Render the validation workloads for one profile.

- gpu-smoke-test: nvidia-smi in a pod on a GPU node;
- topology-check: every GPU and EFA device of one node, listed by nvidia-smi topo and fi_info;
- container-test: the reference image from the build layer starts and runs;
- nccl-allreduce: an MPIJob across two GPU nodes requesting every EFA interface of the type,
  huge pages and a memory-backed /dev/shm, submitted as the first tenant (see `tenant_check_namespace`);
  on a multi-node NVLink group (P6e-GB200) with the job's ComputeDomain, whose channel it claims;
- lustre-efa-check (when the FSx file system and the checked group are EFA-enabled): direct I/O
  through the first tenant's FSx volume on a GPU node, and how many bytes the node's EFA devices
  moved meanwhile;
- the enabled add-ons' checks with validation objects (AddonParts.checks), in install order:
  KubeRay's ray-check, a RayJob as the first tenant whose two GPU workers each hold a whole node;
  Trainer's torchrun-check, a TrainJob as the first tenant, through its queue, on up to two nodes,
  all-reducing a tensor of ones across every GPU with NCCL_DEBUG=INFO (as for nccl-allreduce);
  MLflow's tracking check.
"""

from __future__ import annotations

from typing import Any

from addons.contributions import addon_checks
from components.acceptance import ValidationTarget, locked_down_container
from components.k8s.check_pods import NAMESPACE, check_pod, device_resources, with_cpu_memory
from components.k8s.efa_pods import EFA_ENV, shm_volume
from components.k8s.gpus import claim_template
from components.k8s.namespaces import ApiServerAddresses, NamespaceGuard, namespace_objects
from components.k8s.security import NOBODY, non_root_pod
from manifests.checks.lustre_efa import (
    LUSTRE_EFA_CHECK,
    lustre_efa_check_applies,
    lustre_efa_check_pod,
)
from manifests.checks.nccl import NCCL_JOB, NCCL_NODES, nccl_objects
from manifests.checks.target import multi_node_site
from profiles.models import PlatformConfig
from profiles.versions import CUDA_IMAGE, NCCL_TESTS_IMAGE


def render(
    config: PlatformConfig, *, image: str | None = None, nccl_image: str = NCCL_TESTS_IMAGE
) -> dict[str, list[dict[str, Any]]]:
    """File name -> objects. Empty when the profile has no GPU node group."""
    target = ValidationTarget.for_profile(config)
    if target is None:
        return {}
    gpus = target.entry.gpu_count
    # Guarded like every namespace the platform creates: the launcher and workers talk only to
    # each other (SSH, NCCL's TCP bootstrap; EFA traffic itself bypasses the IP stack).
    guard = NamespaceGuard(name=NAMESPACE)
    claim_templates = [claim_template(NAMESPACE, count) for count in sorted({1, gpus})] if target.dra else []
    files: dict[str, list[dict[str, Any]]] = {
        "00-namespace.yaml": [
            *namespace_objects(
                guard,
                api=ApiServerAddresses(vpc_cidr=config.cluster.vpc.cidr, service_ip=config.cluster.api_service_ip),
            ),
            *claim_templates,
        ]
    }
    # The smoke test needs nothing of root: the GPU's device files are world-readable and writable
    # (the driver's default device file mode), so it runs as the Pod Security restricted profile
    # asks. The topology check keeps root (the EFA verbs devices' ownership) but gains
    # no privileges and runs under the runtime's seccomp profile; the MPIJob's sshd needs root.
    files["gpu-smoke-test.yaml"] = [
        check_pod(
            "gpu-smoke-test",
            target,
            {
                "name": "nvidia-smi",
                "image": CUDA_IMAGE,
                "command": ["nvidia-smi", "-L"],
                "resources": with_cpu_memory(device_resources(target, 1, all_efa=False), cpu="100m", memory="256Mi"),
                "securityContext": locked_down_container(),
            },
            gpus=1,
            securityContext=non_root_pod(NOBODY),
        )
    ]
    shm, shm_mount = shm_volume()
    files["topology-check.yaml"] = [
        check_pod(
            "topology-check",
            target,
            {
                "name": "topology",
                "image": nccl_image,
                "command": ["/bin/bash", "-c", "nvidia-smi topo -m && fi_info -p efa -t FI_EP_RDM"],
                "resources": with_cpu_memory(device_resources(target, gpus, all_efa=True), cpu="1", memory="1Gi"),
                "volumeMounts": [shm_mount],
                "env": list(EFA_ENV),
                # Listing devices opens the verbs device files (world read-write) and registers no
                # memory: no capability is needed, root only for the devices' ownership.
                "securityContext": locked_down_container(),
            },
            gpus=gpus,
            volumes=[shm],
            securityContext={"seccompProfile": {"type": "RuntimeDefault"}},
        )
    ]
    if image:
        files["container-test.yaml"] = [
            check_pod(
                "container-test",
                target,
                {
                    "name": "reference",
                    "image": image,
                    "command": ["/bin/sh", "-c", "nvidia-smi -L && echo container-ok"],
                    "resources": with_cpu_memory(
                        device_resources(target, 1, all_efa=False), cpu="100m", memory="512Mi"
                    ),
                    # The image's own user does not matter for this: nvidia-smi runs as anyone.
                    "securityContext": locked_down_container(),
                },
                gpus=1,
                securityContext=non_root_pod(NOBODY),
            )
        ]
    site = multi_node_site(config, target)
    if site and site.job_nodes >= NCCL_NODES:
        files[f"{NCCL_JOB}.yaml"] = nccl_objects(target, nccl_image, site.namespace)
    if lustre_efa_check_applies(config, target):
        files[f"{LUSTRE_EFA_CHECK}.yaml"] = [lustre_efa_check_pod(target, config.workloads.tenants[0].name)]
    # The add-ons' checks in install order: KubeRay's RayJob, Trainer's TrainJob, MLflow's tracking check.
    for check in addon_checks(config, site):
        if check.objects:
            files[f"{check.name}.yaml"] = list(check.objects)
    return files
