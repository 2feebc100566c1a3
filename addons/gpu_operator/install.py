"""NVIDIA GPU Operator on the AL2023 NVIDIA AMI.

The AMI brings the driver and configures containerd for the NVIDIA runtime, so the operator
installs neither the driver nor the container toolkit (which would rewrite containerd's config).
It runs the device plugin, DCGM exporter (scraped through a ServiceMonitor) and GPU Feature
Discovery on GPU nodes, tolerating their taint. DRA mode follows GPU Operator 26.7: the GPUCluster
singleton replaces the ClusterPolicy, and no standalone DRA driver release is installed.
"""

from __future__ import annotations

from typing import Any

from cdktf import ITerraformDependable
from pydantic import Field

from addons.definition import PROMETHEUS_RULES, alert_tuning
from addons.gpu_operator import DEFINITION, GpuOperatorConfig
from addons.gpu_operator.dashboards import DASHBOARDS
from addons.gpu_operator.gpu_counts import INSTANCE_TYPE_LABEL
from addons.gpu_operator.health_check import health_check_objects
from addons.gpu_operator.rules import gpu_rules
from components.helm.addon import AddonContext, HelmAddonSpec, Monitors, RuntimePath, installed_providers
from components.helm.common import GPU_TOLERATIONS, Placement, Toggle, Toleration
from components.helm.release import Values
from components.node_monitoring import DCGM_REMOTE_HOSTENGINE_ENV, HOST_ENGINE, agent_engine_on_every_gpu_node
from profiles import PlatformConfig


class DeployCr(Values):
    deploy_cr: bool = Field(alias="deployCR")


class ServiceMonitor(Values):
    enabled: bool
    # Keep the exporter's pod, namespace and container labels (the pod a GPU is allocated to)
    # instead of renaming them exported_*: per-pod and per-tenant GPU rules read them.
    honor_labels: bool = True


class DcgmExporter(Values):
    enabled: bool = True
    service_monitor: ServiceMonitor
    # The exporter reaches the node monitoring agent's host engine at localhost:5555, so it must
    # share the node's network. The operator would switch it on by itself only for an env var in
    # its built-in template, and it reads that template before applying these env entries
    # (GPU Operator v26.7.0 controllers/object_controls.go 1828-1839 vs 1936-1938).
    host_network: bool = False
    env: list[dict[str, str]] = Field(default_factory=list)


class Daemonsets(Values):
    tolerations: list[Toleration]


class DraDriver(Values):
    # GPU Operator v26.7.0 renders draDriver.computeDomains.enabled into the GPUCluster's
    # spec.draDriver.computeDomains.enabled (deployments/gpu-operator/templates/gpucluster.yaml;
    # api/nvidia/v1alpha1/gpucluster_types.go, DRADriverComputeDomainsSpec): the ComputeDomain
    # controller and the compute-domain kubelet plugin of the DRA driver v0.5.0 it installs, which
    # Multi-Node NVLink (GB200) jobs need. The chart's default is true; the platform says so itself
    # so that a chart upgrade that changes the default cannot switch them off unseen.
    compute_domains: Toggle


class GpuOperatorValues(Values):
    driver: Toggle = Toggle(enabled=False)
    toolkit: Toggle = Toggle(enabled=False)
    # No standalone host engine of the operator's: the exporter uses the node monitoring agent's.
    dcgm: Toggle = Toggle(enabled=False)
    device_plugin: Toggle
    dcgm_exporter: DcgmExporter
    gfd: Toggle = Toggle(enabled=True)
    nfd: Toggle = Toggle(enabled=True)
    daemonsets: Daemonsets = Daemonsets(tolerations=GPU_TOLERATIONS)
    operator: Placement = Placement()
    cluster_policy: DeployCr | None = None
    gpu_cluster: DeployCr | None = None
    dra_driver: DraDriver | None = None


