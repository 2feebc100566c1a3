"""Teardown of a Kubernetes layer: what controllers made outside Terraform is removed, in the order
in which Kubernetes lets each delete finish, or it outlives the cluster (Karpenter's EC2 nodes, load
balancers, EBS volumes) and keeps the VPC from being deleted.

What decides the order (Kubernetes and Karpenter at the pins):
- A PersistentVolumeClaim carries `kubernetes.io/pvc-protection` (added at creation by the
  StorageObjectInUseProtection admission plugin). The pvc-protection controller removes it only
  when no scheduled pod references the claim (pkg/controller/volume/pvcprotection, podUsesPVC).
  So deleting a claim and waiting for it, while the pod that mounts it runs, never ends: Prometheus
  keeps its gp3 claim until its release is uninstalled, a tenant's job keeps the FSx claim.
- Terraform's kubernetes provider waits for every object it deletes to be gone (10 minutes by
  default; manifest/provider/apply.go), and deletes a namespace's objects before the namespace.
  A claim Terraform owns (a tenant's FSx and S3 claims) is therefore deleted, and waited on,
  before the namespace whose deletion would stop the pods that mount it: those pods' workloads
  are stopped here first.
- A PersistentVolume carries `kubernetes.io/pv-protection` until its claim is gone; a dynamically
  provisioned one with reclaim policy Delete is removed (and its EBS volume deleted) by the CSI
  driver's provisioner afterwards. The EBS CSI driver is a cluster-layer add-on: it still runs
  when the add-on layers are gone, and the volumes must be gone before the cluster layer goes.
- A NodeClaim carries `karpenter.sh/termination`; Karpenter removes it once the node is drained
  (PodDisruptionBudgets are respected) and the instance is terminated
  (pkg/controllers/node/termination). Karpenter runs in the addons layer, so the workloads layer's
  NodePools are removed while it still runs.
- A LoadBalancer Service carries `service.kubernetes.io/load-balancer-cleanup` until the cloud
  provider (EKS's control plane) has deleted the load balancer.

So a layer's destroy runs: `pre_destroy_cleanup` (stop the workloads that mount claims Terraform
deletes, delete the NodePools and wait for their NodeClaims, delete LoadBalancer Services and wait,
mark the dynamically provisioned claims for deletion without waiting), then Terraform, then
`after_destroy` (wait for those claims and their volumes to be gone). Every wait is bounded; one
that runs out names what holds the objects and how to release them, and running the destroy again
resumes: each step lists what is left instead of remembering what it did.

Only objects the platform owns are touched: its own NodePools (and their NodeClaims), and objects
in the namespaces the layer created. Anything that cannot be listed stops the teardown.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from addons.kueue import DEFINITION as KUEUE
from operate.cluster_access import ClusterAccessError
from operate.kubectl import NO_SUCH_KIND, Kubectl
from operate.layers import TeardownStuck
from operate.pause import hold_and_drain
from profiles import PlatformConfig

# How long each wait may take. Nodes: a drain evicts pods with their grace period (up to an
# hour for a training pod), then EC2 terminates the instance. Pods: their grace period.
# Load balancers and volumes: the cloud provider's and the CSI driver's delete calls.
NODES_GONE_SECONDS = 75 * 60
PODS_GONE_SECONDS = 20 * 60
LOAD_BALANCERS_GONE_SECONDS = 15 * 60
VOLUMES_GONE_SECONDS = 15 * 60
POLL_SECONDS = 10

Clock = Callable[[], float]
Sleep = Callable[[float], None]


@dataclass(frozen=True, kw_only=True)
class PlatformObjects:
    """What the platform owns in its cluster, for one layer."""

    namespaces: tuple[str, ...]
    """Namespaces the layer created (add-ons, tenants, validation)."""
    node_pools: tuple[str, ...]
    """Karpenter NodePools the workloads layer creates."""
    cluster_queues: tuple[str, ...] = ()
    """Kueue ClusterQueues the workloads layer creates (one per tenant)."""
    terraform_claims: tuple[tuple[str, str], ...] = ()
    """(namespace, name) of the PersistentVolumeClaims the layer's Terraform deletes itself."""


@dataclass(kw_only=True)
class Waiter:
    """The clock of the teardown's waits (tests pass a simulated one)."""

    clock: Clock = time.monotonic
    sleep: Sleep = time.sleep
    poll_seconds: float = POLL_SECONDS
    deleted: list[str] = field(default_factory=list)


