"""EKS managed node groups: the system group, and EFA GPU groups with their launch templates."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from cdktf import ITerraformDependable, Precondition, TerraformResourceLifecycle, Token
from cdktf_cdktf_provider_aws.data_aws_ec2_instance_type import DataAwsEc2InstanceType
from cdktf_cdktf_provider_aws.data_aws_ec2_instance_type_offerings import (
    DataAwsEc2InstanceTypeOfferings,
    DataAwsEc2InstanceTypeOfferingsFilter,
)
from cdktf_cdktf_provider_aws.eks_node_group import (
    EksNodeGroup,
    EksNodeGroupLaunchTemplate,
    EksNodeGroupNodeRepairConfig,
    EksNodeGroupScalingConfig,
    EksNodeGroupTaint,
    EksNodeGroupUpdateConfig,
)
from cdktf_cdktf_provider_aws.launch_template import (
    LaunchTemplate,
    LaunchTemplateBlockDeviceMappings,
    LaunchTemplateBlockDeviceMappingsEbs,
    LaunchTemplateCapacityReservationSpecification,
    LaunchTemplateCapacityReservationSpecificationCapacityReservationTarget,
    LaunchTemplateInstanceMarketOptions,
    LaunchTemplateMetadataOptions,
    LaunchTemplateNetworkInterfaces,
    LaunchTemplatePlacement,
    LaunchTemplateTagSpecifications,
)
from cdktf_cdktf_provider_aws.placement_group import PlacementGroup
from constructs import Construct

from components.block_schedules import block_deadline, block_schedules
from components.efa import efa_interface_layout
from components.expressions import Expression, expression, interpolated, string_literal
from components.labels import (
    EFA_LABEL,
    GPU_TAINT_EKS,
    GPU_TRAINING_ROLE,
    IMDS_HOP_LIMIT,
    NODE_GROUP_LABEL,
    ROLE_LABEL,
    ROOT_DEVICE_NAME,
    SYSTEM_NODES,
)
from components.user_data import gpu_node_user_data
from profiles.capacity import CapacityBlock, OdcrCapacity
from profiles.node_groups import GpuNodeGroupConfig, SystemNodeGroupConfig
from profiles.versions import GPU_AMI_TYPES, SYSTEM_AMI_TYPE
from profiles.vpc import is_zone_id


@dataclass(frozen=True)
class NodeGroupDefaults:
    system_ami_type: str = SYSTEM_AMI_TYPE


DEFAULTS = NodeGroupDefaults()


def _metadata_options() -> LaunchTemplateMetadataOptions:
    return LaunchTemplateMetadataOptions(
        http_endpoint="enabled",
        http_tokens="required",
        http_put_response_hop_limit=IMDS_HOP_LIMIT,
        instance_metadata_tags="disabled",
    )


def _root_volume(size_gib: int) -> list[LaunchTemplateBlockDeviceMappings]:
    return [
        LaunchTemplateBlockDeviceMappings(
            device_name=ROOT_DEVICE_NAME,
            ebs=LaunchTemplateBlockDeviceMappingsEbs(
                volume_size=size_gib,
                volume_type="gp3",
                encrypted="true",
                delete_on_termination="true",
            ),
        )
    ]


@dataclass(frozen=True, kw_only=True)
class NodeGroupWiring:
    """What every node group needs from the cluster."""

    cluster_name: str
    """The cluster the nodes join."""
    node_role_arn: str
    """The IAM role the nodes run as."""
    node_security_group_id: str
    """The cluster security group every node carries."""
    depends_on: tuple[ITerraformDependable, ...] = field(default=())
    """Created before any node group, destroyed after (node roles outlive nodes, or ENIs leak)."""
    ami_release_version: str | None = None
    """The AMI release every group runs (release_version); None: the newest when a group is created
    or its version changes."""
    kubernetes_version: str | None = None
    """The Kubernetes minor every group runs (version), the cluster's: a control-plane minor bump
    moves every group after the control plane (the groups reference the cluster). EKS refuses a
    release of a new minor sent without the version, so a pinned release moves with it; unpinned
    groups take the newest release of the new minor."""


@dataclass(frozen=True, kw_only=True)
class SystemNodeGroupProps:
    wiring: NodeGroupWiring
    """What every node group needs from the cluster."""
    subnet_ids: tuple[str, ...]
    """The private subnets of every AZ."""
    config: SystemNodeGroupConfig
    """The group's validated profile settings."""


