"""Render the validation workloads for one profile.

- gpu-smoke-test: nvidia-smi in a pod on a GPU node;
- topology-check: every GPU and EFA device of one node, listed by nvidia-smi topo and fi_info;
- container-test: the reference image from the build layer starts and runs;
- nccl-allreduce: an MPIJob across two GPU nodes requesting every EFA interface of the type,
  huge pages and a memory-backed /dev/shm, submitted as the first tenant (see `tenant_check_namespace`);
- ray-check (when the profile runs KubeRay and has tenants): a RayJob as the first tenant, whose
  two GPU workers each hold a whole node; the driver places one task per node and reports where;
- lustre-efa-check (when the FSx file system and the checked group are EFA-enabled): direct I/O
  through the first tenant's FSx volume on a GPU node, and how many bytes the node's EFA devices
  moved meanwhile;
- mlflow-tracking-check (when the profile runs MLflow): logs a run with a metric and an artifact
  through the tracking Service, as the admin, and reads both back;
- torchrun-check (when the profile runs Trainer and has tenants): a TrainJob as the first tenant,
  through its queue, on up to two nodes, all-reducing a tensor of ones across every GPU, with
  NCCL_DEBUG=INFO so that verify can tell which network NCCL used (as for nccl-allreduce).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from addons.contributions import addon_checks
from addons.kuberay import DEFINITION as KUBERAY
from addons.kueue import DEFINITION as KUEUE
from addons.kueue import shares as kueue_shares
from addons.trainer import DEFINITION as TRAINER
from addons.trainer.runtimes import NCCL_DEBUG_INFO, runtime_name
from components.acceptance import locked_down_container
from components.k8s.crds import MpiJob, MpiJobSpec, ObjectMeta, ReplicaSpec, RunPolicy
from components.k8s.efa_pods import EFA_ENV, HUGEPAGES, shm_volume, worker_memory_gib
from components.k8s.gpus import GPU_EXTENDED_RESOURCE, claim_template, container_claims, pod_claims
from components.k8s.namespaces import ApiServerAddresses, NamespaceGuard, namespace_objects
from components.k8s.security import NOBODY, non_root_pod
from components.labels import GPU_TOLERATION, NODE_GROUP_LABEL, SYSTEM_NODES
from manifests.launch import TRAINJOB_CHECK_SCRIPT, nccl_allreduce_launcher, torchrun, train_job
from profiles import tenancy
from profiles.catalog import EFA_RESOURCE, GpuInstanceType
from profiles.cluster import GpuNodeGroupConfig
from profiles.models import VALIDATION_NAMESPACE, PlatformConfig, dra_claim_counts, dra_mode, tenant_gpu_quota
from profiles.versions import CUDA_IMAGE, NCCL_TESTS_IMAGE, RAY_IMAGE

NAMESPACE = VALIDATION_NAMESPACE
NCCL_JOB = "nccl-allreduce"
# The NCCL check proves EFA between nodes: on one node NCCL takes NVLink and never touches EFA.
NCCL_NODES = 2
RAY_CHECK_NODES = 2
TRAINJOB_CHECK = "torchrun-check"
RAY_CHECK = "ray-check"
RAY_CHECK_MARKER = "RAY_CHECK "
# A placement group of one whole-node bundle per worker, spread strictly over distinct nodes (each
# bundle holds the task's default CPU as well as the GPUs: Ray refuses a task whose resources do
# not fit its bundle, python/ray/util/placement_group.py _validate_resource_shape): the
# driver waits until Ray sees both nodes' GPUs, runs one task in each bundle and prints, for each,
# the Kubernetes node it ran on (the worker's NODE_NAME, from the downward API; a pod's host name
# would differ between two pods on one node) and the GPUs Ray gave it, as one JSON line.
RAY_CHECK_SCRIPT = f"""
import json, os, sys, ray
from ray.util.placement_group import placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy
nodes, gpus = int(sys.argv[1]), int(sys.argv[2])
ray.init()
group = placement_group([{{"CPU": 1, "GPU": gpus}}] * nodes, strategy="STRICT_SPREAD")
ray.get(group.ready(), timeout=1200)
@ray.remote(num_gpus=gpus)
def where():
    return {{"node": os.environ["NODE_NAME"], "gpus": len(ray.get_gpu_ids())}}
