"""What the API server does to a pod before it exists, for the parts the tenant namespaces use:
defaulting, the LimitRanger and the ResourceQuota admission plugins (Kubernetes 1.3x source):

- pkg/apis/core/v1/defaults.go, SetDefaults_Pod: a container's limit without a request makes the
  request equal to the limit (for every resource, extended ones included).
- pkg/apis/core/v1/defaults.go, SetDefaults_LimitRangeItem: a LimitRange is stored with, for each
  Container item, a default limit of its `max` where it states no `default`, and a default request
  of its `default` (else its `min`) where it states no `defaultRequest`.
- plugin/pkg/admission/limitranger/admission.go: defaultContainerResourceRequirements reads the
  namespace's LimitRange items of type Container (`default` -> limits, `defaultRequest` ->
  requests); mergeContainerResources fills in only what the container does not state. Then
  validation refuses a request above its limit (pkg/apis/core/validation, ValidateResourceRequirements),
  and PodValidateLimitFunc each `max`: maxConstraint refuses a container (type Container) or a pod
  (type Pod) that states no limit of the resource ("No limit is specified") or one above the max;
  a pod's limit is the sum of its containers' and exists only where every container states one
  (`sum`).
- plugin/pkg/admission/resourcequota with pkg/quota/v1/evaluator/core/pods.go: a pod's usage of
  `requests.<resource>` is the sum of its containers' requests (no init containers here); it is
  admitted when, for every resource the quota constrains, used + pod <= hard, and a pod that
  requests nothing of a constrained cpu or memory resource is refused.
Quantities are compared as numbers (tests/admission.py's own parser, the profile Quantity forms).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from profiles.limits import quantity_value


@dataclass
class Admitted:
    pods: list[dict[str, Any]]
    """The pods as created (defaults applied)."""
    refused: str | None
    """Why a pod was refused (None: every pod admitted)."""


def stored(limit_range: dict[str, Any]) -> dict[str, Any]:
    """The LimitRange as the API server stores it (SetDefaults_LimitRangeItem)."""
    limit_range = copy.deepcopy(limit_range)
    for item in limit_range["spec"]["limits"]:
        if item.get("type") != "Container":
            continue
        default, request = item.setdefault("default", {}), item.setdefault("defaultRequest", {})
        for name, value in item.get("max", {}).items():
            default.setdefault(name, value)
        for name, value in default.items():
            request.setdefault(name, value)
        for name, value in item.get("min", {}).items():
            request.setdefault(name, value)
    return limit_range


def _max_problem(kind: str, name: str, enforced: str, requests: dict[str, str], limits: dict[str, str]) -> str | None:
    """maxConstraint."""
    if name not in limits:
        return f"maximum {name} usage per {kind} is {enforced}.  No limit is specified"
    for what, values in (("limit", limits), ("request", requests)):
        if name in values and quantity_value(values[name]) > quantity_value(enforced):
            return f"maximum {name} usage per {kind} is {enforced}, but {what} is {values[name]}"
    return None


def _sum(lists: list[dict[str, str]]) -> dict[str, str]:
    """The limitranger's sum: a resource only where every list states it."""
    names = set().union(*lists) if lists else set()
    return {n: f"{sum(quantity_value(x[n]) for x in lists):g}" for n in names if all(n in x for x in lists)}


def _max_problems(pod: dict[str, Any], limit_ranges: list[dict[str, Any]]) -> str | None:
    containers = pod["spec"]["containers"]
    for limit_range in limit_ranges:
        for item in limit_range["spec"]["limits"]:
            for name, enforced in item.get("max", {}).items():
                if item.get("type") == "Container":
                    for container in containers:
                        resources = container["resources"]
                        if problem := _max_problem(
                            "Container", name, enforced, resources["requests"], resources["limits"]
                        ):
                            return f"container {container['name']}: {problem}"
                elif item.get("type") == "Pod":
                    requests = _sum([c["resources"]["requests"] for c in containers])
                    limits = _sum([c["resources"]["limits"] for c in containers])
                    if problem := _max_problem("Pod", name, enforced, requests, limits):
                        return f"pod {pod['metadata']['name']}: {problem}"
    return None


def _default(pod: dict[str, Any], limit_ranges: list[dict[str, Any]]) -> tuple[dict[str, Any], str | None]:
    pod = copy.deepcopy(pod)
    limit_ranges = [stored(limit_range) for limit_range in limit_ranges]
    defaults: dict[str, dict[str, str]] = {"limits": {}, "requests": {}}
    for limit_range in limit_ranges:
        for item in limit_range["spec"]["limits"]:
            if item.get("type") == "Container":
                defaults["limits"].update(item.get("default", {}))
                defaults["requests"].update(item.get("defaultRequest", {}))
    for container in pod["spec"]["containers"]:
        resources = container.setdefault("resources", {})
        limits, requests = resources.setdefault("limits", {}), resources.setdefault("requests", {})
        for name, value in limits.items():  # SetDefaults_Pod: request = limit
            requests.setdefault(name, value)
        for name, value in defaults["limits"].items():  # LimitRanger: only what is not stated
            limits.setdefault(name, value)
        for name, value in defaults["requests"].items():
            requests.setdefault(name, value)
        for name, request in requests.items():
            if name in limits and quantity_value(request) > quantity_value(limits[name]):
                return pod, (
                    f"container {container['name']}: {name} request {request} is above its limit {limits[name]}"
                )
    return pod, _max_problems(pod, limit_ranges)


def admit(pods: list[dict[str, Any]], *, limit_ranges: list[dict[str, Any]], quotas: list[dict[str, Any]]) -> Admitted:
    """Create `pods` one after the other in one namespace."""
    created, used = [], {}
    for submitted in pods:
        pod, invalid = _default(submitted, limit_ranges)
        if invalid:
            return Admitted(created, invalid)
        usage: dict[str, float] = {}
        for container in pod["spec"]["containers"]:
            for name, value in container["resources"].get("requests", {}).items():
                usage[f"requests.{name}"] = usage.get(f"requests.{name}", 0) + quantity_value(value)
        for quota in quotas:
            for resource, hard in quota["spec"]["hard"].items():
                if not resource.startswith("requests."):
                    continue
                if resource in ("requests.cpu", "requests.memory") and resource not in usage:
                    return Admitted(created, f"pod {pod['metadata']['name']}: must specify {resource}")
                total = used.get(resource, 0) + usage.get(resource, 0)
                if total > quantity_value(hard):
                    name = pod["metadata"]["name"]
                    return Admitted(
                        created,
                        f"pod {name}: exceeded quota {quota['metadata']['name']}, {resource} {total:g} > {hard}",
                    )
        for resource, amount in usage.items():
            used[resource] = used.get(resource, 0) + amount
        created.append(pod)
    return Admitted(created, None)
