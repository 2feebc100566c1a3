"""A fake Kubernetes cluster for the teardown journey, and a fake Terraform that destroys a
synthesized layer in it. No API server runs here, so the model carries what decides whether a
delete ever ends, each rule from the upstream source at the pins:

- Admission, StorageObjectInUseProtection (kubernetes plugin/pkg/admission/storage/
  storageobjectinuseprotection/admission.go): every new PVC gets `kubernetes.io/pvc-protection`,
  every new PV `kubernetes.io/pv-protection`.
- pvc-protection controller (pkg/controller/volume/pvcprotection/pvc_protection_controller.go,
  podUsesPVC): the finalizer goes only when no *scheduled* pod (spec.nodeName set) references the
  claim; an unscheduled pod does not hold it.
- pv-protection controller (pkg/controller/volume/pvprotection, isBeingUsed): the finalizer goes
  once the PV is no longer Bound.
- PV controller and the CSI external-provisioner (kubernetes-csi/external-provisioner,
  `external-provisioner.volume.kubernetes.io/finalizer`): a dynamically provisioned PV whose claim
  is gone is Released; with reclaim policy Delete the provisioner deletes the volume, while the CSI
  driver runs (the EBS CSI driver is a cluster-layer add-on), and then the PV. Retain keeps it.
- Garbage collector (pkg/controller/garbagecollector, background propagation, kubectl's default):
  an object whose controller owner is gone is deleted.
- Namespace registry and controller (pkg/registry/core/namespace/storage/storage.go,
  pkg/controller/namespace/deletion): a deleted namespace turns Terminating, and deleting it again
  is no error (it was a 409 Conflict before Kubernetes 1.17, kubernetes/kubernetes#84122); all its
  objects are deleted, its status conditions NamespaceContentRemaining and
  NamespaceFinalizersRemaining say what is left (status_condition_utils.go), and its `kubernetes`
  finalizer goes when nothing is left.
- Pod deletion (pkg/registry/core/pod/strategy.go CheckGracefulDelete): a pod on a node is gone
  when its grace period (terminationGracePeriodSeconds, 30 by default) is over; deletionTimestamp
  is that time. A pod on no node goes at once.
- Karpenter (v1.14.1, pkg/controllers/node/termination): a deleting NodeClaim keeps
  `karpenter.sh/termination` while its node has pods; eviction respects PodDisruptionBudgets and
  evicts no pod annotated `karpenter.sh/do-not-disrupt: "true"` (pkg/utils/pod/scheduling.go
  IsEvictable; its duration form is not modelled), and the drain waits for those too
  (IsDrainable); an evicted pod of a controller comes back unscheduled; the finalizer goes once the
  node is empty (but for DaemonSet pods) and the instance is terminated. A NodeClaim carries its
  NodePool's terminationGracePeriod (pkg/apis/v1/nodepool.go ToNodeClaim); once it is deleted, its
  termination time is the deletion plus that (pkg/controllers/nodeclaim/lifecycle/controller.go,
  the `karpenter.sh/nodeclaim-termination-timestamp` annotation), and from that time minus a pod's
  grace period the pod is deleted whatever blocks its eviction, with the time left as its grace
  period, at least 1 s (terminator/terminator.go DeleteExpiringPods). Only while Karpenter's
  controller runs. An EC2NodeClass keeps `karpenter.k8s.aws/termination` while a NodeClaim uses it.
- Service controller (k8s.io/cloud-provider/controllers/service): a LoadBalancer Service keeps
  `service.kubernetes.io/load-balancer-cleanup` until the load balancer is deleted (EKS runs the
  cloud provider in its control plane: always here).
- kubectl delete: `--wait` is true by default and waits for the object to be gone; when `--timeout`
  runs out it fails with "timed out waiting for the condition".
- Terraform's kubernetes provider (2.38.0, manifest/provider/apply.go): deleting a
  kubernetes_manifest waits until the object is gone (its timeouts.delete, 10 minutes by default,
  read from the state: getTimeouts(priorStateVal)), or fails with
  `Timed out when waiting for resource ... to be deleted`; an object already gone is fine.
  helm_release's destroy uninstalls the release (its objects are deleted). Terraform destroys a
  resource only after everything that depends on it.

Each action runs every controller until nothing changes. A Cluster without a clock (`now` None)
has no time: every grace period is over at once, and "still there afterwards" means "held until
something else changes", which is what a wait that cannot end is. With a clock (`now` in seconds,
which the World and tests advance) grace periods take their time, and the fake terraform waits for
each object up to its delete timeout in steps of TERRAFORM_POLL_SECONDS. The state lives in a JSON
file, shared by the in-process kubectl and the fake terraform process.

What the model does not do (a test that needs one of these must add it first):
- Kueue: a ClusterQueue is only a patch target. HoldAndDrain's eviction of admitted workloads, queued
  jobs and their admission are not modelled: a job keeps running until the teardown stops it.
- The kubelet: a deleted pod takes its whole grace period (no container stops earlier), volumes
  detach at once, and a node's instance terminates at once.
- Controllers other than those above: a Deployment, Job, StatefulSet or operator does not recreate
  a deleted pod (except Karpenter's evictions, whose pods come back pending), nor remove a finalizer
  of its own; Helm's uninstall does not wait for what it deletes.
- Admission beyond the protection finalizers (no quota, no Pod Security, no webhooks), and no API
  errors but NotFound (and kubectl's own "timed out waiting for the condition").
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

PVC_PROTECTION = "kubernetes.io/pvc-protection"
PV_PROTECTION = "kubernetes.io/pv-protection"
PROVISIONER_FINALIZER = "external-provisioner.volume.kubernetes.io/finalizer"
NODECLAIM_TERMINATION = "karpenter.sh/termination"
NODECLASS_TERMINATION = "karpenter.k8s.aws/termination"
TERMINATION_TIMESTAMP = "karpenter.sh/nodeclaim-termination-timestamp"
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
LB_CLEANUP = "service.kubernetes.io/load-balancer-cleanup"
NAMESPACE_FINALIZER = "kubernetes"
RELEASE_ANNOTATION = "meta.helm.sh/release-name"
ADDRESS_ANNOTATION = "test/terraform-address"
SYSTEM_NODE = "system-1"
MANAGED_GPU_NODE = "gpu-1"
# PodSpec.terminationGracePeriodSeconds when a pod does not set it (k8s.io/api core/v1 types.go).
DEFAULT_GRACE_SECONDS = 30
# The model's clock counts seconds from here; timestamps in objects are RFC 3339, as the API writes them.
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
# The provider polls a deleted object every second (manifest/provider/apply.go); the model steps
# its clock by this much while the fake terraform waits.
TERRAFORM_POLL_SECONDS = 10
DEFAULT_DELETE_TIMEOUT = "10m"  # manifest/provider/apply.go, defaultDeleteTimeout

# kubectl's resource names for the kinds the model knows: (group, Kind, namespaced).
RESOURCES = {
    "pods": ("", "Pod", True),
    "persistentvolumeclaims": ("", "PersistentVolumeClaim", True),
    "persistentvolumes": ("", "PersistentVolume", False),
    "services": ("", "Service", True),
    "namespaces": ("", "Namespace", False),
    "nodes": ("", "Node", False),
    "nodepools.karpenter.sh": ("karpenter.sh", "NodePool", False),
    "nodeclaims.karpenter.sh": ("karpenter.sh", "NodeClaim", False),
    "poddisruptionbudgets": ("policy", "PodDisruptionBudget", True),
    "clusterqueues.kueue.x-k8s.io": ("kueue.x-k8s.io", "ClusterQueue", False),
}
SHORT_NAMES = {
    "pod": "pods",
    "pvc": "persistentvolumeclaims",
    "pv": "persistentvolumes",
    "service": "services",
    "svc": "services",
    "namespace": "namespaces",
    "ns": "namespaces",
}
CLUSTER_SCOPED = {"Namespace", "Node", "PersistentVolume", "StorageClass", "NodePool", "NodeClaim", "EC2NodeClass"}
CLUSTER_SCOPED |= {"ClusterRole", "ClusterRoleBinding", "ClusterQueue", "ResourceFlavor", "ClusterTrainingRuntime"}
CLUSTER_SCOPED |= {"PriorityClass", "DeviceClass", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}


def _group(obj: dict[str, Any]) -> str:
    version = obj.get("apiVersion", "v1")
    return version.split("/", 1)[0] if "/" in version else ""


def stamp(seconds: float) -> str:
    """The model's time `seconds` as an RFC 3339 timestamp."""
    return (EPOCH + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def seconds_at(timestamp: str) -> float:
    """The model's time of an RFC 3339 timestamp."""
    return (datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC) - EPOCH).total_seconds()


