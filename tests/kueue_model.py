"""What Kueue does with a tenant's pods and jobs, for the parts the queues' shares rely on: an
evaluator built from Kueue's source at the pinned version (kueue v0.19.2; file and line below), so
that tests can walk a tenant's pods through it without a cluster.

- Which pods the API server sends to Kueue's pod webhook at all: the chart gives the pod webhook
  the configuration's managedJobsNamespaceSelector as its namespaceSelector
  (charts/kueue/templates/webhook/manifests.yaml 315-330; without one, every namespace but
  kube-system and the release's), and an integration that is not enabled gets a webhook that
  does nothing (pkg/controller/jobframework/setup.go 108-110).
- What the pod webhook does (pkg/controller/jobs/pod/pod_webhook.go, Default, 104-195): a pod whose
  parent (a Deployment, a StatefulSet) marked it `kueue.x-k8s.io/pod-suspending-parent` is gated
  at once (109-111, 171-176); otherwise a namespace outside managedJobsNamespaceSelector is left
  alone (119-121), a pod with an ancestor job Kueue already queues is left to that job (145-149),
  a pod without a queue name gets the LocalQueue `default` where one exists (151-158), and a pod
  with a queue name (or every pod, with manageJobsWithoutQueueName) is gated (162-176): it gets
  the scheduling gate kueue.x-k8s.io/admission and is not scheduled until its Workload is admitted.
- The ancestor walk (pkg/controller/jobframework/reconciler.go, FindAncestorJobManagedByKueue,
  884-945): up the controller owner references while the owner is a kind some integration
  registers (integrationmanager.go 213-228, ReplicaSet included as the step to a Deployment); an
  owner counts when its integration is enabled and it has a queue name (or
  manageJobsWithoutQueueName is on), 937-939; the topmost such owner is the one.
- Quota (pkg/cache/scheduler/resource_node.go 64-140, for ClusterQueues directly in one cohort):
  a ClusterQueue lends what its lendingLimit allows (all of its nominal quota without one); what
  it may use is its unused own quota plus what the cohort has left, bounded by its borrowingLimit.
- Flavour choice (pkg/scheduler/flavorassigner/flavorassigner.go 1061-1206, 1330-1380, 535-575,
  1259-1276, with the ClusterQueue's default flavorFungibility, whenCanBorrow MayStopSearch and
  whenCanPreempt TryNextFlavor): flavours in the ClusterQueue's order; the first where the pod set
  fits (borrowing or not) is taken; one where it fits only by taking quota back is remembered and
  taken when no later flavour fits; one beyond what the queue could ever hold is skipped.
- Taking quota back (pkg/scheduler/preemption/preemption.go 631-650 with reclaimWithinCohort Any,
  667-674): a pod set that fits its ClusterQueue's nominal quota preempts workloads of ClusterQueues
  that are borrowing in that flavour, newest first, until it fits.
- What Kueue counts of a job's pod set (pkg/workload/resources.go, AdjustResources 144-153): the
  namespace's LimitRange defaults merged into its containers first (handlePodLimitRange 75-114,
  only what a container does not state), then its limits taken as the requests still missing
  (UseLimitsAsMissingRequestsInPod 122-138). A job's pod template gets no request-from-limit
  defaulting from the API server (SetDefaults_Pod applies to Pods, not to templates).

Resources other than GPUs and EFA interfaces are left out (the queues' CPU and memory are not a
limit), as are priorities (every tenant workload has the same), fair sharing and topology.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from profiles.catalog import EFA_RESOURCE, GPU_RESOURCE
from profiles.limits import quantity_value

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
SUSPENDED_BY_PARENT = "kueue.x-k8s.io/pod-suspending-parent"
SCHEDULING_GATE = "kueue.x-k8s.io/admission"
DEFAULT_LOCAL_QUEUE = "default"
# Owner kinds some integration of kueue v0.19.2 registers (pkg/controller/jobs/*, RegisterIntegration),
# by apiVersion and kind -> framework name; ReplicaSet is walked over without being one.
REGISTERED_OWNERS: dict[tuple[str, str], str | None] = {
    ("batch/v1", "Job"): "batch/job",
    ("apps/v1", "Deployment"): "deployment",
    ("apps/v1", "StatefulSet"): "statefulset",
    ("apps/v1", "ReplicaSet"): None,
    ("jobset.x-k8s.io/v1alpha2", "JobSet"): "jobset.x-k8s.io/jobset",
    ("kubeflow.org/v2beta1", "MPIJob"): "kubeflow.org/mpijob",
    ("kubeflow.org/v1", "PyTorchJob"): "kubeflow.org/pytorchjob",
    ("ray.io/v1", "RayJob"): "ray.io/rayjob",
    ("ray.io/v1", "RayCluster"): "ray.io/raycluster",
    ("ray.io/v1", "RayService"): "ray.io/rayservice",
    ("trainer.kubeflow.org/v1alpha1", "TrainJob"): "trainer.kubeflow.org/trainjob",
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"): "leaderworkerset.x-k8s.io/leaderworkerset",
    ("workload.codeflare.dev/v1beta2", "AppWrapper"): "workload.codeflare.dev/appwrapper",
}


def selector_matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """A metav1.LabelSelector (matchLabels and matchExpressions: In, NotIn, Exists, DoesNotExist)."""
    if selector is None:
        return True
    if any(labels.get(key) != value for key, value in selector.get("matchLabels", {}).items()):
        return False
    for expression in selector.get("matchExpressions", []):
        key, operator, values = expression["key"], expression["operator"], expression.get("values", [])
        present = key in labels
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
        if operator == "In" and (not present or labels[key] not in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
    return True


@dataclass(frozen=True)
class Owner:
    """One controller owner up a pod's chain, nearest first."""

    api_version: str
    kind: str
    queue_name: str | None = None
    """Its kueue.x-k8s.io/queue-name label (what the job webhooks' LocalQueue defaulting left)."""


