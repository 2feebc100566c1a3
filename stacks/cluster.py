"""Cluster layer: VPC, EKS control plane, IAM, managed add-ons, system and GPU node groups."""

from __future__ import annotations

from typing import Any

from cdktf import ITerraformDependable
from constructs import Construct

from components.efa import EfaSecurityGroup, EfaSecurityGroupProps
from components.eks_control_plane import ControlPlaneProps, EksControlPlane
from components.iam import (
    EKS_NODE_POLICIES,
    PodIdentityBinding,
    ServiceRole,
    ServiceRoleProps,
    allow,
    pod_identity_role,
    policy_document,
)
from components.managed_addon import AddonIdentity, ManagedAddon, ManagedAddonProps
from components.network import LocalZoneSubnetProps, Network, NetworkProps
from components.node_groups import (
    GpuNodeGroup,
    GpuNodeGroupProps,
    NodeGroupWiring,
    SystemNodeGroup,
    SystemNodeGroupProps,
)
from components.node_monitoring import AGENT_ADDON, AGENT_CONFIGURATION
from components.s3 import DATA_BUCKETS
from components.vpc_endpoints import InterfaceEndpoints, InterfaceEndpointsProps
from profiles import PlatformConfig
from profiles.storage import data_bucket_name
from profiles.versions import MANAGED_ADDON_MINIMUMS, ManagedAddonName
from stacks.contracts import ClusterOutputs
from stacks.layer import LayerStack, StateLocation

EARLY_ADDONS: tuple[ManagedAddonName, ...] = ("vpc-cni", "kube-proxy", "eks-pod-identity-agent")
# The VPC CNI enforces NetworkPolicy only when asked to: tenant namespaces rely on it.
EARLY_ADDON_CONFIG = {"vpc-cni": {"enableNetworkPolicy": "true"}}
# CSI node daemonsets must run on tainted GPU nodes too, or pods there cannot mount volumes.
TOLERATE_ALL_TAINTS = {"node": {"tolerateAllTaints": True}}
# The CSI controllers' service accounts, as the EKS add-ons create them in kube-system.
EBS_CSI_SA = "ebs-csi-controller-sa"
FSX_CSI_SA = "fsx-csi-controller-sa"
S3_CSI_SA = "s3-csi-driver-sa"


