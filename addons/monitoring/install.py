"""kube-prometheus-stack: Prometheus selecting monitors and rules cluster-wide, Grafana with an
admin password that never appears in the JSON, and GPU recording and alerting rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cdktf import ITerraformDependable, TerraformVariable, TerraformVariableValidationConfig
from pydantic import Field

from addons import gpu_operator
from addons.gpu_operator.gpu_health import QUARANTINE_KEY, REASON_ANNOTATION
from addons.monitoring import (
    ALERTMANAGER_POD,
    DEFINITION,
    EFA_SIDECAR_IMAGE,
    RELEASE_NAME,
    AlertReceiver,
    MonitoringConfig,
)
from addons.monitoring.dashboards import DASHBOARDS
from components.dashboards import DASHBOARD_LABEL
from components.expressions import expression, template_text
from components.helm.addon import AddonContext, HelmAddonSpec, Monitors, RuntimePath
from components.helm.common import Placement, Toggle
from components.helm.release import SensitiveValue, Values
from components.k8s.namespaces import egress_https_outside_the_node, ingress_from_control_plane
from components.k8s.security import NOBODY, non_root_container
from components.labels import SYSTEM_NODES
from components.node_monitoring import CRITICAL_XIDS

DEFAULT_IDLE_GPU_MINUTES = 30
# The Prometheus operator's admission webhook (PrometheusRule checks) listens here.
OPERATOR_WEBHOOK_PORT = 10250
GPU_OPERATOR_NAMESPACE = gpu_operator.DEFINITION.namespace


# DCGM exporter labels its host Hostname up to 4.5.3-4.8.2 and hostname after (dcgm-exporter #655):
# annotations print both, one of which is always empty (tests/fixtures/metrics/contract.json).
# DCGM exporter semantics: DCGM_FI_DEV_XID_ERRORS is the last XID code seen (a gauge), not a
# count, so alerts look at its current value; increase() over it would be meaningless.
# FB_USED / FB_FREE are MiB gauges; their ratio is 0..1. These rules assume one cluster per Prometheus.
# What a GPU alert's summary opens with: the GPU and its node, under either exporter's host label.
ON_GPU = "GPU {{ $labels.gpu }} on {{ $labels.Hostname }}{{ $labels.hostname }} "
# The series whose last XID is one the node monitoring agent treats as fatal.
CRITICAL_XID = " or ".join(f"DCGM_FI_DEV_XID_ERRORS == {code}" for code in CRITICAL_XIDS)


def gpu_rules(idle_minutes: int = DEFAULT_IDLE_GPU_MINUTES) -> dict[str, Any]:
    """The platform's GPU rules; `idle_minutes` is how long an allocated GPU may sit idle."""
    return {
        "groups": [
            {
                "name": "gpu-platform",
                "rules": [
                    {
                        "record": "gpu:framebuffer_used:ratio",
                        "expr": "DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)",
                    },
                    {
                        # The XIDs the EKS node monitoring agent treats as fatal (its node condition makes
                        # EKS repair the node): the same list, so the page and the repair agree.
                        "alert": "GpuCriticalXid",
                        "expr": CRITICAL_XID,
                        "for": "0m",
                        "labels": {"severity": "critical"},
                        "annotations": {
                            "summary": ON_GPU + "reported fatal XID {{ $value }}",
                            "description": "The node monitoring agent marks the node unhealthy for this XID and EKS "
                            "repairs it (reboot or replace) after its wait: move or checkpoint jobs on it now.",
                        },
                    },
                    {
                        "alert": "GpuXidCodeReported",
                        "expr": f"DCGM_FI_DEV_XID_ERRORS != 0 unless ({CRITICAL_XID})",
                        "for": "1m",
                        "labels": {"severity": "warning"},
                        "annotations": {
                            "summary": ON_GPU + "last reported XID {{ $value }}",
                            "description": "The value is the most recent XID code, not a count. "
                            "Look the code up before draining: not every XID means failed hardware.",
                        },
                    },
                    {
                        # A GPU the device plugin reports unhealthy leaves the node's allocatable while
                        # its capacity stays: the node runs, but a job sized for the whole node no
                        # longer fits and the GPU is likely failing.
                        "alert": "GpuAllocatableDropped",
                        "expr": 'kube_node_status_capacity{resource="nvidia_com_gpu"} '
                        '- kube_node_status_allocatable{resource="nvidia_com_gpu"} > 0',
                        "for": "5m",
                        "labels": {"severity": "critical"},
                        "annotations": {
                            "summary": "Node {{ $labels.node }} offers {{ $value }} GPU(s) fewer than it has",
                            "description": "The device plugin marked GPUs unhealthy. Drain the node and let EKS "
                            "repair it, or check nvidia-smi and the node monitoring agent's conditions.",
                        },
                    },
                    {
                        # The GPU health check (addons/gpu_operator/health_check.py) quarantined the node:
                        # nothing new lands on it until three complete checks in a row pass; a person should look.
                        "alert": "GpuNodeQuarantined",
                        "expr": f'max by (node) (kube_node_spec_taint{{key="{QUARANTINE_KEY}"}}) > 0',
                        "for": "1m",
                        "labels": {"severity": "critical"},
                        "annotations": {
                            "summary": "GPU node {{ $labels.node }} failed its health check and is quarantined",
                            "description": "The node takes no new pods. Its reasons are in the node's "
                            f"{REASON_ANNOTATION} annotation (kubectl describe node); the taint goes after three "
                            "complete, passing checks in a row, or replace the node.",
                        },
                    },
                    {
                        # Hopper, Ada and Ampere retire bad memory rows instead of pages: a failed
                        # remap means the GPU can no longer repair its memory (replace the node).
                        "alert": "GpuRowRemapFailed",
                        "expr": "DCGM_FI_DEV_ROW_REMAP_FAILURE > 0",
                        "for": "0m",
                        "labels": {"severity": "critical"},
                        "annotations": {
                            "summary": ON_GPU + "failed to remap a memory row",
                            "description": "Its memory can no longer be repaired: drain the node and replace it.",
                        },
                    },
                    {
                        # The exporter labels a GPU's series with the pod it is allocated to, and an
                        # uncorrectable error usually ends that pod: the new count then appears on a
                        # new series. One series per GPU (its UUID), whoever holds it, lets the
                        # alert compare before and after.
                        "record": "gpu:uncorrectable_remapped_rows:max",
                        "expr": "max by (UUID, gpu, Hostname, hostname) (DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS)",
                    },
                    {
                        # A row remapped for an uncorrectable error: the job that touched it saw the
                        # error, and the remap takes effect only after the GPU is reset. Fires for an
                        # hour after the count rises (the exporter declares the field a counter).
                        "alert": "GpuUncorrectableMemoryError",
                        "expr": "increase(gpu:uncorrectable_remapped_rows:max[1h]) > 0",
                        "for": "0m",
                        "labels": {"severity": "critical"},
                        "annotations": {
                            "summary": ON_GPU + "remapped a row after an uncorrectable memory error",
                            "description": "Jobs on this GPU may have failed or computed wrong results; drain the "
                            "node and reboot it so the remap takes effect.",
                        },
                    },
                    {
                        "record": "namespace:gpu_requesting_pods_pending:count",
                        "expr": "count by (namespace) ("
                        'max by (namespace, pod) (kube_pod_status_phase{phase="Pending"} == 1) '
                        "and on (namespace, pod) "
                        "max by (namespace, pod) "
                        '(kube_pod_container_resource_requests{resource="nvidia_com_gpu"} > 0))',
                    },
                    {
                        # The exporter labels a GPU with the pod it is allocated to (the GPU Operator's
                        # ServiceMonitor keeps those labels: honorLabels); an unallocated GPU carries
                        # the exporter's own pod and namespace instead.
                        "alert": "GpuAllocatedIdle",
                        "expr": f'DCGM_FI_DEV_GPU_UTIL{{namespace!="{GPU_OPERATOR_NAMESPACE}", pod!=""}} == 0',
                        "for": f"{idle_minutes}m",
                        "labels": {"severity": "warning"},
                        "annotations": {
                            "summary": "GPU {{ $labels.gpu }} of pod {{ $labels.namespace }}/{{ $labels.pod }} "
                            f"has been idle for {idle_minutes} minutes",
                            "description": "The GPU is allocated but does no work: free it for queued jobs "
                            "(end the pod, or cull the notebook).",
                        },
                    },
                ],
            }
        ],
    }


