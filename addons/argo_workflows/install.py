"""Argo Workflows: the server requires a client token (no anonymous access), workflows run as a
least-privilege service account in one namespace, and every workflow gets a deadline and a
parallelism limit unless it sets its own."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from addons.argo_workflows import DEFINITION, ArgoWorkflowsConfig
from components.helm.addon import AddonContext, HelmAddonSpec, RuntimePath
from components.helm.release import Values
from components.k8s.gpus import claim_template, gpu_quota
from components.k8s.namespaces import (
    container_defaults,
    egress_https_outside_the_node,
    egress_to_pod_identity_agent,
)
from components.labels import SYSTEM_NODES
from profiles.models import dra_claim_counts, dra_mode

WORKFLOW_SERVICE_ACCOUNT = "argo-workflow"
# The controller, server and executor run in the quota'd workflow namespace: they state requests.
CONTROLLER_RESOURCES = {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}}
SERVER_RESOURCES = {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}}
EXECUTOR_RESOURCES = {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "512Mi"}}


class ArgoWorkflowsValues(Values):
    controller: dict[str, Any]
    server: dict[str, Any]
    executor: dict[str, Any]
    workflow: dict[str, Any]
    main_container: dict[str, Any] | None = None


def argo_workflows_values(
    cfg: ArgoWorkflowsConfig, *, client_env: Mapping[str, str] | None = None
) -> ArgoWorkflowsValues:
    return ArgoWorkflowsValues(
        # Every step's main container gets the platform services' addresses (MLflow's tracking URI),
        # as the controller's mainContainer defaults.
        main_container={"env": [{"name": k, "value": v} for k, v in client_env.items()]} if client_env else None,
        controller={
            "workflowNamespaces": [cfg.namespace],
            "nodeSelector": dict(SYSTEM_NODES),
            "resources": CONTROLLER_RESOURCES,
            "workflowDefaults": {
                "spec": {
                    "serviceAccountName": WORKFLOW_SERVICE_ACCOUNT,
                    "activeDeadlineSeconds": cfg.default_active_deadline_seconds,
                    "parallelism": cfg.default_parallelism,
                    "podGC": {"strategy": "OnPodSuccess"},
                    "ttlStrategy": {"secondsAfterCompletion": 86400},
                }
            },
        },
        # "client": callers present their own Kubernetes token; "server" mode would act as the
        # server's service account for anyone who can reach the UI.
        server={"authModes": ["client"], "nodeSelector": dict(SYSTEM_NODES), "resources": SERVER_RESOURCES},
        # Every step's wait/init containers: explicit, so the namespace's quota counts them as sized.
        executor={"resources": EXECUTOR_RESOURCES},
        # The chart's workflow role grants only what the executor needs (pods and task results).
        workflow={"serviceAccount": {"create": True, "name": WORKFLOW_SERVICE_ACCOUNT}, "rbac": {"create": True}},
    )


class ArgoWorkflowsAddon(HelmAddonSpec[ArgoWorkflowsConfig]):
    """The release, and a ResourceQuota with container defaults in the namespace workflows run in."""

    definition = DEFINITION
    release_name = "argo-workflows"

    def values(self, ctx: AddonContext, settings: ArgoWorkflowsConfig) -> ArgoWorkflowsValues:
        return argo_workflows_values(settings, client_env=ctx.clients.env)

    def network_allows(self, ctx: AddonContext, settings: ArgoWorkflowsConfig) -> dict[str, dict[str, Any]]:
        # Workflow steps run here and use AWS through Pod Identity, like a tenant's pods, and are
        # clients of the platform's services (MLflow, when it is on).
        return {
            "allow-pod-identity": egress_to_pod_identity_agent(),
            "allow-aws-apis": egress_https_outside_the_node(),
            **ctx.clients.allow,
        }

    def runtime_paths(self, settings: ArgoWorkflowsConfig) -> tuple[RuntimePath, ...]:
        return (
            RuntimePath(
                what="workflow steps use AWS APIs (S3, STS) with their Pod Identity",
                direction="Egress",
                peer="internet",
                port=443,
            ),
            RuntimePath(
                what="steps get credentials from the Pod Identity agent",
                direction="Egress",
                peer="pod-identity-agent",
                port=80,
            ),
        )

    def namespace_labels(self, ctx: AddonContext, settings: ArgoWorkflowsConfig) -> dict[str, str]:
        return dict(ctx.clients.labels)

    def namespace_objects(self, ctx: AddonContext, settings: ArgoWorkflowsConfig) -> list[dict[str, Any]]:
        # The quota counts requests; the LimitRange gives every container that states none a request,
        # so workflow steps (and the controller after a reschedule) are admitted.
        return [
            container_defaults(settings.namespace),
            {
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": {"name": "workflow-quota", "namespace": settings.namespace},
                "spec": {
                    "hard": {
                        "requests.cpu": settings.quota_cpu,
                        "requests.memory": settings.quota_memory,
                        **gpu_quota(settings.quota_gpus, dra=dra_mode(ctx.config)),
                    }
                },
            },
            # In DRA mode workflow steps take GPUs through these claim templates.
            *(claim_template(settings.namespace, count) for count in dra_claim_counts(ctx.config)),
            *ctx.clients.objects(settings.namespace),
        ]


ADDON = ArgoWorkflowsAddon()
