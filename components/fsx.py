"""FSx for Lustre in the GPU subnet, its security group and its S3 data repository associations."""

from __future__ import annotations

from dataclasses import dataclass

from cdktf import TerraformResourceLifecycle
from cdktf_cdktf_provider_aws.fsx_lustre_file_system import (
    FsxLustreFileSystem,
    FsxLustreFileSystemMetadataConfiguration,
)
from cdktf_cdktf_provider_aws.security_group import SecurityGroup
from constructs import Construct

from components.leaf_resources import LeafType
from components.network import EGRESS_RULE, INGRESS_RULE
from profiles import tenancy
from profiles.storage import DataRepositoryAssociation, FsxConfig

# Lustre: 988 for the management service, 1018-1023 for the data path.
LUSTRE_PORTS = ((988, 988), (1018, 1023))
# Nothing reads an association, so each is rendered as data (components/leaf_resources.py).
DATA_REPOSITORY_ASSOCIATION = LeafType("aws_fsx_data_repository_association", "FsxDataRepositoryAssociation")


@dataclass(frozen=True, kw_only=True)
class LustreProps:
    name: str
    """The platform's name: prefix of the file system's and its security group's names."""
    vpc_id: str
    """The VPC the file system lives in."""
    subnet_id: str
    """The GPU subnet: the file system sits in the AZ of its heaviest clients."""
    client_security_group_id: str
    """The security group of the nodes that mount the file system."""
    bucket_names: dict[str, str]
    """"datasets" / "checkpoints" -> bucket name, for data repository associations."""
    config: FsxConfig
    """The file system's validated profile settings."""
    prevent_destroy: bool
    """Refuse to destroy the file system (lifecycle prevent_destroy)."""
    tenants: tuple[str, ...] = ()
    """Tenant namespaces: each gets its own copy of every association under /<tenant>. Default:
    none, the associations sit at the file system's root."""