# The rules with their defaults (what the tests judge with promtool).
GPU_RULES = gpu_rules()


class PrometheusValues(Values):
    prometheus_spec: dict[str, Any]
    additional_service_monitors: list[dict[str, Any]] = Field(default_factory=list)
    additional_pod_monitors: list[dict[str, Any]] = Field(default_factory=list)


class GrafanaAdmin(Values):
    existing_secret: str
    user_key: str = "admin-user"
    password_key: str = "admin-password"


class DashboardSidecar(Values):
    """Grafana's sidecar that loads dashboards from labelled ConfigMaps, set here rather than left to
    the chart's defaults: the label the platform's ConfigMaps carry, and only Grafana's namespace
    (kube-prometheus-stack's default, ALL, would let a ConfigMap in any namespace replace one)."""

    enabled: bool = True
    label: str = DASHBOARD_LABEL[0]
    label_value: str = DASHBOARD_LABEL[1]
    search_namespace: str


class GrafanaSidecar(Values):
    dashboards: DashboardSidecar


class GrafanaValues(Values):
    admin: GrafanaAdmin | None = None
    node_selector: dict[str, str] = Field(default_factory=lambda: dict(SYSTEM_NODES))
    sidecar: GrafanaSidecar


def dashboard_config_maps(namespace: str, dashboards: tuple[dict[str, Any], ...]) -> list[dict[str, Any]]:
    """One ConfigMap per dashboard, in Grafana's namespace, labelled for its sidecar."""
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": f"dashboard-{model['uid']}",
                "namespace": namespace,
                "labels": {DASHBOARD_LABEL[0]: DASHBOARD_LABEL[1]},
            },
            # Grafana's ${datasource} is text, not a Terraform interpolation.
            "data": {f"{model['uid']}.json": template_text(json.dumps(model, sort_keys=True))},
        }
        for model in dashboards
    ]


