"""KubeRay's acceptance check (`verify`, contributed through KubeRayParts.checks): a RayJob as the
first tenant places a whole-node GPU task on each of two workers of the checked GPU group."""

from __future__ import annotations

import json
import re
from typing import Any

from components.acceptance import (
    AcceptanceCheck,
    CheckResult,
    CheckRun,
    MultiNodeSite,
    ValidationTarget,
    poll_until,
    release,
)
from components.k8s.check_pods import device_resources
from components.k8s.efa_pods import EFA_ENV, shm_volume
from components.labels import GPU_TOLERATION, NODE_GROUP_LABEL, SYSTEM_NODES
from profiles.models import PlatformConfig
from profiles.versions import RAY_IMAGE, RAY_IMAGES

RAYJOB_KIND = "RayJob"


RAY_CHECK = "ray-check"


RAY_CHECK_MARKER = "RAY_CHECK "


RAY_CHECK_NODES = 2


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
                "image": RAY_IMAGES[target.entry.architecture],
                "env": [*EFA_ENV, {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
                "resources": device_resources(target, gpus, all_efa=True),
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


# The label the Job controller puts on a Job's pods.
BATCH_JOB_NAME_LABEL = "batch.kubernetes.io/job-name"


def check_ray(log: str, target: ValidationTarget) -> CheckResult:
    """The driver's JSON line: one task per node ran on as many distinct hosts as the check's
    workers, each given every GPU of its node."""
    found = re.search(rf"{re.escape(RAY_CHECK_MARKER)}(.*)$", log, re.MULTILINE)
    if not found:
        return CheckResult(RAY_CHECK, False, "the driver printed no result (see the RayJob's submitter log)")
    try:
        placed = json.loads(found.group(1))
        hosts = {task["node"] for task in placed}
        gpus = [int(task["gpus"]) for task in placed]
    except (json.JSONDecodeError, KeyError, TypeError, ValueError):
        return CheckResult(RAY_CHECK, False, f"the driver's result line is not understood: {found.group(1)[:200]!r}")
    wanted = target.entry.gpu_count
    if len(placed) != RAY_CHECK_NODES or len(hosts) != RAY_CHECK_NODES:
        return CheckResult(RAY_CHECK, False, f"tasks ran on {len(hosts)} node(s), expected {RAY_CHECK_NODES}")
    if any(count != wanted for count in gpus):
        return CheckResult(RAY_CHECK, False, f"Ray gave the tasks {gpus} GPUs, expected {wanted} each")
    return CheckResult(RAY_CHECK, True, f"Ray placed a {wanted}-GPU task on each of {len(hosts)} nodes")


def ray_result(run: CheckRun, site: MultiNodeSite) -> CheckResult:
    """Run the RayJob as the first tenant (after the MPIJob freed the nodes) and judge its driver."""
    if site.job_nodes < RAY_CHECK_NODES:
        return site.too_few_nodes(RAY_CHECK, "RayJob", RAY_CHECK_NODES)
    if failed := run.apply(RAY_CHECK):
        return failed
    namespace, job = site.namespace, f"{RAYJOB_KIND.lower()}/{RAY_CHECK}"
    # KubeRay sets jobStatus from the dashboard before the submitter has printed the driver's
    # output; jobDeploymentStatus turns Complete only once the submitter Job has finished, Failed on
    # failure and ValidationFailed for a spec KubeRay refuses (rayjob_controller.go and
    # apis/ray/v1/rayjob_types.go at v1.7.0), so verify waits for either, not for a SUCCEEDED that
    # a failed job never reaches.
    state = poll_until(
        run,
        namespace,
        job,
        jsonpath="{.status.jobDeploymentStatus}",
        done={"Complete", "Failed", "ValidationFailed"},
        timeout_minutes=run.timeout_minutes,
    )
    outcome = run.kubectl(["get", "-n", namespace, job, "-o", "jsonpath={.status.jobStatus} {.status.message}"]).stdout
    if state != "Complete" or not outcome.startswith("SUCCEEDED"):
        release(run, namespace, job)
        seen = state or f"not finished after {run.timeout_minutes} minutes"
        return CheckResult(RAY_CHECK, False, f"the RayJob in {namespace} did not succeed: {seen} {outcome}".strip())
    # The submitter Job (named after the RayJob) outlives the cluster; a retried submitter has more
    # than one pod, so all its pods' logs are read.
    run.kubectl(["wait", "-n", namespace, f"job/{RAY_CHECK}", "--for=condition=Complete", "--timeout=5m"])
    logs = run.kubectl(["logs", "-n", namespace, "-l", f"{BATCH_JOB_NAME_LABEL}={RAY_CHECK}", "--tail=-1"])
    return check_ray(logs.stdout, site.target)


def ray_checks(config: PlatformConfig, site: MultiNodeSite | None) -> tuple[AcceptanceCheck, ...]:
    """verify owes a RayJob check where a tenant exists to submit it as and GPUs are the extended
    resource Ray's workers advertise (a DRA claim is not counted by Ray's resources). Its objects
    only where the tenant's job can hold both nodes; else the check reports why it cannot run."""
    if site is None or not config.workloads.tenants or site.target.dra:
        return ()
    runs = site.job_nodes >= RAY_CHECK_NODES
    return (
        AcceptanceCheck(
            name=RAY_CHECK,
            run=lambda run: ray_result(run, site),
            objects=tuple(ray_check(site.target, site.namespace)) if runs else (),
            whole_nodes=True,
            run_once_kinds=frozenset({RAYJOB_KIND}),
        ),
    )