strategy = lambda i: PlacementGroupSchedulingStrategy(group, placement_group_bundle_index=i)
found = ray.get([where.options(scheduling_strategy=strategy(i)).remote() for i in range(nodes)])
print("{RAY_CHECK_MARKER}" + json.dumps(found), flush=True)
"""
# The driver runs on the head: the script reaches it as a file (a ConfigMap), never through the
# layers of shell quoting between the RayJob's entrypoint and `ray job submit`.
RAY_CHECK_MOUNT = "/opt/ray-check"
LUSTRE_EFA_CHECK = "lustre-efa-check"
LUSTRE_EFA_CHECK_MARKER = "LUSTRE_EFA_CHECK "
LUSTRE_EFA_CHECK_MIB = 1024
# Direct I/O (no client page cache) of LUSTRE_EFA_CHECK_MIB written and read back through the
# tenant's FSx volume, between two readings of the node's EFA port counters (tx_bytes and rx_bytes
# of every device: the EFA driver's basic port statistics, all traffic through the device; sysfs
# is world-readable and not namespaced). LNet's traffic over EFA (kefalnd) shows in them; over its
# tcp network it does not. The node's other EFA traffic only adds (verify runs this check alone).
LUSTRE_EFA_CHECK_SCRIPT = f"""
set -eu
efa_bytes() {{
  total=0
  for counter in /sys/class/infiniband/*/ports/*/hw_counters/tx_bytes \\
      /sys/class/infiniband/*/ports/*/hw_counters/rx_bytes; do
    [ -r "$counter" ] && total=$((total + $(cat "$counter")))
  done
  echo "$total"
}}
devices=$(ls /sys/class/infiniband 2>/dev/null | wc -l)
file=/fsx/.{LUSTRE_EFA_CHECK}-$(hostname)
before=$(efa_bytes)
dd if=/dev/zero of="$file" bs=16M count={LUSTRE_EFA_CHECK_MIB // 16} oflag=direct status=none
dd if="$file" of=/dev/null bs=16M iflag=direct status=none
after=$(efa_bytes)
rm -f "$file"
moved={2 * LUSTRE_EFA_CHECK_MIB << 20}
echo "{LUSTRE_EFA_CHECK_MARKER}devices=$devices moved_bytes=$moved efa_bytes=$((after - before))"
"""


@dataclass(frozen=True)
class ValidationTarget:
    """The managed GPU node group the checks run on, with its catalog facts."""

    group: GpuNodeGroupConfig
    entry: GpuInstanceType
    dra: bool = False  # GPUs through DRA claims (GPU Operator DRA mode), not the extended resource

    @classmethod
    def for_profile(cls, config: PlatformConfig) -> ValidationTarget | None:
        groups = config.cluster.gpu_node_groups
        chosen = next((g for g in groups if g.efa_enabled), groups[0] if groups else None)
        return cls(chosen, chosen.catalog_entry, dra_mode(config)) if chosen else None

    @property
    def efa_interfaces(self) -> int:
        return self.entry.max_efa_interfaces if self.group.efa_enabled else 0


def _pod(name: str, target: ValidationTarget, container: dict[str, Any], *, gpus: int, **spec: Any) -> dict[str, Any]:
    if target.dra:
        spec["resourceClaims"] = pod_claims(gpus)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app.kubernetes.io/part-of": "gpu-validation"}},
        "spec": {
            "restartPolicy": "Never",
            # No check talks to the API server: no service account token in the pod.
            "automountServiceAccountToken": False,
            "nodeSelector": {NODE_GROUP_LABEL: target.group.name},
            "tolerations": [dict(GPU_TOLERATION)],
            "containers": [container],
            **spec,
        },
    }


def _with_cpu_memory(resources: dict[str, Any], *, cpu: str, memory: str) -> dict[str, Any]:
    """Device resources plus a CPU request and, where they set none, a memory request and limit."""
    requests = {**resources.get("requests", {}), "cpu": cpu}
    limits = dict(resources.get("limits", {}))
    if "memory" not in limits:
        requests["memory"] = limits["memory"] = memory
    return {**resources, "requests": requests, "limits": limits}


def _device_resources(target: ValidationTarget, gpus: int, *, all_efa: bool) -> dict[str, Any]:
    """GPUs (the extended resource, or in DRA mode the pod's claim), and with `all_efa` every EFA
    interface, huge pages and memory for the shared-memory transport."""
    limits: dict[str, str] = {} if target.dra else {GPU_EXTENDED_RESOURCE: str(gpus)}
    if all_efa and target.efa_interfaces:
        limits[EFA_RESOURCE] = str(target.efa_interfaces)
        limits["hugepages-2Mi"] = HUGEPAGES
        limits["memory"] = f"{worker_memory_gib(gpus)}Gi"
    resources: dict[str, Any] = {"requests": dict(limits), "limits": limits} if limits else {}
    if target.dra:
        resources["claims"] = container_claims()
    return resources


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
        _pod(
            "gpu-smoke-test",
            target,
            {
                "name": "nvidia-smi",
                "image": CUDA_IMAGE,
                "command": ["nvidia-smi", "-L"],
                "resources": _with_cpu_memory(_device_resources(target, 1, all_efa=False), cpu="100m", memory="256Mi"),
                "securityContext": locked_down_container(),
            },
            gpus=1,
            securityContext=non_root_pod(NOBODY),
        )
    ]
    shm, shm_mount = shm_volume()
    files["topology-check.yaml"] = [
        _pod(
            "topology-check",
            target,
            {
                "name": "topology",
                "image": nccl_image,
                "command": ["/bin/bash", "-c", "nvidia-smi topo -m && fi_info -p efa -t FI_EP_RDM"],
                "resources": _with_cpu_memory(_device_resources(target, gpus, all_efa=True), cpu="1", memory="1Gi"),
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
            _pod(
                "container-test",
                target,
                {
                    "name": "reference",
                    "image": image,
                    "command": ["/bin/sh", "-c", "nvidia-smi -L && echo container-ok"],
                    "resources": _with_cpu_memory(
                        _device_resources(target, 1, all_efa=False), cpu="100m", memory="512Mi"
                    ),
                    # The image's own user does not matter for this: nvidia-smi runs as anyone.
                    "securityContext": locked_down_container(),
                },
                gpus=1,
                securityContext=non_root_pod(NOBODY),
            )
        ]
    if tenant_job_nodes(config, target, NCCL_NODES) == NCCL_NODES:
        files["nccl-allreduce.yaml"] = [nccl_mpijob(target, nccl_image, tenant_check_namespace(config, target))]
    if ray_check_applies(config, target) and tenant_job_nodes(config, target, RAY_CHECK_NODES) == RAY_CHECK_NODES:
        files[f"{RAY_CHECK}.yaml"] = ray_check(target, tenant_check_namespace(config, target))
    if lustre_efa_check_applies(config, target):
        files[f"{LUSTRE_EFA_CHECK}.yaml"] = [lustre_efa_check_pod(target, config.workloads.tenants[0].name)]
    for check in addon_checks(config):
        if check.objects:
            files[f"{check.name}.yaml"] = list(check.objects)
    if (check_job := trainjob_check(config, target)) is not None:
        files[f"{TRAINJOB_CHECK}.yaml"] = [check_job]
    return files


def tenant_check_namespace(config: PlatformConfig, target: ValidationTarget) -> str:
    """Where the multi-node checks run: the first tenant's namespace, so they meet what a tenant's
    first job meets (its Pod Security level, ResourceQuota, LimitRange, NetworkPolicies and, with
    Kueue, its queue). The validation namespace only where no tenant could run them: a profile
    without tenants, or DRA mode where the tenants have no claim template for a whole node."""
    tenants = config.workloads.tenants
    if not tenants or (target.dra and target.entry.gpu_count not in dra_claim_counts(config)):
        return NAMESPACE
    return tenants[0].name


def tenant_job_nodes(config: PlatformConfig, target: ValidationTarget, wanted: int = 2) -> int:
    """How many of the checked group's nodes a job in `tenant_check_namespace` can get, at most
    `wanted`: what the group runs, what the first tenant's GPU quota admits and, with Kueue, what
    its queue may hold of the group."""
    nodes = min(wanted, target.group.desired_size)
    if tenant_check_namespace(config, target) == NAMESPACE:
        return nodes
    tenant = config.workloads.tenants[0]
    # The tenant's ResourceQuota refuses the pod that would pass its GPU quota, queued or not.
    nodes = min(nodes, tenant_gpu_quota(config, tenant) // target.entry.gpu_count)
    if KUEUE.enabled(config):
        share = next((s for s in kueue_shares(config)[tenant.name] if s.flavor.node_group == target.group.name), None)
        nodes = min(nodes, share.most_gpus // target.entry.gpu_count if share else 0)
    return nodes


def trainjob_check_applies(config: PlatformConfig, target: ValidationTarget) -> bool:
    """verify owes a TrainJob check: Trainer runs, a tenant exists to submit it as, and GPUs are
    the extended resource its runtime asks for (not DRA claims)."""
    return TRAINER.enabled(config) and bool(config.workloads.tenants) and not target.dra


def trainjob_check(config: PlatformConfig, target: ValidationTarget) -> dict[str, Any] | None:
    """A TrainJob as a tenant submits one: in the first tenant's namespace, without a queue name
    (Kueue's defaulting gives it the tenant's queue), on the platform's runtime for the checked
    group, with torchrun all-reducing a tensor of ones over NCCL across every GPU of its nodes."""
    if not trainjob_check_applies(config, target) or not tenant_job_nodes(config, target):
        return None
    return train_job(
        TRAINJOB_CHECK,
        config.workloads.tenants[0].name,
        runtime=runtime_name(target.group),
        trainer={
            "numNodes": tenant_job_nodes(config, target),
            # One rank per GPU, stated: torchrun's "auto" counts CPUs where CUDA does not start.
            "numProcPerNode": target.entry.gpu_count,
            "command": torchrun("check", TRAINJOB_CHECK_SCRIPT),
            # The lines that name the network NCCL chose: verify fails a run that asked for EFA
            # and got another (manifests/nccl_transport.py).
            "env": [dict(NCCL_DEBUG_INFO)],
        },
    )


def ray_check_applies(config: PlatformConfig, target: ValidationTarget) -> bool:
    """verify owes a RayJob check: KubeRay runs, a tenant exists to submit it as, and GPUs are the
    extended resource Ray's workers advertise (a DRA claim is not counted by Ray's resources)."""
    return KUBERAY.enabled(config) and bool(config.workloads.tenants) and not target.dra


def ray_check(target: ValidationTarget, namespace: str) -> list[dict[str, Any]]:
    """A RayJob as a tenant writes one (docs/queues.md): no queue name, the cluster shut down when
    the job ends (Kueue refuses a RayJob that keeps it), the head on CPU only, each worker a whole
    node of the checked group (its GPUs, every EFA interface, huge pages and shared memory)."""
    gpus = target.entry.gpu_count
    shm, shm_mount = shm_volume()
    script = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": RAY_CHECK, "namespace": namespace},
        "data": {"check.py": RAY_CHECK_SCRIPT.lstrip()},
    }
    head = {
        "nodeSelector": dict(SYSTEM_NODES),
        "containers": [
            {
                "name": "ray-head",
                "image": RAY_IMAGE,
                "resources": {"requests": {"cpu": "1", "memory": "4Gi"}, "limits": {"memory": "4Gi"}},
                "volumeMounts": [{"name": "check", "mountPath": RAY_CHECK_MOUNT, "readOnly": True}],
            }
        ],
        "volumes": [{"name": "check", "configMap": {"name": RAY_CHECK}}],
    }
    worker = {
        "nodeSelector": {NODE_GROUP_LABEL: target.group.name},
        "tolerations": [dict(GPU_TOLERATION)],
        "containers": [
            {
                "name": "ray-worker",
                "image": RAY_IMAGE,
                "env": [*EFA_ENV, {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
                "resources": _device_resources(target, gpus, all_efa=True),
                "volumeMounts": [shm_mount],
            }
        ],
        "volumes": [shm],
    }
    job = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": RAY_CHECK, "namespace": namespace},
        "spec": {
            "entrypoint": f"python {RAY_CHECK_MOUNT}/check.py {RAY_CHECK_NODES} {gpus}",
            "shutdownAfterJobFinishes": True,
            "activeDeadlineSeconds": 3600,
            "rayClusterSpec": {
                # The head takes no tasks: the check's tasks must land on the GPU workers.
                "headGroupSpec": {"rayStartParams": {"num-cpus": "0"}, "template": {"spec": head}},
                "workerGroupSpecs": [
                    {
                        "groupName": "gpu",
                        "replicas": RAY_CHECK_NODES,
                        "minReplicas": RAY_CHECK_NODES,
                        "maxReplicas": RAY_CHECK_NODES,
                        "rayStartParams": {},
                        "template": {"spec": worker},
                    }
                ],
            },
        },
    }
    return [script, job]


def lustre_efa_check_applies(config: PlatformConfig, target: ValidationTarget) -> bool:
    """verify owes the Lustre-over-EFA check where the file system is EFA-enabled, the checked
    group has EFA (its nodes set LNet up with efa networks) and a tenant has an FSx volume."""
    fsx = config.storage.fsx
    return (
        fsx.enabled
        and fsx.efa_enabled
        and target.group.efa_enabled
        and fsx.tenant_directories
        and bool(config.workloads.tenants)
    )


def lustre_efa_check_pod(target: ValidationTarget, tenant: str) -> dict[str, Any]:
    """As the first tenant, on a node of the checked group, through the tenant's FSx volume. It asks
    for no GPU or EFA interface: it reads the EFA counters of the node, it does not use EFA itself."""
    pod = _pod(
        LUSTRE_EFA_CHECK,
        target,
        {
            "name": "lustre",
            "image": CUDA_IMAGE,
            "command": ["/bin/sh", "-c", LUSTRE_EFA_CHECK_SCRIPT],
            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "1Gi"}},
            "volumeMounts": [{"name": "fsx", "mountPath": "/fsx"}],
            # Root owns the tenant's directory: root writes there as its owner, with no capability.
            "securityContext": locked_down_container(),
        },
        gpus=0,
        volumes=[{"name": "fsx", "persistentVolumeClaim": {"claimName": tenancy.FSX_VOLUME}}],
        securityContext={"seccompProfile": {"type": "RuntimeDefault"}},
    )
    pod["metadata"]["namespace"] = tenant
    pod["spec"].pop("resourceClaims", None)
    return pod


def nccl_mpijob(target: ValidationTarget, image: str, namespace: str) -> dict[str, Any]:
    """The all-reduce as a tenant writes it (docs/queues.md): no queue name (Kueue's defaulting gives
    it the namespace's queue), the launcher on CPU only, each worker a whole node."""
    gpus, nodes = target.entry.gpu_count, NCCL_NODES
    shm, shm_mount = shm_volume()
    launcher = {
        "spec": {
            "restartPolicy": "OnFailure",
            "nodeSelector": dict(SYSTEM_NODES),
            "containers": [
                {
                    "name": "launcher",
                    "image": image,
                    "command": nccl_allreduce_launcher(nodes=nodes, gpus_per_node=gpus),
                    "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                }
            ],
        }
    }
    worker = {
        "spec": {
            "nodeSelector": {NODE_GROUP_LABEL: target.group.name},
            "tolerations": [dict(GPU_TOLERATION)],
            "containers": [
                {
                    "name": "worker",
                    "image": image,
                    "command": ["/usr/sbin/sshd", "-De"],
                    "env": list(EFA_ENV),
                    "resources": _device_resources(target, gpus, all_efa=True),
                    "volumeMounts": [shm_mount],
                }
            ],
            "volumes": [shm],
            **({"resourceClaims": pod_claims(gpus)} if target.dra else {}),
        }
    }
    job = MpiJob(
        metadata=ObjectMeta(name=NCCL_JOB, namespace=namespace),
        spec=MpiJobSpec(
            slots_per_worker=gpus,
            # The launcher starts once every worker is Ready: on a fresh cluster the workers wait for
            # GPU nodes and pull a multi-GB image, and a launcher started at once would spend its
            # retries on SSH connections to workers that do not exist yet. Under Kueue the policy
            # does not hold (components/k8s/mpi.py), so the launcher's command waits too.
            launcher_creation_policy="WaitForWorkersReady",
            run_policy=RunPolicy(clean_pod_policy="Running", backoff_limit=2, active_deadline_seconds=3600),
            mpi_replica_specs={
                "Launcher": ReplicaSpec(replicas=1, template=launcher),
                "Worker": ReplicaSpec(replicas=nodes, template=worker),
            },
        ),
    )
    return job.manifest()