def duration_seconds(duration: str) -> float:
    """A Go duration as the provider and Karpenter write them (1h10m, 70m, 30s)."""
    parts = re.findall(r"([0-9]+)(h|m|s)", duration)
    assert parts and "".join(n + u for n, u in parts) == duration, f"not a duration: {duration}"
    return sum(int(n) * {"h": 3600, "m": 60, "s": 1}[u] for n, u in parts)


def grace_seconds(pod: dict[str, Any]) -> int:
    grace: int = pod.get("spec", {}).get("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS)
    return grace


def resource_name(obj: dict[str, Any]) -> str:
    """The API's resource.group of an object, as the namespace controller names it."""
    plural = next((r for r, (_, kind, _) in RESOURCES.items() if kind == obj["kind"]), obj["kind"].lower() + "s")
    return f"{plural.split('.')[0]}.{_group(obj)}"


class Cluster:
    def __init__(
        self, objects: list[dict[str, Any]] | None = None, *, csi_driver: bool = True, now: float | None = None
    ):
        self.objects = objects or []
        self.csi_driver = csi_driver
        self.now = now
        """The model's clock in seconds, or None: a model without time (see the module's docstring)."""

    # --- persistence (the fake terraform runs in its own process) ---
    def save(self, path: Path) -> None:
        path.write_text(json.dumps({"objects": self.objects, "csi_driver": self.csi_driver, "now": self.now}))

    @classmethod
    def load(cls, path: Path) -> Cluster:
        data = json.loads(path.read_text())
        return cls(data["objects"], csi_driver=data["csi_driver"], now=data.get("now"))

    # --- the API ---
    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj.setdefault("metadata", {})
        meta.setdefault("uid", str(uuid.uuid4()))
        finalizers = meta.setdefault("finalizers", [])
        kind = obj["kind"]
        if kind not in CLUSTER_SCOPED:
            meta.setdefault("namespace", "default")
        added = {
            "PersistentVolumeClaim": PVC_PROTECTION,
            "PersistentVolume": PV_PROTECTION,
            "Namespace": NAMESPACE_FINALIZER,
            "NodeClaim": NODECLAIM_TERMINATION,
            "EC2NodeClass": NODECLASS_TERMINATION,
        }.get(kind)
        if added and added not in finalizers:
            finalizers.append(added)
        if kind == "Service" and obj.get("spec", {}).get("type") == "LoadBalancer":
            finalizers.append(LB_CLEANUP)
        self.objects.append(obj)
        return obj

    def find(self, kind: str, namespace: str | None, name: str, group: str | None = None) -> dict[str, Any] | None:
        for obj in self.objects:
            meta = obj["metadata"]
            if (
                obj["kind"] == kind
                and meta["name"] == name
                and meta.get("namespace") == (namespace if kind not in CLUSTER_SCOPED else None)
                and (group is None or _group(obj) == group)
            ):
                return obj
        return None

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [obj for obj in self.objects if obj["kind"] == kind]

    def delete(self, obj: dict[str, Any], grace: int | None = None) -> None:
        self.mark_deleted(obj, grace)
        self.reconcile()

    def mark_deleted(self, obj: dict[str, Any], grace: int | None = None) -> bool:
        """What a DELETE does to an object that stays (finalizers, a pod's grace period). A pod on
        a node is deleted gracefully: its deletionTimestamp is the time it is to be gone, now plus
        its grace period (the request's, else its spec's), and deletionGracePeriodSeconds that
        period; a later DELETE may only shorten it (pkg/registry/core/pod/strategy.go
        CheckGracefulDelete, apiserver pkg/registry/rest/delete.go BeforeDelete). An unscheduled
        pod has no kubelet to wait for: it goes at once. A namespace turns Terminating
        (pkg/registry/core/namespace/storage/storage.go Delete); deleting it again changes nothing and
        is no error (a Conflict before Kubernetes 1.17, kubernetes/kubernetes#84122). Without a
        clock, every grace period is over at once."""
        meta = obj["metadata"]
        if obj["kind"] == "Pod" and self.now is not None and obj.get("spec", {}).get("nodeName"):
            seconds = grace if grace is not None else grace_seconds(obj)
            if "deletionTimestamp" in meta and seconds_at(meta["deletionTimestamp"]) <= self.now + seconds:
                return False
            meta["deletionTimestamp"] = stamp(self.now + seconds)
            meta["deletionGracePeriodSeconds"] = seconds
            return True
        if "deletionTimestamp" in meta:
            return False
        meta["deletionTimestamp"] = stamp(self.now) if self.now is not None else "now"
        if obj["kind"] == "Namespace":
            obj.setdefault("status", {})["phase"] = "Terminating"
        return True

    def _grace_over(self, obj: dict[str, Any]) -> bool:
        """A deleted pod's containers have stopped: the model's kubelet takes the whole grace period."""
        meta = obj["metadata"]
        if obj["kind"] != "Pod" or self.now is None or "deletionGracePeriodSeconds" not in meta:
            return True
        return self.now >= seconds_at(meta["deletionTimestamp"])

    def exists(self, obj: dict[str, Any]) -> bool:
        uid = obj["metadata"]["uid"]
        return any(o["metadata"]["uid"] == uid for o in self.objects)

    # --- the controllers ---
    def reconcile(self) -> None:
        for _ in range(1000):
            if not self._step():
                return
        raise AssertionError("the model's controllers do not settle")

    def _step(self) -> bool:
        changed = False
        alive = {o["metadata"]["uid"] for o in self.objects}
        for obj in list(self.objects):
            meta = obj["metadata"]
            deleting = "deletionTimestamp" in meta
            if deleting and not meta["finalizers"] and self._grace_over(obj):
                self.objects.remove(obj)
                return True
            owners = meta.get("ownerReferences", [])
            if owners and not deleting and all(ref["uid"] not in alive for ref in owners):  # garbage collector
                self.mark_deleted(obj)
                return True
            changed |= self._released_volume(obj)
            if deleting:
                changed |= self._finalize(obj)
        return changed

    def _drop(self, obj: dict[str, Any], finalizer: str) -> bool:
        if finalizer in obj["metadata"]["finalizers"]:
            obj["metadata"]["finalizers"].remove(finalizer)
            return True
        return False

    def _finalize(self, obj: dict[str, Any]) -> bool:
        kind, meta = obj["kind"], obj["metadata"]
        if kind == "Namespace":
            inside = [o for o in self.objects if o["metadata"].get("namespace") == meta["name"]]
            if not inside:
                return self._drop(obj, NAMESPACE_FINALIZER)
            marked = False
            for item in inside:
                marked |= self.mark_deleted(item)
            return self._report_remaining(obj, inside) or marked
        if kind == "PersistentVolumeClaim":
            held = any(
                pod["metadata"].get("namespace") == meta["namespace"]
                and pod.get("spec", {}).get("nodeName")
                and any(
                    v.get("persistentVolumeClaim", {}).get("claimName") == meta["name"]
                    for v in pod.get("spec", {}).get("volumes", [])
                )
                for pod in self.of_kind("Pod")
            )
            return False if held else self._drop(obj, PVC_PROTECTION)
        if kind == "PersistentVolume":
            changed = False
            if obj.get("status", {}).get("phase") != "Bound":
                changed |= self._drop(obj, PV_PROTECTION)
            if self.csi_driver:
                changed |= self._drop(obj, PROVISIONER_FINALIZER)
            return changed
        if kind == "Service":
            return self._drop(obj, LB_CLEANUP)
        if kind == "NodeClaim" and self.karpenter_running():
            return self._terminate_node(obj)
        if kind == "EC2NodeClass" and self.karpenter_running():
            used = any(
                claim["spec"].get("nodeClassRef", {}).get("name") == meta["name"] for claim in self.of_kind("NodeClaim")
            )
            return False if used else self._drop(obj, NODECLASS_TERMINATION)
        return False

    def _report_remaining(self, namespace: dict[str, Any], inside: list[dict[str, Any]]) -> bool:
        """The namespace controller's account of what is left, in the namespace's status
        (pkg/controller/namespace/deletion/status_condition_utils.go, namespaceConditionUpdater:
        `<resource>.<group> has N resource instances`, `<finalizer> in N resource instances`)."""
        resources = Counter(resource_name(o) for o in inside)
        finalizers = Counter(f for o in inside for f in o["metadata"]["finalizers"])
        conditions = [
            {
                "type": "NamespaceContentRemaining",
                "status": "True",
                "reason": "SomeResourcesRemain",
                "message": "Some resources are remaining: "
                + ", ".join(sorted(f"{r} has {n} resource instances" for r, n in resources.items())),
            }
        ]
        if finalizers:
            conditions.append(
                {
                    "type": "NamespaceFinalizersRemaining",
                    "status": "True",
                    "reason": "SomeFinalizersRemain",
                    "message": "Some content in the namespace has finalizers remaining: "
                    + ", ".join(sorted(f"{f} in {n} resource instances" for f, n in finalizers.items())),
                }
            )
        status = namespace.setdefault("status", {})
        if status.get("conditions") == conditions:
            return False
        status["conditions"] = conditions
        return True

    def _released_volume(self, pv: dict[str, Any]) -> bool:
        """A bound PV whose claim is gone: Released; reclaim policy Delete deletes it."""
        if pv["kind"] != "PersistentVolume" or pv.get("status", {}).get("phase") != "Bound":
            return False
        ref = pv["spec"].get("claimRef", {})
        if self.find("PersistentVolumeClaim", ref.get("namespace"), ref.get("name", "")) is not None:
            return False
        pv["status"]["phase"] = "Released"
        if pv["spec"].get("persistentVolumeReclaimPolicy") == "Delete":
            self.mark_deleted(pv)
        return True

    def karpenter_running(self) -> bool:
        return any(
            pod["metadata"].get("labels", {}).get("app.kubernetes.io/name") == "karpenter"
            and "deletionTimestamp" not in pod["metadata"]
            for pod in self.of_kind("Pod")
        )

    def _blocked_by_budget(self, pod: dict[str, Any]) -> bool:
        labels = pod["metadata"].get("labels", {})
        return any(
            budget["metadata"]["namespace"] == pod["metadata"]["namespace"]
            and budget["spec"].get("maxUnavailable") == 0
            and budget["spec"]["selector"]["matchLabels"].items() <= labels.items()
            for budget in self.of_kind("PodDisruptionBudget")
        )

    def _termination_time(self, claim: dict[str, Any]) -> tuple[float | None, bool]:
        """The NodeClaim's termination time (None: none, or a model without a clock), and whether
        the lifecycle controller annotated it just now."""
        annotations = claim["metadata"].setdefault("annotations", {})
        grace = claim.get("spec", {}).get("terminationGracePeriod")
        if self.now is None or not grace:
            return None, False
        if TERMINATION_TIMESTAMP in annotations:
            return seconds_at(annotations[TERMINATION_TIMESTAMP]), False
        at = seconds_at(claim["metadata"]["deletionTimestamp"]) + duration_seconds(grace)
        annotations[TERMINATION_TIMESTAMP] = stamp(at)
        return at, True

    def _terminate_node(self, claim: dict[str, Any]) -> bool:
        node = claim.get("status", {}).get("nodeName")
        on_node = [
            pod
            for pod in self.of_kind("Pod")
            if pod["spec"].get("nodeName") == node
            and not any(ref["kind"] == "DaemonSet" for ref in pod["metadata"].get("ownerReferences", []))
        ]
        terminate_at, changed = self._termination_time(claim)
        for pod in on_node:
            if self.now is not None and terminate_at is not None and self.now >= terminate_at - grace_seconds(pod):
                if "deletionTimestamp" not in pod["metadata"]:
                    self._evict(pod, grace=max(int(terminate_at - self.now), 1))
                    changed = True
                else:  # already terminating past the termination time: its grace is cut short
                    changed |= self.mark_deleted(pod, grace=max(int(terminate_at - self.now), 1))
            elif (
                "deletionTimestamp" not in pod["metadata"]
                and not self._blocked_by_budget(pod)
                and pod["metadata"].get("annotations", {}).get(DO_NOT_DISRUPT) != "true"
            ):
                self._evict(pod)
                changed = True
        if on_node:  # the drain waits for every pod to be gone, evicted or not
            return changed
        gone = self.find("Node", None, node or "")
        if gone is not None:
            self.objects.remove(gone)
        return self._drop(claim, NODECLAIM_TERMINATION)

    def _evict(self, pod: dict[str, Any], grace: int | None = None) -> None:
        """The pod is deleted (with its grace period); its controller makes another, which finds
        no node of the pool left and stays pending."""
        owner = next((r for r in pod["metadata"].get("ownerReferences", []) if r.get("controller")), None)
        if owner and any(o["metadata"]["uid"] == owner["uid"] for o in self.objects):
            again = json.loads(json.dumps(pod))
            for field in ("deletionTimestamp", "deletionGracePeriodSeconds"):
                again["metadata"].pop(field, None)
            again["metadata"]["name"] += "-again"
            again["metadata"]["uid"] += "-again"
            again["spec"]["nodeName"] = ""
            self.objects.append(again)
        self.mark_deleted(pod, grace)

    # --- helm ---
    def uninstall(self, release: str, namespace: str) -> None:
        for obj in list(self.objects):
            annotations = obj["metadata"].get("annotations", {})
            if (
                annotations.get(RELEASE_ANNOTATION) == release
                and annotations.get("meta.helm.sh/release-namespace") == namespace
            ):
                self.mark_deleted(obj)
        self.reconcile()

    # --- kubectl ---
    def resolve(self, resource: str) -> tuple[str | None, str]:
        """(group, Kind) for a kubectl resource argument."""
        resource = SHORT_NAMES.get(resource, resource)
        if resource in RESOURCES:
            group, kind, _ = RESOURCES[resource]
            return group, kind
        parts = resource.split(".")
        if len(parts) >= 3:  # Kind.version.group
            return ".".join(parts[2:]), parts[0]
        return None, resource  # a bare Kind

    def kubectl(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        if args[:1] == ["--kubeconfig"]:
            args = args[4:]
        self.reconcile()  # the controllers run between any two calls

        def done(code: int, out: str = "", err: str = "") -> subprocess.CompletedProcess[str]:
            return subprocess.CompletedProcess(args, code, out, err)

        namespace = args[args.index("-n") + 1] if "-n" in args else None
        verb, resource = args[0], args[1]
        group, kind = self.resolve(resource)
        if verb == "get" and "--all-namespaces" in args:
            items = [o for o in self.objects if o["kind"] == kind and (group is None or _group(o) == group)]
            return done(0, json.dumps({"items": items}))
        name = args[2]
        obj = self.find(kind, namespace, name, group)
        if verb == "get":
            if obj is None:
                return done(1, "", f'Error from server (NotFound): {resource} "{name}" not found')
            return done(0, json.dumps(obj))
        if verb == "patch":  # a merge patch of the spec (pause, and the teardown's queue hold)
            if obj is None:
                return done(1, "", f'Error from server (NotFound): {resource} "{name}" not found')
            obj.setdefault("spec", {}).update(json.loads(args[args.index("-p") + 1]).get("spec", {}))
            self.reconcile()
            return done(0, f"{resource}/{name} patched")
        if verb == "delete":
            if obj is None:
                return done(0) if "--ignore-not-found" in args else done(1, "", f'{resource} "{name}" not found')
            grace = next((int(a.split("=", 1)[1]) for a in args if a.startswith("--grace-period=")), None)
            self.delete(obj, grace)
            if "--wait=false" not in args and self.exists(obj):
                return done(1, "", f"error: timed out waiting for the condition on {resource}/{name}")
            return done(0, f"{resource} {name} deleted")
        raise AssertionError(f"the model does not know kubectl {' '.join(args)}")


# --- a running platform, seeded from its synthesized stacks ---


def _pod(
    cluster: Cluster,
    name: str,
    namespace: str,
    *,
    owner: dict[str, Any] | None,
    node: str,
    claims: tuple[str, ...] = (),
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels or {}}
    if annotations:
        meta["annotations"] = annotations
    if owner:
        meta["ownerReferences"] = [
            {
                "apiVersion": owner["apiVersion"],
                "kind": owner["kind"],
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": True,
            }
        ]
    return cluster.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": meta,
            "spec": {
                "nodeName": node,
                "volumes": [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims],
            },
        }
    )