def _items(run: Kubectl, kind: str, *selector: str) -> list[dict[str, Any]]:
    listed = run(["get", kind, "--all-namespaces", *selector, "-o", "json"])
    if listed.returncode != 0:
        if NO_SUCH_KIND in listed.stderr:  # e.g. Karpenter's CRDs are not installed
            return []
        raise ClusterAccessError(f"cannot list {kind}: {listed.stderr.strip()}")
    items: list[dict[str, Any]] = json.loads(listed.stdout or "{}").get("items", [])
    return items


def _key(item: dict[str, Any]) -> tuple[str, str]:
    meta = item["metadata"]
    return meta.get("namespace", ""), meta["name"]


def _label(key: tuple[str, str]) -> str:
    return "/".join(part for part in key if part)


def _delete(run: Kubectl, kind: str, key: tuple[str, str], waiter: Waiter) -> None:
    """Delete without waiting: the waits below are bounded and say what holds an object."""
    namespace, name = key
    args = [kind, name, *(["-n", namespace] if namespace else [])]
    deleted = run(["delete", *args, "--wait=false", "--ignore-not-found"])
    if deleted.returncode != 0:
        raise ClusterAccessError(f"kubectl delete {' '.join(args)} failed: {deleted.stderr.strip()}")
    waiter.deleted.append(f"{kind}/{_label(key)}")


def _wait_gone(
    run: Kubectl, kind: str, keys: Iterable[tuple[str, str]], seconds: float, waiter: Waiter
) -> list[dict[str, Any]]:
    """Wait until none of `keys` of `kind` exists; returns those still there when time ran out."""
    wanted = set(keys)
    deadline = waiter.clock() + seconds
    while True:
        left = [item for item in _items(run, kind) if _key(item) in wanted]
        if not left or waiter.clock() >= deadline:
            return left
        waiter.sleep(waiter.poll_seconds)


def _claims_of(pod: dict[str, Any]) -> set[str]:
    return {
        volume["persistentVolumeClaim"]["claimName"]
        for volume in pod.get("spec", {}).get("volumes", [])
        if "persistentVolumeClaim" in volume
    }


def _holds(pod: dict[str, Any], namespace: str, claim: str) -> bool:
    """A pod holds a claim's protection while it is scheduled and references it (podUsesPVC)."""
    return (
        pod["metadata"].get("namespace") == namespace
        and bool(pod.get("spec", {}).get("nodeName"))
        and claim in _claims_of(pod)
    )


def _resource_of(owner: dict[str, Any]) -> str:
    """kubectl's name for an owner reference's kind: Kind.version.group (Kind for the core group)."""
    group_version = owner["apiVersion"]
    if "/" not in group_version:
        return str(owner["kind"])
    group, version = group_version.split("/", 1)
    return f"{owner['kind']}.{version}.{group}"


def _top_owner(run: Kubectl, pod: dict[str, Any]) -> tuple[str, tuple[str, str]]:
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
        resource = _resource_of(owner)
        found = run(["get", resource, owner["name"], "-n", namespace, "-o", "json"])
        if found.returncode != 0:  # the owner is already gone: the pod goes with it
            return resource, (namespace, owner["name"])
        kind, item = resource, json.loads(found.stdout)
    return kind, (namespace, item["metadata"]["name"])


def _stop_workloads_mounting(run: Kubectl, owned: PlatformObjects, waiter: Waiter) -> None:
    """Stop the workloads whose pods mount a claim Terraform deletes, and wait for the pods."""
    if not owned.terraform_claims:
        return
    holding = [
        pod
        for pod in _items(run, "pods")
        if any(_holds(pod, namespace, claim) for namespace, claim in owned.terraform_claims)
    ]
    owners = {_top_owner(run, pod) for pod in holding}
    for kind, key in sorted(owners):
        _delete(run, kind, key, waiter)
    left = _wait_gone(run, "pods", [_key(pod) for pod in holding], PODS_GONE_SECONDS, waiter)
    if left:
        raise TeardownStuck(
            "pods that mount the layer's claims are still running after "
            f"{PODS_GONE_SECONDS // 60} minutes: {', '.join(_label(_key(pod)) for pod in left)}.\n"
            "Fix: stop them (kubectl delete pod NAME -n NAMESPACE --grace-period=0 --force ends a pod "
            "whose node is gone), then run the destroy again: it resumes here."
        )


