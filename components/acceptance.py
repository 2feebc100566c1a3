"""The vocabulary of `verify`'s acceptance checks, shared by the platform's own checks
(manifests/verify.py) and the ones an add-on contributes (`AddonParts.checks`): a check's result,
what a check may do against the live cluster, and the facts several checks read (which nodes are
GPU nodes, where pods run), the GPU node group the checks run on and where a multi-node check
runs, and the waits a check makes. Binding-free plain data."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, Protocol

from components.labels import GPU_TRAINING_ROLE, NODE_POOL_LABEL, ROLE_LABEL
from profiles.catalog import GpuInstanceType
from profiles.gpus import dra_mode
from profiles.models import VALIDATION_NAMESPACE, PlatformConfig
from profiles.node_groups import GpuNodeGroupConfig


@dataclass(frozen=True)
class CheckResult:
    name: str
    passed: bool
    detail: str


@dataclass(frozen=True)
class ValidationTarget:
    """The managed GPU node group the checks run on, with its catalog facts."""

    group: GpuNodeGroupConfig
    entry: GpuInstanceType
    dra: bool = False  # GPUs through DRA claims (GPU Operator DRA mode), not the extended resource

    @classmethod
    def for_profile(cls, config: PlatformConfig) -> ValidationTarget | None:
        groups = config.cluster.gpu_node_groups
        chosen = next((g for g in groups if g.efa_enabled), groups[0] if groups else None)
        return cls(chosen, chosen.catalog_entry, dra_mode(config)) if chosen else None

    @property
    def efa_interfaces(self) -> int:
        return self.entry.efa_interfaces if self.group.efa_enabled else 0


@dataclass(frozen=True)
class MultiNodeSite:
    """Where `verify`'s multi-node checks run and how many of the target's nodes a job there gets."""

    target: ValidationTarget
    namespace: str
    """The first tenant's namespace (what a tenant's first job meets: its quota, queue and
    policies), or the validation namespace where no tenant could run the checks."""
    job_nodes: int
    """How many of the group's nodes one job in `namespace` can hold at once (the group's size,
    the tenant's GPU quota and what its queue admits of the group)."""

    @property
    def as_tenant(self) -> bool:
        return self.namespace != VALIDATION_NAMESPACE

    def too_few_nodes(self, check: str, job: str, wanted: int) -> CheckResult:
        """The result of a multi-node check that cannot run: fewer nodes than it needs in the
        group, or in what the namespace it runs in (a tenant's quota and queue) may hold of them."""
        group = self.target.group
        where = f"tenant {self.namespace}'s quota and queue" if self.as_tenant else "the profile"
        return CheckResult(
            check,
            False,
            f"no {wanted}-node {job} can run: node group {group.name} runs {group.desired_size} node(s) "
            f"and {where} holds fewer than {wanted} of them",
        )


class CheckRun(Protocol):
    """What a check may do: run kubectl, apply its validation objects, wait for one of its
    validation pods and read its log, and wait."""

    def kubectl(self, args: list[str]) -> subprocess.CompletedProcess[str]: ...

    @property
    def timeout_minutes(self) -> int:
        """How long verify waits for a check's objects to finish."""
        ...

    def missing_image(self, project_image: str) -> str | None:
        """Why the build layer's image of images/<project_image> cannot be pulled yet (ECR has no
        such tag: its build has not run), or None when it can or nobody can tell."""
        ...

    def apply(self, check: str, kinds: Collection[str] = ()) -> CheckResult | None:
        """Apply the named check's validation objects (a check that takes whole nodes, applied at
        its turn), only those of `kinds` where given (a check that applies its objects in steps):
        None when kubectl took them, else the failed result."""
        ...

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
    whole_nodes: bool = False
    """Its objects take whole GPU nodes: verify does not apply them with the others but leaves it
    to the check's run (`CheckRun.apply`), which verify calls after the platform's multi-node
    MPIJob has freed the nodes, one such check at a time."""
    run_once_kinds: frozenset[str] = frozenset({"Pod"})
    """Kinds of its objects that run to completion: verify deletes the previous run's first, so
    that the check judges a new run."""


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


# How often a check polls an object's state while it waits.
POLL_SECONDS = 15


def poll_until(
    run: CheckRun, namespace: str, obj: str, *, jsonpath: str, done: set[str], timeout_minutes: int
) -> str | None:
    """Read one field of an object until it holds one of `done` (returned), at most the timeout
    (None). For a field with more than one end state, which `kubectl wait` cannot wait for, or an
    object that does not exist yet (kubectl get then prints nothing). The timeout counts the run's
    sleeps between reads, so a test's run, which sleeps on a model's clock, times out too."""
    slept = 0
    while True:
        value = run.kubectl(["get", "-n", namespace, obj, "-o", f"jsonpath={jsonpath}"]).stdout.strip()
        if value in done:
            return value
        if slept >= timeout_minutes * 60:
            return None
        run.sleep(POLL_SECONDS)
        slept += POLL_SECONDS


def release(run: CheckRun, namespace: str, obj: str) -> None:
    """Delete a multi-node job that failed or timed out: its pods would keep the GPU nodes (its
    own deadline is longer than verify's wait) and the next check would wait for them."""
    run.kubectl(["delete", "-n", namespace, obj, "--ignore-not-found", "--wait=false"])


def wait_for(
    kubectl: Callable[[list[str]], subprocess.CompletedProcess[str]],
    namespace: str,
    obj: str,
    until: str,
    timeout_minutes: int,
) -> subprocess.CompletedProcess[str]:
    """`kubectl wait` for one object (kind/name) to reach `until` (kubectl's --for), at most the timeout."""
    return kubectl(["wait", "-n", namespace, obj, f"--for={until}", f"--timeout={timeout_minutes}m"])
