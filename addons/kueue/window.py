"""Kueue follows a Capacity Block's window: the block's flavour has quota only while the block holds
nodes (from starts_at until the drain, profiles/capacity.py), so a job submitted early waits in its
queue instead of being admitted onto nodes that do not exist, and jobs still running near the end
are warned with the time left.

The mechanism, at the pinned Kueue (v0.19.2):
- With every tenant's nominalQuota of a flavour at 0, the cohort holds none of it: what a
  ClusterQueue could ever get there (potentialAvailable, pkg/cache/scheduler/resource_node.go
  129-141) is 0, and a pod set asking for any of it does not fit ("insufficient quota ... >
  maximum capacity", fitsResourceQuota, pkg/scheduler/flavorassigner/flavorassigner.go 1330-1360):
  Kueue tries the queue's next flavour, or the job waits.
- A change of a ClusterQueue's spec requeues the workloads it found inadmissible
  (pkg/cache/queue/manager.go 408-441, UpdateClusterQueue), so waiting jobs are admitted once the
  quota is back. Kueue does not evict what it admitted when quota shrinks: jobs still running at
  the drain end with their nodes (waitForPodsReady then requeues them, addons/kueue/install.py).
- lendingLimit must not exceed nominalQuota (pkg/webhooks/clusterqueue_webhook.go 349-352, 386):
  closing a flavour sets both to 0.

What changes the quota at the window's edges is a CronJob per edge in kueue-system, scheduled at the
edge's minute (UTC), whose pod runs `kubectl patch` on each tenant's ClusterQueue with the JSON
patch below (a `test` of the flavour's name first, so a reordered queue fails loudly instead of
changing another flavour). The synthesized ClusterQueues carry the quota of the moment of
synthesis, computed with the same patches, so an apply and the CronJobs agree. An edge already past
gets no CronJob, like the node group's scheduled actions (components/node_groups.py).

The image is the Kubernetes project's kubectl image (registry.k8s.io/kubectl, published from
v1.28; it has no shell, so each container runs kubectl itself with its arguments).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from addons.kueue import DEFINITION, KUBECTL_IMAGE, flavors
from addons.kueue.queues import API_VERSION, LOCAL_QUEUE, cluster_objects
from components.k8s.crds import NamespacedMeta, PrometheusRule, PrometheusRuleSpec
from components.k8s.security import non_root_container, non_root_pod
from components.labels import SYSTEM_NODES
from components.plan_deadline import PlanDeadline
from profiles import PlatformConfig
from profiles.capacity import CapacityBlock
from profiles.catalog import GPU_RESOURCE

SERVICE_ACCOUNT = "capacity-window"
FIELD_MANAGER = "gpu-platform-capacity-window"
# kubectl's own user in that image is not root; any non-root id works (it writes only its cache, to /tmp).
USER = 65532
# A CronJob missed by the controller (a control-plane hiccup) still runs within this many seconds.
STARTING_DEADLINE_SECONDS = 3600
# A plan this close to an edge is refused (components/plan_deadline.py): Kubernetes counts a CronJob's
# schedule from its creationTimestamp (kubernetes pkg/controller/cronjob/utils.go, mostRecentScheduleTime),
# so a CronJob an apply creates after its minute never runs, and the queues stay as synthesized.
PLAN_MARGIN_MINUTES = 10

JsonPatch = list[dict[str, Any]]


def blocks(config: PlatformConfig) -> dict[str, tuple[str, CapacityBlock]]:
    """Kueue's flavour name -> (GPU group, its Capacity Block), for the groups on a block."""
    groups = {group.name: group for group in config.cluster.gpu_node_groups}
    found = {}
    for flavor in flavors(config):
        group = groups.get(flavor.node_group or "")
        if group is not None and isinstance(group.capacity, CapacityBlock):
            found[flavor.name] = (group.name, group.capacity)
    return found


