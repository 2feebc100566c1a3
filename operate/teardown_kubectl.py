"""The teardown's kubectl primitives (operate/cleanup.py's steps build on them): list, delete and
wait out objects, with the teardown's clock and its record of what it changed, and the honest
account of a cluster that stops answering mid-way."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from components.k8s.namespaces import NAMESPACE_DELETE_TIMEOUT_MINUTES
from operate.cluster_access import ClusterAccessError
from operate.kubectl import NO_SUCH_KIND, Kubectl
from operate.layers import TeardownStuck

# Pods: the longest grace period of those waited for, plus a margin for the garbage collector to
# reach them and the kubelet to stop them, at most as long as Terraform waits for a namespace
# (whose deletion waits for the same pods' grace periods).
PODS_GONE_MARGIN_SECONDS = 5 * 60
PODS_GONE_MAX_SECONDS = NAMESPACE_DELETE_TIMEOUT_MINUTES * 60
DEFAULT_GRACE_SECONDS = 30  # a pod's terminationGracePeriodSeconds when it sets none
POLL_SECONDS = 10
RESUME = "then run the destroy again: it resumes here."

Clock = Callable[[], float]
Sleep = Callable[[float], None]


@dataclass(kw_only=True)
class Waiter:
    """The clock of the teardown's waits (tests pass a simulated one), and what it changed so far."""

    clock: Clock = time.monotonic
    sleep: Sleep = time.sleep
    poll_seconds: float = POLL_SECONDS
    deleted: list[str] = field(default_factory=list)
    """What the clean-up deleted or marked for deletion, as kind/namespace/name."""
    held: list[str] = field(default_factory=list)
    """The ClusterQueues it set to HoldAndDrain."""


class KubectlTimedOut(ClusterAccessError):
    """kubectl did not finish in its time (operate/kubectl.py): what the call did is not known."""


def answering(run: Kubectl) -> Kubectl:
    """`run`, with a kubectl that hangs past its timeout as a KubectlTimedOut, not a traceback."""

    def bounded(args: list[str]) -> subprocess.CompletedProcess[str]:
        try:
            return run(args)
        except subprocess.TimeoutExpired as error:
            raise KubectlTimedOut(f"kubectl {' '.join(args)} did not answer within {error.timeout:.0f} s") from error

    return bounded


def stopped_honestly(error: ClusterAccessError, waiter: Waiter) -> Exception:
    """What to raise when the cluster stops answering mid-way. Nothing deleted yet: the error
    itself (the destroy stops "before deleting anything"), noting the queues it held. Something
    deleted: a TeardownStuck that names it, since running the destroy again resumes."""
    if not waiter.deleted:
        if not waiter.held:
            return error
        return ClusterAccessError(
            f"{error} (ClusterQueues {', '.join(waiter.held)} are set to HoldAndDrain: they admit nothing new and "
            "Kueue evicts what they admitted)"
        )
    return TeardownStuck(
        "Fix: restore access to the cluster (the destroy checks that it answers, through the profile's "
        f"kubeconfig); {RESUME}",
        f"the clean-up lost the cluster after it had deleted or marked for deletion {len(waiter.deleted)} "
        f"object(s): {', '.join(waiter.deleted)}"
        + (f", and held ClusterQueues {', '.join(waiter.held)}" if waiter.held else "")
        + f". kubectl: {error}",
    )


def items(run: Kubectl, kind: str, *selector: str) -> list[dict[str, Any]]:
    listed = run(["get", kind, "--all-namespaces", *selector, "-o", "json"])
    if listed.returncode != 0:
        if NO_SUCH_KIND in listed.stderr:  # e.g. Karpenter's CRDs are not installed
            return []
        raise ClusterAccessError(f"cannot list {kind}: {listed.stderr.strip()}")
    items: list[dict[str, Any]] = json.loads(listed.stdout or "{}").get("items", [])
    return items


def key_of(item: dict[str, Any]) -> tuple[str, str]:
    meta = item["metadata"]
    return meta.get("namespace", ""), meta["name"]


