"""Storage layer: S3 buckets for datasets and checkpoints, FSx for Lustre in the GPU subnet, and
what the enabled add-ons keep here (`AddonSpec.storage`: MLflow's database and artifact bucket)."""

from __future__ import annotations

from cdktf_cdktf_provider_aws.data_aws_caller_identity import DataAwsCallerIdentity
from constructs import Construct

from addons.registry import ADDONS
from components.fsx import LustreFileSystem, LustreProps
from components.helm.addon import StorageContext
from components.s3 import DATA_BUCKETS, SecureBucket, SecureBucketProps
from profiles import PlatformConfig
from profiles.storage import data_bucket_name
from stacks.contracts import ClusterOutputs, StorageOutputs
from stacks.layer import LayerStack, StateLocation


class StorageStack(LayerStack):
    def __init__(
        self, scope: Construct, layer: str, *, config: PlatformConfig, state: StateLocation, cluster: ClusterOutputs
    ):
        super().__init__(scope, layer, config=config, state=state)
        self.use_aws_provider()
        storage = config.storage
        account = DataAwsCallerIdentity(self, "account").account_id
        buckets = {
            purpose: SecureBucket(
                self,
                f"{purpose}-bucket",
                props=SecureBucketProps(
                    bucket_name=data_bucket_name(config.name, purpose, account),
                    prevent_destroy=storage.protect_from_destroy,
                    lifecycle=getattr(storage, f"{purpose}_bucket"),
                ),
            )
            for purpose in DATA_BUCKETS
        }
        fsx = None
        if storage.fsx.enabled:
            fsx = LustreFileSystem(
                self,
                "fsx",
                props=LustreProps(
                    name=config.name,
                    vpc_id=cluster.vpc_id,
                    subnet_id=cluster.gpu_subnet_id,
                    client_security_group_id=cluster.node_security_group_id,
                    bucket_names={purpose: bucket.name for purpose, bucket in buckets.items()},
                    config=storage.fsx,
                    prevent_destroy=storage.protect_from_destroy,
                    tenants=tuple(tenant.name for tenant in config.workloads.tenants),
                ),
            )
        # What the enabled add-ons keep here (MLflow's database and artifact bucket).
        context = StorageContext(scope=self, config=config, cluster=cluster, account_id=account)
        records = {
            addon.key: record for addon in ADDONS if addon.enabled(config) and (record := addon.storage(context))
        }
        self.outputs = StorageOutputs(
            bucket_names={purpose: bucket.name for purpose, bucket in buckets.items()},
            bucket_arns={purpose: bucket.arn for purpose, bucket in buckets.items()},
            fsx_file_system_id=fsx.id if fsx else None,
            fsx_dns_name=fsx.dns_name if fsx else None,
            fsx_mount_name=fsx.mount_name if fsx else None,
            addon_records=records,
        )
        self.publish(self.outputs)