def flavor_patch(cluster_queue: dict[str, Any], flavor: str, *, opened: bool) -> JsonPatch:
    """The JSON patch that gives `flavor` its quota in this ClusterQueue as the profile plans it
    (opened), or none (closed: nominal quota and lending limit 0). Empty if the queue has no such flavour."""
    for g, group in enumerate(cluster_queue["spec"]["resourceGroups"]):
        if GPU_RESOURCE not in group["coveredResources"]:
            continue
        for f, entry in enumerate(group["flavors"]):
            if entry["name"] != flavor:
                continue
            base = f"/spec/resourceGroups/{g}/flavors/{f}"
            ops: JsonPatch = [{"op": "test", "path": f"{base}/name", "value": flavor}]
            for r, quota in enumerate(entry["resources"]):
                for key in ("nominalQuota", "lendingLimit"):
                    if key in quota:
                        ops.append(
                            {
                                "op": "replace",
                                "path": f"{base}/resources/{r}/{key}",
                                "value": quota[key] if opened else "0",
                            }
                        )
            return ops
    return []


def apply_patch(obj: dict[str, Any], patch: JsonPatch) -> dict[str, Any]:
    """The object with a JSON patch of `test` and `replace` operations applied (RFC 6902), as the
    API server applies it: a failed test or a missing path refuses the whole patch."""
    result: dict[str, Any] = json.loads(json.dumps(obj))
    for op in patch:
        *parents, last = [int(p) if p.isdigit() else p for p in op["path"].lstrip("/").split("/")]
        node: Any = result
        for part in parents:
            node = node[part]
        if op["op"] == "test":
            if node[last] != op["value"]:
                raise ValueError(f"test failed at {op['path']}: {node[last]!r} is not {op['value']!r}")
        elif op["op"] == "replace":
            if isinstance(node, dict) and last not in node:  # replace needs the member (RFC 6902, 4.3)
                raise ValueError(f"no member at {op['path']}")
            node[last] = op["value"]
        else:
            raise ValueError(f"unsupported operation {op['op']}")
    return result


def at(config: PlatformConfig, cluster_queues: list[dict[str, Any]], now: datetime) -> list[dict[str, Any]]:
    """The ClusterQueues as of `now`: each block's flavour closed outside its window."""
    found = cluster_queues
    for flavor, (_, block) in blocks(config).items():
        if not block.holds_nodes(now):
            found = [apply_patch(queue, flavor_patch(queue, flavor, opened=False)) for queue in found]
    return found


def cluster_objects_at(config: PlatformConfig, now: datetime) -> list[dict[str, Any]]:
    """The queues' cluster-level objects as the workloads layer applies them at `now`: the flavours,
    the ClusterQueues with each block's flavour closed outside its window, and the window's CronJobs."""
    objects = cluster_objects(config)
    queues = at(config, [o for o in objects if o["kind"] == "ClusterQueue"], now)
    plain = [o for o in objects if o["kind"] != "ClusterQueue"]
    return [*plain, *queues, *window_objects(config, [o for o in objects if o["kind"] == "ClusterQueue"], now)]


def _cron(moment: datetime) -> str:
    return f"{moment.minute} {moment.hour} {moment.day} {moment.month} *"


def _cron_job(
    name: str, moment: datetime, containers: list[dict[str, Any]], volumes: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name, "namespace": DEFINITION.namespace},
        "spec": {
            # Once a year at the edge's minute: a block lasts at most months, and the next synthesis
            # after the edge leaves the CronJob out.
            "schedule": _cron(moment),
            "timeZone": "Etc/UTC",
            "startingDeadlineSeconds": STARTING_DEADLINE_SECONDS,
            "concurrencyPolicy": "Forbid",
            "successfulJobsHistoryLimit": 1,
            "failedJobsHistoryLimit": 3,
            "jobTemplate": {
                "spec": {
                    "backoffLimit": 6,
                    "template": {
                        "spec": {
                            "serviceAccountName": SERVICE_ACCOUNT,
                            "restartPolicy": "OnFailure",
                            "nodeSelector": dict(SYSTEM_NODES),
                            "securityContext": non_root_pod(USER),
                            "containers": containers,
                            "volumes": [{"name": "tmp", "emptyDir": {}}, *volumes],
                        }
                    },
                }
            },
        },
    }