def _owned(cluster: Cluster, api_version: str, kind: str, name: str, namespace: str, **meta: Any) -> dict[str, Any]:
    return cluster.create(
        {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": namespace, **meta}}
    )


def _dynamic_claim(cluster: Cluster, name: str, namespace: str, storage_class: str, **meta: Any) -> None:
    """A claim the EBS CSI driver provisioned, bound to its volume (reclaim policy of the class)."""
    reclaim = "Delete"
    for sc in cluster.of_kind("StorageClass"):
        if sc["metadata"]["name"] == storage_class:
            reclaim = sc.get("reclaimPolicy", "Delete")
    volume = f"pvc-{namespace}-{name}"
    cluster.create(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": namespace, **meta},
            "spec": {"storageClassName": storage_class, "volumeName": volume},
        }
    )
    cluster.create(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": volume, "finalizers": [PROVISIONER_FINALIZER]},
            "spec": {
                "storageClassName": storage_class,
                "persistentVolumeReclaimPolicy": reclaim,
                "claimRef": {"namespace": namespace, "name": name},
            },
            "status": {"phase": "Bound"},
        }
    )


def _values(release: dict[str, Any]) -> dict[str, Any]:
    import yaml  # here, not at the top: the fake terraform starts faster without it

    merged: dict[str, Any] = {}
    for text in release.get("values", []):
        merged.update(yaml.safe_load(text) or {})
    return merged