# Alertmanager mounts each Secret of alertmanagerSpec.secrets here (the Prometheus operator's
# convention), so its configuration names the credential's file, never the credential.
ALERTMANAGER_SECRETS = "/etc/alertmanager/secrets"
CRITICAL_RECEIVER = "platform-critical"
# The Secret key each receiver type reads.
RECEIVER_KEYS = {"slack": "url", "pagerduty": "routing_key"}


def alertmanager_config(receiver: AlertReceiver) -> dict[str, Any]:
    """Alerts of severity critical (and, if the profile says so, warning) go to the profile's
    receiver; the rest (the chart's Watchdog, info) to nothing. Grouped per alert and GPU node,
    re-sent every 4 hours while they fire."""
    credential = f"{ALERTMANAGER_SECRETS}/{receiver.secret_name}/{RECEIVER_KEYS[receiver.type]}"
    severities = "critical|warning" if receiver.warnings else "critical"
    configs = (
        {"slack_configs": [{"api_url_file": credential, "send_resolved": True}]}
        if receiver.type == "slack"
        else {"pagerduty_configs": [{"routing_key_file": credential, "send_resolved": True}]}
    )
    return {
        "route": {
            "receiver": "null",
            # One group per node: the DCGM exporter's host label (Hostname, hostname from 4.6).
            "group_by": ["alertname", "namespace", "Hostname", "hostname"],
            "repeat_interval": "4h",
            "routes": [{"matchers": [f'severity=~"{severities}"'], "receiver": CRITICAL_RECEIVER}],
        },
        "receivers": [{"name": "null"}, {"name": CRITICAL_RECEIVER, **configs}],
    }