def webhook_namespace_selector(configuration: dict[str, Any], release_namespace: str) -> dict[str, Any]:
    """The pod webhook's namespaceSelector as the chart renders it (manifests.yaml 320-330)."""
    if "managedJobsNamespaceSelector" in configuration:
        return configuration["managedJobsNamespaceSelector"]
    return {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", release_namespace]}
        ]
    }


def managed_ancestor(configuration: dict[str, Any], owners: list[Owner]) -> Owner | None:
    """FindAncestorJobManagedByKueue (reconciler.go 884-945)."""
    enabled = set(configuration.get("integrations", {}).get("frameworks", []))
    without_queue_name = configuration.get("manageJobsWithoutQueueName", False)
    top = None
    for owner in owners:
        if (owner.api_version, owner.kind) not in REGISTERED_OWNERS:
            break  # 906-913: not a known owner, stop walking
        framework = REGISTERED_OWNERS[(owner.api_version, owner.kind)]
        if framework in enabled and (without_queue_name or owner.queue_name):
            top = owner
    return top


@dataclass(frozen=True)
class PodQueueing:
    gated: bool
    """The pod webhook gated it: it waits for its own Workload's admission."""
    through: Owner | None
    """The ancestor job Kueue queues it through (counted in that job's Workload)."""
    labels: dict[str, str]
    """The pod's labels after the webhook (the queue name it was given)."""

    @property
    def queued(self) -> bool:
        """Kueue counts the pod's resources, in its own Workload or its job's."""
        return self.gated or self.through is not None


def pod_queueing(
    configuration: dict[str, Any],
    pod: dict[str, Any],
    *,
    namespace_labels: dict[str, str],
    local_queues: set[str],
    owners: Sequence[Owner] = (),
    release_namespace: str = "kueue-system",
) -> PodQueueing:
    """What becomes of a pod created in a namespace with `namespace_labels` and LocalQueues `local_queues`."""
    labels = dict(pod.get("metadata", {}).get("labels", {}))
    enabled = set(configuration.get("integrations", {}).get("frameworks", []))
    through = managed_ancestor(configuration, list(owners))
    not_gated = PodQueueing(gated=False, through=through, labels=labels)
    if "pod" not in enabled or not selector_matches(
        webhook_namespace_selector(configuration, release_namespace), namespace_labels
    ):
        return not_gated  # the API server does not call the webhook, or it does nothing
    if SUSPENDED_BY_PARENT in pod.get("metadata", {}).get("annotations", {}):
        return PodQueueing(gated=True, through=None, labels=labels)  # 109-111, 171-176
    if not selector_matches(configuration.get("managedJobsNamespaceSelector"), namespace_labels):
        return not_gated  # 119-121
    if through is not None:
        return not_gated  # 145-149: its job is queued
    if not labels.get(QUEUE_LABEL) and DEFAULT_LOCAL_QUEUE in local_queues:
        labels[QUEUE_LABEL] = DEFAULT_LOCAL_QUEUE  # 151-158
    gated = bool(labels.get(QUEUE_LABEL)) or configuration.get("manageJobsWithoutQueueName", False)
    return PodQueueing(gated=gated, through=None, labels=labels)


