"""kube-prometheus-stack: Prometheus selecting monitors and rules cluster-wide, Grafana with an
admin password that never appears in the JSON, the rule groups the enabled add-ons declare (the GPU
Operator's GPU rules among them) and alert delivery (alerting.py, notifications.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cdktf import ITerraformDependable, TerraformVariable, TerraformVariableValidationConfig
from pydantic import Field

from addons.monitoring import (
    ALERTMANAGER_POD,
    ALERTMANAGER_SERVICE_ACCOUNT,
    DEFINITION,
    EFA_SIDECAR_IMAGE,
    RELEASE_NAME,
    AlertReceiver,
    MonitoringConfig,
)
from addons.monitoring.alerting import alertmanager_config
from addons.monitoring.dashboards import DASHBOARDS
from addons.monitoring.delivery import AlertDelivery
from addons.monitoring.notifications import AlertTopics, AlertTopicsProps
from components.dashboards import DASHBOARD_LABEL, dashboard_config_maps
from components.expressions import expression
from components.helm.addon import AddonContext, Companions, HelmAddonSpec, Monitors, RuntimePath
from components.helm.common import Placement, Toggle
from components.helm.release import SensitiveValue, Values
from components.k8s.namespaces import (
    egress_https_outside_the_node,
    egress_to_pod_identity_agent,
    ingress_from_control_plane,
)
from components.k8s.security import NOBODY, non_root_container
from components.labels import SYSTEM_NODES
from profiles import PlatformConfig

# The Prometheus operator's admission webhook (PrometheusRule checks) listens here.
OPERATOR_WEBHOOK_PORT = 10250
# The PrometheusRule (the chart's additionalPrometheusRulesMap key) of the rules the add-ons declare.
ADDON_RULES = "platform-addons"


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


class AlertmanagerValues(Values):
    alertmanager_spec: dict[str, Any]
    config: dict[str, Any]
    service_account: dict[str, Any] = Field(default_factory=lambda: {"name": ALERTMANAGER_SERVICE_ACCOUNT})


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


class KubeStateMetricsValues(Values):
    """kube-prometheus-stack's kube-state-metrics (chart 8.4.0, app v2.20.0): the Kubernetes labels
    it copies onto its *_labels series (values.yaml metricLabelsAllowlist, rendered as
    --metric-labels-allowlist; none by default)."""

    metric_labels_allowlist: list[str]


class MonitoringValues(Values):
    prometheus: PrometheusValues
    grafana: GrafanaValues
    alertmanager: AlertmanagerValues | None = None
    prometheus_operator: Placement = Placement()
    additional_prometheus_rules_map: dict[str, Any]
    prometheus_node_exporter: NodeExporterValues = Field(
        default_factory=NodeExporterValues, alias="prometheus-node-exporter"
    )
    kube_state_metrics: KubeStateMetricsValues | None = Field(None, alias="kube-state-metrics")
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
    rule_groups: tuple[dict[str, Any], ...] = (),
    node_labels: tuple[str, ...] = (),
    delivery: AlertDelivery,
    region: str,
    receiver: AlertReceiver | None = None,
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
        # The rules the add-ons declare about their workloads and what they install (Monitors.rule_groups).
        additional_prometheus_rules_map={ADDON_RULES: {"groups": list(rule_groups)}} if rule_groups else {},
        # The node labels the add-ons' rules read (Monitors.node_labels), and no others.
        kube_state_metrics=KubeStateMetricsValues(metric_labels_allowlist=[f"nodes=[{','.join(node_labels)}]"])
        if node_labels
        else None,
        alertmanager=AlertmanagerValues(
            alertmanager_spec={
                **({"secrets": [receiver.secret_name]} if receiver else {}),
                "nodeSelector": dict(SYSTEM_NODES),
            },
            config=alertmanager_config(
                receiver,
                topic_arn=delivery.topic_arn,
                heartbeat_topic_arn=delivery.heartbeat_topic_arn,
                region=region,
            ),
        ),
    )


class MonitoringAddon(HelmAddonSpec[MonitoringConfig]):
    """Installed first: its CRDs (ServiceMonitor, PrometheusRule) are what later charts template."""

    definition = DEFINITION
    release_name = RELEASE_NAME
    timeout_seconds = 900
    pod_security = "privileged"

    def monitors(self, settings: MonitoringConfig, config: PlatformConfig) -> Monitors:
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
                what="Prometheus itself calls nothing outside the cluster (only Alertmanager delivers)",
                direction="Egress",
                peer="internet",
                port=443,
                pod_labels={"app.kubernetes.io/name": "prometheus"},
                open=False,
            ),
            # Alertmanager v0.34.0's SNS notifier: credentials from the Pod Identity agent on the
            # node, then Publish to sns.<region>.amazonaws.com over HTTPS, through the NAT gateway
            # or an SNS interface endpoint in the VPC (notify/sns/sns.go; addons/monitoring/alerting.py).
            RuntimePath(
                what="Alertmanager gets its role's credentials from the node's Pod Identity agent",
                direction="Egress",
                peer="pod-identity-agent",
                port=80,
                pod_labels=ALERTMANAGER_POD,
            ),
            RuntimePath(
                what="Alertmanager publishes to SNS's regional endpoint through the NAT gateway",
                direction="Egress",
                peer="internet",
                port=443,
                pod_labels=ALERTMANAGER_POD,
            ),
            RuntimePath(
                what="Alertmanager publishes to SNS through an interface endpoint in the VPC",
                direction="Egress",
                peer="vpc",
                port=443,
                pod_labels=ALERTMANAGER_POD,
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
        alertmanager = {"podSelector": {"matchLabels": ALERTMANAGER_POD}}
        return {
            # Alertmanager reaches SNS (and Slack's or PagerDuty's HTTPS API), with its Pod Identity credentials.
            "allow-alert-delivery": {**alertmanager, **egress_https_outside_the_node()},
            "allow-alertmanager-pod-identity": {**alertmanager, **egress_to_pod_identity_agent()},
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
            rule_groups=ctx.monitors.rule_groups,
            node_labels=ctx.monitors.node_labels,
            delivery=self._delivery(ctx),
            region=ctx.config.region,
            receiver=settings.alert_receiver,
        )

    def companions(self, ctx: AddonContext, settings: MonitoringConfig) -> Companions:
        # The topics, the heartbeat alarm and Alertmanager's role, before its pods start.
        topics = AlertTopics(
            ctx.scope,
            "alert-topics",
            props=AlertTopicsProps(
                platform_name=ctx.config.name,
                region=ctx.config.region,
                cluster_name=ctx.cluster.cluster_name,
                namespace=self.release_namespace(settings),
                service_account=ALERTMANAGER_SERVICE_ACCOUNT,
                emails=tuple(settings.alert_emails),
            ),
        )
        return Companions(ready=topics.ready, record=topics.delivery)

    @staticmethod
    def _delivery(ctx: AddonContext) -> AlertDelivery:
        return ctx.own_companion(AlertDelivery)

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
