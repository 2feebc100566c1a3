"""Admission that fits: in the tenant namespaces, the API server refuses a pod that asks for more
GPUs or EFA interfaces than the largest node of the tenants' queues holds (`node_limits`), and a
job with such a pod. Kueue counts a pod set against a flavour's quota, which sums the flavour's
nodes, and never compares one pod with one node: such a pod was admitted (16 GPUs fit a cohort of
two 8-GPU nodes), never scheduled, and evicted and queued again at every pods-ready timeout until
it was deactivated.

One ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1, GA in Kubernetes 1.30) per shape of
object, each bound to the tenant namespaces (the selector Kueue manages jobs under):

- Pods, on CREATE: the last word, whatever made the pod (a ReplicaSet, a job's controller; theirs is
  the FailedCreate event that carries the message);
- the job kinds and workload controllers tenants create (batch Jobs, Deployments, StatefulSets,
  MPIJobs, RayJobs, RayClusters, RayServices, TrainJobs), on CREATE and on an UPDATE that changes
  what their pods ask for: a job is refused when it is submitted, with the message, before Kueue
  queues it. Kueue's own writes (suspending a job, its flavour's node selector on admission), a
  finalizer's removal or a status write change no resources and are let through, so even a job
  created before the policies can still be stopped and deleted.

Not Kueue's Workloads: Kueue's controller creates them, and a refused Workload is only logged by
Kueue's reconciler ("Handling job with no workload", kueue v0.19.2
pkg/controller/jobframework/reconciler.go 508-521; its CreatedWorkload event is recorded only on
success, 1827-1831), so the job would sit suspended with nothing said to its owner. What the job
objects do not show is checked in their pods only, after admission: a TrainJob's runtime template
beyond its resourcesPerNode (the platform's runtimes take a node each) and its runtimePatches; a
CronJob's pods (its Jobs are refused as Jobs, in the CronJob's events).

What a pod asks for is counted as the scheduler counts it (k8s.io/component-helpers/resource
helpers.go, aggregateContainerResourcesByFn, the sidecar formula of KEP-753): its containers
together plus its restartable init containers (sidecars), or, if more, one init container plus the
sidecars started before it. A container asks for the larger of its request and its limit: for an
extended resource the API server makes the request the limit where only a limit is given, and
refuses a pod where they differ; a job's pod template is not defaulted, and Kueue takes its limits
as the missing requests (kueue v0.19.2 pkg/workload/resources.go 122-138).

The expressions use only standard CEL and Kubernetes' CEL libraries in its base environment since
1.28 or earlier (staging/src/k8s.io/apiserver/pkg/cel/environment/base.go): `quantity()` with
`asInteger()` (library/quantity.go) and the lists library's `sum()`, `max()` and `indexOf()`
(library/lists.go). A quantity is read with `quantity(string(v))`: a Pod's quantities are strings,
a custom resource's `x-kubernetes-int-or-string` ones may be integers (`nvidia.com/gpu: 8` in a
manifest). No two-variable comprehensions (1.32+) nor optional field syntax, so a 1.31 cluster
compiles them. tests/test_pod_fit.py evaluates them with cel-python.
"""

from __future__ import annotations

from typing import Any

from addons.kueue import NodeLimit, node_limits
from addons.kueue.queues import TENANT_NAMESPACES
from components.k8s.pod_sources import PodSource
from profiles import PlatformConfig
from profiles.catalog import GPU_RESOURCE

API_VERSION = "admissionregistration.k8s.io/v1"
# The fix, named in every refusal: more pods, each within one node.
FIX = "more numNodes (a TrainJob) or replicas (the Worker of an MPIJob, a Ray worker group, a Job or a Deployment)"


def amount(container: str, resource: str) -> str:
    """CEL: what `container` asks for of `resource`, the larger of its request and its limit."""
    stated = []
    for field in ("requests", "limits"):
        values = f"{container}.resources.{field}"
        present = f"has({container}.resources) && has({values}) && '{resource}' in {values}"
        stated.append(f"({present} ? quantity(string({values}['{resource}'])).asInteger() : 0)")
    return f"[{stated[0]}, {stated[1]}].max()"


def pods_variable(resources: tuple[str, ...]) -> str:
    """CEL: each of `variables.specs` as what its containers ask for: {'containers': [{resource:
    amount}], 'initContainers': [{resource: amount, 'sidecar': 1 or 0, 'at': its place}]} (one
    type of value per map: Kubernetes' CEL wants literals homogeneous)."""
    inits = "(has(s.initContainers) ? s.initContainers : [])"
    sidecar = "has(i.restartPolicy) && i.restartPolicy == 'Always'"
    containers = ", ".join(f"'{resource}': {amount('c', resource)}" for resource in resources)
    init_amounts = ", ".join(f"'{resource}': {amount('i', resource)}" for resource in resources)
    # A pod's init containers have distinct names, so indexOf finds each one's own place.
    init = f"{{'sidecar': ({sidecar} ? 1 : 0), 'at': {inits}.indexOf(i), {init_amounts}}}"
    pod = f"{{'containers': s.containers.map(c, {{{containers}}}), 'initContainers': {inits}.map(i, {init})}}"
    return f"variables.specs.map(s, {pod})"