class LustreFileSystem(Construct):
    """Exposes `id`, `dns_name`, `mount_name` and `security_group_id`."""

    def __init__(self, scope: Construct, id_: str, *, props: LustreProps):
        super().__init__(scope, id_)
        cfg = props.config
        group = SecurityGroup(
            self,
            "security-group",
            name=f"{props.name}-fsx",
            vpc_id=props.vpc_id,
            description="Lustre from cluster nodes and between file servers",
            tags={"Name": f"{props.name}-fsx"},
        )
        self._security_group_id = group_id = group.id  # each attribute read is a jsii round trip
        for source_name, source in (("nodes", props.client_security_group_id), ("self", group_id)):
            for low, high in LUSTRE_PORTS:
                INGRESS_RULE.add(
                    self,
                    f"lustre-{low}-from-{source_name}",
                    security_group_id=group_id,
                    referenced_security_group_id=source,
                    ip_protocol="tcp",
                    from_port=low,
                    to_port=high,
                    description=f"Lustre {low}-{high} from {source_name}",
                )
        clients = props.client_security_group_id
        for low, high in LUSTRE_PORTS:
            EGRESS_RULE.add(
                self,
                f"lustre-{low}-to-self",
                security_group_id=group_id,
                referenced_security_group_id=group_id,
                ip_protocol="tcp",
                from_port=low,
                to_port=high,
                description=f"Lustre {low}-{high} between servers",
            )
            # Lustre servers also connect to their clients (lock callbacks): both directions, on
            # the file system's group and on the clients' group.
            EGRESS_RULE.add(
                self,
                f"lustre-{low}-to-nodes",
                security_group_id=group_id,
                referenced_security_group_id=clients,
                ip_protocol="tcp",
                from_port=low,
                to_port=high,
                description=f"Lustre {low}-{high} to clients",
            )
            INGRESS_RULE.add(
                self,
                f"nodes-lustre-{low}-from-fsx",
                security_group_id=clients,
                referenced_security_group_id=group_id,
                ip_protocol="tcp",
                from_port=low,
                to_port=high,
                description=f"Lustre {low}-{high} from FSx",
            )
            EGRESS_RULE.add(
                self,
                f"nodes-lustre-{low}-to-fsx",
                security_group_id=clients,
                referenced_security_group_id=group_id,
                ip_protocol="tcp",
                from_port=low,
                to_port=high,
                description=f"Lustre {low}-{high} to FSx",
            )
        if cfg.efa_enabled:
            # EFA-enabled FSx for Lustre: all traffic in both directions between the file system's
            # group and itself, and between it and the clients' group (on both groups), or clients
            # fall back to TCP while the file system is paid for EFA throughput.
            for peer_name, owner, peer in (
                ("self", group_id, group_id),
                ("nodes", group_id, clients),
                ("fsx-to-nodes", clients, group_id),
            ):
                INGRESS_RULE.add(
                    self,
                    f"efa-from-{peer_name}",
                    security_group_id=owner,
                    referenced_security_group_id=peer,
                    ip_protocol="-1",
                    description="EFA",
                )
                EGRESS_RULE.add(
                    self,
                    f"efa-to-{peer_name}",
                    security_group_id=owner,
                    referenced_security_group_id=peer,
                    ip_protocol="-1",
                    description="EFA",
                )

        persistent = cfg.deployment_type != "SCRATCH_2"
        metadata = None
        if cfg.deployment_type == "PERSISTENT_2":
            metadata = FsxLustreFileSystemMetadataConfiguration(
                mode="USER_PROVISIONED" if cfg.metadata_iops else "AUTOMATIC",
                iops=cfg.metadata_iops,
            )
        file_system = FsxLustreFileSystem(
            self,
            "file-system",
            storage_capacity=cfg.storage_capacity_gib,
            deployment_type=cfg.deployment_type,
            storage_type="SSD",
            per_unit_storage_throughput=cfg.throughput_mbps_per_tib,
            file_system_type_version=cfg.lustre_version,
            data_compression_type=cfg.data_compression,
            efa_enabled=cfg.efa_enabled or None,
            metadata_configuration=metadata,
            automatic_backup_retention_days=cfg.automatic_backup_retention_days if persistent else None,
            copy_tags_to_backups=persistent or None,
            # Deleting a PERSISTENT file system keeps a final backup (the API skips it unless asked);
            # SCRATCH file systems cannot be backed up.
            skip_final_backup=False if persistent else None,
            final_backup_tags={"Name": f"{props.name}-training-final"} if persistent else None,
            subnet_ids=[props.subnet_id],
            security_group_ids=[group_id],
            tags={"Name": f"{props.name}-training"},
            lifecycle=TerraformResourceLifecycle(prevent_destroy=props.prevent_destroy),
        )
        self._id = file_system.id
        self._dns_name = file_system.dns_name
        self._mount_name = file_system.mount_name

        # S3 is linked through associations only; import_path / export_path are never used
        # (PERSISTENT_2 rejects them, and one mechanism is easier to reason about). With tenants,
        # each association is made once per tenant: /<tenant><path> <-> s3://<bucket>/<tenant>/<prefix>,
        # the same prefix the tenant's IAM role is limited to, and the directory its volume mounts.
        file_system_id = file_system.id
        for tenant in props.tenants or (None,):
            for index, association in enumerate(cfg.data_repository_associations):
                self._associate(file_system_id, index, association, props.bucket_names, tenant)

    def _associate(
        self,
        file_system_id: str,
        index: int,
        association: DataRepositoryAssociation,
        bucket_names: dict[str, str],
        tenant: str | None,
    ) -> None:
        path, prefix = tenancy.association(tenant, association.file_system_path, association.s3_prefix)
        imports, exports = association.import_events, association.export_events
        DATA_REPOSITORY_ASSOCIATION.add(
            self,
            f"association-{tenant}-{index}" if tenant else f"association-{index}",
            file_system_id=file_system_id,
            file_system_path=path,
            data_repository_path=f"s3://{bucket_names[association.bucket]}/{prefix}",
            batch_import_meta_data_on_create=True,
            delete_data_in_filesystem=False,
            s3={
                "auto_import_policy": {"events": list(imports)} if imports else None,
                "auto_export_policy": {"events": list(exports)} if exports else None,
            },
        )

    @property
    def security_group_id(self) -> str:
        """The file system's security group."""
        return self._security_group_id

    @property
    def id(self) -> str:
        """The file system's id."""
        return self._id

    @property
    def dns_name(self) -> str:
        """Its DNS name."""
        return self._dns_name

    @property
    def mount_name(self) -> str:
        """Its Lustre mount name."""
        return self._mount_name
