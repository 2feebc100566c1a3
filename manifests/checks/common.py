"""What verify's checks share: waiting for and polling a validation object, releasing a
multi-node job that failed, the result of a check that cannot run for want of nodes, and whether
a run on an EFA group used every EFA NIC."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable

from components.acceptance import CheckResult
from manifests.checks.target import NAMESPACE, ValidationTarget
from manifests.nccl_transport import efa_transport_problem, nccl_transport
from operate.kubectl import Kubectl

# How run_checks applies one of its validation files: None when kubectl took it, else the failure.
Apply = Callable[[str], CheckResult | None]


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


def efa_network_problem(log: str, target: ValidationTarget) -> str | None:
    """Why a run on an EFA group did not use every EFA NIC, if it did not (a group without EFA
    has only TCP between nodes: nothing to judge)."""
    if not target.efa_interfaces:
        return None
    return efa_transport_problem(
        nccl_transport(log), efa_interfaces=target.efa_interfaces, instance_type=target.entry.name
    )