def _dig(values: dict[str, Any], *path: str) -> Any:
    for key in path:
        if not isinstance(values, dict):
            return None
        values = values.get(key)  # type: ignore[assignment]
    return values


def running_platform(stacks: dict[str, dict[str, Any]]) -> Cluster:
    """The cluster of a deployed profile at work: what its addons and workloads layers created
    (Terraform's objects, each marked with its address), the releases' pods, the claims their
    charts make, a JupyterHub user, Karpenter's nodes, and a tenant's two-node job on the GPU pool
    mounting the tenant's claims and a scratch volume."""
    cluster = Cluster()
    cluster.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": SYSTEM_NODE}})
    for layer in ("addons", "workloads"):
        for rtype, bodies in stacks[layer].get("resource", {}).items():
            for name, body in bodies.items():
                address = f"{rtype}.{name}"
                if rtype == "kubernetes_manifest" and not isinstance(body["manifest"], dict):
                    _upstream_manifest(cluster, address, body, bodies)
                elif rtype == "kubernetes_manifest":
                    obj = json.loads(json.dumps(body["manifest"]))
                    obj["metadata"].setdefault("annotations", {})[ADDRESS_ANNOTATION] = address
                    if obj["kind"] == "PersistentVolume":
                        obj.setdefault("status", {})["phase"] = "Bound"
                    cluster.create(obj)
                elif rtype == "kubernetes_storage_class_v1":
                    cluster.create(
                        {
                            "apiVersion": "storage.k8s.io/v1",
                            "kind": "StorageClass",
                            "metadata": {
                                "name": body["metadata"]["name"],
                                "annotations": {ADDRESS_ANNOTATION: address},
                            },
                            "reclaimPolicy": body.get("reclaim_policy", "Delete"),
                        }
                    )
    # Static PVs are bound to the claims that name them.
    for claim in cluster.of_kind("PersistentVolumeClaim"):
        volume = claim.get("spec", {}).get("volumeName")
        pv = cluster.find("PersistentVolume", None, volume) if volume else None
        if pv is not None:
            pv["spec"]["claimRef"] = {"namespace": claim["metadata"]["namespace"], "name": claim["metadata"]["name"]}
    for release in stacks["addons"].get("resource", {}).get("helm_release", {}).values():
        _release(cluster, release)
    _karpenter_nodes(cluster)
    node_groups = stacks["cluster"].get("resource", {}).get("aws_eks_node_group", {})
    _tenant_jobs(cluster, managed_gpu_nodes=any(not name.startswith("system") for name in node_groups))
    cluster.reconcile()
    return cluster


