"""Post-deploy acceptance gate: apply the validation workloads to a live cluster, wait, read
their output and fail with a clear reason when the platform does not perform as the catalog says.

The parsing is pure (unit-tested on recorded outputs); `run_checks` drives kubectl through a
small runner so it can be exercised without a cluster.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from addons.contributions import addon_checks
from components.acceptance import CheckResult, gpu_node_names, running_on
from components.k8s.mpi import MPIJOB_KIND, launcher_selector
from manifests.launch import TRAINJOB_CHECK_MARKER
from manifests.nccl_transport import efa_transport_problem, nccl_transport, transport_summary
from manifests.render import (
    LUSTRE_EFA_CHECK,
    LUSTRE_EFA_CHECK_MARKER,
    NAMESPACE,
    NCCL_JOB,
    NCCL_NODES,
    RAY_CHECK,
    RAY_CHECK_MARKER,
    RAY_CHECK_NODES,
    TRAINJOB_CHECK,
    ValidationTarget,
    lustre_efa_check_applies,
    ray_check_applies,
    render,
    tenant_check_namespace,
    tenant_job_nodes,
    trainjob_check_applies,
)
from operate.kubectl import Kubectl
from profiles.models import PlatformConfig
from profiles.versions import NCCL_TESTS_IMAGE

# Validation objects that run to completion and are judged by their output.
TRAINJOB_KIND = "TrainJob"
RAYJOB_KIND = "RayJob"
RUN_ONCE_KINDS = ("Pod", MPIJOB_KIND, RAYJOB_KIND, TRAINJOB_KIND)
# Trainer runs a TrainJob as a JobSet of the same name; its pods carry this label.
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"


# The repair loop's parts on GPU nodes: the EKS node monitoring agent (the EKS add-on's DaemonSet,
# labelled by its chart, aws/eks-node-monitoring-agent charts/.../_helpers.tpl at v1.7.0) runs on
# each, and each carries the condition it sets on NVIDIA nodes (cmd/eks-node-monitoring-agent/
# main.go: AcceleratedHardwareReady, True with reason NvidiaGPUIsReady once NVIDIA hardware is
# seen), which EKS node repair acts on. The agent turns it False for a fault, or with reason
# DCGMError when it cannot reach the DCGM host engine: either fails this check by name.
REPAIR_CHECK = "repair-loop"
AGENT_NAMESPACE = "kube-system"
AGENT_SELECTOR = "app.kubernetes.io/name=eks-node-monitoring-agent"
REPAIR_CONDITION = "AcceleratedHardwareReady"


def check_repair_loop(nodes_json: str, agent_pods_json: str) -> CheckResult:
    nodes = json.loads(nodes_json or "{}").get("items", [])
    gpu_nodes = gpu_node_names(nodes)
    if not gpu_nodes:
        return CheckResult(REPAIR_CHECK, False, "no GPU node is running: nothing can be checked")
    agents = running_on(agent_pods_json)
    problems = []
    for node in nodes:
        name = node["metadata"]["name"]
        if name not in gpu_nodes:
            continue
        if name not in agents:
            problems.append(f"{name}: no running node monitoring agent")
        condition = next((c for c in node["status"].get("conditions", []) if c["type"] == REPAIR_CONDITION), None)
        if condition is None:
            problems.append(f"{name}: no {REPAIR_CONDITION} condition (EKS would not repair a GPU fault)")
        elif condition["status"] != "True":
            problems.append(f"{name}: {REPAIR_CONDITION} is {condition['status']} ({condition.get('reason', '')})")
    if problems:
        return CheckResult(REPAIR_CHECK, False, "; ".join(problems))
    return CheckResult(REPAIR_CHECK, True, f"{len(gpu_nodes)} GPU node(s) monitored and reporting {REPAIR_CONDITION}")


def check_gpu_smoke(log: str) -> CheckResult:
    gpus = re.findall(r"^GPU \d+: .+\(UUID: GPU-[0-9a-f-]+\)", log, flags=re.MULTILINE)
    if not gpus:
        return CheckResult("gpu-smoke-test", False, "nvidia-smi listed no GPU: is the device plugin running?")
    return CheckResult("gpu-smoke-test", True, f"nvidia-smi sees {len(gpus)} GPU(s)")


def efa_devices(fi_info_log: str) -> set[str]:
    """Distinct EFA domains that libfabric reports (one per EFA device)."""
    return set(re.findall(r"^\s*domain:\s*(\S+)", fi_info_log, flags=re.MULTILINE))


def check_topology(log: str, target: ValidationTarget) -> CheckResult:
    expected = target.efa_interfaces
    seen = len(efa_devices(log))
    gpus = len(re.findall(r"^GPU\d+\s", log, flags=re.MULTILINE))
    if gpus < target.entry.gpu_count:
        return CheckResult(
            "topology-check",
            False,
            f"GPUs per node: nvidia-smi topo shows {gpus}, the catalog says {target.entry.gpu_count} "
            f"for {target.entry.name}",
        )
    if seen < expected:
        return CheckResult(
            "topology-check",
            False,
            f"EFA devices per node: fi_info shows {seen}, the catalog says {expected} for "
            f"{target.entry.name}: check the launch template interfaces and the EFA device plugin",
        )
    return CheckResult("topology-check", True, f"{gpus} GPUs and {seen} EFA devices on the node")


# One result row of nccl-tests: size count type redop root, then time algbw busbw #wrong out of
# place and the same in place.
_ROW = re.compile(
    r"^\s*(\d+)\s+(\d+)\s+(\w+)\s+(\w+)\s+(-?\d+)"
    r"\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\d+|N/A)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\d+|N/A)\s*$"
)
# Bus bandwidth is judged where the fabric, not latency, sets it: messages of 1 GiB and more.
LARGE_MESSAGE_BYTES = 1 << 30


@dataclass(frozen=True)
class NcclRow:
    size_bytes: int
    busbw_out_of_place: float
    busbw_in_place: float
    wrong: int


def nccl_rows(log: str) -> list[NcclRow]:
    """The result table of an nccl-tests run (all_reduce_perf and friends)."""
    rows = []
    for line in log.splitlines():
        match = _ROW.match(line)
        if match:
            wrong = sum(int(w) for w in (match.group(9), match.group(13)) if w != "N/A")
            rows.append(NcclRow(int(match.group(1)), float(match.group(8)), float(match.group(12)), wrong))
    return rows


def _network_problem(log: str, target: ValidationTarget) -> str | None:
    """Why a run on an EFA group did not use every EFA NIC, if it did not (a group without EFA
    has only TCP between nodes: nothing to judge)."""
    if not target.efa_interfaces:
        return None
    return efa_transport_problem(
        nccl_transport(log), efa_interfaces=target.efa_interfaces, instance_type=target.entry.name
    )


def _table_problem(rows: list[NcclRow], log: str) -> str | None:
    if not rows:
        return "no nccl-tests result rows: the all-reduce did not run to the end"
    if any(row.wrong for row in rows) or "# Out of bounds values : 0 OK" not in log:
        return "nccl-tests reported wrong results (#wrong or out-of-bounds values)"
    if rows[-1].size_bytes < LARGE_MESSAGE_BYTES:
        return (
            f"the sweep stopped at {rows[-1].size_bytes} bytes: run it to at least {LARGE_MESSAGE_BYTES} "
            "bytes (-e 2G) to measure the fabric"
        )
    return None


def check_nccl(log: str, target: ValidationTarget) -> CheckResult:
    """Judge an nccl-tests all_reduce_perf log. The '# Avg bus bandwidth' line averages the whole
    sweep, where small latency-bound messages dominate, so the gate reads the results table and
    judges the out-of-place bus bandwidth at the large messages against the instance's threshold."""
    name = "nccl-allreduce"
    rows = nccl_rows(log)
    problem = _network_problem(log, target) or _table_problem(rows, log)
    if problem:
        return CheckResult(name, False, problem)
    large = [row for row in rows if row.size_bytes >= LARGE_MESSAGE_BYTES]
    busbw = max(row.busbw_out_of_place for row in large)
    minimum = target.entry.nccl_min_busbw_gbytes_per_s
    if busbw < minimum:
        return CheckResult(
            name,
            False,
            f"bus bandwidth at messages of 1 GiB and more is {busbw} GB/s, below "
            f"{minimum} GB/s, the threshold for {target.entry.name} "
            f"(60% of {target.entry.network_gbps} Gbps)",
        )
    return CheckResult(
        name,
        True,
        f"bus bandwidth {busbw} GB/s at messages of 1 GiB and more over {transport_summary(nccl_transport(log))} "
        f"(threshold {minimum} GB/s)",
    )


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


