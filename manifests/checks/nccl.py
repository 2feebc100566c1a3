"""The multi-node NCCL check: nccl-tests' all_reduce_perf as an MPIJob, judged from its results
table and the transport NCCL chose: EFA between nodes, or on a multi-node NVLink group (P6e-GB200,
one UltraServer) NVLink between nodes (NCCL's MNNVL), through the job's own ComputeDomain whose IMEX
channel every worker claims."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from components.acceptance import CheckResult, CheckRun, MultiNodeSite, ValidationTarget, release, wait_for
from components.k8s.check_pods import device_resources
from components.k8s.compute_domains import MNNVL_ENABLE, compute_domain, with_channel
from components.k8s.crds import MpiJob, MpiJobSpec, ObjectMeta, ReplicaSpec, RunPolicy
from components.k8s.efa_pods import EFA_ENV, shm_volume
from components.k8s.gpus import pod_claims
from components.k8s.mpi import MPIJOB_KIND, launcher_selector
from components.labels import GPU_TOLERATION, NODE_GROUP_LABEL, SYSTEM_NODES
from components.nccl_transport import (
    efa_network_problem,
    mnnvl_problem,
    mnnvl_summary,
    mnnvl_use,
    nccl_transport,
    transport_summary,
)
from manifests.checks.compute_domain import domain_ready, release_domain, start_domain
from manifests.launch import nccl_allreduce_launcher
from operate.kubectl import Kubectl

# One result row of nccl-tests: size count type redop root, then time algbw busbw #wrong out of
# place and the same in place.
_ROW = re.compile(
    r"^\s*(\d+)\s+(\d+)\s+(\w+)\s+(\w+)\s+(-?\d+)"
    r"\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\d+|N/A)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\d+|N/A)\s*$"
)


NCCL_JOB = "nccl-allreduce"


# The NCCL check proves EFA between nodes: on one node NCCL takes NVLink and never touches EFA.
NCCL_NODES = 2


def nccl_objects(target: ValidationTarget, image: str, namespace: str) -> list[dict[str, Any]]:
    """The check's objects: on a multi-node NVLink group the job's ComputeDomain first (its
    controller makes the channel template the workers claim), then the MPIJob."""
    domain = [compute_domain(namespace, NCCL_JOB, NCCL_NODES)] if target.entry.multi_node_nvlink else []
    return [*domain, nccl_mpijob(target, image, namespace)]


def nccl_mpijob(target: ValidationTarget, image: str, namespace: str) -> dict[str, Any]:
    """The all-reduce as a tenant writes it (docs/queues.md): no queue name (Kueue's defaulting gives
    it the namespace's queue), the launcher on CPU only, each worker a whole node. On a multi-node
    NVLink group each worker also claims the job's IMEX channel, and NCCL must use MNNVL."""
    gpus, nodes = target.entry.gpu_count, NCCL_NODES
    mnnvl = target.entry.multi_node_nvlink
    shm, shm_mount = shm_volume()
    launcher = {
        "spec": {
            "restartPolicy": "OnFailure",
            "nodeSelector": dict(SYSTEM_NODES),
            "containers": [
                {
                    "name": "launcher",
                    "image": image,
                    "command": nccl_allreduce_launcher(
                        nodes=nodes, gpus_per_node=gpus, env=[MNNVL_ENABLE] if mnnvl else []
                    ),
                    "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                }
            ],
        }
    }
    worker_spec: dict[str, Any] = {
        "nodeSelector": {NODE_GROUP_LABEL: target.group.name},
        "tolerations": [dict(GPU_TOLERATION)],
        "containers": [
            {
                "name": "worker",
                "image": image,
                "command": ["/usr/sbin/sshd", "-De"],
                "env": list(EFA_ENV),
                "resources": device_resources(target, gpus, all_efa=True),
                "volumeMounts": [shm_mount],
            }
        ],
        "volumes": [shm],
        **({"resourceClaims": pod_claims(gpus)} if target.dra else {}),
    }
    worker = {"spec": with_channel(worker_spec, NCCL_JOB) if mnnvl else worker_spec}
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
    if target.entry.multi_node_nvlink:
        return _check_mnnvl(name, log, rows)
    problem = efa_network_problem(log, target) or _table_problem(rows, log)
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
            f"(60% of its {target.entry.efa_bandwidth_gbps} Gbps of EFA)",
        )
    return CheckResult(
        name,
        True,
        f"bus bandwidth {busbw} GB/s at messages of 1 GiB and more over {transport_summary(nccl_transport(log))} "
        f"(threshold {minimum} GB/s)",
    )


def _check_mnnvl(name: str, log: str, rows: list[NcclRow]) -> CheckResult:
    """Two nodes of one UltraServer: NCCL must go between them over NVLink (MNNVL), not the network.
    The bus bandwidth is reported, not judged: no NVLink figure for P6e-GB200 was read from AWS or
    NVIDIA (docs/gb200.md), and a threshold made up here would pass or fail on nothing."""
    use = mnnvl_use(log)
    problem = mnnvl_problem(use) or _table_problem(rows, log)
    if problem:
        return CheckResult(name, False, problem)
    busbw = max(row.busbw_out_of_place for row in rows if row.size_bytes >= LARGE_MESSAGE_BYTES)
    return CheckResult(
        name,
        True,
        f"bus bandwidth {busbw} GB/s at messages of 1 GiB and more over {mnnvl_summary(use)} "
        "(no threshold for NVLink: docs/gb200.md)",
    )


def nccl_result(run: CheckRun, site: MultiNodeSite, kubectl: Kubectl) -> CheckResult:
    """Run the NCCL MPIJob (as the first tenant, where there is one) and judge its launcher's log. On
    a multi-node NVLink group the job's ComputeDomain goes first, and the run is judged only once
    the domain has a ready IMEX daemon on each of the job's nodes (manifests/checks/compute_domain.py)."""
    if site.job_nodes < NCCL_NODES:
        return site.too_few_nodes(NCCL_JOB, "NCCL job", NCCL_NODES)
    namespace, mnnvl = site.namespace, site.target.entry.multi_node_nvlink
    if mnnvl and (failed := start_domain(run, namespace, NCCL_JOB, NCCL_JOB)):
        return failed
    if failed := run.apply(NCCL_JOB, kinds=(MPIJOB_KIND,)):
        if mnnvl:
            release_domain(run, namespace, NCCL_JOB)
        return failed
    job = f"{MPIJOB_KIND.lower()}/{NCCL_JOB}"
    if mnnvl and (failed := domain_ready(run, namespace, NCCL_JOB, NCCL_JOB, NCCL_NODES)):
        _release(run, namespace, mnnvl)
        return failed
    waited = wait_for(kubectl, namespace, job, "condition=Succeeded", run.timeout_minutes)
    logs = kubectl(["logs", "-n", namespace, "-l", launcher_selector(NCCL_JOB), "--tail=-1"])
    if waited.returncode != 0:
        _release(run, namespace, mnnvl)
        return CheckResult(NCCL_JOB, False, f"the MPIJob in {namespace} did not succeed: {waited.stderr.strip()}")
    return check_nccl(logs.stdout, site.target)


def _release(run: CheckRun, namespace: str, mnnvl: bool) -> None:
    """A failed run's job, and its ComputeDomain where it has one: the job first, its workers hold
    the domain's channel."""
    release(run, namespace, f"{MPIJOB_KIND.lower()}/{NCCL_JOB}")
    if mnnvl:
        release_domain(run, namespace, NCCL_JOB)
