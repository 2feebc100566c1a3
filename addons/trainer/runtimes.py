"""The platform's ClusterTrainingRuntimes (trainer.kubeflow.org/v1alpha1): one per GPU node group,
`torch-<group>`, running torchrun with one process per GPU on that group's nodes.

Each node pod takes all of its node's GPUs and EFA interfaces (from the GPU catalog), huge pages
and libfabric's EFA environment, a memory-backed /dev/shm, and the tenant's volumes: the FSx
directory at /fsx (when the file system has tenant directories) and the checkpoints bucket at
/checkpoints. The volumes are the claims every tenant namespace has under the same names
(profiles/tenancy.py), so one cluster-wide runtime mounts each tenant's own data. A TrainJob names
the runtime, its image and command, and how many nodes; Kueue queues it in the tenant's queue.

The image: the profile's `torch_image` where it names one; else, on EFA groups, the build layer's
pytorch-efa image (images/pytorch-efa: PyTorch with libfabric and aws-ofi-nccl, by the tag the
build pushes), elsewhere the public PyTorch image. On EFA groups the runtime sets NCCL_DEBUG=INFO:
every job's log then says which network NCCL chose (`Using network Libfabric`, or the Socket
fallback), which is what verify's torchrun-check judges.

Surviving a fault (`failure_policy`, `pod_failure_policy`, `fault_env`): a node pod that fails
fails its Job at once, and JobSet then recreates every Job of the gang (a torchrun gang cannot
lose one member and go on). A disruption (eviction, preemption, a node's loss or drain) restarts
the gang without counting; any other failure counts, up to MAX_RESTARTS; an exit code of
NO_RESTART_EXIT_CODES fails the job for good. Every runtime sets PyTorch's NCCL watchdog so that a
hung collective ends its process (and so the gang), a liveness probe on the progress file training
code may write (a hang elsewhere), and the environment contract the platform's sample trainer reads
(addons/trainer/launch.py): where to checkpoint, which restart this is, the collective timeout, the
progress file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from addons.trainer import PUBLIC_TORCH_IMAGE, TrainerConfig
from components.k8s.efa_pods import EFA_ENV, HUGEPAGES, shm_volume, worker_memory_gib
from components.labels import GPU_TOLERATION, NODE_GROUP_LABEL, NODE_POOL_LABEL
from profiles import tenancy
from profiles.catalog import EFA_RESOURCE, GPU_RESOURCE
from profiles.node_groups import GpuNodeGroupConfig

API_VERSION = "trainer.kubeflow.org/v1alpha1"
# The container Trainer runs torchrun in (the runtime's node replicated job).
TRAINER_CONTAINER = "node"
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
    fsx_checkpoints: str = "/checkpoints"
    """The directory of the tenant's FSx volume that checkpoints go to: the file system path of the
    association exporting to the checkpoints bucket (storage.fsx.checkpoint_export) when there is
    one, so every checkpoint also reaches S3; else /checkpoints, on FSx only."""


# NCCL logs the network it chose at INFO (components/nccl_transport.py reads those lines).
NCCL_DEBUG_INFO = {"name": "NCCL_DEBUG", "value": "INFO"}


# What Trainer's torch plugin adds to the node container of a TrainJob with a `trainer` section
# (kubeflow/trainer v2.3.0 pkg/runtime/framework/plugins/torch/torch.go, EnforceMLPolicy): torchrun
# reads each of its --x-y options from PET_X_Y. The node rank is the Job's completion index; the
# master is the first node's pod under the JobSet's headless Service, on Trainer's port.
TRAINER_PORT = 29500


def torchrun_env(job: str, *, nodes: int, processes_per_node: int | str, node_rank: int) -> dict[str, str]:
    """The PET_* variables one node of TrainJob `job` gets."""
    return {
        "PET_NNODES": str(nodes),
        "PET_NPROC_PER_NODE": str(processes_per_node),
        "PET_NODE_RANK": str(node_rank),
        "PET_MASTER_ADDR": f"{job}-node-0-0.{job}",
        "PET_MASTER_PORT": str(TRAINER_PORT),
    }


# Gang restart. The runtime's template is JobSet's JobSetSpec (Trainer v2.3.0
# pkg/apis/trainer/v1alpha1/trainingruntime_types.go), and Trainer builds the TrainJob's JobSet
# from all of it (pkg/runtime/core/trainingruntime.go 167-172, pkg/runtime/framework/plugins/jobset/
# jobset.go 413-416), failurePolicy included. JobSet v0.12.0 (pkg/controllers/failure_policy.go):
# on a failed child Job the rules are tried in order, each over every failed Job (49-119), and a
# rule matches the Job's Failed condition by reason and by a regular expression on its message
# (140-164); with no rule matching, RestartJobSet (45). RestartJobSet fails the JobSet once
# status.restartsCountTowardsMax reaches maxRestarts (225-233); RestartJobSetAndIgnoreMaxRestarts
# does not count (266-297); FailJobSet fails it (214-222). Restarting recreates every Job
# (jobset_controller.go 365-374: Jobs of an older restart attempt are deleted); BlockingRecreate
# creates none until all of the previous attempt's are gone (918-925), so no pod of the old gang
# still writes a checkpoint or holds GPUs while the new one starts. JobSet has no delay between
# restarts at this version.
MAX_RESTARTS = 3
"""Restarts a job gets for failures that are not disruptions (the code, a peer, a hung collective)."""
# Exit codes after which the gang is not restarted: the sysexits codes of a usage, data, input or
# configuration error (Python's os.EX_USAGE, EX_DATAERR, EX_NOINPUT, EX_CONFIG), which the same
# code and data would only repeat. They must be the node container's own exit code: torchrun ends
# with 1 whenever any of its workers fails, whatever that worker's code (torch/distributed/run.py
# main under @record: ChildFailedError), and so does a node whose peer was lost.
NO_RESTART_EXIT_CODES = (64, 65, 66, 78)
# Kubernetes' Job controller fails a Job matching a FailJob rule with reason PodFailurePolicy and
# the message "Pod <ns>/<name> has condition DisruptionTarget matching FailJob rule at index 0" or
# "Container node for pod <ns>/<name> failed with exit code 78 matching FailJob rule at index 1"
# (kubernetes pkg/controller/job/pod_failure_policy.go, matchPodFailurePolicy); with no rule
# matching, the pod counts towards backoffLimit (0 here) and the Job fails BackoffLimitExceeded.
JOB_REASON_POD_FAILURE_POLICY = "PodFailurePolicy"
DISRUPTION_RULE, NO_RESTART_RULE, OTHER_FAILURE_RULE = "Disruption", "NoRestartExitCode", "AnyOtherFailure"


def pod_failure_policy() -> dict[str, Any]:
    """The node Job's podFailurePolicy: a disrupted pod (DisruptionTarget: evicted by the Eviction
    API as a drain or node repair does, preempted by the scheduler, deleted by the taint manager
    off an unreachable node or by pod GC off a deleted one) and an exit code of
    NO_RESTART_EXIT_CODES each fail the Job with a message the JobSet rules tell apart."""
    return {
        "rules": [
            {"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
            {
                "action": "FailJob",
                "onExitCodes": {
                    "containerName": TRAINER_CONTAINER,
                    "operator": "In",
                    "values": list(NO_RESTART_EXIT_CODES),
                },
            },
        ]
    }


def failure_policy() -> dict[str, Any]:
    """The JobSet's failurePolicy (see MAX_RESTARTS)."""
    exit_codes = "|".join(str(code) for code in NO_RESTART_EXIT_CODES)
    return {
        "maxRestarts": MAX_RESTARTS,
        "restartStrategy": "BlockingRecreate",
        "rules": [
            {
                # Not the job's doing, and the replaced node or a free one takes the gang again.
                "name": DISRUPTION_RULE,
                "action": "RestartJobSetAndIgnoreMaxRestarts",
                "onJobFailureReasons": [JOB_REASON_POD_FAILURE_POLICY],
                "onJobFailureMessagePatterns": ["has condition DisruptionTarget"],
            },
            {
                "name": NO_RESTART_RULE,
                "action": "FailJobSet",
                "onJobFailureReasons": [JOB_REASON_POD_FAILURE_POLICY],
                "onJobFailureMessagePatterns": [f"failed with exit code ({exit_codes}) matching"],
            },
            # Stated, though it is JobSet's default: the code, a lost peer, a hung collective the
            # watchdog ended, a GPU fault that killed a process. A node lost without a drain is
            # usually seen first here: its peers fail within the collective timeout, the lost pod
            # only when the taint manager (5 minutes) or pod GC deletes it.
            {"name": OTHER_FAILURE_RULE, "action": "RestartJobSet"},
        ],
    }


