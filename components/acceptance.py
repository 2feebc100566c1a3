"""The vocabulary of `verify`'s acceptance checks, shared by the platform's own checks
(manifests/verify.py) and the ones an add-on contributes (`AddonParts.checks`): a check's result,
what a check may do against the live cluster, and the facts several checks read (which nodes are
GPU nodes, where pods run). Binding-free plain data."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from components.labels import GPU_TRAINING_ROLE, NODE_POOL_LABEL, ROLE_LABEL


@dataclass(frozen=True)
class CheckResult:
    name: str
    passed: bool
    detail: str


class CheckRun(Protocol):
    """What a check may do: run kubectl, wait for one of its validation pods and read its log, and wait."""

    def kubectl(self, args: list[str]) -> subprocess.CompletedProcess[str]: ...

    def pod_log(self, pod: str, namespace: str) -> tuple[bool, str]:
        """Whether the pod succeeded within verify's timeout, and its log."""
        ...

    @property
    def nodes_json(self) -> str:
        """`kubectl get nodes -o json` as verify read it when it started."""
        ...

    def sleep(self, seconds: float) -> None:
        """Wait between polls (the tests' runs do not)."""
        ...


@dataclass(frozen=True, kw_only=True)
class AcceptanceCheck:
    """One check `verify` runs."""

    name: str
    """Its name in verify's report (and its validation file's, `<name>.yaml`)."""
    run: Callable[[CheckRun], CheckResult]
    objects: tuple[dict[str, Any], ...] = ()
    """Validation objects `verify` (and `make manifests`) applies before the check runs; none: a
    read-only check, run first, against the cluster as it is."""


def gpu_node_names(nodes: list[dict[str, Any]]) -> list[str]:
    """GPU nodes as the platform labels them: managed GPU groups and Karpenter's GPU pool."""
    return sorted(
        node["metadata"]["name"]
        for node in nodes
        if node["metadata"].get("labels", {}).get(ROLE_LABEL) == GPU_TRAINING_ROLE
        or node["metadata"].get("labels", {}).get(NODE_POOL_LABEL) == "gpu"
    )


def running_on(pods_json: str) -> set[str]:
    """The nodes on which the listed pods (kubectl get pods -o json) are Running."""
    return {
        pod["spec"].get("nodeName")
        for pod in json.loads(pods_json or "{}").get("items", [])
        if pod.get("status", {}).get("phase") == "Running"
    }


def locked_down_container() -> dict[str, Any]:
    """The container security context every check pod runs with: no privilege escalation, no
    capability, a read-only root. A fresh dict each time, so the YAML carries no anchors."""
    return {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "readOnlyRootFilesystem": True}
