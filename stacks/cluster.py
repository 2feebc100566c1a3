"""Cluster layer: VPC, EKS control plane, IAM, managed add-ons and node groups."""

from __future__ import annotations

from dataclasses import dataclass

from constructs import Construct
from cdktf import TerraformOutput

from components.network import Network, NetworkProps
from profiles import PlatformConfig
from stacks.layer import LayerStack


@dataclass(frozen=True)
class ClusterOutputs:
    """What later layers use; tokens that cdktf turns into remote-state references."""

    vpc_id: str
    private_subnet_ids: list[str]
    gpu_subnet_id: str


class ClusterStack(LayerStack):
    def __init__(self, scope: Construct, layer: str, *, config: PlatformConfig):
        super().__init__(scope, layer, config=config)
        self.use_aws_provider()
        vpc = config.cluster.vpc
        network = Network(
            self, "network",
            props=NetworkProps(
                name=config.name, cidr=vpc.cidr, availability_zones=tuple(vpc.availability_zones),
                nat_gateways=vpc.nat_gateways, region=config.region,
            ),
        )
        self.outputs = ClusterOutputs(
            vpc_id=network.vpc_id,
            private_subnet_ids=list(network.private_subnet_ids.values()),
            gpu_subnet_id=network.private_subnet_ids[vpc.gpu_az],
        )
        TerraformOutput(self, "vpc_id", value=network.vpc_id)
        TerraformOutput(self, "gpu_subnet_id", value=self.outputs.gpu_subnet_id)