class SystemNodeGroup(Construct):
    """Nodes for cluster services (CoreDNS, controllers, monitoring). Exposes `node_group`."""

    def __init__(self, scope: Construct, id_: str, *, props: SystemNodeGroupProps):
        super().__init__(scope, id_)
        cfg, wiring = props.config, props.wiring
        template = LaunchTemplate(
            self,
            "launch-template",
            name=f"{wiring.cluster_name}-system",
            block_device_mappings=_root_volume(cfg.disk_size_gib),
            metadata_options=_metadata_options(),
            vpc_security_group_ids=[wiring.node_security_group_id],
            update_default_version=True,
        )
        self._node_group = EksNodeGroup(
            self,
            "node-group",
            cluster_name=wiring.cluster_name,
            node_group_name="system",
            node_role_arn=wiring.node_role_arn,
            subnet_ids=list(props.subnet_ids),
            ami_type=DEFAULTS.system_ami_type,
            release_version=wiring.ami_release_version,
            version=wiring.kubernetes_version,
            instance_types=list(cfg.instance_types),
            capacity_type="ON_DEMAND",
            scaling_config=EksNodeGroupScalingConfig(
                min_size=cfg.min_size, desired_size=cfg.desired_size, max_size=cfg.max_size
            ),
            launch_template=EksNodeGroupLaunchTemplate(
                id=template.id, version=Token.as_string(template.latest_version)
            ),
            labels=SYSTEM_NODES,
            update_config=EksNodeGroupUpdateConfig(max_unavailable=1),
            lifecycle=TerraformResourceLifecycle(ignore_changes=["scaling_config[0].desired_size"]),
            depends_on=list(wiring.depends_on) or None,
        )

    @property
    def node_group(self) -> EksNodeGroup:
        """The aws_eks_node_group resource."""
        return self._node_group


@dataclass(frozen=True, kw_only=True)
class GpuNodeGroupProps:
    wiring: NodeGroupWiring
    """What every node group needs from the cluster."""
    subnet_id: str
    """One private subnet: EFA does not cross AZs."""
    availability_zone: str
    """The subnet's availability zone (or Local Zone) as the profile names it (a zone name in this account, or a
    zone ID)."""
    zone_setting: str = "cluster.vpc.gpu_availability_zone"
    """The profile field that names that zone, for the plan's messages."""
    config: GpuNodeGroupConfig
    """The group's validated profile settings."""
    efa_security_group_id: str | None
    """The EFA security group; required when the group has EFA on."""
    lustre_over_efa: bool = False
    """The platform's FSx for Lustre file system is EFA-enabled: EFA nodes configure LNet over EFA."""
    now: datetime = field(default_factory=lambda: datetime.now(UTC))
    """When this is synthesized: a Capacity Block's drain already past is not scheduled again."""


def _catalog_precondition(scope: Construct, cfg: GpuNodeGroupConfig) -> Precondition:
    """Plan-time check of the catalog: a wrong EFA count must fail `terraform plan`, not a job."""
    entry = cfg.catalog_entry
    instance_type = DataAwsEc2InstanceType(scope, "instance-type", instance_type=cfg.instance_type)
    aws_efa_count = f"coalesce({instance_type.fqn}.efa_maximum_interfaces, 0)"
    if entry.max_efa_interfaces is None:
        # AWS documents which cards carry EFA, not the count (P6e-GB200): EC2 must allow the
        # platform's interfaces, on a type with the documented number of network cards.
        aws_cards = f"{instance_type.fqn}.maximum_network_cards"
        return Precondition(
            condition=expression(f"{aws_efa_count} >= {entry.efa_interfaces} && {aws_cards} == {entry.network_cards}"),
            error_message=interpolated(
                f"The GPU instance catalog gives {cfg.instance_type} {entry.efa_interfaces} EFA interfaces on "
                f"{entry.network_cards} network cards, but EC2 reports at most ",
                Expression(aws_efa_count),
                " EFA interfaces and ",
                Expression(aws_cards),
                " network cards: fix profiles/catalog.py.",
            ),
        )
    return Precondition(
        condition=expression(f"{aws_efa_count} == {entry.max_efa_interfaces}"),
        error_message=interpolated(
            f"The GPU instance catalog says {cfg.instance_type} has {entry.max_efa_interfaces} EFA interfaces, "
            "but EC2 reports ",
            Expression(aws_efa_count),
            ": fix profiles/catalog.py.",
        ),
    )


