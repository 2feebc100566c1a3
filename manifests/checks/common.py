"""What verify's own checks share beyond components/acceptance.py: waiting for a validation
object, and whether a run on an EFA group used every EFA NIC."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

from components.acceptance import CheckResult, ValidationTarget
from manifests.nccl_transport import efa_transport_problem, nccl_transport
from operate.kubectl import Kubectl

# How run_checks applies one of its validation files: None when kubectl took it, else the failure.
Apply = Callable[[str], CheckResult | None]


def wait_for(
    kubectl: Kubectl, namespace: str, obj: str, until: str, timeout_minutes: int
) -> subprocess.CompletedProcess[str]:
    """`kubectl wait` for one object (kind/name) to reach `until` (kubectl's --for), at most the timeout."""
    return kubectl(["wait", "-n", namespace, obj, f"--for={until}", f"--timeout={timeout_minutes}m"])


def efa_network_problem(log: str, target: ValidationTarget) -> str | None:
    """Why a run on an EFA group did not use every EFA NIC, if it did not (a group without EFA
    has only TCP between nodes: nothing to judge)."""
    if not target.efa_interfaces:
        return None
    return efa_transport_problem(
        nccl_transport(log), efa_interfaces=target.efa_interfaces, instance_type=target.entry.name
    )