class AlertmanagerValues(Values):
    alertmanager_spec: dict[str, Any]
    config: dict[str, Any] | None = None


# EFA port counters through node-exporter's textfile collector: a sidecar in node-exporter's own
# image writes them for the collector to read (efa-counters.sh says why node-exporter alone does not).
EFA_COUNTERS_SCRIPT = (Path(__file__).parent / "efa-counters.sh").read_text()
EFA_TEXTFILE_DIR = "/run/efa"
EFA_SYSFS = "/host/sys"
# kube-prometheus-stack's own node-exporter arguments (values.yaml at 88.5.3): setting extraArgs
# replaces its list, so they are repeated here beside the textfile directory.
NODE_EXPORTER_CHART_ARGS = (
    "--collector.filesystem.mount-points-exclude=^/(dev|proc|sys|run/containerd/.+|var/lib/docker/.+|var/lib/kubelet/.+)($|/)",
    "--collector.filesystem.fs-types-exclude=^(autofs|binfmt_misc|bpf|cgroup2?|configfs|debugfs|devpts|devtmpfs|fusectl"
    "|hugetlbfs|iso9660|mqueue|nsfs|overlay|proc|procfs|pstore|rpc_pipefs|securityfs|selinuxfs|squashfs|sysfs|tracefs"
    "|erofs)$",
)


class NodeExporterValues(Values):
    """kube-prometheus-stack's prometheus-node-exporter (chart 4.56.1): the collector's extra
    arguments and its sidecars, with the volumes the chart mounts for them."""

    extra_args: list[str] = Field(
        default_factory=lambda: [*NODE_EXPORTER_CHART_ARGS, f"--collector.textfile.directory={EFA_TEXTFILE_DIR}"]
    )
    sidecars: list[dict[str, Any]] = Field(
        default_factory=lambda: [
            {
                "name": "efa-counters",
                "image": EFA_SIDECAR_IMAGE,
                "command": ["/bin/sh", "-c", EFA_COUNTERS_SCRIPT, "efa-counters"],
                "args": [EFA_SYSFS, f"{EFA_TEXTFILE_DIR}/efa.prom", "15"],
                "resources": {"requests": {"cpu": "5m", "memory": "16Mi"}, "limits": {"memory": "32Mi"}},
                # It reads world-readable sysfs files and writes only its emptyDir: nothing more.
                "securityContext": non_root_container(NOBODY),
            }
        ]
    )
    # The chart gives the sidecars this memory-backed emptyDir writable and node-exporter read-only.
    sidecar_volume_mount: list[dict[str, Any]] = Field(
        default_factory=lambda: [{"name": "efa-textfile", "mountPath": EFA_TEXTFILE_DIR, "readOnly": False}]
    )
    # The whole of /sys: /sys/class/infiniband's entries are links into /sys/devices.
    sidecar_host_volume_mounts: list[dict[str, Any]] = Field(
        default_factory=lambda: [{"name": "efa-sysfs", "hostPath": "/sys", "mountPath": EFA_SYSFS, "readOnly": True}]
    )