def _kubectl(name: str, args: list[str], mounts: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "image": KUBECTL_IMAGE,
        "args": args,
        "env": [{"name": "HOME", "value": "/tmp"}],
        "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}},
        "securityContext": non_root_container(USER),
        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}, *(mounts or [])],
    }


def warning_event(tenant: str, group: str, block: CapacityBlock) -> dict[str, Any]:
    """The Warning event each tenant namespace gets warn_minutes before the drain, on its LocalQueue."""
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"capacity-block-{group}-", "namespace": tenant},
        "type": "Warning",
        "reason": "CapacityBlockEnding",
        "message": (
            f"GPU group {group}'s Capacity Block drains at {block.drain_starts:%Y-%m-%d %H:%M} UTC, in "
            f"{block.warn_minutes} minutes (it ends at {block.ends_at:%H:%M} UTC): jobs on it stop then. "
            "Checkpoint now."
        ),
        "involvedObject": {"apiVersion": API_VERSION, "kind": "LocalQueue", "name": LOCAL_QUEUE, "namespace": tenant},
        "source": {"component": SERVICE_ACCOUNT},
    }


def window_objects(config: PlatformConfig, cluster_queues: list[dict[str, Any]], now: datetime) -> list[dict[str, Any]]:
    """The CronJobs of the edges still ahead (open at the start, close at the drain, warn before it),
    the ConfigMaps of the warning events, and the identity they run as. Nothing without a block."""
    found = blocks(config)
    if not found or not DEFINITION.enabled(config):
        return []
    objects: list[dict[str, Any]] = []
    names = [queue["metadata"]["name"] for queue in cluster_queues]
    for flavor, (group, block) in found.items():
        state = block.state(now)
        if state in ("draining", "ended"):
            continue
        edges = [("open", block.starts_at, True)] if state == "scheduled" else []
        edges.append(("close", block.drain_starts, False))
        for edge, moment, opened in edges:
            containers = [
                _kubectl(
                    queue["metadata"]["name"],
                    [
                        "patch",
                        "clusterqueue",
                        queue["metadata"]["name"],
                        "--type=json",
                        f"--field-manager={FIELD_MANAGER}",
                        "-p=" + json.dumps(flavor_patch(queue, flavor, opened=opened), separators=(",", ":")),
                    ],
                )
                for queue in cluster_queues
                if flavor_patch(queue, flavor, opened=opened)
            ]
            objects.append(_cron_job(f"block-{group}-{edge}", moment, containers, []))
        if block.warning_starts > now:
            events = f"block-{group}-warning"
            objects.append(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": events, "namespace": DEFINITION.namespace},
                    "data": {f"{t}.json": json.dumps(warning_event(t, group, block), indent=1) for t in names},
                }
            )
            mount = [{"name": "events", "mountPath": "/events", "readOnly": True}]
            containers = [_kubectl(t, ["create", "-f", f"/events/{t}.json"], mount) for t in names]
            volumes = [{"name": "events", "configMap": {"name": events}}]
            objects.append(_cron_job(f"block-{group}-warn", block.warning_starts, containers, volumes))
    if not objects:
        return []
    return [*_identity(names), *objects]