def _upstream_manifest(cluster: Cluster, address: str, body: dict[str, Any], manifests: dict[str, Any]) -> None:
    """A for_each over an upstream release manifest (the MPI Operator's): its controller, in the
    namespace the resource depends on."""
    namespace = next(
        manifests[dep.split(".", 1)[1]]["manifest"]["metadata"]["name"]
        for dep in body.get("depends_on", [])
        if dep.split(".", 1)[1] in manifests
        and isinstance(manifests[dep.split(".", 1)[1]]["manifest"], dict)
        and manifests[dep.split(".", 1)[1]]["manifest"]["kind"] == "Namespace"
    )
    marked = {ADDRESS_ANNOTATION: address}
    controller = _owned(cluster, "apps/v1", "Deployment", address.split(".", 1)[1], namespace, annotations=marked)
    _pod(cluster, f"{controller['metadata']['name']}-0", namespace, owner=controller, node=SYSTEM_NODE)


def _release(cluster: Cluster, release: dict[str, Any]) -> None:
    name, namespace, chart = release["name"], release["namespace"], release["chart"]
    helm = {RELEASE_ANNOTATION: name, "meta.helm.sh/release-namespace": namespace}
    values = _values(release)
    deployment = _owned(cluster, "apps/v1", "Deployment", name, namespace, annotations=dict(helm))
    labels = {"app.kubernetes.io/name": "karpenter"} if chart == "karpenter" else {}
    claims: tuple[str, ...] = ()
    if chart == "jupyterhub":
        # The chart's hub keeps its database on a claim (hub.db.type sqlite-pvc, the default) and
        # serves users through proxy-public; each user's server mounts claim-<user>.
        if (_dig(values, "hub", "db", "type") or "sqlite-pvc") == "sqlite-pvc":
            storage_class = _dig(values, "hub", "db", "pvc", "storageClassName") or "gp3"
            _dynamic_claim(cluster, "hub-db-dir", namespace, storage_class, annotations=dict(helm))
            claims = ("hub-db-dir",)
        service_type = _dig(values, "proxy", "service", "type") or "LoadBalancer"
        cluster.create(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "proxy-public", "namespace": namespace, "annotations": dict(helm)},
                "spec": {"type": service_type},
            }
        )
        if (_dig(values, "singleuser", "storage", "type") or "dynamic") == "dynamic":
            storage_class = _dig(values, "singleuser", "storage", "dynamic", "storageClass") or "gp3"
            _dynamic_claim(cluster, "claim-alice", namespace, storage_class)
            _pod(cluster, "jupyter-alice", namespace, owner=None, node=SYSTEM_NODE, claims=("claim-alice",))
    _pod(cluster, f"{name}-0", namespace, owner=deployment, node=SYSTEM_NODE, claims=claims, labels=labels)
    template = _dig(values, "prometheus", "prometheusSpec", "storageSpec", "volumeClaimTemplate")
    if chart == "kube-prometheus-stack" and template:
        # The operator's StatefulSet (from the release's Prometheus object) makes the claim from its
        # volumeClaimTemplate; the default retention policy leaves it when the StatefulSet goes.
        statefulset = _owned(cluster, "apps/v1", "StatefulSet", f"prometheus-{name}", namespace, annotations=dict(helm))
        claim = f"prometheus-{name}-db-prometheus-{name}-0"
        _dynamic_claim(cluster, claim, namespace, template.get("spec", {}).get("storageClassName") or "gp3")
        _pod(cluster, f"prometheus-{name}-0", namespace, owner=statefulset, node=SYSTEM_NODE, claims=(claim,))