def pod_requests(pod: dict[str, Any]) -> dict[str, int]:
    """GPUs and EFA interfaces a pod asks for (its containers' requests, or limits where a request is missing)."""
    total = {GPU_RESOURCE: 0, EFA_RESOURCE: 0}
    for container in pod["spec"]["containers"]:
        resources = container.get("resources", {})
        merged = {**resources.get("limits", {}), **resources.get("requests", {})}
        for name in total:
            total[name] += int(quantity_value(merged.get(name, "0")))
    return total


@dataclass(frozen=True)
class Quota:
    nominal: int
    borrowing_limit: int | None
    lending_limit: int | None


@dataclass
class Workload:
    queue: str
    name: str
    requests: dict[str, int]
    flavor: str | None = None


@dataclass
class Cohort:
    """The tenants' ClusterQueues (all in one cohort) and the Workloads they hold."""

    quotas: dict[str, dict[str, dict[str, Quota]]]
    """ClusterQueue -> flavour (in the queue's order) -> resource -> quota."""
    admitted: list[Workload] = field(default_factory=list)

    @classmethod
    def of(cls, cluster_queues: list[dict[str, Any]]) -> Cohort:
        quotas: dict[str, dict[str, dict[str, Quota]]] = {}
        for queue in cluster_queues:
            flavors: dict[str, dict[str, Quota]] = {}
            for group in queue["spec"]["resourceGroups"]:
                if GPU_RESOURCE not in group["coveredResources"]:
                    continue
                for flavor in group["flavors"]:
                    flavors[flavor["name"]] = {
                        r["name"]: Quota(
                            nominal=int(quantity_value(r["nominalQuota"])),
                            borrowing_limit=int(quantity_value(r["borrowingLimit"])) if "borrowingLimit" in r else None,
                            lending_limit=int(quantity_value(r["lendingLimit"])) if "lendingLimit" in r else None,
                        )
                        for r in flavor["resources"]
                    }
            quotas[queue["metadata"]["name"]] = flavors
        return cls(quotas)

    def _usage(self, queue: str, flavor: str, resource: str) -> int:
        return sum(w.requests.get(resource, 0) for w in self.admitted if w.queue == queue and w.flavor == flavor)

    def _quota(self, queue: str, flavor: str, resource: str) -> Quota:
        return self.quotas[queue].get(flavor, {}).get(resource, Quota(0, None, None))

    def _local(self, queue: str, flavor: str, resource: str) -> int:
        """localQuota (resource_node.go 67-72): what its lendingLimit keeps out of the cohort."""
        quota = self._quota(queue, flavor, resource)
        return 0 if quota.lending_limit is None else max(0, quota.nominal - quota.lending_limit)

    def _cohort_left(self, flavor: str, resource: str) -> int:
        """The cohort's SubtreeQuota minus its Usage (accumulateFromChild, 217-227)."""
        lent = sum(self._quota(q, flavor, resource).nominal - self._local(q, flavor, resource) for q in self.quotas)
        used = sum(max(0, self._usage(q, flavor, resource) - self._local(q, flavor, resource)) for q in self.quotas)
        return lent - used

    def available(self, queue: str, flavor: str, resource: str) -> int:
        """available (resource_node.go 106-122) for a ClusterQueue whose parent is the cohort."""
        quota, local, usage = (
            self._quota(queue, flavor, resource),
            self._local(queue, flavor, resource),
            self._usage(queue, flavor, resource),
        )
        from_cohort = self._cohort_left(flavor, resource)
        if quota.borrowing_limit is not None:
            stored = quota.nominal - local
            used_in_cohort = max(0, usage - local)
            from_cohort = min(stored - used_in_cohort + quota.borrowing_limit, from_cohort)
        return max(0, local - usage) + from_cohort

    def potential(self, queue: str, flavor: str, resource: str) -> int:
        """potentialAvailable (129-140): the most it could ever hold."""
        quota = self._quota(queue, flavor, resource)
        lent = sum(self._quota(q, flavor, resource).nominal - self._local(q, flavor, resource) for q in self.quotas)
        most = self._local(queue, flavor, resource) + lent
        return most if quota.borrowing_limit is None else min(quota.nominal + quota.borrowing_limit, most)

    def borrowing(self, queue: str, flavor: str, resource: str) -> bool:
        return self._usage(queue, flavor, resource) > self._quota(queue, flavor, resource).nominal

    def _reclaim(self, workload: Workload, flavor: str) -> list[Workload] | None:
        """The borrowers' workloads to preempt, newest first, until `workload` fits; None if it cannot
        (they are then left running)."""
        needed = {name: amount for name, amount in workload.requests.items() if amount}
        own = workload.queue
        if any(self._usage(own, flavor, r) + v > self._quota(own, flavor, r).nominal for r, v in needed.items()):
            return None  # only what fits its own nominal quota is taken back
        before = list(self.admitted)
        victims: list[Workload] = []
        for candidate in reversed(before):
            if all(v <= self.available(own, flavor, r) for r, v in needed.items()):
                break
            borrowing = any(self.borrowing(candidate.queue, flavor, r) for r in needed)
            if candidate.queue != own and candidate.flavor == flavor and borrowing:
                self.admitted.remove(candidate)
                victims.append(candidate)
        if all(v <= self.available(own, flavor, r) for r, v in needed.items()):
            return victims
        self.admitted = before
        return None

    def admit(self, queue: str, name: str, requests: dict[str, int]) -> tuple[Workload | None, list[Workload]]:
        """Admit a one-pod-set Workload: (the admitted workload or None, the workloads it preempted)."""
        workload = Workload(queue=queue, name=name, requests=requests)
        needed = {r: v for r, v in requests.items() if v}
        reclaim_at = None
        for flavor in self.quotas[queue]:
            if any(v > self.potential(queue, flavor, r) for r, v in needed.items()):
                continue  # noFit: beyond what the queue could ever hold here
            if all(v <= self.available(queue, flavor, r) for r, v in needed.items()):
                workload.flavor = flavor  # fit, borrowing or not: MayStopSearch
                self.admitted.append(workload)
                return workload, []
            if reclaim_at is None:
                reclaim_at = flavor  # TryNextFlavor, keep it as the best so far
        if reclaim_at is None:
            return None, []
        victims = self._reclaim(workload, reclaim_at)
        if victims is None:
            return None, []
        workload.flavor = reclaim_at
        self.admitted.append(workload)
        return workload, victims