def _offered_precondition(scope: Construct, cfg: GpuNodeGroupConfig, zone: str, setting: str) -> Precondition:
    """Plan-time check that EC2 offers the type in the group's zone. Offerings differ per account
    (and zone names map to different physical zones in each), so no profile-time table can know;
    the message lists the zones of this account that do offer it, named as the profile names them."""
    by_id = is_zone_id(zone)

    def offerings(id_: str, *filters: tuple[str, str]) -> DataAwsEc2InstanceTypeOfferings:
        return DataAwsEc2InstanceTypeOfferings(
            scope,
            id_,
            location_type="availability-zone-id" if by_id else "availability-zone",
            filter=[DataAwsEc2InstanceTypeOfferingsFilter(name=name, values=[value]) for name, value in filters],
        )

    in_zone = offerings("offered-in-zone", ("instance-type", cfg.instance_type), ("location", zone))
    zones = f"{offerings('offered-in-region', ('instance-type', cfg.instance_type)).fqn}.locations"
    return Precondition(
        condition=expression(f"contains({in_zone.fqn}.instance_types, {string_literal(cfg.instance_type)})"),
        error_message=interpolated(
            f"EC2 does not offer {cfg.instance_type} in {zone} in this account"
            + ("" if by_id else " (zone names differ per account)")
            + "; "
            "it is offered in: ",
            Expression(
                f'length({zones}) > 0 ? join(", ", sort(distinct({zones}))) : '
                + string_literal("no zone of this region; choose another region")
            ),
            f". Set {setting} (or the capacity's zone) to one of them.",
        ),
    )


def _placement(scope: Construct, cfg: GpuNodeGroupConfig, name: str) -> LaunchTemplatePlacement | None:
    if cfg.placement == "cluster":
        group = PlacementGroup(scope, "placement-group", name=name, strategy="cluster")
        return LaunchTemplatePlacement(group_name=group.name)
    if cfg.placement == "reservation":
        return LaunchTemplatePlacement(group_name=cfg.existing_placement_group)
    return None


def _efa_interfaces(cfg: GpuNodeGroupConfig, security_groups: list[str]) -> list[LaunchTemplateNetworkInterfaces]:
    """One interface per EFA-capable network card, each carrying every security group."""
    return [
        LaunchTemplateNetworkInterfaces(
            network_card_index=slot.network_card_index,
            device_index=slot.device_index,
            interface_type=slot.interface_type,
            security_groups=security_groups,
            delete_on_termination="true",
        )
        for slot in efa_interface_layout(cfg.catalog_entry)
    ]


def _reserved_capacity(
    cfg: GpuNodeGroupConfig,
) -> tuple[LaunchTemplateCapacityReservationSpecification | None, LaunchTemplateInstanceMarketOptions | None]:
    """The launch template's reservation target and market options for ODCR / Capacity Block groups."""
    capacity = cfg.capacity
    if not isinstance(capacity, (CapacityBlock, OdcrCapacity)):
        return None, None
    target = LaunchTemplateCapacityReservationSpecificationCapacityReservationTarget(
        capacity_reservation_id=capacity.reservation_id,
        capacity_reservation_resource_group_arn=getattr(capacity, "resource_group_arn", None),
    )
    reservation = LaunchTemplateCapacityReservationSpecification(capacity_reservation_target=target)
    market = (
        LaunchTemplateInstanceMarketOptions(market_type="capacity-block")
        if isinstance(capacity, CapacityBlock)
        else None
    )
    return reservation, market


