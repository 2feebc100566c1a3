"""Karpenter EC2NodeClass and the CPU and GPU NodePools."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from addons import karpenter
from components.expressions import template_text
from components.k8s.crds import (
    BlockDeviceMapping,
    Budget,
    Disruption,
    Ebs,
    Ec2NodeClass,
    Ec2NodeClassSpec,
    MetadataOptions,
    NodeClaimSpec,
    NodeClaimTemplate,
    NodeClaimTemplateMeta,
    NodeClassRef,
    NodePool,
    NodePoolSpec,
    ObjectMeta,
    Requirement,
    SelectorTerm,
    Taint,
)
from components.labels import GPU_TAINT_K8S, IMDS_HOP_LIMIT, NODE_POOL_LABEL, ROOT_DEVICE_NAME
from components.user_data import gpu_node_mime
from profiles.models import PlatformConfig, karpenter_gpu_pool
from profiles.workloads import CpuPoolConfig, GpuPoolConfig

NODE_CLASS = "default"
# GPU nodes get their own class: the managed GPU groups' node set-up (components/user_data.py).
GPU_NODE_CLASS = "gpu"


CPU_POOL = "cpu"
GPU_POOL = "gpu"
# How long Karpenter drains a node it deletes before it deletes the pods left on it, whatever
# blocks their eviction (kubernetes-sigs/karpenter v1.14.1: pkg/apis/v1/nodepool.go L242-258, the
# NodeClaim template's terminationGracePeriod, copied to each NodeClaim by ToNodeClaim L272-287;
# pkg/controllers/nodeclaim/lifecycle/controller.go L289-304 sets the NodeClaim's termination time
# to its deletion plus this; pkg/controllers/node/termination/terminator/terminator.go L140-178
# deletes each pod at that time minus its own terminationGracePeriodSeconds, past PodDisruptionBudgets
# and karpenter.sh/do-not-disrupt). Unset, a drain that a budget allowing no disruption or that
# annotation blocks never ends, and the teardown's wait for the nodes with it. An hour: a pod that
# needs up to an hour to checkpoint still gets all of it (Karpenter deletes it at once, with the
# hour), and the clean-up's wait for the nodes (operate/cleanup.py NODES_GONE_SECONDS) leaves time
# after it for EC2 to terminate the instance. Every deletion of a pool's node is bounded so (a pause,
# an expiry, kubectl delete), and drift becomes "eventual" (pkg/controllers/disruption/types.go
# L48-51, L189-196): the CPU pool's drifted nodes are replaced even with blocking pods on them; the
# GPU pool replaces none for drift (its budget). Consolidation still respects both. The field is
# part of the template's hash (nodepool.go L336-342), so setting or changing it drifts the pools'
# running nodes; a NodeClaim keeps the spec it was launched with (nodeclaim.go L185, immutable).
TERMINATION_GRACE_PERIOD_MINUTES = 60
TERMINATION_GRACE_PERIOD = f"{TERMINATION_GRACE_PERIOD_MINUTES}m"


def node_pools(config: PlatformConfig) -> tuple[str, ...]:
    """The NodePools the workloads layer creates (the pre-destroy clean-up and pause act on exactly
    these): none without Karpenter; the GPU pool only where profiles.models.karpenter_gpu_pool says."""
    if not karpenter.DEFINITION.enabled(config):
        return ()
    return (CPU_POOL, GPU_POOL) if karpenter_gpu_pool(config) else (CPU_POOL,)


@dataclass(frozen=True, kw_only=True)
class KarpenterPoolsProps:
    cluster_name: str
    """The cluster's name: subnets and security groups are discovered by its tags."""
    node_role_name: str
    """The IAM role Karpenter's nodes run as."""
    node_security_group_id: str
    """The security group every node carries."""
    cpu: CpuPoolConfig
    """The CPU pool's validated profile settings."""
    gpu: GpuPoolConfig
    """The GPU pool's validated profile settings."""
    lustre_over_efa: bool = False
    """The platform's FSx for Lustre file system is EFA-enabled: EFA nodes configure LNet over EFA."""
    gpu_pool: bool = True
    """Create the GPU pool and its node class (not in DRA mode: see node_pools)."""
    ami_alias: str = "al2023@latest"
    """The AMI release the node classes select (the managed groups' release, when pinned)."""


def _pool(
    name: str,
    requirements: list[Requirement],
    *,
    taints: list[Taint] | None,
    expire_hours: int | None,
    disruption: Disruption,
    limits: dict[str, str],
    node_class: str = NODE_CLASS,
) -> NodePool:
    """A NodePool whose nodes carry the label platform/node-pool=<name>."""
    return NodePool(
        metadata=ObjectMeta(name=name),
        spec=NodePoolSpec(
            template=NodeClaimTemplate(
                metadata=NodeClaimTemplateMeta(labels={NODE_POOL_LABEL: name}),
                spec=NodeClaimSpec(
                    node_class_ref=NodeClassRef(name=node_class),
                    requirements=requirements,
                    taints=taints,
                    # Karpenter v1 spells no expiry "Never".
                    expire_after=f"{expire_hours}h" if expire_hours is not None else "Never",
                    termination_grace_period=TERMINATION_GRACE_PERIOD,
                ),
            ),
            disruption=disruption,
            limits=limits,
        ),
    )