class MonitoringValues(Values):
    prometheus: PrometheusValues
    grafana: GrafanaValues
    alertmanager: AlertmanagerValues | None = None
    prometheus_operator: Placement = Placement()
    additional_prometheus_rules_map: dict[str, Any]
    prometheus_node_exporter: NodeExporterValues = Field(
        default_factory=NodeExporterValues, alias="prometheus-node-exporter"
    )
    # EKS runs the control plane out of the cluster's reach (no controller-manager, scheduler or
    # etcd endpoints to scrape) and kube-proxy serves its metrics on 127.0.0.1 only: their targets
    # would be down forever, and their Down alerts would fire forever.
    kube_controller_manager: Toggle = Toggle(enabled=False)
    kube_scheduler: Toggle = Toggle(enabled=False)
    kube_etcd: Toggle = Toggle(enabled=False)
    kube_proxy: Toggle = Toggle(enabled=False)


def monitoring_values(
    *,
    retention_days: int,
    storage_gib: int,
    storage_class: str,
    grafana_secret: str | None,
    monitors: tuple[dict[str, Any], ...] = (),
    pod_monitors: tuple[dict[str, Any], ...] = (),
    receiver: AlertReceiver | None = None,
    idle_gpu_minutes: int = DEFAULT_IDLE_GPU_MINUTES,
) -> MonitoringValues:
    return MonitoringValues(
        prometheus=PrometheusValues(
            prometheus_spec={
                # Select every ServiceMonitor, PodMonitor and PrometheusRule in the cluster, not only
                # those labelled for this release (DCGM, Ray and Karpenter monitors come from other charts).
                "serviceMonitorSelectorNilUsesHelmValues": False,
                "podMonitorSelectorNilUsesHelmValues": False,
                "ruleSelectorNilUsesHelmValues": False,
                "retention": f"{retention_days}d",
                "nodeSelector": dict(SYSTEM_NODES),
                "storageSpec": {
                    "volumeClaimTemplate": {
                        "spec": {
                            "storageClassName": storage_class,
                            "accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": f"{storage_gib}Gi"}},
                        }
                    }
                },
            },
            additional_service_monitors=list(monitors),
            additional_pod_monitors=list(pod_monitors),
        ),
        grafana=GrafanaValues(
            admin=GrafanaAdmin(existing_secret=grafana_secret) if grafana_secret else None,
            sidecar=GrafanaSidecar(dashboards=DashboardSidecar(search_namespace=DEFINITION.namespace)),
        ),
        additional_prometheus_rules_map={"gpu-platform": gpu_rules(idle_gpu_minutes)},
        alertmanager=AlertmanagerValues(
            alertmanager_spec={"secrets": [receiver.secret_name], "nodeSelector": dict(SYSTEM_NODES)},
            config=alertmanager_config(receiver),
        )
        if receiver
        else None,
    )