def plan_deadline(config: PlatformConfig, now: datetime) -> PlanDeadline | None:
    """The queues and CronJobs synthesized at `now` go stale at the next edge ahead: a plan later
    than PLAN_MARGIN_MINUTES before it is refused (the apply would come after the edge, and its
    CronJob never run). None without an edge ahead."""
    if not DEFINITION.enabled(config):
        return None
    edges = []
    for group, block in blocks(config).values():
        ahead = [("opens", block.starts_at), ("warns", block.warning_starts), ("drains", block.drain_starts)]
        edges += [(moment, group, what) for what, moment in ahead if moment > now]
    if not edges:
        return None
    moment, group, what = min(edges)
    return PlanDeadline(
        at=moment - timedelta(minutes=PLAN_MARGIN_MINUTES),
        why=(
            f"GPU group {group}'s Capacity Block {what} at {moment:%Y-%m-%d %H:%M} UTC, less than "
            f"{PLAN_MARGIN_MINUTES} minutes after this plan, or already: the Kueue queues and CronJobs were "
            "synthesized before it, and a CronJob created after its minute never runs. Synthesize again "
            f"(make deploy does), after {moment:%H:%M} UTC if it is that close."
        ),
    )


def _identity(cluster_queues: list[str]) -> list[dict[str, Any]]:
    """The CronJobs' service account: patch the tenants' ClusterQueues, create events; nothing else."""
    namespace = DEFINITION.namespace
    rules = [
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues"], "verbs": ["get", "patch"]}
        | ({"resourceNames": cluster_queues} if cluster_queues else {}),
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
    ]
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": SERVICE_ACCOUNT, "namespace": namespace}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": f"gpu-platform-{SERVICE_ACCOUNT}"},
            "rules": rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"gpu-platform-{SERVICE_ACCOUNT}"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": f"gpu-platform-{SERVICE_ACCOUNT}",
            },
            "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": namespace}],
        },
    ]


# Kueue's gauge of what each ClusterQueue's admitted workloads hold per flavour (pkg/metrics/metrics.go
# 828-834 at v0.19.2; exported because the manager configuration sets enableClusterQueueResources).
USAGE_METRIC = "kueue_cluster_queue_resource_usage"


def block_alert_rules(config: PlatformConfig) -> dict[str, Any] | None:
    """Prometheus rules: while jobs of a tenant hold GPUs of a block's flavour, an alert fires from
    warn_minutes before the drain until the drain, with the minutes left as its value. Time-based
    in PromQL (time()), so it needs no rule change at the edges. None without a block."""
    rules = []
    for flavor, (group, block) in blocks(config).items():
        drain = int(block.drain_starts.timestamp())
        holding = f'sum by (cluster_queue) ({USAGE_METRIC}{{flavor="{flavor}",resource="{GPU_RESOURCE}"}}) > 0'
        left = f"(vector({drain}) - time()) / 60 <= {block.warn_minutes} > 0"
        rules.append(
            {
                "alert": "CapacityBlockEnding",
                "expr": f"({holding}) * 0 + on () group_left () ({left})",
                "for": "0m",
                "labels": {"severity": "warning", "node_group": group},
                "annotations": {
                    "summary": (
                        f"Jobs of {{{{ $labels.cluster_queue }}}} run on GPU group {group}'s Capacity Block, which "
                        f'drains in {{{{ $value | printf "%.0f" }}}} minutes ({block.drain_starts:%Y-%m-%d %H:%M} UTC)'
                    ),
                    "description": (
                        f"The group scales to zero {block.drain_minutes} minutes before the block ends at "
                        f"{block.ends_at:%H:%M} UTC, and EC2 terminates the instances from 30 minutes before the end: "
                        "checkpoint now. Kueue admits nothing more to the block."
                    ),
                },
            }
        )
    if not rules:
        return None
    return {"groups": [{"name": "capacity-blocks", "rules": rules}]}


def alert_rule_object(config: PlatformConfig) -> list[dict[str, Any]]:
    """The rules as a PrometheusRule in kueue-system (Prometheus selects every PrometheusRule:
    addons/monitoring/install.py), or nothing without a block."""
    rules = block_alert_rules(config)
    if rules is None:
        return []
    meta = NamespacedMeta(name="capacity-blocks", namespace=DEFINITION.namespace)
    return [PrometheusRule(metadata=meta, spec=PrometheusRuleSpec.model_validate(rules)).manifest()]
