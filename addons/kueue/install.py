"""Kueue's controller from its published chart, on the system nodes, with the platform's
configuration: which job kinds it manages, where a job without a queue name is queued, and the
all-or-nothing admission of multi-node jobs.

The API server calls Kueue's admission webhooks (failurePolicy Fail: no Job, and with the pod
integration no pod, can be created in a tenant namespace while they are unreachable) and its
visibility API, so the namespace admits both from the VPC, where the control plane's network
interfaces are.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from addons.kueue import DEFINITION, KueueConfig
from addons.kueue.dashboards import DASHBOARDS
from addons.kueue.queues import TENANT_NAMESPACES
from components.helm.addon import AddonContext, HelmAddonSpec, Monitors, RuntimePath
from components.helm.release import Values, render_yaml
from components.k8s.compute_domains import CHANNEL_DEVICE_CLASS
from components.k8s.namespaces import ingress_from_control_plane
from components.labels import SYSTEM_NODES
from profiles import PlatformConfig
from profiles.catalog import GPU_RESOURCE
from profiles.gpus import GPU_DEVICE_CLASS, dra_mode

WEBHOOK_PORT = 9443
VISIBILITY_PORT = 8082
METRICS_PORT = 8443
# The job kinds the platform offers tenants (Kueue sets an integration up once its CRD exists),
# and the pod-based ones, so that a GPU pod of a tenant namespace is queued whatever made it: a bare
# Pod, a Deployment's or a StatefulSet's pods, or a job kind's. Kueue's pod webhook gates a pod
# (scheduling gate kueue.x-k8s.io/admission) unless an owner up its chain is a job Kueue already
# queues (pkg/controller/jobs/pod/pod_webhook.go 145-149, jobframework/reconciler.go 884-945), so
# an MPIJob's, a RayJob's or a TrainJob's pods are counted once, through their job. Argo workflow
# steps and notebooks run in their own namespaces, which the selector leaves out: their
# namespaces' ResourceQuotas bound them.
# RayService is listed so that the RayClusters a RayService owns are left to it (Kueue does not
# default the queue of an object whose owner is an integration's kind).
FRAMEWORKS = (
    "batch/job",
    "kubeflow.org/mpijob",
    "ray.io/rayjob",
    "ray.io/raycluster",
    "ray.io/rayservice",
    "trainer.kubeflow.org/trainjob",
    "pod",
    "deployment",
    "statefulset",
)


# DRA mode: Kueue counts the devices a pod set's ResourceClaimTemplates request of the GPU
# DeviceClass under this name (KueueDRAIntegration, Beta and on by default from 0.18, kueue v0.19.2
# pkg/features/kube_features.go 745-747; the mapping, apis/config/v1beta2/configuration_types.go
# 601-604, 636-663). The queues then hold and report GPUs under the same name in both modes: the
# ClusterQueues, the queue dashboard and the capacity-window alerts need no second form.
DRA_GPU_MAPPING = {"name": GPU_RESOURCE, "deviceClassNames": [GPU_DEVICE_CLASS]}
# Every claimed DeviceClass must be mapped, or the Workload is inadmissible ("DeviceClass ... is not
# mapped in DRA configuration", v0.19.2 pkg/dra/claims.go 212-219): the IMEX channel a multi-node
# NVLink job's pods claim from their ComputeDomain (components/k8s/compute_domains.py) too. No
# ClusterQueue declares its name, and with quotaCheckStrategy IgnoreUndeclared (QuotaCheckStrategy,
# Beta and on by default from 0.19, pkg/features/kube_features.go 871-874) an undeclared resource is
# skipped, not refused (pkg/scheduler/flavorassigner/flavorassigner.go 278, 803-809): the channel is
# mapped, and counted against nothing.
IMEX_CHANNEL_RESOURCE = "nvidia.com/imex-channel"
DRA_CHANNEL_MAPPING = {"name": IMEX_CHANNEL_RESOURCE, "deviceClassNames": [CHANNEL_DEVICE_CLASS]}


def manager_configuration(settings: KueueConfig, *, dra: bool = False) -> dict[str, Any]:
    """Kueue's Configuration (config.kueue.x-k8s.io/v1beta2), replacing the chart's default;
    `dra`: GPUs are DRA claims of the GPU DeviceClass (GPU Operator DRA mode, which also runs the DRA
    driver's ComputeDomains, whose channels multi-node NVLink jobs claim)."""
    resources: dict[str, Any] = {"quotaCheckStrategy": "IgnoreUndeclared"}
    if dra:
        resources["deviceClassMappings"] = [DRA_GPU_MAPPING, DRA_CHANNEL_MAPPING]
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        # The chart's own settings for probes, metrics, webhook and leader election.
        "health": {"healthProbeBindAddress": ":8081"},
        # Usage and quota per queue and resource, which the queue dashboard reads.
        "metrics": {"bindAddress": f":{METRICS_PORT}", "enableClusterQueueResources": True},
        "webhook": {"port": WEBHOOK_PORT},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        # Jobs and pods without a queue name are not suspended by the flag; in tenant namespaces
        # the LocalQueue named `default` takes them (Kueue's LocalQueue defaulting; for pods
        # pod_webhook.go 151-158), elsewhere (platform namespaces, validation) they run unmanaged.
        # True would add nothing in tenant namespaces, and a pod created while Kueue does not yet
        # know the LocalQueue would then stay gated with no queue; the tenant's ResourceQuota (its
        # shares plus what it may borrow) bounds what such a pod can take.
        "manageJobsWithoutQueueName": False,
        "managedJobsNamespaceSelector": TENANT_NAMESPACES,
        "waitForPodsReady": {
            # All or nothing: an admitted job whose pods are not all running in time gives its
            # quota back and is queued again. No blockAdmission: it is cluster-wide, so one job
            # that cannot start would hold every tenant's admissions for the whole timeout; the
            # quotas count only GPUs that run, so admitted jobs fit unless nodes fail.
            "timeout": f"{settings.pods_ready_timeout_minutes}m",
            "blockAdmission": False,
            "requeuingStrategy": {
                "timestamp": "Eviction",
                "backoffLimitCount": settings.requeue_limit,
                "backoffBaseSeconds": 60,
                "backoffMaxSeconds": 1800,
            },
        },
        # Count only what the ClusterQueues declare (GPUs, EFA interfaces).
        "resources": resources,
        "integrations": {"frameworks": list(FRAMEWORKS)},
    }