class ClusterStack(LayerStack):
    def __init__(self, scope: Construct, layer: str, *, config: PlatformConfig, state: StateLocation):
        super().__init__(scope, layer, config=config, state=state)
        self.use_aws_provider()
        cluster_cfg, vpc = config.cluster, config.cluster.vpc
        name = config.name

        network = Network(
            self,
            "network",
            props=NetworkProps(
                name=name,
                cidr=vpc.cidr,
                availability_zones=tuple(vpc.availability_zones),
                nat_gateways=vpc.nat_gateways,
                region=config.region,
                local_zone=(
                    LocalZoneSubnetProps(zone=vpc.gpu_local_zone, egress_zone=vpc.gpu_az)
                    if vpc.gpu_local_zone
                    else None
                ),
            ),
        )
        # The control plane, the system nodes and the interface endpoints use the AZs' private
        # subnets only: EKS places no interface in a Local Zone subnet (components/network.py).
        private_subnets = tuple(network.private_subnet_ids.values())
        # The file system's subnet (the storage layer): in the GPU AZ, also with a Local Zone.
        gpu_subnet_id = network.private_subnet_ids[vpc.gpu_az]
        # Where the GPU node groups run: the Local Zone's subnet, else the GPU AZ's.
        gpu_node_subnet_id = network.local_zone_subnet_id or gpu_subnet_id

        control_plane = EksControlPlane(
            self,
            "eks",
            props=ControlPlaneProps(
                name=name,
                kubernetes_version=cluster_cfg.kubernetes_version,
                subnet_ids=private_subnets,
                public_access_cidrs=tuple(cluster_cfg.endpoint_public_access_cidrs),
                private_access_cidrs=tuple(cluster_cfg.private_endpoint_access.cidrs),
                private_access_security_groups=tuple(cluster_cfg.private_endpoint_access.security_groups),
                log_types=tuple(cluster_cfg.control_plane_log_types),
                service_ipv4_cidr=cluster_cfg.service_cidr,
                admin_principal_arns=tuple(cluster_cfg.admin_principal_arns),
            ),
        )
        node_sg = control_plane.cluster_security_group_id

        if vpc.interface_endpoints:
            InterfaceEndpoints(
                self,
                "endpoints",
                props=InterfaceEndpointsProps(
                    name=name,
                    region=config.region,
                    vpc_id=network.vpc_id,
                    subnet_ids=private_subnets,
                    services=tuple(vpc.interface_endpoints),
                    client_security_group_id=node_sg,
                    admitted_cidrs=tuple(cluster_cfg.private_endpoint_access.cidrs),
                    admitted_security_groups=tuple(cluster_cfg.private_endpoint_access.security_groups),
                    account_id=control_plane.account_id,
                ),
            )

        node_role = ServiceRole(
            self,
            "node-role",
            props=ServiceRoleProps(
                name=f"{name}-node",
                service="ec2.amazonaws.com",
                managed_policies=EKS_NODE_POLICIES,
            ),
        )

        # Networking and identity agents first: nodes cannot become Ready without them.
        early_addons = [
            self._managed_addon(
                control_plane.name,
                addon,
                depends_on=tuple(control_plane.ready),
                configuration=EARLY_ADDON_CONFIG.get(addon),
            ).addon
            for addon in EARLY_ADDONS
        ]
        wiring = NodeGroupWiring(
            cluster_name=control_plane.name,
            node_role_arn=node_role.arn,
            node_security_group_id=node_sg,
            depends_on=(*node_role.attachments, *early_addons),
            ami_release_version=cluster_cfg.ami_release_version,
            kubernetes_version=cluster_cfg.kubernetes_version,
        )
        system = SystemNodeGroup(
            self,
            "system-nodes",
            props=SystemNodeGroupProps(
                wiring=wiring,
                subnet_ids=private_subnets,
                config=cluster_cfg.system_node_group,
            ),
        )
        self._workload_addons(control_plane, depends_on=system.node_group)

        efa_sg = None
        if any(group.efa_enabled for group in cluster_cfg.gpu_node_groups):
            efa_sg = EfaSecurityGroup(
                self, "efa-sg", props=EfaSecurityGroupProps(name=f"{name}-efa", vpc_id=network.vpc_id)
            )
        self.gpu_node_groups = [
            GpuNodeGroup(
                self,
                f"gpu-{group.name}",
                props=GpuNodeGroupProps(
                    wiring=wiring,
                    subnet_id=gpu_node_subnet_id,
                    availability_zone=vpc.gpu_node_zone,
                    zone_setting=f"cluster.vpc.{'gpu_local_zone' if vpc.gpu_local_zone else 'gpu_availability_zone'}",
                    config=group,
                    efa_security_group_id=efa_sg.id if efa_sg else None,
                    lustre_over_efa=config.storage.fsx.enabled and config.storage.fsx.efa_enabled,
                ),
            )
            for group in cluster_cfg.gpu_node_groups
        ]

        self.outputs = ClusterOutputs(
            cluster_name=control_plane.name,
            endpoint=control_plane.endpoint,
            certificate_authority=control_plane.certificate_authority,
            region=config.region,
            vpc_id=network.vpc_id,
            vpc_cidr=vpc.cidr,
            private_subnet_ids=list(private_subnets),
            gpu_subnet_id=gpu_subnet_id,
            gpu_local_zone_subnet_id=network.local_zone_subnet_id,
            node_security_group_id=node_sg,
            efa_security_group_id=efa_sg.id if efa_sg else None,
            node_role_arn=node_role.arn,
            node_role_name=node_role.name,
            kms_key_arn=control_plane.kms_key_arn,
            configure_kubectl=f"aws eks update-kubeconfig --region {config.region} --name {config.name}",
        )
        self.publish(self.outputs)

    def _workload_addons(self, control_plane: EksControlPlane, *, depends_on: ITerraformDependable) -> None:
        """Add-ons whose pods need nodes to run on, each with a Pod Identity role bound to its own
        service account and scoped to what it does."""
        name = self.config.name

        def binding(service_account: str) -> PodIdentityBinding:
            return PodIdentityBinding(
                account_id=control_plane.account_id,
                cluster_name=name,
                namespace="kube-system",
                service_account=service_account,
            )

        ebs_role = pod_identity_role(
            self,
            "ebs-csi-role",
            name=f"{name}-ebs-csi",
            binding=binding(EBS_CSI_SA),
            managed_policies=("service-role/AmazonEBSCSIDriverPolicy",),
        )
        # Static FSx volumes only (the storage layer owns the file system): describe is enough.
        fsx_role = pod_identity_role(
            self,
            "fsx-csi-role",
            name=f"{name}-fsx-csi",
            binding=binding(FSX_CSI_SA),
            inline_policy=policy_document(
                allow(["fsx:DescribeFileSystems", "fsx:DescribeDataRepositoryAssociations"]),
            ),
        )
        # Mountpoint reads and writes exactly the storage layer's data buckets, by their full names
        # (a prefix pattern would also match the build layer's bucket and other platforms' buckets).
        buckets = [
            f"arn:aws:s3:::{data_bucket_name(name, purpose, control_plane.account_id)}" for purpose in DATA_BUCKETS
        ]
        s3_role = pod_identity_role(
            self,
            "s3-csi-role",
            name=f"{name}-s3-csi",
            binding=binding(S3_CSI_SA),
            inline_policy=policy_document(
                allow(["s3:ListBucket"], buckets),
                allow(
                    ["s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload", "s3:DeleteObject"],
                    [f"{bucket}/*" for bucket in buckets],
                ),
            ),
        )
        self._managed_addon(control_plane.name, "coredns", depends_on=(depends_on,))
        csi: tuple[tuple[ManagedAddonName, str, ServiceRole], ...] = (
            ("aws-ebs-csi-driver", EBS_CSI_SA, ebs_role),
            ("aws-fsx-csi-driver", FSX_CSI_SA, fsx_role),
            ("aws-mountpoint-s3-csi-driver", S3_CSI_SA, s3_role),
        )
        for addon, account, role in csi:
            self._managed_addon(
                control_plane.name,
                addon,
                identity=AddonIdentity(service_account=account, role_arn=role.arn),
                configuration=TOLERATE_ALL_TAINTS,
                depends_on=(depends_on, *role.attachments),
            )
        if self.config.cluster.gpu_node_groups:
            # GPU faults become node conditions that the groups' auto-repair acts on
            # (components/node_monitoring.py).
            self._managed_addon(
                control_plane.name, AGENT_ADDON, configuration=AGENT_CONFIGURATION, depends_on=(depends_on,)
            )

    def _managed_addon(
        self,
        cluster_name: str,
        addon: ManagedAddonName,
        *,
        depends_on: tuple[ITerraformDependable, ...],
        identity: AddonIdentity | None = None,
        configuration: dict[str, Any] | None = None,
    ) -> ManagedAddon:
        """An EKS managed add-on at the profile's pinned version, else EKS's default for the cluster."""
        cluster = self.config.cluster
        minimum = MANAGED_ADDON_MINIMUMS.get(addon)
        return ManagedAddon(
            self,
            f"addon-{addon}",
            props=ManagedAddonProps(
                cluster_name=cluster_name,
                addon_name=addon,
                identity=identity,
                configuration=configuration,
                depends_on=depends_on,
                kubernetes_version=cluster.kubernetes_version,
                version=cluster.addon_versions.get(addon),
                minimum=minimum.version if minimum else None,
                minimum_why=minimum.why if minimum else "",
            ),
        )