# The environment contract between the runtimes and training code (the platform's sample,
# addons/trainer/launch.py, reads it; docs/queues.md describes it).
TRAINJOB_NAME_ENV = "TRAINJOB_NAME"
CHECKPOINT_DIR_ENV = "CHECKPOINT_DIR"
RESTART_ATTEMPT_ENV = "RESTART_ATTEMPT"
COLLECTIVE_TIMEOUT_ENV = "COLLECTIVE_TIMEOUT_SECONDS"
# JobSet labels and annotates each pod with its JobSet's name and its restart attempt
# (status.restarts when its Job was made: v0.12.0 api/jobset/v1alpha2/jobset_types.go 24,
# pkg/constants/constants.go 31-34, pkg/controllers/jobset_controller.go 950 and 1014-1041); Trainer
# names the JobSet after the TrainJob (plugins/jobset/jobset.go 413).
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
RESTART_ATTEMPT_ANNOTATION = "jobset.sigs.k8s.io/restart-attempt"
COLLECTIVE_TIMEOUT_SECONDS = 600
"""The process group's timeout, after which ProcessGroupNCCL's watchdog ends a collective that has
not finished: PyTorch's own NCCL default (ProcessGroupNCCL.hpp kProcessGroupNCCLDefaultTimeout,
10 minutes; torch/distributed/constants.py default_pg_nccl_timeout), stated so that the sample's
init_process_group and the docs name one value."""
# PyTorch's ProcessGroupNCCL (torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp names the variables;
# ProcessGroupNCCL.cpp reads them with getCvarInt/getCvarBool). The defaults below are the ones in
# the stored copies of ProcessGroupNCCL.cpp read for this (releases from before and after the
# images' 2.7.1; the 2.7.1 tag itself could not be fetched here), and tests check the names
# against the header of the PyTorch the tests install. Stated in the pod so that an image's ENV
# or another PyTorch's defaults do not turn them off.
NCCL_WATCHDOG_ENV = (
    # On a collective that timed out or failed, the watchdog tears the process down without
    # cleaning up the NCCL communicator (3, SkipCleanUp: cleanup can itself hang on a broken
    # fabric). The default.
    {"name": "TORCH_NCCL_ASYNC_ERROR_HANDLING", "value": "3"},
    # A second thread ends the process when the watchdog itself is stuck (a CUDA call hung by a GPU
    # fault) for TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC. On by default; 480 s by default.
    {"name": "TORCH_NCCL_ENABLE_MONITORING", "value": "1"},
    {"name": "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC", "value": "480"},
)