def _remove_node_pools(run: Kubectl, owned: PlatformObjects, waiter: Waiter) -> None:
    """Delete the platform's NodePools and their NodeClaims, and wait for Karpenter to drain and
    terminate the nodes."""
    for pool in _items(run, "nodepools.karpenter.sh"):
        if pool["metadata"]["name"] in owned.node_pools:
            _delete(run, "nodepools.karpenter.sh", _key(pool), waiter)
    claims = [
        claim
        for claim in _items(run, "nodeclaims.karpenter.sh")
        if claim["metadata"].get("labels", {}).get("karpenter.sh/nodepool") in owned.node_pools
    ]
    for claim in claims:
        _delete(run, "nodeclaims.karpenter.sh", _key(claim), waiter)
    left = _wait_gone(run, "nodeclaims.karpenter.sh", [_key(claim) for claim in claims], NODES_GONE_SECONDS, waiter)
    if not left:
        return
    nodes = {claim.get("status", {}).get("nodeName") for claim in left} - {None, ""}
    blocking = [
        _label(_key(pod))
        for pod in _items(run, "pods")
        if pod.get("spec", {}).get("nodeName") in nodes
        and not any(ref.get("kind") == "DaemonSet" for ref in pod["metadata"].get("ownerReferences", []))
    ]
    raise TeardownStuck(
        f"Karpenter has not terminated {', '.join(_label(_key(claim)) for claim in left)} after "
        f"{NODES_GONE_SECONDS // 60} minutes"
        + (f"; pods still on their nodes: {', '.join(blocking)}" if blocking else "")
        + ".\nFix: a PodDisruptionBudget that allows no disruption blocks the drain (kubectl get pdb -A): "
        "delete the pods or the budget; check Karpenter's log (kubectl logs -n kube-system deploy/karpenter). "
        "Then run the destroy again: it resumes here."
    )


def _remove_load_balancers(run: Kubectl, owned: PlatformObjects, waiter: Waiter) -> None:
    services = [
        service
        for service in _items(run, "services")
        if service.get("spec", {}).get("type") == "LoadBalancer"
        and service["metadata"]["namespace"] in owned.namespaces
    ]
    for service in services:
        _delete(run, "service", _key(service), waiter)
    left = _wait_gone(run, "services", [_key(s) for s in services], LOAD_BALANCERS_GONE_SECONDS, waiter)
    if left:
        raise TeardownStuck(
            f"the load balancers of {', '.join(_label(_key(s)) for s in left)} are not deleted after "
            f"{LOAD_BALANCERS_GONE_SECONDS // 60} minutes.\nFix: read the Service's events "
            "(kubectl describe service NAME -n NAMESPACE); then run the destroy again: it resumes here."
        )


def _dynamic_claims(run: Kubectl, owned: PlatformObjects) -> list[dict[str, Any]]:
    """Claims a provisioner made a volume for (a storage class named), in the layer's namespaces.
    Static claims (storageClassName "") point at FSx or S3, which Terraform owns."""
    return [
        claim
        for claim in _items(run, "persistentvolumeclaims")
        if claim.get("spec", {}).get("storageClassName") and claim["metadata"]["namespace"] in owned.namespaces
    ]


def cleanup_preview(owned: PlatformObjects) -> list[str]:
    """What pre_destroy_cleanup deletes for the layer, step by step, in words the destroy question
    shows before anything is approved (nothing is read from the cluster to say it)."""
    namespaces = ", ".join(owned.namespaces)
    lines = []
    if owned.cluster_queues:
        lines.append(
            f"the tenants' ClusterQueues ({', '.join(owned.cluster_queues)}) stop admitting and evict their jobs"
        )
    if owned.terraform_claims:
        claims = ", ".join(f"{namespace}/{name}" for namespace, name in owned.terraform_claims)
        lines.append(f"every workload whose pods mount {claims} is deleted (its running jobs stop)")
    if owned.node_pools:
        lines.append(
            f"the Karpenter NodePools {', '.join(owned.node_pools)} and every node they launched (their "
            "NodeClaims: each drained, then its EC2 instance terminated)"
        )
    if owned.namespaces:
        lines.append(f"every LoadBalancer Service in {namespaces}, and with it its AWS load balancer")
        lines.append(
            f"every PersistentVolumeClaim a storage class provisioned in {namespaces}, and with it its volume "
            "(EBS): the data on it is lost"
        )
    return lines


def pre_destroy_cleanup(
    run: Kubectl, owned: PlatformObjects, log: Callable[[str], None] = print, waiter: Waiter | None = None
) -> list[str]:
    """Everything before Terraform's destroy of the layer (see the module's docstring). Returns what
    it deleted or marked for deletion."""
    waiter = waiter or Waiter()
    # First the tenants' queues stop admitting (and evict what they admitted): a job stopped below
    # frees quota, and Kueue would otherwise admit the next queued job onto the same claims.
    hold_and_drain(run, owned.cluster_queues, log)
    _stop_workloads_mounting(run, owned, waiter)
    _remove_node_pools(run, owned, waiter)
    _remove_load_balancers(run, owned, waiter)
    # Marked only: each goes once its pods stop (the release's uninstall, the namespace's deletion).
    for claim in _dynamic_claims(run, owned):
        _delete(run, "pvc", _key(claim), waiter)
    deleted = waiter.deleted
    log(f"pre-destroy clean-up: deleted {len(deleted)} object(s)" + (": " + ", ".join(deleted) if deleted else ""))
    return deleted