def gpu_operator_values(*, dra: bool, service_monitor: bool, shared_host_engine: bool) -> GpuOperatorValues:
    # shared_host_engine: the node monitoring agent's nv-hostengine runs on every GPU node, and the
    # exporter uses it instead of embedding a second one (components/node_monitoring.py); where it
    # does not (arm64 GPU nodes), the exporter embeds its own, GPU Operator's default.
    env = [{"name": DCGM_REMOTE_HOSTENGINE_ENV, "value": HOST_ENGINE}] if shared_host_engine else []
    return GpuOperatorValues(
        # In DRA mode GPUs are allocated through claims, not the extended-resource device plugin.
        device_plugin=Toggle(enabled=not dra),
        dcgm_exporter=DcgmExporter(
            service_monitor=ServiceMonitor(enabled=service_monitor), env=env, host_network=shared_host_engine
        ),
        cluster_policy=DeployCr(deploy_cr=False) if dra else None,
        gpu_cluster=DeployCr(deploy_cr=True) if dra else None,
        dra_driver=DraDriver(compute_domains=Toggle(enabled=True)) if dra else None,
    )


class GpuOperatorAddon(HelmAddonSpec[GpuOperatorConfig]):
    definition = DEFINITION
    release_name = "gpu-operator"
    timeout_seconds = 900
    pod_security = "privileged"
    privileged_because = "the device plugin, DCGM exporter and feature discovery run privileged to reach the GPUs"

    def monitors(self, settings: GpuOperatorConfig, config: PlatformConfig) -> Monitors:
        # The DCGM exporter's ServiceMonitor comes with the chart; the dashboards and the GPU rules
        # read it, with kube-state-metrics' view of the GPU nodes and pods. The rules count GPUs the
        # way the profile's pods get them (gpu_counts.py): in DRA mode from the claim templates
        # the platform creates (a tenant's gpu-<n>; 1: the single-GPU claims of add-ons' own GPU
        # pods, JupyterHub's notebook) and from each node's instance type label.
        rules = gpu_rules(
            dra=settings.dra,
            idle_minutes=alert_tuning(config).idle_gpu_minutes,
            claim_counts=(1, *config.workloads.dra_gpu_counts) if settings.dra else (),
        )
        return Monitors(
            dashboards=DASHBOARDS,
            rule_groups=(rules,),
            node_labels=(INSTANCE_TYPE_LABEL,) if settings.dra else (),
        )

    def runtime_paths(self, settings: GpuOperatorConfig) -> tuple[RuntimePath, ...]:
        # The operator and its operands talk to the API server only (NFD workers publish
        # NodeFeature objects through it); the DCGM exporter runs on the host network where it
        # uses the agent's host engine (x86_64 GPU nodes), outside the namespace's policies, and
        # Prometheus reaches it on the node; elsewhere (arm64) it runs in the namespace, whose
        # allow-metrics-scrape policy admits Prometheus.
        return (
            RuntimePath(
                what="tenants' pods cannot reach the operator's pods",
                direction="Ingress",
                peer="tenants",
                port=8080,
                open=False,
            ),
        )

    def values(self, ctx: AddonContext, settings: GpuOperatorConfig) -> GpuOperatorValues:
        return gpu_operator_values(
            dra=settings.dra,
            service_monitor=PROMETHEUS_RULES in ctx.provided,
            shared_host_engine=agent_engine_on_every_gpu_node(
                [group.catalog_entry.architecture for group in ctx.config.cluster.gpu_node_groups]
            ),
        )

    def namespace_objects(self, ctx: AddonContext, settings: GpuOperatorConfig) -> list[dict[str, Any]]:
        if settings.health_check_minutes is None:
            return []
        return health_check_objects(self.release_namespace(settings), ctx.config, settings.health_check_minutes)

    def depends_on(self, ctx: AddonContext) -> tuple[ITerraformDependable, ...]:
        # The DCGM ServiceMonitor needs the Prometheus operator's CRDs.
        return installed_providers(ctx, PROMETHEUS_RULES)


ADDON = GpuOperatorAddon()
