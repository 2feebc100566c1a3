"""Pause and resume: stop paying for nodes while the data, the state and the cluster stay.

A pause stops every node of the platform, GPU and system alike, in the one order that leaves no
instance behind:
1. the platform's Karpenter NodePools get a CPU limit of 0, so Karpenter launches nothing new;
2. their NodeClaims are deleted, and Karpenter (still running on the system nodes) terminates
   the instances;
3. the managed node groups are scaled to 0 (`aws eks update-nodegroup-config`); their maximum
   stays, because EKS requires a maximum of at least 1.
Pods on those nodes stop: a running training job ends. What keeps billing is listed before the
question. A resume scales the managed groups back to the profile's sizes (the system group first,
so Karpenter runs again) and puts the NodePools' limits back exactly as the workloads layer sets
them: equal values, so Terraform's server-side apply finds no conflict with the patch's manager.
Run `make resume` before the next deploy: a deploy alone would ask EKS for the profile's minimum
size on a group whose desired size is 0.

With Kueue, a pause first holds every tenant's ClusterQueue (stopPolicy Hold: nothing new is
admitted onto nodes that are going away) and a resume releases them after the nodes are back.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from operate.cluster_access import AwsCli, ClusterAccessError
from operate.kubectl import NO_SUCH_KIND, Kubectl
from profiles import PlatformConfig

SYSTEM_NODE_GROUP = "system"
# What a paused platform still bills for (nothing here stops with the nodes).
FIELD_MANAGER = "gpu-platform-pause"
STILL_BILLING = (
    "the EKS control plane",
    "NAT gateways",
    "interface VPC endpoints",
    "the FSx file system",
    "the MLflow database",
    "S3 storage",
    "ECR images",
)


@dataclass(frozen=True)
class NodeGroupSize:
    name: str
    min_size: int
    desired_size: int
    max_size: int


def node_group_sizes(config: PlatformConfig, now: datetime | None = None) -> list[NodeGroupSize]:
    """The managed node groups and the sizes the profile gives them at `now` (default: the current
    time): a Capacity Block's group is at 0 outside its window, so a resume never scales a group up
    on a block that has not started or has ended (its scheduled action does that at the start)."""
    system = config.cluster.system_node_group
    sizes = [NodeGroupSize(SYSTEM_NODE_GROUP, system.min_size, system.desired_size, system.max_size)]
    at = now or datetime.now(UTC)
    sizes += [NodeGroupSize(group.name, *group.sizes_at(at)) for group in config.cluster.gpu_node_groups]
    return sizes


def pause_plan(config: PlatformConfig, node_pools: tuple[str, ...], cluster_queues: tuple[str, ...] = ()) -> list[str]:
    """What a pause does, in words, for the question."""
    lines = [f"pause {config.name}: every node stops; pods on them (training jobs included) end"]
    if cluster_queues:
        lines.append(f"  Kueue ClusterQueues {', '.join(cluster_queues)}: held (queued jobs wait for the resume)")
    if node_pools:
        lines.append(f"  Karpenter NodePools {', '.join(node_pools)}: limit cpu 0, their NodeClaims deleted")
    lines += [
        f"  node group {size.name}: scaled to 0 (profile: {size.desired_size})" for size in node_group_sizes(config)
    ]
    lines.append(f"  kept, and still billing: {', '.join(STILL_BILLING)}")
    lines.append("  resume with: make resume (before any deploy)")
    return lines


def _checked(result: subprocess.CompletedProcess[str], what: str) -> str:
    if result.returncode != 0:
        raise ClusterAccessError(f"{what} failed: {result.stderr.strip()}")
    return result.stdout


def _scale(aws: AwsCli, config: PlatformConfig, size: NodeGroupSize, *, paused: bool) -> None:
    scaling = (
        f"minSize=0,maxSize={size.max_size},desiredSize=0"
        if paused
        else f"minSize={size.min_size},maxSize={size.max_size},desiredSize={size.desired_size}"
    )
    _checked(
        aws(
            [
                "eks",
                "update-nodegroup-config",
                "--cluster-name",
                config.name,
                "--nodegroup-name",
                size.name,
                "--scaling-config",
                scaling,
                "--region",
                config.region,
            ]
        ),
        f"scaling node group {size.name}",
    )


def _merge_patch(kubectl: Kubectl, resource: str, name: str, spec: dict[str, Any], what: str) -> None:
    """Merge-patch one object's spec as the pause's field manager. An object (or a kind) that is
    not there is nothing to pause or release; any other failure stops the command."""
    patched = kubectl(
        [
            "patch",
            resource,
            name,
            "--type",
            "merge",
            f"--field-manager={FIELD_MANAGER}",
            "-p",
            json.dumps({"spec": spec}),
        ]
    )
    if patched.returncode != 0 and "NotFound" not in patched.stderr and NO_SUCH_KIND not in patched.stderr:
        raise ClusterAccessError(f"{what} failed: {patched.stderr.strip()}")


def _stop_policy(kubectl: Kubectl, queues: tuple[str, ...], policy: str, log: Callable[[str], None]) -> None:
    for queue in queues:
        spec = {"stopPolicy": policy}
        _merge_patch(kubectl, "clusterqueues.kueue.x-k8s.io", queue, spec, f"setting ClusterQueue {queue} to {policy}")
    if queues:
        log(f"ClusterQueues {', '.join(queues)}: stopPolicy {policy}")


def hold_and_drain(kubectl: Kubectl, queues: tuple[str, ...], log: Callable[[str], None]) -> None:
    """Before a teardown: the ClusterQueues admit nothing more and evict what they admitted."""
    _stop_policy(kubectl, queues, "HoldAndDrain", log)


def pause(
    config: PlatformConfig,
    *,
    kubectl: Kubectl,
    aws: AwsCli,
    node_pools: tuple[str, ...],
    cluster_queues: tuple[str, ...] = (),
    log: Callable[[str], None] = print,
) -> None:
    """Stop every node (call only after the user approved `pause_plan`)."""
    _stop_policy(kubectl, cluster_queues, "Hold", log)
    for pool in node_pools:
        _merge_patch(kubectl, "nodepools.karpenter.sh", pool, {"limits": {"cpu": "0"}}, f"limiting NodePool {pool}")
    if node_pools:
        selector = f"karpenter.sh/nodepool in ({','.join(node_pools)})"
        deleted = kubectl(["delete", "nodeclaims.karpenter.sh", "-l", selector, "--wait=true", "--timeout=15m"])
        if deleted.returncode != 0 and NO_SUCH_KIND not in deleted.stderr:
            raise ClusterAccessError(f"deleting the NodeClaims failed: {deleted.stderr.strip()}")
        log(f"Karpenter nodes of {', '.join(node_pools)} terminated")
    # GPU groups first, the system group (where Karpenter runs) last.
    for size in reversed(node_group_sizes(config)):
        _scale(aws, config, size, paused=True)
        log(f"node group {size.name} scaled to 0")


def resume(
    config: PlatformConfig,
    *,
    aws: AwsCli,
    kubectl: Kubectl,
    pool_limits: Mapping[str, Mapping[str, str]],
    cluster_queues: tuple[str, ...] = (),
    log: Callable[[str], None] = print,
    now: datetime | None = None,
) -> None:
    """Scale the managed groups back to the profile's sizes (the system group first; a Capacity
    Block's group only inside its window), put the NodePools' limits back as the workloads layer
    sets them, and release the ClusterQueues. `pool_limits`: the NodePools to put back, each with
    its limits (Capacity.pool_limits, from the add-on that runs the pools)."""
    for size in node_group_sizes(config, now):
        _scale(aws, config, size, paused=False)
        log(f"node group {size.name} back to {size.desired_size} (min {size.min_size}, max {size.max_size})")
    for pool, limits in pool_limits.items():
        patch = [{"op": "replace", "path": "/spec/limits", "value": dict(limits)}]
        _checked(
            kubectl(
                [
                    "patch",
                    "nodepools.karpenter.sh",
                    pool,
                    "--type",
                    "json",
                    f"--field-manager={FIELD_MANAGER}",
                    "-p",
                    json.dumps(patch),
                ]
            ),
            f"restoring NodePool {pool}",
        )
        log(f"NodePool {pool}: limits {dict(limits)} again")
    _stop_policy(kubectl, cluster_queues, "None", log)