def after_destroy(
    run: Kubectl, owned: PlatformObjects, log: Callable[[str], None] = print, waiter: Waiter | None = None
) -> None:
    """After Terraform's destroy of the layer: wait until the layer's dynamically provisioned claims
    and their volumes are gone, so no EBS volume outlives the cluster."""
    waiter = waiter or Waiter()
    claims = _dynamic_claims(run, owned)
    left_claims = _wait_gone(run, "persistentvolumeclaims", [_key(c) for c in claims], VOLUMES_GONE_SECONDS, waiter)
    if left_claims:
        pods = _items(run, "pods")
        held = [
            f"{_label(_key(claim))} (mounted by "
            + (
                ", ".join(
                    _label(_key(pod))
                    for pod in pods
                    if _holds(pod, claim["metadata"]["namespace"], claim["metadata"]["name"])
                )
                or "no pod: see kubectl describe pvc"
            )
            + ")"
            for claim in left_claims
        ]
        raise TeardownStuck(
            f"claims are still there after the destroy: {', '.join(held)}.\n"
            "Fix: stop the pods that mount them; then run the destroy again: it resumes here."
        )
    volumes = [
        volume
        for volume in _items(run, "persistentvolumes")
        if volume.get("spec", {}).get("persistentVolumeReclaimPolicy") == "Delete"
        and volume.get("spec", {}).get("claimRef", {}).get("namespace") in owned.namespaces
    ]
    left = _wait_gone(run, "persistentvolumes", [_key(v) for v in volumes], VOLUMES_GONE_SECONDS, waiter)
    if left:
        raise TeardownStuck(
            "volumes are not deleted after "
            f"{VOLUMES_GONE_SECONDS // 60} minutes: "
            + ", ".join(f"{_key(v)[1]} (finalizers: {v['metadata'].get('finalizers', [])})" for v in left)
            + ".\nFix: the EBS CSI driver deletes them (kubectl logs -n kube-system deploy/ebs-csi-controller); "
            "then run the destroy again: it resumes here."
        )
    if volumes:
        log(f"after the destroy: {len(volumes)} volume(s) deleted by their provisioner")


def terraform_claims(stack: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """(namespace, name) of every PersistentVolumeClaim a synthesized stack creates."""
    claims = []
    for body in stack.get("resource", {}).get("kubernetes_manifest", {}).values():
        manifest = body.get("manifest")  # a string for a for_each over an upstream manifest
        if isinstance(manifest, dict) and manifest.get("kind") == "PersistentVolumeClaim":
            claims.append((manifest["metadata"].get("namespace", "default"), manifest["metadata"]["name"]))
    return tuple(sorted(claims))


def platform_objects(config: PlatformConfig, layer: str, stack: dict[str, Any] | None = None) -> PlatformObjects:
    """The namespaces and NodePools the profile's `layer` creates: the addons layer owns the
    add-ons' namespaces; the workloads layer owns the tenants' namespaces, Karpenter's NodePools and
    the validation namespace that verify runs in. `stack` (the layer's synthesized JSON) names the
    claims its Terraform deletes."""
    from addons.catalog import DEFINITIONS
    from components.k8s.karpenter_pools import node_pools
    from manifests.render import NAMESPACE as VALIDATION_NAMESPACE

    claims = terraform_claims(stack) if stack else ()
    if layer == "addons":
        return PlatformObjects(
            namespaces=tuple(
                definition.namespace_of(definition.settings(config))
                for definition in DEFINITIONS
                if definition.enabled(config) and definition.creates_namespace
            ),
            node_pools=(),
            terraform_claims=claims,
        )
    if layer != "workloads":
        return PlatformObjects(namespaces=(), node_pools=())
    namespaces = [tenant.name for tenant in config.workloads.tenants]
    if config.cluster.gpu_node_groups:
        namespaces.append(VALIDATION_NAMESPACE)
    return PlatformObjects(
        namespaces=tuple(namespaces),
        node_pools=node_pools(config),
        # One ClusterQueue per tenant, named after it (addons/kueue/queues.py).
        cluster_queues=tuple(tenant.name for tenant in config.workloads.tenants) if KUEUE.enabled(config) else (),
        terraform_claims=claims,
    )