def label_of(key: tuple[str, str]) -> str:
    return "/".join(part for part in key if part)


def delete(run: Kubectl, kind: str, key: tuple[str, str], waiter: Waiter) -> None:
    """Delete without waiting: the waits below are bounded and say what holds an object."""
    namespace, name = key
    args = [kind, name, *(["-n", namespace] if namespace else [])]
    try:
        deleted = run(["delete", *args, "--wait=false", "--ignore-not-found"])
    except KubectlTimedOut:  # the API may have taken it
        waiter.deleted.append(f"{kind}/{label_of(key)} (asked for, no answer)")
        raise
    if deleted.returncode != 0:
        raise ClusterAccessError(f"kubectl delete {' '.join(args)} failed: {deleted.stderr.strip()}")
    waiter.deleted.append(f"{kind}/{label_of(key)}")


def wait_gone(
    run: Kubectl, kind: str, keys: Iterable[tuple[str, str]], seconds: float, waiter: Waiter
) -> list[dict[str, Any]]:
    """Wait until none of `keys` of `kind` exists; returns those still there when time ran out."""
    wanted = set(keys)
    deadline = waiter.clock() + seconds
    while True:
        left = [item for item in items(run, kind) if key_of(item) in wanted]
        if not left or waiter.clock() >= deadline:
            return left
        waiter.sleep(waiter.poll_seconds)


def grace_seconds(pod: dict[str, Any]) -> int:
    """How long a pod may take to stop: the grace period its deletion gave it
    (metadata.deletionGracePeriodSeconds) once deleted, else its spec's."""
    meta, spec = pod["metadata"], pod.get("spec", {})
    grace = meta.get("deletionGracePeriodSeconds", spec.get("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS))
    return int(grace)


def pods_gone_seconds(pods: Iterable[dict[str, Any]]) -> int:
    """How long to wait for `pods` to be gone once deleted (see PODS_GONE_MAX_SECONDS)."""
    longest = max((grace_seconds(pod) for pod in pods), default=0)
    return min(longest + PODS_GONE_MARGIN_SECONDS, PODS_GONE_MAX_SECONDS)


def claims_of(pod: dict[str, Any]) -> set[str]:
    return {
        volume["persistentVolumeClaim"]["claimName"]
        for volume in pod.get("spec", {}).get("volumes", [])
        if "persistentVolumeClaim" in volume
    }


def holds(pod: dict[str, Any], namespace: str, claim: str) -> bool:
    """A pod holds a claim's protection while it is scheduled and references it (podUsesPVC)."""
    return (
        pod["metadata"].get("namespace") == namespace
        and bool(pod.get("spec", {}).get("nodeName"))
        and claim in claims_of(pod)
    )


def resource_of(owner: dict[str, Any]) -> str:
    """kubectl's name for an owner reference's kind: Kind.version.group (Kind for the core group)."""
    group_version = owner["apiVersion"]
    if "/" not in group_version:
        return str(owner["kind"])
    group, version = group_version.split("/", 1)
    return f"{owner['kind']}.{version}.{group}"


def top_owner(run: Kubectl, pod: dict[str, Any]) -> tuple[str, tuple[str, str]]:
    """The workload that made `pod` (a Job, an MPIJob, a JobSet, a Deployment ...), found by
    following controller owner references; the pod itself when nothing owns it. Deleting it stops
    the pod for good: deleting the pod alone would have its controller start another."""
    namespace = pod["metadata"]["namespace"]
    kind, item = "pod", pod
    for _ in range(8):  # owner chains are short (TrainJob -> JobSet -> Job -> Pod)
        owner = next(
            (ref for ref in item["metadata"].get("ownerReferences", []) if ref.get("controller")),
            None,
        )
        if owner is None:
            break
        resource = resource_of(owner)
        found = run(["get", resource, owner["name"], "-n", namespace, "-o", "json"])
        if found.returncode != 0:  # the owner is already gone: the pod goes with it
            return resource, (namespace, owner["name"])
        kind, item = resource, json.loads(found.stdout)
    return kind, (namespace, item["metadata"]["name"])