def check_lustre_efa(log: str) -> CheckResult:
    """The Lustre check's line: the node has EFA devices, and they moved at least half the bytes the
    direct I/O sent through the file system (2x its size: written, then read back). Over LNet's
    tcp network they move next to nothing."""
    found = re.search(rf"{re.escape(LUSTRE_EFA_CHECK_MARKER)}devices=(\d+) moved_bytes=(\d+) efa_bytes=(-?\d+)", log)
    if not found:
        return CheckResult(LUSTRE_EFA_CHECK, False, "the check printed no result (see the pod's log)")
    devices, moved, over_efa = (int(group) for group in found.groups())
    if devices == 0:
        return CheckResult(LUSTRE_EFA_CHECK, False, "the node shows no EFA device: Lustre cannot use EFA there")
    mib = moved >> 20
    if over_efa * 2 < moved:
        return CheckResult(
            LUSTRE_EFA_CHECK,
            False,
            f"Lustre traffic did not use EFA: the node's EFA devices moved {over_efa >> 20} MiB while "
            f"{mib} MiB went through the file system (LNet is on tcp; see `lnetctl net show` on the node)",
        )
    return CheckResult(
        LUSTRE_EFA_CHECK, True, f"{mib} MiB of direct I/O to FSx moved {over_efa >> 20} MiB over {devices} EFA devices"
    )