# A hang the NCCL watchdog cannot see (a data loader or file system that stops, gloo, a deadlock
# outside any collective): training code that writes PROGRESS_FILE after each step (the sample's
# rank 0 does) has its pod killed by the kubelet's liveness probe once the file is older than
# PROGRESS_TIMEOUT_SECONDS, and the pod's failure restarts the gang (counted). A pod without the
# file (other nodes, code that does not write it, start-up before the first step) always passes.
PROGRESS_FILE_ENV = "PROGRESS_FILE"
PROGRESS_FILE = "/tmp/training-progress"
PROGRESS_TIMEOUT_ENV = "PROGRESS_TIMEOUT_SECONDS"
PROGRESS_TIMEOUT_SECONDS = 1800
"""Longer than any step, a checkpoint save, and the collective and heartbeat timeouts together."""
PROGRESS_PROBE = (
    f'f="${PROGRESS_FILE_ENV}"; [ -z "$f" ] || [ ! -e "$f" ] || '
    f'[ $(( $(date +%s) - $(stat -c %Y "$f") )) -lt "${PROGRESS_TIMEOUT_ENV}" ]'
)


def progress_probe() -> dict[str, Any]:
    """The node container's liveness probe: the shell, date and stat of the PyTorch images (Ubuntu).
    Checked every minute; three failures in a row kill the container (restartPolicy Never: the pod
    fails)."""
    return {
        "exec": {"command": ["/bin/sh", "-c", PROGRESS_PROBE]},
        "periodSeconds": 60,
        "timeoutSeconds": 10,
        "failureThreshold": 3,
    }