def pod_set_requests(template: dict[str, Any], limit_ranges: list[dict[str, Any]]) -> dict[str, float]:
    """What Kueue counts for one pod of a pod set: AdjustResources (resources.go 144-153) with
    `limit_ranges` as stored (tests/admission.py's `stored`); summed over the containers."""
    default_limits: dict[str, str] = {}
    default_requests: dict[str, str] = {}
    for limit_range in limit_ranges:  # limitrange.Summarize keeps the first default (38-57)
        for item in limit_range["spec"]["limits"]:
            if item["type"] == "Container":
                for name, value in item.get("default", {}).items():
                    default_limits.setdefault(name, value)
                for name, value in item.get("defaultRequest", {}).items():
                    default_requests.setdefault(name, value)
    total: dict[str, float] = {}
    for container in template["spec"]["containers"]:
        resources = container.get("resources", {})
        limits = {**default_limits, **resources.get("limits", {})}
        requests = {**default_requests, **resources.get("requests", {})}  # handlePodLimitRange
        requests = {**limits, **requests}  # then limits where a request is still missing
        for name, value in requests.items():
            total[name] = total.get(name, 0) + quantity_value(value)
    return total


# DRA (KueueDRAIntegration, Beta and on by default in v0.19.2: pkg/features/kube_features.go 745-747).
# What Kueue counts of a pod set's ResourceClaims, for one pod:
# - a claim made from a ResourceClaimTemplate is counted from the template (pkg/dra/claims.go,
#   GetResourceRequestsForResourceClaimTemplates 164-237); a pod-level entry counts whether or not a
#   container names it (168: the pod spec's resourceClaims, not the containers' resources.claims);
# - per template, each request's `exactly.count` devices of its deviceClassName, summed per class
#   (countDevicesPerClass 58-125; the API server stores allocationMode ExactCount and count 1 where
#   a request leaves them out, k8s.io/api resource/v1 types.go 1065-1067); FirstAvailable,
#   adminAccess and allocationMode All make the workload inadmissible (73-111);
# - each class is counted under the quota resource resources.deviceClassMappings names for it
#   (mapper.go Lookup 64-70, PopulateFromConfiguration 119-130, the first mapping of a class wins);
#   a class no mapping names makes the workload inadmissible (claims.go 212-219);
# - a pod set that references an existing ResourceClaim by name (resourceClaimName, a claim shared
#   between pods) makes the workload inadmissible: "KueueDRAIntegration feature does not support use
#   of resource claims" (pkg/controller/core/workload_controller.go 452-468; workload.go HasResourceClaim
#   1301-1311).
# Kueue adds these to the pod set's container requests and multiplies by the pod count
# (pkg/workload/workload.go totalRequestsFromPodSets 676-697).


