"""Addons layer: pinned Helm releases with typed values, and the AWS identity they need."""

from __future__ import annotations

from dataclasses import dataclass

from constructs import Construct
from cdktf import TerraformOutput, TerraformVariable, TerraformVariableValidationConfig
from cdktf_cdktf_provider_kubernetes.resource_quota_v1 import (
    ResourceQuotaV1,
    ResourceQuotaV1Metadata,
    ResourceQuotaV1Spec,
)
from cdktf_cdktf_provider_kubernetes.storage_class_v1 import StorageClassV1, StorageClassV1Metadata

from components.helm import karpenter as karpenter_chart
from components.helm.argo_workflows import argo_workflows_values
from components.helm.charts import CHARTS, ChartRef
from components.helm.efa_device_plugin import efa_device_plugin_values
from components.helm.gpu_operator import gpu_operator_values
from components.helm.jupyterhub import jupyterhub_values
from components.helm.monitoring import monitoring_values
from components.helm.operators import operator_values
from components.helm.release import HelmAddon, HelmAddonProps, SensitiveValue, Values
from components.karpenter import KarpenterIdentity, KarpenterIdentityProps
from components.labels import GPU_TAINT_KEY
from profiles import PlatformConfig
from stacks.cluster import ClusterOutputs
from stacks.layer import LayerStack

STORAGE_CLASS = "gp3"


@dataclass(frozen=True)
class AddonsOutputs:
    karpenter_node_role_name: str | None
    storage_class: str


class AddonsStack(LayerStack):
    def __init__(self, scope: Construct, layer: str, *, config: PlatformConfig, cluster: ClusterOutputs):
        super().__init__(scope, layer, config=config)
        self.use_aws_provider()
        self.use_kubernetes_providers(cluster, helm=True)
        addons = config.addons
        self.releases: dict[str, HelmAddon] = {}

        # EKS clusters have no default StorageClass: Prometheus and notebook volumes need one.
        storage_class = StorageClassV1(
            self, "gp3", metadata=StorageClassV1Metadata(
                name=STORAGE_CLASS, annotations={"storageclass.kubernetes.io/is-default-class": "true"}),
            storage_provisioner="ebs.csi.aws.com", volume_binding_mode="WaitForFirstConsumer",
            allow_volume_expansion=True, reclaim_policy="Delete",
            parameters={"type": "gp3", "encrypted": "true"},
        )

        if addons.monitoring.enabled:
            from_variable = addons.monitoring.grafana_admin_password_from == "variable"
            sensitive = ()
            if from_variable:
                password = TerraformVariable(
                    self, "grafana_admin_password", type="string", sensitive=True, nullable=False,
                    description="Grafana admin password (set TF_VAR_grafana_admin_password); stored only in a Secret.",
                    validation=[TerraformVariableValidationConfig(
                        condition="${length(var.grafana_admin_password) >= 12}",
                        error_message="grafana_admin_password must be at least 12 characters.",
                    )],
                )
                sensitive = (SensitiveValue("grafana.adminPassword", password.string_value),)
            # CRD provider: ServiceMonitor / PrometheusRule kinds exist once this release is in.
            self._release("monitoring", "monitoring", "monitoring", monitoring_values(
                retention_days=addons.monitoring.prometheus_retention_days,
                storage_gib=addons.monitoring.prometheus_storage_gib, storage_class=STORAGE_CLASS,
                grafana_secret=None if from_variable else addons.monitoring.grafana_admin_secret_name,
            ), depends_on=(storage_class,), sensitive=sensitive, timeout=900)

        if addons.gpu_operator.enabled:
            self._release("gpu_operator", "gpu-operator", "gpu-operator", gpu_operator_values(
                dra=addons.gpu_operator.dra, service_monitor=addons.monitoring.enabled,
            ), depends_on=self._monitoring(), timeout=900)
        if addons.efa_device_plugin.enabled:
            self._release("efa_device_plugin", "efa-device-plugin", "kube-system", efa_device_plugin_values(),
                          create_namespace=False)
        if addons.kuberay.enabled:
            self._release("kuberay", "kuberay-operator", "ray-system", operator_values())
        if addons.mpi_operator.enabled:
            self._release("mpi_operator", "mpi-operator", "mpi-operator", operator_values())
        if addons.jupyterhub.enabled:
            self._release("jupyterhub", "jupyterhub", "jupyterhub",
                          jupyterhub_values(addons.jupyterhub, storage_class=STORAGE_CLASS),
                          depends_on=(storage_class,), timeout=1200)
        if addons.argo_workflows.enabled:
            argo = addons.argo_workflows
            release = self._release("argo_workflows", "argo-workflows", argo.namespace, argo_workflows_values(argo))
            ResourceQuotaV1(
                self, "argo-quota", metadata=ResourceQuotaV1Metadata(name="workflow-quota", namespace=argo.namespace),
                spec=ResourceQuotaV1Spec(hard={
                    "requests.cpu": argo.quota_cpu, "requests.memory": argo.quota_memory,
                    f"requests.{GPU_TAINT_KEY}": str(argo.quota_gpus),
                }),
                depends_on=[release.release],
            )

        karpenter_node_role = None
        if addons.karpenter.enabled:
            identity = KarpenterIdentity(self, "karpenter-identity", props=KarpenterIdentityProps(
                name=config.name, region=config.region, cluster_name=cluster.cluster_name,
                namespace=karpenter_chart.NAMESPACE, service_account=karpenter_chart.SERVICE_ACCOUNT,
            ))
            self._release("karpenter", "karpenter", karpenter_chart.NAMESPACE, karpenter_chart.karpenter_values(
                cluster_name=cluster.cluster_name, cluster_endpoint=cluster.endpoint, queue_name=identity.queue_name,
            ), depends_on=identity.ready, create_namespace=False)
            karpenter_node_role = identity.node_role_name
            TerraformOutput(self, "karpenter_node_role_name", value=identity.node_role_name)
            TerraformOutput(self, "karpenter_interruption_queue", value=identity.queue_name)

        self.outputs = AddonsOutputs(karpenter_node_role_name=karpenter_node_role, storage_class=STORAGE_CLASS)
        TerraformOutput(self, "releases", value={key: addon.release.name for key, addon in self.releases.items()})

    def _monitoring(self) -> tuple:
        return (self.releases["monitoring"].release,) if "monitoring" in self.releases else ()

    def _release(self, key: str, name: str, namespace: str, values: Values, *, depends_on: tuple = (),
                 sensitive: tuple = (), create_namespace: bool = True, timeout: int = 600) -> HelmAddon:
        pinned = CHARTS[key]
        override = getattr(self.config.addons, key).chart_version
        chart = ChartRef(pinned.repository, pinned.chart, override or pinned.version)
        addon = HelmAddon(self, key.replace("_", "-"), props=HelmAddonProps(
            release_name=name, namespace=namespace, chart=chart, values=values, timeout_seconds=timeout,
            create_namespace=create_namespace, depends_on=depends_on, sensitive_values=sensitive,
        ))
        self.releases[key] = addon
        return addon