# The label the Job controller puts on a Job's pods.
BATCH_JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
POLL_SECONDS = 15


def poll_until(
    kubectl: Kubectl, namespace: str, obj: str, *, jsonpath: str, done: set[str], timeout_minutes: int
) -> str | None:
    """Read one field of an object until it holds one of `done` (returned), at most the timeout
    (None). For a field with more than one end state, which `kubectl wait` cannot wait for."""
    deadline = time.monotonic() + timeout_minutes * 60
    while True:
        value = kubectl(["get", "-n", namespace, obj, "-o", f"jsonpath={jsonpath}"]).stdout.strip()
        if value in done:
            return value
        if time.monotonic() >= deadline:
            return None
        time.sleep(POLL_SECONDS)


def release(kubectl: Kubectl, namespace: str, obj: str) -> None:
    """Delete a multi-node job that failed or timed out: its pods would keep the GPU nodes (its
    own deadline is longer than verify's wait) and the next check would wait for them."""
    kubectl(["delete", "-n", namespace, obj, "--ignore-not-found", "--wait=false"])


def wait_for(
    kubectl: Kubectl, namespace: str, obj: str, until: str, timeout_minutes: int
) -> subprocess.CompletedProcess[str]:
    """`kubectl wait` for one object (kind/name) to reach `until` (kubectl's --for), at most the timeout."""
    return kubectl(["wait", "-n", namespace, obj, f"--for={until}", f"--timeout={timeout_minutes}m"])


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
    if problem := _network_problem(log, target):
        return CheckResult(TRAINJOB_CHECK, False, f"{detail}, but {problem}")
    return CheckResult(TRAINJOB_CHECK, True, f"{detail} over {transport_summary(nccl_transport(log))}")


def too_few_nodes(check: str, job: str, wanted: int, target: ValidationTarget, namespace: str) -> CheckResult:
    """A multi-node check that cannot run: fewer nodes than it needs in the group, or in what the
    namespace it runs in (a tenant's quota and queue) may hold of them."""
    where = f"tenant {namespace}'s quota and queue" if namespace != NAMESPACE else "the profile"
    return CheckResult(
        check,
        False,
        f"no {wanted}-node {job} can run: node group {target.group.name} runs {target.group.desired_size} node(s) "
        f"and {where} holds fewer than {wanted} of them",
    )


def _nccl_result(
    config: PlatformConfig,
    target: ValidationTarget,
    files: dict[str, list[dict[str, Any]]],
    multi_node: list[str],
    *,
    apply: Callable[[str], CheckResult | None],
    kubectl: Kubectl,
    timeout_minutes: int,
) -> CheckResult:
    """Run the NCCL MPIJob (as the first tenant, where there is one) and judge its launcher's log."""
    namespace = tenant_check_namespace(config, target)
    if not multi_node:
        return too_few_nodes(NCCL_JOB, "NCCL job", NCCL_NODES, target, namespace)
    for file_name in multi_node:
        if failed := apply(file_name):
            return failed
    waited = wait_for(kubectl, namespace, f"{MPIJOB_KIND.lower()}/{NCCL_JOB}", "condition=Succeeded", timeout_minutes)
    logs = kubectl(["logs", "-n", namespace, "-l", launcher_selector(NCCL_JOB), "--tail=-1"])
    if waited.returncode != 0:
        release(kubectl, namespace, f"{MPIJOB_KIND.lower()}/{NCCL_JOB}")
        return CheckResult(NCCL_JOB, False, f"the MPIJob in {namespace} did not succeed: {waited.stderr.strip()}")
    return check_nccl(logs.stdout, target)


def _ray_result(
    config: PlatformConfig,
    target: ValidationTarget,
    files: dict[str, list[dict[str, Any]]],
    *,
    apply: Callable[[str], CheckResult | None],
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


def _trainjob_results(
    config: PlatformConfig,
    target: ValidationTarget,
    files: dict[str, list[dict[str, Any]]],
    train_jobs: list[str],
    *,
    apply: Callable[[str], CheckResult | None],
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
        _nccl_result(
            config, target, files, sorted(multi_node), apply=apply, kubectl=kubectl, timeout_minutes=timeout_minutes
        )
    )
    if ray_check_applies(config, target):
        results.append(
            _ray_result(config, target, files, apply=apply, kubectl=kubectl, timeout_minutes=timeout_minutes)
        )
    results += [check.run(runner) for check in checks if check.objects]
    results += _trainjob_results(
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
