"""Workloads layer: Kubernetes objects (Karpenter pools, tenants, static PVs)."""

from __future__ import annotations

from constructs import Construct

from profiles import PlatformConfig
from stacks.cluster import ClusterOutputs
from stacks.layer import LayerStack


class WorkloadsStack(LayerStack):
    def __init__(self, scope: Construct, layer: str, *, config: PlatformConfig, cluster: ClusterOutputs):
        super().__init__(scope, layer, config=config)
        self.use_aws_provider()
        self.cluster = cluster
