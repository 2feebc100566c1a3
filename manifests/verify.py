"""Post-deploy acceptance gate: apply the validation workloads to a live cluster, wait, read
their output and fail with a clear reason when the platform does not perform as the catalog says.

The parsing is pure (unit-tested on recorded outputs); `run_checks` drives kubectl through a
small runner so it can be exercised without a cluster.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from addons.contributions import addon_checks
from components.acceptance import CheckResult, ValidationTarget, wait_for
from components.k8s.compute_domains import COMPUTE_DOMAIN_KIND
from components.k8s.mpi import MPIJOB_KIND
from manifests.checks.gpu_smoke import check_gpu_smoke
from manifests.checks.lustre_efa import LUSTRE_EFA_CHECK, check_lustre_efa, lustre_efa_check_applies
from manifests.checks.nccl import NCCL_JOB, nccl_result
from manifests.checks.repair_loop import AGENT_NAMESPACE, AGENT_SELECTOR, check_repair_loop
from manifests.checks.target import NAMESPACE, multi_node_site
from manifests.checks.topology import check_topology
from manifests.render import render
from operate.kubectl import Kubectl
from profiles.models import PlatformConfig
from profiles.versions import NCCL_TESTS_IMAGE

# The platform's own validation objects that run to completion and are judged by their output
# (an add-on's check names its own: AcceptanceCheck.run_once_kinds).
# A ComputeDomain is a job's own (components/k8s/compute_domains.py): each run of the job gets a new one.
RUN_ONCE_KINDS = ("Pod", MPIJOB_KIND, COMPUTE_DOMAIN_KIND)
# Deleted without waiting: the DRA driver's controller keeps its finalizer on a ComputeDomain until
# the domain's channel template is gone (components/k8s/compute_domains.py), for as long as that
# controller takes (`kubectl delete --wait` would wait up to a week, and with a stuck controller
# verify would hang). The check that applies it again waits for both, bounded
# (manifests/checks/compute_domain.py), after the single-node checks have run meanwhile.
DELETED_IN_THE_BACKGROUND = (COMPUTE_DOMAIN_KIND,)


@dataclass(frozen=True)
class ClusterCheckRun:
    """What a check may do against the live cluster (components/acceptance.py CheckRun): the
    validation files are the ones verify rendered, each applied by its check's name."""

    run_kubectl: Kubectl
    nodes_json: str
    timeout_minutes: int
    files: dict[str, list[dict[str, Any]]]
    sleeper: Callable[[float], None] = time.sleep
    image_missing: Callable[[str], str | None] = lambda _: None

    def missing_image(self, project_image: str) -> str | None:
        return self.image_missing(project_image)

    def kubectl(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        return self.run_kubectl(args)

    def sleep(self, seconds: float) -> None:
        self.sleeper(seconds)

    def apply(self, check: str, kinds: Collection[str] = ()) -> CheckResult | None:
        return self.apply_file(f"{check}.yaml", kinds)

    def apply_file(self, file_name: str, kinds: Collection[str] = ()) -> CheckResult | None:
        objects = [obj for obj in self.files[file_name] if not kinds or obj["kind"] in kinds]
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / file_name
            path.write_text(yaml.safe_dump_all(objects, sort_keys=False))
            applied = self.run_kubectl(["apply", "-f", str(path)])
        return (
            None
            if applied.returncode == 0
            else CheckResult(file_name, False, f"kubectl apply failed: {applied.stderr.strip()}")
        )

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
    missing_image: Callable[[str], str | None] = lambda _: None,
) -> list[CheckResult]:
    """`missing_image`: why the build layer's image of images/<name> is not in ECR yet (None: it
    is, or nobody can tell); a check whose pods run it fails at once, unapplied, instead of
    waiting out the timeout."""
    target = ValidationTarget.for_profile(config)
    site = multi_node_site(config, target)
    if target is None or site is None:
        return [CheckResult("profile", False, "the profile has no GPU node group to validate")]
    # First, read-only: the parts of the GPU repair loop on the nodes as they are now.
    nodes = kubectl(["get", "nodes", "-o", "json"])
    agents = kubectl(["get", "pods", "-n", AGENT_NAMESPACE, "-l", AGENT_SELECTOR, "-o", "json"])
    repair = check_repair_loop(nodes.stdout, agents.stdout)
    files = render(config, image=image, nccl_image=nccl_image)
    runner = ClusterCheckRun(
        run_kubectl=kubectl,
        nodes_json=nodes.stdout,
        timeout_minutes=timeout_minutes,
        files=files,
        sleeper=sleep,
        image_missing=missing_image,
    )
    checks = addon_checks(config, site)
    read_only = [repair, *(check.run(runner) for check in checks if not check.objects and not check.whole_nodes)]
    # A finished run's pods and jobs are still there: re-applying them changes nothing and the
    # waits below would read the previous run's logs. Remove them first, so every check is new.
    run_once = {f"{check.name}.yaml": check.run_once_kinds for check in checks}
    for file_name, objects in files.items():
        # Last first: a file lists an object after what it needs (the MPIJob after the ComputeDomain
        # whose channel its workers claim), so each object goes before what it needs.
        for obj in reversed(objects):
            if obj["kind"] in run_once.get(file_name, RUN_ONCE_KINDS):
                meta = obj["metadata"]
                wait = obj["kind"] not in DELETED_IN_THE_BACKGROUND
                kubectl(
                    [
                        "delete",
                        "-n",
                        meta["namespace"],
                        f"{obj['kind'].lower()}/{meta['name']}",
                        "--ignore-not-found",
                        f"--wait={'true' if wait else 'false'}",
                    ]
                )

    # The order is explicit: the single-node checks first, each on one GPU node, then the Lustre
    # check alone (it reads the node's EFA counters); the multi-node MPIJob only after they have
    # finished and freed their GPUs, so its workers can get whole nodes; then the add-ons' checks
    # in install order, those that take whole nodes (KubeRay's RayJob, Trainer's TrainJob) one at
    # a time, each applied at its turn. The multi-node checks run as the first tenant, through its
    # queue.
    at_their_turn = {
        f"{NCCL_JOB}.yaml",
        f"{LUSTRE_EFA_CHECK}.yaml",
        *(f"{check.name}.yaml" for check in checks if check.whole_nodes),
    }
    for file_name in files:
        if file_name not in at_their_turn and (failed := runner.apply_file(file_name)):
            return [*read_only, failed]

    results = list(read_only)
    done, log = runner.pod_log("gpu-smoke-test", NAMESPACE)
    results.append(check_gpu_smoke(log) if done else CheckResult("gpu-smoke-test", False, "pod did not succeed"))
    done, log = runner.pod_log("topology-check", NAMESPACE)
    results.append(check_topology(log, target) if done else CheckResult("topology-check", False, "pod did not succeed"))
    if image:
        done, log = runner.pod_log("container-test", NAMESPACE)
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
        failed = runner.apply(LUSTRE_EFA_CHECK)
        done, log = (False, "") if failed else runner.pod_log(LUSTRE_EFA_CHECK, tenant)
        results.append(
            failed
            or (
                check_lustre_efa(log)
                if done
                else CheckResult(LUSTRE_EFA_CHECK, False, f"pod did not succeed: {log[-500:]}")
            )
        )
    results.append(nccl_result(runner, site, kubectl))
    results += [check.run(runner) for check in checks if check.objects or check.whole_nodes]
    return results
