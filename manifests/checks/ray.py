"""The multi-node Ray check: a RayJob as the first tenant places a whole-node GPU task on each
of its workers."""

from __future__ import annotations

import json
import re
from typing import Any

from components.acceptance import CheckResult
from manifests.checks.common import Apply, poll_until, release, too_few_nodes
from manifests.render import (
    RAY_CHECK,
    RAY_CHECK_MARKER,
    RAY_CHECK_NODES,
    ValidationTarget,
    tenant_check_namespace,
)
from operate.kubectl import Kubectl
from profiles.models import PlatformConfig

RAYJOB_KIND = "RayJob"


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


def ray_result(
    config: PlatformConfig,
    target: ValidationTarget,
    files: dict[str, list[dict[str, Any]]],
    *,
    apply: Apply,
    kubectl: Kubectl,
    timeout_minutes: int,
) -> CheckResult:
    """Run the RayJob as the first tenant (after the MPIJob freed the nodes) and judge its driver."""
    namespace = tenant_check_namespace(config, target)
    file_name = f"{RAY_CHECK}.yaml"
    if file_name not in files:
        return too_few_nodes(RAY_CHECK, "RayJob", RAY_CHECK_NODES, target, namespace)
    if failed := apply(file_name):
        return failed
    job = f"{RAYJOB_KIND.lower()}/{RAY_CHECK}"
    # KubeRay sets jobStatus from the dashboard before the submitter has printed the driver's
    # output; jobDeploymentStatus turns Complete only once the submitter Job has finished, Failed on
    # failure and ValidationFailed for a spec KubeRay refuses (rayjob_controller.go and
    # apis/ray/v1/rayjob_types.go at v1.7.0), so verify
    # waits for either, not for a SUCCEEDED that a failed job never reaches.
    state = poll_until(
        kubectl,
        namespace,
        job,
        jsonpath="{.status.jobDeploymentStatus}",
        done={"Complete", "Failed", "ValidationFailed"},
        timeout_minutes=timeout_minutes,
    )
    outcome = kubectl(["get", "-n", namespace, job, "-o", "jsonpath={.status.jobStatus} {.status.message}"]).stdout
    if state != "Complete" or not outcome.startswith("SUCCEEDED"):
        release(kubectl, namespace, job)
        seen = state or f"not finished after {timeout_minutes} minutes"
        return CheckResult(RAY_CHECK, False, f"the RayJob in {namespace} did not succeed: {seen} {outcome}".strip())
    # The submitter Job (named after the RayJob) outlives the cluster; a retried submitter has more
    # than one pod, so all its pods' logs are read.
    kubectl(["wait", "-n", namespace, f"job/{RAY_CHECK}", "--for=condition=Complete", "--timeout=5m"])
    logs = kubectl(["logs", "-n", namespace, "-l", f"{BATCH_JOB_NAME_LABEL}={RAY_CHECK}", "--tail=-1"])
    return check_ray(logs.stdout, target)