def _karpenter_nodes(cluster: Cluster) -> None:
    for pool in cluster.of_kind("NodePool"):
        name = pool["metadata"]["name"]
        node = f"{name}-node-1"
        cluster.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}})
        cluster.create(
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodeClaim",
                "metadata": {
                    "name": f"{name}-abcde",
                    "labels": {"karpenter.sh/nodepool": name},
                    "ownerReferences": [
                        {
                            "apiVersion": "karpenter.sh/v1",
                            "kind": "NodePool",
                            "name": name,
                            "uid": pool["metadata"]["uid"],
                            "blockOwnerDeletion": True,
                        }
                    ],
                },
                "spec": {
                    key: value
                    for key, value in pool["spec"]["template"]["spec"].items()
                    if key in ("nodeClassRef", "terminationGracePeriod", "expireAfter")
                },
                "status": {"nodeName": node},
            }
        )


def _tenant_jobs(cluster: Cluster, *, managed_gpu_nodes: bool) -> None:
    """In each namespace where the workloads layer makes claims: an MPIJob (launcher Job, two
    workers) on a managed GPU node (or the GPU pool's, without managed GPU groups), mounting those
    claims and a scratch volume of its own; and on every Karpenter node a notebook Deployment's pod
    mounting the same claims."""
    pools = [p["metadata"]["name"] for p in cluster.of_kind("NodePool")]
    gpu_node = MANAGED_GPU_NODE if managed_gpu_nodes or "gpu" not in pools else "gpu-node-1"
    if gpu_node == MANAGED_GPU_NODE:
        cluster.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": MANAGED_GPU_NODE}})
    namespaces = sorted(
        {
            c["metadata"]["namespace"]
            for c in cluster.of_kind("PersistentVolumeClaim")
            if ADDRESS_ANNOTATION in c["metadata"].get("annotations", {})
        }
    )
    for namespace in namespaces:
        claims = tuple(
            c["metadata"]["name"]
            for c in cluster.of_kind("PersistentVolumeClaim")
            if c["metadata"]["namespace"] == namespace
        )
        _dynamic_claim(cluster, "scratch", namespace, "gp3")
        job = _owned(cluster, "kubeflow.org/v2beta1", "MPIJob", "train", namespace)
        launcher = cluster.create(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {
                    "name": "train-launcher",
                    "namespace": namespace,
                    "ownerReferences": [
                        {
                            "apiVersion": "kubeflow.org/v2beta1",
                            "kind": "MPIJob",
                            "name": "train",
                            "uid": job["metadata"]["uid"],
                            "controller": True,
                        }
                    ],
                },
            }
        )
        _pod(
            cluster,
            "train-launcher-x",
            namespace,
            owner=launcher,
            node=gpu_node,
            claims=claims,
            labels={"job": "train"},
        )
        for index in range(2):
            _pod(
                cluster,
                f"train-worker-{index}",
                namespace,
                owner=job,
                node=gpu_node,
                claims=(*claims, "scratch"),
                labels={"job": "train"},
            )
        for pool in pools:
            notebook = _owned(cluster, "apps/v1", "Deployment", f"notebook-{pool}", namespace)
            _pod(cluster, f"notebook-{pool}-x", namespace, owner=notebook, node=f"{pool}-node-1", claims=claims)


