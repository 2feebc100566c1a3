"""Kubeflow Trainer's acceptance check (`verify`, contributed through TrainerParts.checks):
torchrun-check, a TrainJob as the first tenant through the runtime a tenant uses, every rank
joined and NCCL (over EFA on an EFA group) summed their ones. It takes whole nodes, so verify runs
it at its turn, after the MPIJob and KubeRay's RayJob."""

from __future__ import annotations

import re
from typing import Any

from addons.trainer import DEFINITION, EFA_TORCH_PROJECT_IMAGE
from addons.trainer.launch import TRAINJOB_CHECK_MARKER, TRAINJOB_CHECK_SCRIPT, torchrun, train_job
from addons.trainer.runtimes import NCCL_DEBUG_INFO, runtime_name
from components.acceptance import AcceptanceCheck, CheckResult, CheckRun, MultiNodeSite, ValidationTarget, wait_for
from components.nccl_transport import efa_network_problem, nccl_transport, transport_summary
from profiles.models import PlatformConfig

TRAINJOB_KIND = "TrainJob"
TRAINJOB_CHECK = "torchrun-check"
# Up to two nodes: one where the group or the tenant's queue holds no more.
TRAINJOB_CHECK_MOST_NODES = 2


def trainjob_nodes(site: MultiNodeSite) -> int:
    return min(TRAINJOB_CHECK_MOST_NODES, site.job_nodes)


def trainjob_check(site: MultiNodeSite) -> dict[str, Any]:
    """A TrainJob as a tenant submits one: in the first tenant's namespace, without a queue name
    (Kueue's defaulting gives it the tenant's queue), on the platform's runtime for the checked
    group, with torchrun all-reducing a tensor of ones over NCCL across every GPU of its nodes."""
    target = site.target
    return train_job(
        TRAINJOB_CHECK,
        site.namespace,
        runtime=runtime_name(target.group),
        trainer={
            "numNodes": trainjob_nodes(site),
            # One rank per GPU, stated: torchrun's "auto" counts CPUs where CUDA does not start.
            "numProcPerNode": target.entry.gpu_count,
            "command": torchrun("check", TRAINJOB_CHECK_SCRIPT),
            # The lines that name the network NCCL chose: verify fails a run that asked for EFA
            # and got another (components/nccl_transport.py).
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


def trainjob_result_of(run: CheckRun, config: PlatformConfig, site: MultiNodeSite) -> CheckResult:
    """Run the TrainJob (after the MPIJob and the RayJob freed the nodes) and judge rank 0's line
    and every rank's network. Where the runtime's image is the build layer's and ECR does not have
    it yet, it fails at once, unapplied: its pods would wait in ImagePullBackOff until verify gives
    up, and no public image can stand in (one without aws-ofi-nccl runs NCCL over TCP)."""
    target, namespace = site.target, site.namespace
    if not site.job_nodes:
        return CheckResult(
            TRAINJOB_CHECK,
            False,
            f"no TrainJob can run: node group {target.group.name} runs no node, or tenant {namespace}'s queue "
            "holds none of it",
        )
    builds_image = DEFINITION.settings(config).torch_image is None and target.group.efa_enabled
    if builds_image and (missing := run.missing_image(EFA_TORCH_PROJECT_IMAGE)):
        return CheckResult(TRAINJOB_CHECK, False, missing)
    if failed := run.apply(TRAINJOB_CHECK):
        return failed
    job = f"{TRAINJOB_KIND.lower()}/{TRAINJOB_CHECK}"
    waited = wait_for(run.kubectl, namespace, job, "condition=Complete", run.timeout_minutes)
    logs = run.kubectl(["logs", "-n", namespace, "-l", f"{JOBSET_NAME_LABEL}={TRAINJOB_CHECK}", "--tail=-1"])
    if waited.returncode != 0:
        return CheckResult(TRAINJOB_CHECK, False, f"the TrainJob did not complete: {waited.stderr.strip()}")
    return check_trainjob(logs.stdout, target, trainjob_nodes(site) * target.entry.gpu_count)


def trainjob_checks(config: PlatformConfig, site: MultiNodeSite | None) -> tuple[AcceptanceCheck, ...]:
    """verify owes a TrainJob check where a tenant exists to submit it as and GPUs are the
    extended resource its runtime asks for (not DRA claims)."""
    if site is None or not config.workloads.tenants or site.target.dra:
        return ()
    return (
        AcceptanceCheck(
            name=TRAINJOB_CHECK,
            run=lambda run: trainjob_result_of(run, config, site),
            objects=(trainjob_check(site),) if site.job_nodes else (),
            whole_nodes=True,
            run_once_kinds=frozenset({TRAINJOB_KIND}),
        ),
    )
