"""The hashicorp/kubernetes provider block of a layer, rendered as data (components/rendered.py) or,
for the HCL export, as the binding's `KubernetesProvider`; both write the same JSON."""

from __future__ import annotations

from dataclasses import dataclass

from constructs import Construct

from components.rendered import RenderedJson, render_as_data

# What cdktf-cdktf-provider-kubernetes 12.1.1 (pyproject.toml) writes into `required_providers`:
# its generator metadata's provider version and the source it was generated from.
# tests/test_manifests_as_data.py compares the rendered JSON with the binding's for every profile,
# so a binding upgrade that changes either fails there.
PROVIDER_SOURCE = "kubernetes"
PROVIDER_VERSION = "2.38.0"


@dataclass(frozen=True, kw_only=True)
class KubernetesConnection:
    host: str
    """The API server's URL (a token cdktf resolves is fine)."""
    tls_server_name: str
    """The name the server's certificate is checked against."""
    cluster_ca_certificate: str
    """The cluster's CA, PEM."""
    exec_api_version: str
    """The client.authentication.k8s.io version of the credential plugin's answer."""
    exec_command: str
    """The credential plugin run per request."""
    exec_args: tuple[str, ...]
    """Its arguments."""


def kubernetes_provider(scope: Construct, id_: str, *, connection: KubernetesConnection) -> None:
    """The layer's (only, unaliased) kubernetes provider."""
    if not render_as_data():
        from cdktf_cdktf_provider_kubernetes.provider import KubernetesProvider, KubernetesProviderExec

        KubernetesProvider(
            scope,
            id_,
            host=connection.host,
            tls_server_name=connection.tls_server_name,
            cluster_ca_certificate=connection.cluster_ca_certificate,
            exec=[
                KubernetesProviderExec(
                    api_version=connection.exec_api_version,
                    command=connection.exec_command,
                    args=list(connection.exec_args),
                )
            ],
        )
        return
    block = {
        "cluster_ca_certificate": connection.cluster_ca_certificate,
        "exec": [
            {
                "api_version": connection.exec_api_version,
                "args": list(connection.exec_args),
                "command": connection.exec_command,
            }
        ],
        "host": connection.host,
        "tls_server_name": connection.tls_server_name,
    }
    required = {PROVIDER_SOURCE: {"source": PROVIDER_SOURCE, "version": PROVIDER_VERSION}}
    RenderedJson(scope, id_, json={"terraform": {"required_providers": required}, "provider": {"kubernetes": [block]}})