class Inadmissible(Exception):
    """Kueue marks the Workload inadmissible (QuotaReserved false) instead of counting it."""


def dra_pod_set_requests(
    template: dict[str, Any], claim_templates: dict[str, dict[str, Any]], mappings: list[dict[str, Any]]
) -> dict[str, int]:
    """The quota resources one pod of the pod set takes through its claims; `claim_templates` are
    the namespace's ResourceClaimTemplates by name, `mappings` the Configuration's deviceClassMappings."""
    lookup: dict[str, str] = {}
    for mapping in mappings:
        for device_class in mapping["deviceClassNames"]:
            lookup.setdefault(device_class, mapping["name"])
    claims = template["spec"].get("resourceClaims", [])
    if any("resourceClaimName" in claim for claim in claims):
        raise Inadmissible("KueueDRAIntegration feature does not support use of resource claims")
    total: dict[str, int] = {}
    for claim in claims:
        name = claim.get("resourceClaimTemplateName")
        if name is None:
            continue
        if name not in claim_templates:
            raise Inadmissible(f"failed to get claim spec for ResourceClaimTemplate {name}")
        for request in claim_templates[name]["spec"]["spec"]["devices"]["requests"]:
            if "firstAvailable" in request:
                raise Inadmissible("FirstAvailable device selection is not supported")
            exactly = request["exactly"]
            if exactly.get("adminAccess"):
                raise Inadmissible("AdminAccess is not supported")
            if exactly.get("allocationMode", "ExactCount") != "ExactCount":
                raise Inadmissible(f"AllocationMode {exactly['allocationMode']!r} is not supported")
            device_class = exactly["deviceClassName"]
            if device_class not in lookup:
                raise Inadmissible(f"DeviceClass {device_class} is not mapped in DRA configuration")
            resource = lookup[device_class]
            total[resource] = total.get(resource, 0) + int(exactly.get("count", 1))
    return total


def workload_requests(
    pod_sets: Sequence[tuple[dict[str, Any], int]],
    *,
    limit_ranges: list[dict[str, Any]],
    claim_templates: dict[str, dict[str, Any]],
    mappings: list[dict[str, Any]],
) -> dict[str, int]:
    """A Workload's GPUs and EFA interfaces: per pod set (template, pod count), its containers'
    requests after AdjustResources plus its claims' devices, times its pods, summed over pod sets."""
    total = {GPU_RESOURCE: 0, EFA_RESOURCE: 0}
    for template, count in pod_sets:
        per_pod = pod_set_requests(template, limit_ranges)
        for resource, amount in dra_pod_set_requests(template, claim_templates, mappings).items():
            per_pod[resource] = per_pod.get(resource, 0) + amount
        for resource in total:
            total[resource] += int(per_pod.get(resource, 0)) * count
    return total
