"""Karpenter chart values: cluster settings, the interruption queue, controllers on system nodes."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from components.helm.release import Values
from components.labels import SYSTEM_NODES

SERVICE_ACCOUNT = "karpenter"
NAMESPACE = "kube-system"


class KarpenterValues(Values):
    settings: dict[str, Any]
    service_account: dict[str, Any] = Field(default_factory=lambda: {"name": SERVICE_ACCOUNT})
    node_selector: dict[str, str] = Field(default_factory=lambda: dict(SYSTEM_NODES))
    replicas: int = 2


def karpenter_values(*, cluster_name: str, cluster_endpoint: str, queue_name: str) -> KarpenterValues:
    return KarpenterValues(settings={
        "clusterName": cluster_name, "clusterEndpoint": cluster_endpoint, "interruptionQueue": queue_name,
    })