def pool_limits(cpu: CpuPoolConfig, gpu: GpuPoolConfig) -> dict[str, dict[str, str]]:
    """Each NodePool's limits as the workloads layer sets them (make resume puts them back)."""
    return {CPU_POOL: {"cpu": str(cpu.cpu_limit)}, GPU_POOL: {"nvidia.com/gpu": str(gpu.gpu_limit)}}


def _node_class(name: str, props: KarpenterPoolsProps, *, gpu: bool) -> Ec2NodeClass:
    return Ec2NodeClass(
        metadata=ObjectMeta(name=name),
        spec=Ec2NodeClassSpec(
            role=props.node_role_name,
            # Karpenter picks the NVIDIA variant of AL2023 for GPU instance types by itself.
            ami_selector_terms=[SelectorTerm(alias=props.ami_alias)],
            subnet_selector_terms=[SelectorTerm(tags={"karpenter.sh/discovery": props.cluster_name})],
            security_group_selector_terms=[SelectorTerm(id=props.node_security_group_id)],
            metadata_options=MetadataOptions(http_tokens="required", http_put_response_hop_limit=IMDS_HOP_LIMIT),
            block_device_mappings=[
                BlockDeviceMapping(device_name=ROOT_DEVICE_NAME, ebs=Ebs(volume_size="200Gi", encrypted=True))
            ],
            # GPU nodes: the managed groups' set-up. Karpenter merges these nodeadm MIME parts with its
            # own NodeConfig; it sets up the instance-store RAID0 itself (instanceStorePolicy; on
            # types without instance store it does nothing), so the document leaves that part out.
            instance_store_policy="RAID0" if gpu else None,
            # Plain text in the Terraform JSON is a template: the script's own ${VAR}s stay shell.
            user_data=template_text(gpu_node_mime(raid0_local_nvme=False, lustre_over_efa=props.lustre_over_efa))
            if gpu
            else None,
            tags={"karpenter.sh/discovery": props.cluster_name},
        ),
    )


def karpenter_objects(props: KarpenterPoolsProps) -> list[dict[str, Any]]:
    node_class = _node_class(NODE_CLASS, props, gpu=False)
    cpu = _pool(
        CPU_POOL,
        [
            Requirement(
                key="karpenter.k8s.aws/instance-category", operator="In", values=list(props.cpu.instance_categories)
            ),
            Requirement(key="karpenter.sh/capacity-type", operator="In", values=list(props.cpu.capacity_types)),
            Requirement(key="kubernetes.io/arch", operator="In", values=["amd64"]),
        ],
        taints=None,
        expire_hours=props.cpu.expire_after_hours,
        disruption=Disruption(
            consolidation_policy="WhenEmptyOrUnderutilized", consolidate_after=f"{props.cpu.consolidate_after_minutes}m"
        ),
        limits=pool_limits(props.cpu, props.gpu)[CPU_POOL],
    )
    if not props.gpu_pool:
        return [node_class.manifest(), cpu.manifest()]
    gpu_node_class = _node_class(GPU_NODE_CLASS, props, gpu=True)
    gpu = _pool(
        GPU_POOL,
        [
            Requirement(key="node.kubernetes.io/instance-type", operator="In", values=list(props.gpu.instance_types)),
            Requirement(key="karpenter.sh/capacity-type", operator="In", values=list(props.gpu.capacity_types)),
        ],
        # The same taint as the managed GPU node groups: the GPU Operator's daemonsets and GPU
        # workloads tolerate exactly this.
        taints=[Taint(key=GPU_TAINT_K8S["key"], value=GPU_TAINT_K8S["value"], effect="NoSchedule")],
        expire_hours=props.gpu.expire_after_hours,
        # GPU nodes leave only when empty: consolidation must not evict running training.
        disruption=Disruption(
            consolidation_policy="WhenEmpty",
            consolidate_after=f"{props.gpu.consolidate_after_minutes}m",
            # A new AMI release (al2023@latest) drifts every node: never replace a GPU node for that
            # while it runs work. Drifted nodes leave once empty (and, by default, never expire:
            # Karpenter's expiration is forceful, it would end a running job).
            budgets=[Budget(nodes="0", reasons=["Drifted"])],
        ),
        limits=pool_limits(props.cpu, props.gpu)[GPU_POOL],
        node_class=GPU_NODE_CLASS,
    )
    return [node_class.manifest(), gpu_node_class.manifest(), cpu.manifest(), gpu.manifest()]
