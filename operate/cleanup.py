"""Teardown of a Kubernetes layer: what controllers made outside Terraform is removed, in the order
in which Kubernetes lets each delete finish, or it outlives the cluster (Karpenter's EC2 nodes, load
balancers, EBS volumes) and keeps the VPC from being deleted.

What decides the order (Kubernetes and Karpenter at the pins):
- A PersistentVolumeClaim carries `kubernetes.io/pvc-protection` (added at creation by the
  StorageObjectInUseProtection admission plugin). The pvc-protection controller removes it only
  when no scheduled pod references the claim (pkg/controller/volume/pvcprotection, podUsesPVC).
  So deleting a claim and waiting for it, while the pod that mounts it runs, never ends: Prometheus
  keeps its gp3 claim until its release is uninstalled, a tenant's job keeps the FSx claim.
- Terraform's kubernetes provider waits for every object it deletes to be gone (its
  timeouts.delete, 10 minutes by default, 70 for the platform's namespaces, whose pods stop with
  their grace periods; manifest/provider/apply.go), and deletes a namespace's objects before the
  namespace.
  A claim Terraform owns (a tenant's FSx and S3 claims) is therefore deleted, and waited on,
  before the namespace whose deletion would stop the pods that mount it: those pods' workloads
  are stopped here first.
- A PersistentVolume carries `kubernetes.io/pv-protection` until its claim is gone; a dynamically
  provisioned one with reclaim policy Delete is removed (and its EBS volume deleted) by the CSI
  driver's provisioner afterwards. The EBS CSI driver is a cluster-layer add-on: it still runs
  when the add-on layers are gone, and the volumes must be gone before the cluster layer goes.
- A NodeClaim carries `karpenter.sh/termination`; Karpenter removes it once the node is drained
  and the instance is terminated (pkg/controllers/node/termination). The drain respects
  PodDisruptionBudgets and `karpenter.sh/do-not-disrupt` until the NodeClaim's
  terminationGracePeriod (its NodePool's, addons/karpenter/pools.py) has passed, then
  deletes what is left. Karpenter runs in the addons layer, so the workloads layer's NodePools are
  removed while it still runs.
- A LoadBalancer Service carries `service.kubernetes.io/load-balancer-cleanup` until the cloud
  provider (EKS's control plane) has deleted the load balancer.
- A deleted namespace stays Terminating until the namespace controller has deleted everything in
  it, and says what is left in its status conditions (NamespaceContentRemaining,
  NamespaceFinalizersRemaining: pkg/controller/namespace/deletion/status_condition_utils.go). A
  destroy that stopped after Terraform deleted a namespace finds it Terraform's again: the
  provider deletes it anew, which the API answers with the Terminating namespace, not a 409
  Conflict since Kubernetes 1.17 (pkg/registry/core/namespace/storage/storage.go Delete,
  kubernetes/kubernetes#84122), and then waits its timeouts.delete (manifest/provider/apply.go
  v2.38.0 L552-598) and fails with "Timed out when waiting for resource", naming nothing.

So a layer's destroy runs: `pre_destroy_cleanup` (stop the workloads that mount claims Terraform
deletes, delete the NodePools and wait for their NodeClaims, delete LoadBalancer Services and wait,
mark the dynamically provisioned claims for deletion without waiting, wait for the layer's
namespaces that are already Terminating), then Terraform, then
`after_destroy` (wait for those claims and their volumes to be gone). Every wait is bounded; one
that runs out names what holds the objects and how to release them, and running the destroy again
resumes: each step lists what is left instead of remembering what it did.

Only objects the platform owns are touched: its own NodePools (and their NodeClaims), and objects
in the namespaces the layer created. Anything that cannot be listed stops the teardown.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from operate.cluster_access import ClusterAccessError
from operate.kubectl import Kubectl
from operate.layers import TeardownStuck
from operate.owned import PlatformObjects
from operate.pause import hold_and_drain
from operate.teardown_kubectl import (
    PODS_GONE_MARGIN_SECONDS,
    PODS_GONE_MAX_SECONDS,
    RESUME,
    Waiter,
    answering,
    delete,
    grace_seconds,
    holds,
    items,
    key_of,
    label_of,
    pods_gone_seconds,
    stopped_honestly,
    top_owner,
    wait_gone,
)

# How long each wait may take. Nodes: Karpenter drains a node for at most its NodePool's
# terminationGracePeriod (Capacity.drain_minutes, from the add-on that runs the pools), then
# deletes the pods left on it,
# then EC2 terminates the instance. Pods: the longest grace period of those waited for, plus a
# margin for the garbage collector to reach them and the kubelet to stop them, at most as long as
# Terraform waits for a namespace (whose deletion waits for the same pods' grace periods). Load
# balancers and volumes: the cloud provider's and the CSI driver's delete calls.
INSTANCE_TERMINATION_SECONDS = 15 * 60
LOAD_BALANCERS_GONE_SECONDS = 15 * 60
VOLUMES_GONE_SECONDS = 15 * 60
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"  # Karpenter evicts no pod that has it (pkg/utils/pod/scheduling.go)


def _stop_workloads_mounting(run: Kubectl, owned: PlatformObjects, waiter: Waiter) -> None:
    """Stop the workloads whose pods mount a claim Terraform deletes, and wait for the pods."""
    if not owned.terraform_claims:
        return
    holding = [
        pod
        for pod in items(run, "pods")
        if any(holds(pod, namespace, claim) for namespace, claim in owned.terraform_claims)
    ]
    owners = {top_owner(run, pod) for pod in holding}
    for kind, key in sorted(owners):
        delete(run, kind, key, waiter)
    seconds = pods_gone_seconds(holding)
    left = wait_gone(run, "pods", [key_of(pod) for pod in holding], seconds, waiter)
    if left:
        longer = [pod for pod in left if grace_seconds(pod) + PODS_GONE_MARGIN_SECONDS > PODS_GONE_MAX_SECONDS]
        raise TeardownStuck(
            "Fix: stop the pods named below (kubectl delete pod NAME -n NAMESPACE --grace-period=0 --force ends "
            f"one whose node is gone), {RESUME}",
            f"pods that mount the layer's claims are still there after {seconds // 60} minutes: "
            + ", ".join(f"{label_of(key_of(pod))} (grace period {grace_seconds(pod)} s)" for pod in left)
            + "."
            + (
                f" A grace period longer than {(PODS_GONE_MAX_SECONDS - PODS_GONE_MARGIN_SECONDS) // 60} minutes "
                "is not waited for in full: Terraform waits no longer for a namespace."
                if longer
                else ""
            ),
        )


def nodes_gone_seconds(owned: PlatformObjects) -> int:
    """How long the clean-up waits for the NodePools' nodes: their drain, then EC2's termination."""
    return owned.node_drain_minutes * 60 + INSTANCE_TERMINATION_SECONDS


def _remove_node_pools(run: Kubectl, owned: PlatformObjects, waiter: Waiter) -> None:
    """Delete the platform's NodePools and their NodeClaims, and wait for Karpenter to drain and
    terminate the nodes."""
    for pool in items(run, "nodepools.karpenter.sh"):
        if pool["metadata"]["name"] in owned.node_pools:
            delete(run, "nodepools.karpenter.sh", key_of(pool), waiter)
    claims = [
        claim
        for claim in items(run, "nodeclaims.karpenter.sh")
        if claim["metadata"].get("labels", {}).get("karpenter.sh/nodepool") in owned.node_pools
    ]
    for claim in claims:
        delete(run, "nodeclaims.karpenter.sh", key_of(claim), waiter)
    left = wait_gone(
        run, "nodeclaims.karpenter.sh", [key_of(claim) for claim in claims], nodes_gone_seconds(owned), waiter
    )
    if not left:
        return
    nodes = {claim.get("status", {}).get("nodeName") for claim in left} - {None, ""}
    blocking = [
        label_of(key_of(pod))
        + (f" ({DO_NOT_DISRUPT})" if DO_NOT_DISRUPT in pod["metadata"].get("annotations", {}) else "")
        for pod in items(run, "pods")
        if pod.get("spec", {}).get("nodeName") in nodes
        and not any(ref.get("kind") == "DaemonSet" for ref in pod["metadata"].get("ownerReferences", []))
    ]
    unbounded = [label_of(key_of(claim)) for claim in left if not claim.get("spec", {}).get("terminationGracePeriod")]
    raise TeardownStuck(
        "Fix: delete the pods named below, or what keeps Karpenter from evicting them: a PodDisruptionBudget that "
        f"allows no disruption (kubectl get pdb -A) or the {DO_NOT_DISRUPT} annotation; check Karpenter's log "
        f"(kubectl logs -n kube-system deploy/karpenter); {RESUME}",
        f"Karpenter has not terminated {', '.join(label_of(key_of(claim)) for claim in left)} after "
        f"{nodes_gone_seconds(owned) // 60} minutes"
        + (f"; pods still on their nodes: {', '.join(blocking)}" if blocking else "")
        + (
            f"; NodeClaims {', '.join(unbounded)} launched before their NodePool had a terminationGracePeriod, "
            "so Karpenter waits for their pods without limit"
            if unbounded
            else ""
        )
        + ".",
    )


def _remove_load_balancers(run: Kubectl, owned: PlatformObjects, waiter: Waiter) -> None:
    services = [
        service
        for service in items(run, "services")
        if service.get("spec", {}).get("type") == "LoadBalancer"
        and service["metadata"]["namespace"] in owned.namespaces
    ]
    for service in services:
        delete(run, "service", key_of(service), waiter)
    left = wait_gone(run, "services", [key_of(s) for s in services], LOAD_BALANCERS_GONE_SECONDS, waiter)
    if left:
        raise TeardownStuck(
            f"Fix: read the Service's events (kubectl describe service NAME -n NAMESPACE); {RESUME}",
            f"the load balancers of {', '.join(label_of(key_of(s)) for s in left)} are not deleted after "
            f"{LOAD_BALANCERS_GONE_SECONDS // 60} minutes.",
        )


# What the namespace controller says holds a Terminating namespace, in the order worth reading
# (pkg/controller/namespace/deletion/status_condition_utils.go).
NAMESPACE_HOLDERS = (
    "NamespaceFinalizersRemaining",
    "NamespaceContentRemaining",
    "NamespaceDeletionContentFailure",
    "NamespaceDeletionDiscoveryFailure",
    "NamespaceDeletionGroupVersionParsingFailure",
)


def _held_by(namespace: dict[str, Any]) -> str:
    conditions = {c.get("type"): c for c in namespace.get("status", {}).get("conditions", [])}
    said = [
        conditions[kind]["message"]
        for kind in NAMESPACE_HOLDERS
        if conditions.get(kind, {}).get("status") == "True" and conditions[kind].get("message")
    ]
    return "; ".join(said) or "no conditions yet: kubectl describe namespace " + namespace["metadata"]["name"]


def _wait_for_terminating_namespaces(run: Kubectl, owned: PlatformObjects, waiter: Waiter) -> None:
    """A namespace of the layer already Terminating (a destroy stopped after Terraform deleted it):
    Terraform deletes it again, which the API answers with the namespace (no 409 Conflict since
    Kubernetes 1.17), then waits its timeouts.delete and fails naming nothing. So wait here as long
    as its pods may take, and name what holds it from its status conditions."""
    terminating = [
        namespace
        for namespace in items(run, "namespaces")
        if namespace["metadata"]["name"] in owned.namespaces and namespace["metadata"].get("deletionTimestamp")
    ]
    if not terminating:
        return
    names = {namespace["metadata"]["name"] for namespace in terminating}
    seconds = pods_gone_seconds(pod for pod in items(run, "pods") if pod["metadata"].get("namespace") in names)
    left = wait_gone(run, "namespaces", [key_of(namespace) for namespace in terminating], seconds, waiter)
    if left:
        raise TeardownStuck(
            "Fix: release what holds the namespaces named below: delete what is left in them, or remove the "
            "finalizer of an object whose controller is gone (kubectl get KIND NAME -n NAMESPACE -o yaml shows "
            f"it); {RESUME}",
            f"namespaces of the layer are still Terminating after {seconds // 60} minutes: "
            + "; ".join(f"{key_of(namespace)[1]} ({_held_by(namespace)})" for namespace in left)
            + ". Terraform would wait for them and fail without naming what holds them.",
        )


def _dynamic_claims(run: Kubectl, owned: PlatformObjects) -> list[dict[str, Any]]:
    """Claims a provisioner made a volume for (a storage class named), in the layer's namespaces.
    Static claims (storageClassName "") point at FSx or S3, which Terraform owns."""
    return [
        claim
        for claim in items(run, "persistentvolumeclaims")
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
    run = answering(run)
    try:
        # First the tenants' queues stop admitting (and evict what they admitted): a job stopped
        # below frees quota, and Kueue would otherwise admit the next queued job onto the same claims.
        hold_and_drain(run, owned.cluster_queues, log)
        waiter.held = list(owned.cluster_queues)
        _stop_workloads_mounting(run, owned, waiter)
        _remove_node_pools(run, owned, waiter)
        _remove_load_balancers(run, owned, waiter)
        # Marked only: each goes once its pods stop (the release's uninstall, the namespace's deletion).
        for claim in _dynamic_claims(run, owned):
            delete(run, "pvc", key_of(claim), waiter)
        _wait_for_terminating_namespaces(run, owned, waiter)
    except ClusterAccessError as error:
        raise stopped_honestly(error, waiter) from error
    deleted = waiter.deleted
    log(f"pre-destroy clean-up: deleted {len(deleted)} object(s)" + (": " + ", ".join(deleted) if deleted else ""))
    return deleted


def after_destroy(
    run: Kubectl, owned: PlatformObjects, log: Callable[[str], None] = print, waiter: Waiter | None = None
) -> None:
    """After Terraform's destroy of the layer: wait until the layer's dynamically provisioned claims
    and their volumes are gone, so no EBS volume outlives the cluster."""
    waiter = waiter or Waiter()
    run = answering(run)  # a ClusterAccessError here is a TeardownStuck (main.settle_profile_cluster)
    claims = _dynamic_claims(run, owned)
    left_claims = wait_gone(run, "persistentvolumeclaims", [key_of(c) for c in claims], VOLUMES_GONE_SECONDS, waiter)
    if left_claims:
        pods = items(run, "pods")
        held = [
            f"{label_of(key_of(claim))} (mounted by "
            + (
                ", ".join(
                    label_of(key_of(pod))
                    for pod in pods
                    if holds(pod, claim["metadata"]["namespace"], claim["metadata"]["name"])
                )
                or "no pod: see kubectl describe pvc"
            )
            + ")"
            for claim in left_claims
        ]
        raise TeardownStuck(
            f"Fix: stop the pods named below, which mount the claims; {RESUME}",
            f"claims are still there after the destroy: {', '.join(held)}.",
        )
    volumes = [
        volume
        for volume in items(run, "persistentvolumes")
        if volume.get("spec", {}).get("persistentVolumeReclaimPolicy") == "Delete"
        and volume.get("spec", {}).get("claimRef", {}).get("namespace") in owned.namespaces
    ]
    left = wait_gone(run, "persistentvolumes", [key_of(v) for v in volumes], VOLUMES_GONE_SECONDS, waiter)
    if left:
        raise TeardownStuck(
            "Fix: check the EBS CSI driver, which deletes the volumes named below (kubectl logs -n kube-system "
            f"deploy/ebs-csi-controller); {RESUME}",
            "volumes are not deleted after "
            f"{VOLUMES_GONE_SECONDS // 60} minutes: "
            + ", ".join(f"{key_of(v)[1]} (finalizers: {v['metadata'].get('finalizers', [])})" for v in left)
            + ".",
        )
    if volumes:
        log(f"after the destroy: {len(volumes)} volume(s) deleted by their provisioner")