class MonitoringAddon(HelmAddonSpec[MonitoringConfig]):
    """Installed first: its CRDs (ServiceMonitor, PrometheusRule) are what later charts template."""

    definition = DEFINITION
    release_name = RELEASE_NAME
    timeout_seconds = 900
    pod_security = "privileged"

    def monitors(self, settings: MonitoringConfig) -> Monitors:
        return Monitors(dashboards=DASHBOARDS)

    def user_secrets(self, settings: MonitoringConfig) -> tuple[str, ...]:
        existing = settings.grafana_admin_password_from == "existing_secret"
        receiver = settings.alert_receiver
        return (
            *((settings.grafana_admin_secret_name,) if existing else ()),
            *((receiver.secret_name,) if receiver else ()),
        )

    privileged_because = "node-exporter reads the host's /proc and /sys with hostNetwork and hostPID"

    def runtime_paths(self, settings: MonitoringConfig) -> tuple[RuntimePath, ...]:
        paths = [
            RuntimePath(
                what="Prometheus scrapes pods in every namespace (tenants' Ray and training pods)",
                direction="Egress",
                peer="tenants",
                port=8080,
            ),
            RuntimePath(
                what="Prometheus scrapes the nodes (kubelet 10250, node-exporter 9100, the DCGM exporter)",
                direction="Egress",
                peer="vpc",
                port=9100,
            ),
            RuntimePath(
                what="the API server calls the Prometheus operator's admission webhook",
                direction="Ingress",
                peer="control-plane",
                port=OPERATOR_WEBHOOK_PORT,
            ),
            RuntimePath(
                what="nothing in monitoring calls the internet unless a receiver is set",
                direction="Egress",
                peer="internet",
                port=443,
                pod_labels={"app.kubernetes.io/name": "prometheus"},
                open=False,
            ),
        ]
        if settings.alert_receiver:
            paths.append(
                RuntimePath(
                    what="Alertmanager reaches Slack's or PagerDuty's HTTPS API",
                    direction="Egress",
                    peer="internet",
                    port=443,
                    pod_labels=ALERTMANAGER_POD,
                )
            )
        return tuple(paths)

    def network_allows(self, ctx: AddonContext, settings: MonitoringConfig) -> dict[str, dict[str, Any]]:
        receiver = (
            # Alertmanager reaches Slack's or PagerDuty's HTTPS API.
            {
                "allow-alert-receiver": {
                    "podSelector": {"matchLabels": ALERTMANAGER_POD},
                    **egress_https_outside_the_node(),
                }
            }
            if settings.alert_receiver
            else {}
        )
        return {
            **receiver,
            # Prometheus scrapes pods in every namespace and the nodes (kubelet, node-exporter).
            "allow-scrape-targets": {
                "policyTypes": ["Egress"],
                "egress": [{"to": [{"namespaceSelector": {}}]}, {"to": [{"ipBlock": {"cidr": ctx.vpc_cidr}}]}],
            },
            # The API server calls the Prometheus operator's admission webhook (PrometheusRule checks).
            "allow-admission-webhook": ingress_from_control_plane(ctx.vpc_cidr, OPERATOR_WEBHOOK_PORT),
        }

    def values(self, ctx: AddonContext, settings: MonitoringConfig) -> MonitoringValues:
        from_variable = settings.grafana_admin_password_from == "variable"
        return monitoring_values(
            retention_days=settings.prometheus_retention_days,
            storage_gib=settings.prometheus_storage_gib,
            storage_class=ctx.storage_class,
            grafana_secret=None if from_variable else settings.grafana_admin_secret_name,
            monitors=ctx.monitors.service_monitors,
            pod_monitors=ctx.monitors.pod_monitors,
            receiver=settings.alert_receiver,
            idle_gpu_minutes=settings.idle_gpu_alert_minutes,
        )

    def depends_on(self, ctx: AddonContext) -> tuple[ITerraformDependable, ...]:
        return (ctx.storage_class_ready,)

    def namespace_objects(self, ctx: AddonContext, settings: MonitoringConfig) -> list[dict[str, Any]]:
        # The dashboards the enabled add-ons declare: in place before Grafana starts.
        return dashboard_config_maps(self.release_namespace(settings), ctx.monitors.dashboards)

    def state_secrets(self, settings: MonitoringConfig) -> tuple[str, ...]:
        # Helm's set_sensitive keeps the value in the release's state.
        return ("the Grafana admin password",) if settings.grafana_admin_password_from == "variable" else ()

    def sensitive_values(self, ctx: AddonContext, settings: MonitoringConfig) -> tuple[SensitiveValue, ...]:
        if settings.grafana_admin_password_from != "variable":
            return ()
        password = TerraformVariable(
            ctx.scope,
            "grafana_admin_password",
            type="string",
            sensitive=True,
            nullable=False,
            description="Grafana admin password (set TF_VAR_grafana_admin_password); stored only in a Secret.",
            validation=[
                TerraformVariableValidationConfig(
                    condition=expression("length(var.grafana_admin_password) >= 12"),
                    error_message="grafana_admin_password must be at least 12 characters.",
                )
            ],
        )
        return (SensitiveValue(path="grafana.adminPassword", value=password.string_value),)


ADDON = MonitoringAddon()
