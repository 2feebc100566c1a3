"""The multi-node TrainJob check: torchrun-check through the runtime a tenant uses, every rank
joined and NCCL (over EFA on an EFA group) summed their ones."""

from __future__ import annotations

import re
from typing import Any

from addons.trainer import DEFINITION as TRAINER
from addons.trainer.runtimes import NCCL_DEBUG_INFO, runtime_name
from components.acceptance import CheckResult, ValidationTarget
from manifests.checks.common import Apply, efa_network_problem, wait_for
from manifests.checks.target import tenant_job_nodes
from manifests.launch import TRAINJOB_CHECK_MARKER, TRAINJOB_CHECK_SCRIPT, torchrun, train_job
from manifests.nccl_transport import nccl_transport, transport_summary
from operate.kubectl import Kubectl
from profiles.models import PlatformConfig

# Validation objects that run to completion and are judged by their output.
TRAINJOB_KIND = "TrainJob"


TRAINJOB_CHECK = "torchrun-check"


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


# Trainer runs a TrainJob as a JobSet of the same name; its pods carry this label.
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"


def trainjob_result(log: str) -> tuple[int, int, str] | None:
    """Rank 0's line of torchrun-check: (world size, all-reduce sum, backend), None if absent."""
    found = re.search(rf"{re.escape(TRAINJOB_CHECK_MARKER)}world=(\d+) sum=(\d+) backend=(\w+)", log)
    return (int(found.group(1)), int(found.group(2)), found.group(3)) if found else None


def check_trainjob(log: str, target: ValidationTarget, expected_ranks: int) -> CheckResult:
    """Rank 0's line: every rank of every node joined (world) and NCCL summed their ones (sum);
    and, on an EFA group, every rank's NCCL used EFA (the pods' NCCL_DEBUG=INFO lines): the sum
    comes out right over TCP sockets too, and TCP is what an image without aws-ofi-nccl gets."""
    found = trainjob_result(log)
    if found is None:
        return CheckResult(TRAINJOB_CHECK, False, "rank 0 printed no result (see the TrainJob's pods)")
    world, total, backend = found
    detail = f"torchrun: {world} ranks, all-reduce sum {total}"
    if not world == total == expected_ranks:
        return CheckResult(TRAINJOB_CHECK, False, f"{detail} (expected {expected_ranks})")
    if backend != "nccl":
        return CheckResult(
            TRAINJOB_CHECK, False, f"{detail}, but over {backend}, not NCCL: CUDA did not start in the runtime's image"
        )
    if problem := efa_network_problem(log, target):
        return CheckResult(TRAINJOB_CHECK, False, f"{detail}, but {problem}")
    return CheckResult(TRAINJOB_CHECK, True, f"{detail} over {transport_summary(nccl_transport(log))}")


def trainjob_results(
    config: PlatformConfig,
    target: ValidationTarget,
    files: dict[str, list[dict[str, Any]]],
    train_jobs: list[str],
    *,
    apply: Apply,
    kubectl: Kubectl,
    timeout_minutes: int,
    blocked: str | None = None,
) -> list[CheckResult]:
    """Run the TrainJob check (last: after the MPIJob freed the nodes) and judge rank 0's line
    and every rank's network; `blocked` says why it cannot start (it is not applied then)."""
    if blocked and train_jobs:
        return [CheckResult(TRAINJOB_CHECK, False, blocked)]
    results: list[CheckResult] = []
    if trainjob_check_applies(config, target) and not train_jobs:
        tenant, group = config.workloads.tenants[0].name, target.group.name
        results.append(
            CheckResult(
                TRAINJOB_CHECK,
                False,
                f"no TrainJob can run: node group {group} runs no node, or tenant {tenant}'s queue holds none of it",
            )
        )
    for file_name in train_jobs:
        (job,) = files[file_name]
        namespace = job["metadata"]["namespace"]
        if failed := apply(file_name):
            return [*results, failed]
        waited = wait_for(
            kubectl, namespace, f"{TRAINJOB_KIND.lower()}/{TRAINJOB_CHECK}", "condition=Complete", timeout_minutes
        )
        logs = kubectl(["logs", "-n", namespace, "-l", f"{JOBSET_NAME_LABEL}={TRAINJOB_CHECK}", "--tail=-1"])
        results.append(
            check_trainjob(logs.stdout, target, tenant_job_nodes(config, target) * target.entry.gpu_count)
            if waited.returncode == 0
            else CheckResult(TRAINJOB_CHECK, False, f"the TrainJob did not complete: {waited.stderr.strip()}")
        )
    return results
