"""What every layer stack shares: its own state and the AWS provider."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cdktf import (
    App,
    Fn,
    LocalBackend,
    S3Backend,
    TerraformOutput,
    TerraformStack,
    TerraformVariable,
    TerraformVariableValidationConfig,
)
from cdktf_cdktf_provider_aws.provider import AwsProvider, AwsProviderDefaultTags
from cdktf_cdktf_provider_helm.provider import HelmProvider, HelmProviderKubernetes, HelmProviderKubernetesExec
from constructs import Construct

from components.expressions import matches
from components.k8s.provider import KubernetesConnection, kubernetes_provider
from components.logical_ids import unique_id
from components.rendered import RenderedJson, render_as_data
from profiles import PlatformConfig
from profiles.reserved_keys import platform_tags
from stacks import API_TUNNEL_PATTERN, API_TUNNEL_VARIABLE
from stacks.contracts import ClusterOutputs, terraform_outputs


@dataclass(frozen=True, kw_only=True)
class StateLocation:
    """Where the layers keep local state (when the profile names no state bucket)."""

    local_dir: str
    """The profile's state folder, relative to a stack's folder (so the JSON is machine-independent)."""


class LayerStack(TerraformStack):
    """A TerraformStack named after its layer, with a backend holding one state per layer."""

    def __init__(self, scope: Construct, layer: str, *, config: PlatformConfig, state: StateLocation):
        if not isinstance(scope, App):
            # Blocks rendered as data (Kubernetes objects, published outputs) name themselves by
            # their path below the App's child, as cdktf names a stack's resources.
            raise TypeError(f"the {layer} layer's stack must be a child of the App, not of {scope!r}")
        super().__init__(scope, layer)
        self.layer = layer
        self.config = config
        remote = config.state
        if remote.bucket:
            S3Backend(
                self,
                bucket=remote.bucket,
                key=f"{remote.key_prefix}/{config.name}/{layer}.tfstate",
                region=remote.region or config.region,
                encrypt=True,
            )
            # S3-native lock files (Terraform >= 1.10); cdktf 0.21 predates the option.
            self.add_override("terraform.backend.s3.use_lockfile", True)
        else:
            LocalBackend(self, path=f"{state.local_dir}/{layer}.tfstate")

    def publish(self, contract: object) -> None:
        """Every published field of the layer's contract as a Terraform output (rendered as data in
        one element, the JSON a TerraformOutput per field writes: components/rendered.py)."""
        published = list(terraform_outputs(contract))
        if not render_as_data():
            for name, value, how in published:
                TerraformOutput(self, name, value=value, sensitive=how.sensitive or None, description=how.description)
            return
        outputs: dict[str, dict[str, Any]] = {}
        listed: dict[str, str] = {}  # construct id -> output name
        for name, value, how in published:
            output_id = unique_id([name])  # a TerraformOutput's name: its id, as cdktf cleans it
            if output_id in outputs:  # as cdktf refuses two constructs of one id
                raise ValueError(f"the {self.layer} layer publishes {name!r} twice")
            outputs[output_id] = {
                "value": value,
                **({"description": how.description} if how.description is not None else {}),
                **({"sensitive": True} if how.sensitive else {}),
            }
            listed[name] = output_id
        if outputs:
            # cdktf lists every TerraformOutput under "//" too (terraform-stack.js, toTerraform: the
            # output's construct path to its name), which the cdktf CLI reads for `cdktf output`.
            paths = {self.node.id: listed}
            RenderedJson(self, "published-outputs", json={"output": outputs, "//": {"outputs": paths}})

    def use_aws_provider(self) -> AwsProvider:
        tags = {**platform_tags(self.config.name, self.layer), **self.config.tags}
        account = self.config.account_id
        return AwsProvider(
            self,
            "aws",
            region=self.config.region,
            # The provider refuses credentials of any other account before it plans anything.
            allowed_account_ids=[account] if account else None,
            default_tags=[AwsProviderDefaultTags(tags=tags)],
        )

    def use_kubernetes_providers(self, cluster: ClusterOutputs, *, helm: bool) -> None:
        """The Kubernetes (and with `helm` the Helm) provider for the cluster, authenticated per
        request by `aws eks get-token` (a static token would expire during a long apply). They
        connect to the endpoint, or to the local forward `var.api_tunnel` names, and check the
        server's certificate against the endpoint's own name either way."""
        tunnel = TerraformVariable(
            self,
            API_TUNNEL_VARIABLE,
            type="string",
            default="",
            nullable=False,
            description="A local forward to the cluster's private API endpoint, e.g. https://localhost:8443 (an SSM "
            "port forward or SSH tunnel; docs/operations.md). Empty: the endpoint itself.",
            validation=[
                TerraformVariableValidationConfig(
                    condition=matches(f"^$|{API_TUNNEL_PATTERN}", f"var.{API_TUNNEL_VARIABLE}"),
                    error_message=f"{API_TUNNEL_VARIABLE} must be empty or https://localhost:PORT "
                    "(or https://127.0.0.1:PORT): a forward on this machine to the private endpoint.",
                )
            ],
        ).string_value
        host = Fn.coalesce([tunnel, cluster.endpoint])  # the first that is not empty
        server_name = Fn.trimprefix(cluster.endpoint, "https://")
        ca = Fn.base64decode(cluster.certificate_authority)
        get_token = ["eks", "get-token", "--cluster-name", cluster.cluster_name, "--region", cluster.region]
        api_version = "client.authentication.k8s.io/v1beta1"
        kubernetes_provider(
            self,
            "kubernetes",
            connection=KubernetesConnection(
                host=host,
                tls_server_name=server_name,
                cluster_ca_certificate=ca,
                exec_api_version=api_version,
                exec_command="aws",
                exec_args=tuple(get_token),
            ),
        )
        if helm:
            HelmProvider(
                self,
                "helm",
                kubernetes=HelmProviderKubernetes(
                    host=host,
                    tls_server_name=server_name,
                    cluster_ca_certificate=ca,
                    exec=HelmProviderKubernetesExec(api_version=api_version, command="aws", args=get_token),
                ),
            )