def fault_env(volumes: TenantVolumes) -> list[dict[str, Any]]:
    """The node container's watchdog settings and contract variables. The checkpoint directory is
    the job's own under the tenant's FSx directory where it has one (POSIX: the sample's rename
    makes a checkpoint appear whole), else under its bucket (Mountpoint for S3, which refuses
    renames: the sample then writes in place and skips a checkpoint that does not load)."""
    env: list[dict[str, Any]] = [
        *(dict(e) for e in NCCL_WATCHDOG_ENV),
        {"name": COLLECTIVE_TIMEOUT_ENV, "value": str(COLLECTIVE_TIMEOUT_SECONDS)},
        {"name": PROGRESS_FILE_ENV, "value": PROGRESS_FILE},
        {"name": PROGRESS_TIMEOUT_ENV, "value": str(PROGRESS_TIMEOUT_SECONDS)},
        {
            "name": TRAINJOB_NAME_ENV,
            "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{JOBSET_NAME_LABEL}']"}},
        },
        {
            "name": RESTART_ATTEMPT_ENV,
            "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{RESTART_ATTEMPT_ANNOTATION}']"}},
        },
    ]
    on_fsx = f"{FSX_MOUNT}{volumes.fsx_checkpoints}"
    base = on_fsx if volumes.fsx else CHECKPOINTS_MOUNT if volumes.checkpoints else None
    if base is not None:
        # $(NAME) takes a variable defined earlier in the list (Kubernetes' dependent variables).
        env.append({"name": CHECKPOINT_DIR_ENV, "value": f"{base}/$({TRAINJOB_NAME_ENV})"})
    return env


def runtime_name(group: GpuNodeGroupConfig) -> str:
    return f"torch-{group.name}"


def runtime_image(group: GpuNodeGroupConfig, settings: TrainerConfig, efa_image: str | None) -> str:
    """The image a group's runtime runs: the profile's torch_image, else on an EFA group the build
    layer's pytorch-efa image (`efa_image`, which the profile's validation guarantees), else the
    public PyTorch image."""
    if settings.torch_image is not None:
        return settings.torch_image
    if group.efa_enabled:
        if efa_image is None:
            raise ValueError(f"group {group.name} has EFA and the build layer builds no pytorch-efa image")
        return efa_image
    return PUBLIC_TORCH_IMAGE


def torch_runtime(
    group: GpuNodeGroupConfig, settings: TrainerConfig, volumes: TenantVolumes, *, efa_image: str | None
) -> dict[str, Any]:
    entry = group.catalog_entry
    gpus, efa = entry.gpu_count, entry.efa_interfaces if group.efa_enabled else 0
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
        "name": TRAINER_CONTAINER,
        "image": runtime_image(group, settings, efa_image),
        "env": [*([*EFA_ENV, dict(NCCL_DEBUG_INFO)] if efa else []), *fault_env(volumes)],
        # No memory limit: loading a model takes what it takes; the request keeps room for /dev/shm.
        "resources": {
            "requests": {**devices, "memory": f"{worker_memory_gib(gpus)}Gi"},
            "limits": dict(devices),
        },
        "volumeMounts": mounts,
        "livenessProbe": progress_probe(),
    }
    return {
        "apiVersion": API_VERSION,
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": runtime_name(group), "labels": {"trainer.kubeflow.org/framework": "torch"}},
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {
                "spec": {
                    "failurePolicy": failure_policy(),
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                                "spec": {
                                    # The first failed pod fails the Job, and JobSet restarts the gang.
                                    "backoffLimit": 0,
                                    "podFailurePolicy": pod_failure_policy(),
                                    "template": {
                                        "spec": {
                                            # A pod failure policy needs Never (JobSet would default
                                            # OnFailure: one container restarted in place, outside
                                            # the gang, its peers still waiting on the old one).
                                            "restartPolicy": "Never",
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
                                    },
                                },
                            },
                        }
                    ],
                }
            },
        },
    }


def runtime_objects(
    groups: list[GpuNodeGroupConfig], settings: TrainerConfig, volumes: TenantVolumes, *, efa_image: str | None
) -> list[dict[str, Any]]:
    """`efa_image`: the build layer's pytorch-efa image reference (repository URL and the tag the
    build pushes), None where the build layer builds none."""
    return [torch_runtime(group, settings, volumes, efa_image=efa_image) for group in groups]