# The chart's selector labels of the controller's pods (its kueue.selectorLabels, release "kueue").
CONTROLLER_PODS = {"app.kubernetes.io/name": "kueue", "control-plane": "controller-manager"}


class Manager(Values):
    node_selector: dict[str, str]
    # Two replicas on different nodes, one always kept: its webhooks fail closed, so while no
    # replica answers no Job or pod can be created in a tenant namespace.
    replicas: int = 2
    pod_disruption_budget: dict[str, Any] = Field(default_factory=lambda: {"enabled": True, "minAvailable": 1})
    topology_spread_constraints: list[dict[str, Any]] = Field(
        default_factory=lambda: [
            {
                "maxSkew": 1,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {
                    "matchLabels": {"app.kubernetes.io/name": "kueue", "control-plane": "controller-manager"}
                },
            }
        ]
    )


class ManagerConfig(Values):
    controller_manager_config_yaml: str


class KueueValues(Values):
    controller_manager: Manager
    manager_config: ManagerConfig


class KueueAddon(HelmAddonSpec[KueueConfig]):
    definition = DEFINITION
    release_name = "kueue"

    def values(self, ctx: AddonContext, settings: KueueConfig) -> KueueValues:
        return KueueValues(
            controller_manager=Manager(node_selector=dict(SYSTEM_NODES)),
            manager_config=ManagerConfig(
                controller_manager_config_yaml=render_yaml(manager_configuration(settings, dra=dra_mode(ctx.config)))
            ),
        )

    def network_allows(self, ctx: AddonContext, settings: KueueConfig) -> dict[str, dict[str, Any]]:
        return {
            "allow-admission-webhooks": ingress_from_control_plane(ctx.vpc_cidr, WEBHOOK_PORT),
            "allow-visibility-api": ingress_from_control_plane(ctx.vpc_cidr, VISIBILITY_PORT),
        }

    def runtime_paths(self, settings: KueueConfig) -> tuple[RuntimePath, ...]:
        return (
            RuntimePath(
                what="the API server calls Kueue's admission webhooks (chart webhook/manifests.yaml; they fail closed)",
                direction="Ingress",
                peer="control-plane",
                port=WEBHOOK_PORT,
            ),
            RuntimePath(
                what="the API server calls Kueue's visibility APIService (chart visibility/service.yaml, 8082)",
                direction="Ingress",
                peer="control-plane",
                port=VISIBILITY_PORT,
            ),
            RuntimePath(
                what="nothing else is admitted from the VPC", direction="Ingress", peer="vpc", port=8080, open=False
            ),
        )

    def monitors(self, settings: KueueConfig, config: PlatformConfig) -> Monitors:
        # The metrics endpoint is HTTPS behind Kubernetes authorization: Prometheus sends its
        # service account's token (its role may GET /metrics); the certificate is self-signed.
        return Monitors(
            dashboards=DASHBOARDS,
            service_monitors=(
                {
                    "name": "kueue",
                    "namespaceSelector": {"matchNames": [self.namespace]},
                    "selector": {
                        "matchLabels": {
                            "app.kubernetes.io/name": "kueue",
                            "app.kubernetes.io/component": "metrics-service",
                        }
                    },
                    "endpoints": [
                        {
                            "port": "https",
                            "scheme": "https",
                            "path": "/metrics",
                            "interval": "30s",
                            "bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
                            "tlsConfig": {"insecureSkipVerify": True},
                        }
                    ],
                },
            ),
        )


ADDON = KueueAddon()
