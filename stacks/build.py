"""Build layer: ECR repositories and CodeBuild projects per reference implementation."""

from __future__ import annotations

from constructs import Construct

from profiles import PlatformConfig
from stacks.layer import LayerStack


class BuildStack(LayerStack):
    def __init__(self, scope: Construct, layer: str, *, config: PlatformConfig):
        super().__init__(scope, layer, config=config)
        self.use_aws_provider()
