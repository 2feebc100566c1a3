"""Post-deploy acceptance gate: apply the validation workloads to a live cluster, wait, read
their output and fail with a clear reason when the platform does not perform as the catalog says.

The parsing is pure (unit-tested on recorded outputs); `run_checks` drives kubectl through a
small runner so it can be exercised without a cluster.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from addons.contributions import addon_checks
from components.acceptance import CheckResult
from components.k8s.mpi import MPIJOB_KIND
from manifests.checks.common import wait_for
from manifests.checks.gpu_smoke import check_gpu_smoke
from manifests.checks.lustre_efa import LUSTRE_EFA_CHECK, check_lustre_efa, lustre_efa_check_applies
from manifests.checks.nccl import nccl_result
from manifests.checks.ray import RAYJOB_KIND, ray_check_applies, ray_result
from manifests.checks.repair_loop import AGENT_NAMESPACE, AGENT_SELECTOR, check_repair_loop
from manifests.checks.target import NAMESPACE, ValidationTarget
from manifests.checks.topology import check_topology
from manifests.checks.trainjob import TRAINJOB_KIND, trainjob_results
from manifests.render import render
from operate.kubectl import Kubectl
from profiles.models import PlatformConfig
from profiles.versions import NCCL_TESTS_IMAGE

# Validation objects that run to completion and are judged by their output.
RUN_ONCE_KINDS = ("Pod", MPIJOB_KIND, RAYJOB_KIND, TRAINJOB_KIND)


@dataclass(frozen=True)
class ClusterCheckRun:
    """What an add-on's check may do against the live cluster (components/acceptance.py CheckRun)."""

    run_kubectl: Kubectl
    nodes_json: str
    timeout_minutes: int
    sleeper: Callable[[float], None] = time.sleep

    def kubectl(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        return self.run_kubectl(args)

    def sleep(self, seconds: float) -> None:
        self.sleeper(seconds)

    def pod_log(self, pod: str, namespace: str) -> tuple[bool, str]:
        waited = wait_for(
            self.run_kubectl, namespace, f"pod/{pod}", "jsonpath={.status.phase}=Succeeded", self.timeout_minutes
        )
        return waited.returncode == 0, self.run_kubectl(["logs", "-n", namespace, f"pod/{pod}"]).stdout


def run_checks(
    config: PlatformConfig,
    *,
    kubectl: Kubectl,
    image: str | None = None,
    nccl_image: str = NCCL_TESTS_IMAGE,
    timeout_minutes: int = 30,
    sleep: Callable[[float], None] = time.sleep,
    trainjob_blocked: str | None = None,
) -> list[CheckResult]:
    """`trainjob_blocked`: why the TrainJob check cannot start (its runtime's image is not in ECR
    yet): it fails with that reason at once, unapplied, instead of waiting out the timeout."""
    target = ValidationTarget.for_profile(config)
    if target is None:
        return [CheckResult("profile", False, "the profile has no GPU node group to validate")]
    # First, read-only: the parts of the GPU repair loop on the nodes as they are now.
    nodes = kubectl(["get", "nodes", "-o", "json"])
    agents = kubectl(["get", "pods", "-n", AGENT_NAMESPACE, "-l", AGENT_SELECTOR, "-o", "json"])
    repair = check_repair_loop(nodes.stdout, agents.stdout)
    runner = ClusterCheckRun(
        run_kubectl=kubectl, nodes_json=nodes.stdout, timeout_minutes=timeout_minutes, sleeper=sleep
    )
    checks = addon_checks(config)
    read_only = [repair, *(check.run(runner) for check in checks if not check.objects)]
    files = render(config, image=image, nccl_image=nccl_image)
    # A finished run's pods and MPIJob are still there: re-applying them changes nothing and the
    # waits below would read the previous run's logs. Remove them first, so every check is new.
    for objects in files.values():
        for obj in objects:
            if obj["kind"] in RUN_ONCE_KINDS:
                meta = obj["metadata"]
                kubectl(
                    [
                        "delete",
                        "-n",
                        meta["namespace"],
                        f"{obj['kind'].lower()}/{meta['name']}",
                        "--ignore-not-found",
                        "--wait=true",
                    ]
                )

    # The order is explicit: the single-node checks first, each on one GPU node, then the Lustre
    # check alone (it reads the node's EFA counters); the multi-node
    # MPIJob only after they have finished and freed their GPUs, so its workers can get whole nodes;
    # then the RayJob once the MPIJob has freed them, and the TrainJob last, once the RayJob's
    # cluster is shut down. The three multi-node checks run as the first tenant, through its queue.
    def holding(kind: str) -> set[str]:
        return {name for name, objects in files.items() if any(o["kind"] == kind for o in objects)}

    multi_node, train_jobs, ray_jobs = holding(MPIJOB_KIND), holding(TRAINJOB_KIND), holding(RAYJOB_KIND)
    alone = {f"{LUSTRE_EFA_CHECK}.yaml"} & set(files)

    def apply(file_name: str) -> CheckResult | None:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / file_name
            path.write_text(yaml.safe_dump_all(files[file_name], sort_keys=False))
            applied = kubectl(["apply", "-f", str(path)])
        return (
            None
            if applied.returncode == 0
            else CheckResult(file_name, False, f"kubectl apply failed: {applied.stderr.strip()}")
        )

    for file_name in files:
        if file_name not in multi_node | train_jobs | ray_jobs | alone and (failed := apply(file_name)):
            return [*read_only, failed]

    def pod_log(pod: str, namespace: str = NAMESPACE) -> tuple[bool, str]:
        return runner.pod_log(pod, namespace)

    results = list(read_only)
    done, log = pod_log("gpu-smoke-test")
    results.append(check_gpu_smoke(log) if done else CheckResult("gpu-smoke-test", False, "pod did not succeed"))
    done, log = pod_log("topology-check")
    results.append(check_topology(log, target) if done else CheckResult("topology-check", False, "pod did not succeed"))
    if image:
        done, log = pod_log("container-test")
        results.append(
            CheckResult(
                "container-test",
                done and "container-ok" in log,
                "the reference image ran" if done else "the reference image did not run",
            )
        )
    if lustre_efa_check_applies(config, target):
        # Alone on the node's EFA devices: after the single-node checks, before the multi-node jobs.
        tenant = config.workloads.tenants[0].name
        failed = apply(f"{LUSTRE_EFA_CHECK}.yaml")
        done, log = (False, "") if failed else pod_log(LUSTRE_EFA_CHECK, tenant)
        results.append(
            failed
            or (
                check_lustre_efa(log)
                if done
                else CheckResult(LUSTRE_EFA_CHECK, False, f"pod did not succeed: {log[-500:]}")
            )
        )
    results.append(
        nccl_result(
            config, target, files, sorted(multi_node), apply=apply, kubectl=kubectl, timeout_minutes=timeout_minutes
        )
    )
    if ray_check_applies(config, target):
        results.append(ray_result(config, target, files, apply=apply, kubectl=kubectl, timeout_minutes=timeout_minutes))
    results += [check.run(runner) for check in checks if check.objects]
    results += trainjob_results(
        config,
        target,
        files,
        sorted(train_jobs),
        apply=apply,
        kubectl=kubectl,
        timeout_minutes=timeout_minutes,
        blocked=trainjob_blocked,
    )
    return results
