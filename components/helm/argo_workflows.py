"""Argo Workflows: the server requires a client token (no anonymous access), workflows run as a
least-privilege service account in one namespace, and every workflow gets a deadline and a
parallelism limit unless it sets its own."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from components.helm.charts import ARGO_WORKFLOWS_IMAGE_TAG
from components.helm.release import Values
from components.labels import SYSTEM_NODES
from profiles.models import ArgoWorkflowsConfig

WORKFLOW_SERVICE_ACCOUNT = "argo-workflow"


class ArgoWorkflowsValues(Values):
    images: dict[str, str] = Field(default_factory=lambda: {"tag": ARGO_WORKFLOWS_IMAGE_TAG})
    controller: dict[str, Any]
    server: dict[str, Any]
    workflow: dict[str, Any]


def argo_workflows_values(cfg: ArgoWorkflowsConfig) -> ArgoWorkflowsValues:
    return ArgoWorkflowsValues(
        controller={
            "workflowNamespaces": [cfg.namespace],
            "nodeSelector": dict(SYSTEM_NODES),
            "workflowDefaults": {"spec": {
                "serviceAccountName": WORKFLOW_SERVICE_ACCOUNT,
                "activeDeadlineSeconds": cfg.default_active_deadline_seconds,
                "parallelism": cfg.default_parallelism,
                "podGC": {"strategy": "OnPodSuccess"},
                "ttlStrategy": {"secondsAfterCompletion": 86400},
            }},
        },
        # "client": callers present their own Kubernetes token; "server" mode would act as the
        # server's service account for anyone who can reach the UI.
        server={"authModes": ["client"], "nodeSelector": dict(SYSTEM_NODES)},
        # The chart's workflow role grants only what the executor needs (pods and task results).
        workflow={"serviceAccount": {"create": True, "name": WORKFLOW_SERVICE_ACCOUNT}, "rbac": {"create": True}},
    )
