"""Addons layer: the registry's Helm add-ons that the profile enables, in order, and the default
StorageClass their volumes use."""

from __future__ import annotations

from cdktf_cdktf_provider_kubernetes.storage_class_v1 import StorageClassV1, StorageClassV1Metadata
from constructs import Construct

from components.helm.addon import AddonContext, InstalledAddon
from components.helm.registry import ADDONS
from components.k8s.namespaces import ApiServerAddresses
from components.mlflow_store import MlflowBackend
from profiles import PlatformConfig
from stacks.contracts import AddonsOutputs, ClusterOutputs, StorageOutputs
from stacks.layer import LayerStack, StateLocation

STORAGE_CLASS = "gp3"


class AddonsStack(LayerStack):
    def __init__(
        self,
        scope: Construct,
        layer: str,
        *,
        config: PlatformConfig,
        state: StateLocation,
        cluster: ClusterOutputs,
        storage: StorageOutputs,
    ):
        super().__init__(scope, layer, config=config, state=state)
        self.use_aws_provider()
        self.use_kubernetes_providers(cluster, helm=True)

        # EKS clusters have no default StorageClass: Prometheus and notebook volumes need one.
        storage_class = StorageClassV1(
            self,
            "gp3",
            metadata=StorageClassV1Metadata(
                name=STORAGE_CLASS, annotations={"storageclass.kubernetes.io/is-default-class": "true"}
            ),
            storage_provisioner="ebs.csi.aws.com",
            volume_binding_mode="WaitForFirstConsumer",
            allow_volume_expansion=True,
            reclaim_policy="Delete",
            parameters={"type": "gp3", "encrypted": "true"},
        )
        installed: dict[str, InstalledAddon] = {}
        mlflow = mlflow_backend(storage)
        api_server = ApiServerAddresses(vpc_cidr=cluster.vpc_cidr, service_ip=config.cluster.api_service_ip)
        for addon in ADDONS:
            if addon.enabled(config):
                installed[addon.key] = addon.install(
                    AddonContext(
                        scope=self,
                        config=config,
                        cluster_name=cluster.cluster_name,
                        cluster_endpoint=cluster.endpoint,
                        storage_class=STORAGE_CLASS,
                        storage_class_ready=storage_class,
                        vpc_cidr=cluster.vpc_cidr,
                        api_server=api_server,
                        mlflow_backend=mlflow,
                        installed=installed,
                    )
                )
        self.installed = installed
        exports = {name: value for addon in installed.values() for name, value in addon.exports.items()}
        self.outputs = AddonsOutputs(
            releases={key: addon.name for key, addon in installed.items()},
            storage_class=STORAGE_CLASS,
            karpenter_node_role_name=exports.get("karpenter_node_role_name"),
            karpenter_interruption_queue=exports.get("karpenter_interruption_queue"),
        )
        self.publish(self.outputs)


def mlflow_backend(storage: StorageOutputs) -> MlflowBackend | None:
    """MLflow's stores as the storage layer published them, or None when MLflow is off."""
    s = storage
    if (
        s.mlflow_db_address is None
        or s.mlflow_db_name is None
        or s.mlflow_db_username is None
        or s.mlflow_db_secret_arn is None
        or s.mlflow_kms_key_arn is None
        or s.mlflow_artifact_bucket_name is None
        or s.mlflow_artifact_bucket_arn is None
    ):
        return None
    return MlflowBackend(
        address=s.mlflow_db_address,
        database=s.mlflow_db_name,
        username=s.mlflow_db_username,
        secret_arn=s.mlflow_db_secret_arn,
        kms_key_arn=s.mlflow_kms_key_arn,
        bucket_name=s.mlflow_artifact_bucket_name,
        bucket_arn=s.mlflow_artifact_bucket_arn,
    )