def pod_amount(pod: str, resource: str) -> str:
    """CEL: what a pod of `variables.pods` asks for of `resource`, as the scheduler counts it: its
    containers and sidecars together, or one init container and the sidecars started before it."""
    of = f"['{resource}']"
    inits = f"{pod}.initContainers"
    running = f"{pod}.containers.map(c, c{of}).sum() + {inits}.filter(s, s.sidecar == 1).map(s, s{of}).sum()"
    started = f"{inits}.filter(s, s.sidecar == 1 && s.at < i.at).map(s, s{of}).sum()"
    return f"([{running}] + {inits}.filter(i, i.sidecar == 0).map(i, i{of} + {started})).max()"


def _variable(resource: str) -> str:
    return "gpus" if resource == GPU_RESOURCE else "efa"


def _literal(text: str) -> str:
    """A CEL string literal of `text`."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _validation(source: PodSource, limit: NodeLimit) -> dict[str, Any]:
    counts = f"variables.{_variable(limit.resource)}"
    if limit.most:
        where = f"the largest nodes of the tenant queues hold {limit.most} ({', '.join(limit.instance_types)})"
        told = (
            f"more than any node holds: {where}. Kueue would admit it and it would never start. Split the work "
            f"across more nodes: {FIX}, each pod within {limit.most} {limit.resource}."
        )
        fallback = (
            f"a pod asks for more {limit.resource} than the largest node of the tenant queues holds ({limit.most}: "
            f"{', '.join(limit.instance_types)}); split the work across more nodes: {FIX}"
        )
    else:
        told = "and no node of the tenant queues has any: ask for none."
        fallback = f"a pod asks for {limit.resource}, which no node of the tenant queues has: ask for none"
    return {
        "expression": f"{counts}.all(n, n <= {limit.most})",
        "message": fallback,
        "messageExpression": f"{source.subject} + ' asks for ' + string({counts}.max()) + "
        + _literal(f" {limit.resource}, {told}"),
    }


def resources(specs: str) -> str:
    """CEL: what decides what the pods of `specs` ask for: their containers' resources, and their
    init containers whole (the resources and whether each restarts)."""
    containers = "s.containers.map(c, has(c.resources) ? c.resources : {})"
    return f"({specs}).map(s, [{containers}, has(s.initContainers) ? s.initContainers : []])"


def policy_name(source: PodSource) -> str:
    return f"tenant-{source.name}-fit-a-node"


def fit_policy(source: PodSource, limits: tuple[NodeLimit, ...]) -> dict[str, Any]:
    operations = ["CREATE", "UPDATE"] if source.on_update else ["CREATE"]
    spec: dict[str, Any] = {
        # An expression that cannot be evaluated refuses the object (a fractional GPU in a job's
        # template, which the API server would refuse in its pods anyway).
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [
                {"apiGroups": [group], "apiVersions": [version], "operations": operations, "resources": list(names)}
                for group, version, names in source.rules
            ]
        },
        "variables": [
            # Parenthesized: cdktf's HCL export writes a string that starts with [ or { unquoted
            # (cdktf 0.21 lib/hcl/render.js, renderFuzzyJsonExpression), which is no HCL.
            {"name": "specs", "expression": f"({source.specs('object')})"},
            {"name": "pods", "expression": pods_variable(tuple(limit.resource for limit in limits))},
            *(
                {
                    "name": _variable(limit.resource),
                    "expression": f"variables.pods.map(p, {pod_amount('p', limit.resource)})",
                }
                for limit in limits
            ),
        ],
        "validations": [_validation(source, limit) for limit in limits],
    }
    if source.on_update:
        # An update is checked only where it changes what the pods ask for: Kueue's own writes (it
        # suspends a job and gives its pods the flavour's node selector), a status or a finalizer's
        # removal are let through, also for a job created before the policy, which Kueue can stop.
        asked = f"{resources(source.specs('object'))} != {resources(source.specs('oldObject'))}"
        spec["matchConditions"] = [
            {"name": "resources-written", "expression": f"request.operation == 'CREATE' || {asked}"}
        ]
    return {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": policy_name(source)},
        "spec": spec,
    }


def fit_binding(source: PodSource) -> dict[str, Any]:
    name = policy_name(source)
    return {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {
            "policyName": name,
            "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": TENANT_NAMESPACES},
        },
    }


def fit_objects(config: PlatformConfig, sources: tuple[PodSource, ...]) -> list[dict[str, Any]]:
    """The policies and their bindings for the shapes tenants can create in this profile (none
    without GPUs in the queues)."""
    limits = node_limits(config)
    if not limits:
        return []
    return [obj for source in sources for obj in (fit_policy(source, limits), fit_binding(source))]