class GpuNodeGroup(Construct):
    """A GPU node group on the AL2023 NVIDIA AMI, with every EFA interface its instance type has."""

    def __init__(self, scope: Construct, id_: str, *, props: GpuNodeGroupProps):
        super().__init__(scope, id_)
        cfg, wiring = props.config, props.wiring
        name = f"{wiring.cluster_name}-{cfg.name}"

        security_groups = [wiring.node_security_group_id]
        interfaces = None
        if cfg.efa_enabled:
            if props.efa_security_group_id is None:
                raise ValueError(f"GPU node group {cfg.name} has EFA on but was given no EFA security group")
            security_groups.append(props.efa_security_group_id)
            interfaces = _efa_interfaces(cfg, security_groups)
        reservation, market = _reserved_capacity(cfg)
        sizes = cfg.sizes_at(props.now)
        deadline = (
            block_deadline(self, cfg, cfg.capacity, props.now) if isinstance(cfg.capacity, CapacityBlock) else None
        )

        self._launch_template = LaunchTemplate(
            self,
            "launch-template",
            name=name,
            update_default_version=True,
            user_data=gpu_node_user_data(
                raid0_local_nvme=cfg.catalog_entry.local_nvme_disks > 0,
                lustre_over_efa=props.lustre_over_efa and cfg.efa_enabled,
            ),
            metadata_options=_metadata_options(),
            block_device_mappings=_root_volume(cfg.root_volume_size_gib),
            network_interfaces=interfaces,
            # Without explicit interfaces the groups go on the primary interface instead.
            vpc_security_group_ids=None if interfaces else security_groups,
            placement=_placement(self, cfg, name),
            capacity_reservation_specification=reservation,
            instance_market_options=market,
            tag_specifications=[
                LaunchTemplateTagSpecifications(resource_type=kind, tags={"Name": name})
                for kind in ("instance", "volume", "network-interface")
            ],
            lifecycle=TerraformResourceLifecycle(
                precondition=[
                    _catalog_precondition(self, cfg),
                    _offered_precondition(self, cfg, props.availability_zone, props.zone_setting),
                ]
            ),
        )
        self._labels = {
            ROLE_LABEL: GPU_TRAINING_ROLE,
            NODE_GROUP_LABEL: cfg.name,
            EFA_LABEL: "true" if cfg.efa_enabled else "false",
            **cfg.labels,
        }
        self._node_group = EksNodeGroup(
            self,
            "node-group",
            cluster_name=wiring.cluster_name,
            node_group_name=cfg.name,
            node_role_arn=wiring.node_role_arn,
            subnet_ids=[props.subnet_id],
            ami_type=GPU_AMI_TYPES[cfg.catalog_entry.architecture],
            release_version=wiring.ami_release_version,
            version=wiring.kubernetes_version,
            instance_types=[cfg.instance_type],
            capacity_type="CAPACITY_BLOCK" if isinstance(cfg.capacity, CapacityBlock) else "ON_DEMAND",
            # A Capacity Block's group holds no node outside its window (profiles/capacity.py).
            scaling_config=EksNodeGroupScalingConfig(min_size=sizes[0], desired_size=sizes[1], max_size=sizes[2]),
            launch_template=EksNodeGroupLaunchTemplate(
                id=self._launch_template.id, version=Token.as_string(self._launch_template.latest_version)
            ),
            labels=self._labels,
            taint=[EksNodeGroupTaint(**GPU_TAINT_EKS)],
            update_config=EksNodeGroupUpdateConfig(max_unavailable=cfg.max_unavailable),
            node_repair_config=EksNodeGroupNodeRepairConfig(enabled=True),
            # No autoscaler manages EFA GPU groups (Karpenter launches its own nodes; a placement
            # group's nodes are sized on purpose): the profile's desired_size is applied on every
            # deploy. Lowering it removes nodes, and the jobs on them end.
            depends_on=list(wiring.depends_on) or None,
            lifecycle=TerraformResourceLifecycle(precondition=[deadline]) if deadline else None,
        )
        if isinstance(cfg.capacity, CapacityBlock):
            block_schedules(self, cfg, cfg.capacity, self._node_group, props.now)

    @property
    def node_group(self) -> EksNodeGroup:
        return self._node_group

    @property
    def launch_template(self) -> LaunchTemplate:
        return self._launch_template

    @property
    def labels(self) -> dict[str, str]:
        """The Kubernetes labels of the group's nodes."""
        return dict(self._labels)