# --- the fake terraform ---


def _dependencies(stack: dict[str, Any]) -> dict[str, set[str]]:
    """Each resource's dependencies: depends_on and the resources its body refers to."""
    addresses = {f"{t}.{n}" for t, bodies in stack.get("resource", {}).items() for n in bodies}
    deps: dict[str, set[str]] = {}
    for rtype, bodies in stack.get("resource", {}).items():
        for name, body in bodies.items():
            text = json.dumps({k: v for k, v in body.items() if k != "//"})
            named = set(body.get("depends_on", [])) | {
                m.group(1) for m in re.finditer(r"\$\{([a-z0-9_]+\.[A-Za-z0-9_-]+)", text) if m.group(1) in addresses
            }
            deps[f"{rtype}.{name}"] = named & addresses
    return deps


def destroy(cluster: Cluster, stack: dict[str, Any], state: list[str]) -> tuple[list[str], str]:
    """Destroy the addresses in `state` in Terraform's order; returns what is left and the error."""
    deps = _dependencies(stack)
    left = list(state)
    bodies = {f"{t}.{n}": b for t, group in stack.get("resource", {}).items() for n, b in group.items()}
    while left:
        wave = [a for a in left if not any(a in deps.get(other, set()) for other in left if other != a)]
        assert wave, f"a dependency cycle among {left}"
        deleted = []
        for address in wave:
            rtype = address.split(".", 1)[0]
            if rtype == "helm_release":
                cluster.uninstall(bodies[address]["name"], bodies[address]["namespace"])
            elif rtype.startswith("kubernetes_"):
                for obj in cluster.objects:
                    if obj["metadata"].get("annotations", {}).get(ADDRESS_ANNOTATION) == address:
                        cluster.mark_deleted(obj)
                        deleted.append((address, obj))
        cluster.reconcile()
        stuck = [(a, o) for a, o in deleted if cluster.exists(o)]
        # The provider waits for each object up to its delete timeout, concurrently in a wave.
        started = cluster.now
        while (
            started is not None
            and cluster.now is not None
            and any(cluster.now < started + _delete_timeout(bodies[a]) for a, _ in stuck)
        ):
            cluster.now += TERRAFORM_POLL_SECONDS
            cluster.reconcile()
            stuck = [(a, o) for a, o in stuck if cluster.exists(o)]
        left = [a for a in left if a not in wave or any(a == s for s, _ in stuck)]
        if stuck:
            return left, "\n".join(
                f'Error: Timed out when waiting for resource "{o["metadata"]["name"]}" to be deleted (with {a})'
                for a, o in stuck
            )
    return left, ""


def _delete_timeout(body: dict[str, Any]) -> float:
    """A kubernetes_manifest's timeouts.delete (the provider's getTimeouts), in seconds."""
    timeouts = body.get("timeouts") or {}
    return duration_seconds(timeouts.get("delete") or DEFAULT_DELETE_TIMEOUT)


# -S: no site initialisation (a fake terraform starts hundreds of times per run); the one
# third-party module the model may need (yaml, for a helm release's values) is found by path.
FAKE_TERRAFORM = """#!{python} -S
import sys
sys.path[:0] = [{root!r}, {site!r}]
from tests.cluster_model import terraform_main
sys.exit(terraform_main(sys.argv[1:]))
"""


def install_fake_terraform(folder: Path) -> Path:
    import yaml

    binary = folder / "terraform"
    site = str(Path(yaml.__file__).parent.parent)
    binary.write_text(FAKE_TERRAFORM.format(python=sys.executable, root=str(Path(__file__).parent.parent), site=site))
    binary.chmod(0o755)
    return binary


def terraform_main(argv: list[str]) -> int:
    """Enough of Terraform for a destroy: init, plan -destroy, show -json, apply of the saved plan
    (and the targeted apply that lifts data protection), state list, output -json. The cluster and
    every layer's state are in the file named by FAKE_CLUSTER."""
    import os

    folder = Path(argv[0].split("=", 1)[1])
    layer, command, rest = folder.name, argv[1], argv[2:]
    world_path = Path(os.environ["FAKE_CLUSTER"])
    world = json.loads(world_path.read_text())
    state: list[str] = world["state"][layer]
    with open(world_path.parent / "terraform.log", "a") as log:
        log.write(f"{layer} {command}\n")
    if command == "init":
        return 0
    if command == "state":
        print("\n".join(state))
        return 0
    if command == "output":
        if layer == "cluster" and state:
            print(
                json.dumps({"cluster_name": {"value": world["cluster_name"]}, "endpoint": {"value": world["endpoint"]}})
            )
        else:
            print("{}")
        return 0
    if command == "plan":
        (folder / "tfplan").write_text(json.dumps({"destroy": "-destroy" in rest, "addresses": state}))
        return 2 if state else 0
    if command == "show":
        plan = json.loads((folder / "tfplan").read_text())
        print(
            json.dumps(
                {
                    "resource_changes": [
                        {"address": a, "type": a.split(".")[0], "change": {"actions": ["delete"]}}
                        for a in plan["addresses"]
                    ]
                }
            )
        )
        return 0
    if command == "apply" and "tfplan" in rest:
        stack = json.loads((folder / "cdk.tf.json").read_text())
        cluster = _cluster_of(world)
        left, error = destroy(cluster, stack, state)
        world["state"][layer] = left
        world["cluster"] = _state_of(cluster)
        world_path.write_text(json.dumps(world))
        if error:
            sys.stderr.write(error + "\n")
            return 1
        return 0
    if command == "apply":  # -target: lifting data protection changes nothing the model holds
        return 0
    raise AssertionError(f"the fake terraform does not know {command}")


def _cluster_of(world: dict[str, Any]) -> Cluster:
    data = world["cluster"]
    return Cluster(data["objects"], csi_driver=data["csi_driver"], now=data.get("now"))


def _state_of(cluster: Cluster) -> dict[str, Any]:
    return {"objects": cluster.objects, "csi_driver": cluster.csi_driver, "now": cluster.now}


class World:
    """The model's file: the cluster (with its clock) and every layer's state; kubectl reads and
    writes it too. Its clock runs: the clean-up's waits advance it (`now`, `advance`), and the
    fake terraform advances it while it waits for deleted objects."""

    def __init__(self, path: Path, stacks: dict[str, dict[str, Any]], *, cluster_name: str, cluster: Cluster):
        if cluster.now is None:
            cluster.now = 0.0
        self.path = path
        self.calls: list[list[str]] = []
        state = {
            layer: [f"{t}.{n}" for t, bodies in stack.get("resource", {}).items() for n in bodies]
            for layer, stack in stacks.items()
        }
        path.write_text(
            json.dumps(
                {
                    "state": state,
                    "cluster": _state_of(cluster),
                    "cluster_name": cluster_name,
                    "endpoint": "https://ABC.gr7.us-west-2.eks.amazonaws.com",
                }
            )
        )

    @property
    def cluster(self) -> Cluster:
        return _cluster_of(json.loads(self.path.read_text()))

    @property
    def now(self) -> float:
        now: float = json.loads(self.path.read_text())["cluster"]["now"]
        return now

    def advance(self, seconds: float) -> None:
        world = json.loads(self.path.read_text())
        world["cluster"]["now"] += seconds
        self.path.write_text(json.dumps(world))

    def kubectl(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        world = json.loads(self.path.read_text())
        cluster = _cluster_of(world)
        done = cluster.kubectl(args)
        world["cluster"] = _state_of(cluster)
        self.path.write_text(json.dumps(world))
        self.calls.append(args)
        return done

    def state(self, layer: str) -> list[str]:
        return list(json.loads(self.path.read_text())["state"][layer])
