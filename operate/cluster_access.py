"""kubectl bound to the profile's own cluster. Every kubectl call the operate and verify commands
make goes through a private kubeconfig written for that cluster (never the user's current
context), after checking that its API server is the one the cluster layer created and that it
answers; otherwise they stop with ClusterAccessError before touching anything.

A private endpoint may be reached through a local forward (TF_VAR_api_tunnel, the same variable
the Kubernetes layers' providers read): kubectl then connects to the forward but still checks
the server's certificate against the endpoint's name and the cluster's CA, so the forward can
only ever lead to this cluster."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from operate.kubectl import Kubectl
from operate.kubectl import kubectl as run_kubectl
from operate.tools import require_tool
from stacks import API_TUNNEL_PATTERN, API_TUNNEL_VARIABLE

TUNNEL_ENV = f"TF_VAR_{API_TUNNEL_VARIABLE}"

AwsCli = Kubectl  # the same shape: arguments in, finished process out


def run_aws(args: list[str]) -> subprocess.CompletedProcess[str]:
    """The AWS CLI (ToolMissing when it is not installed)."""
    return subprocess.run([require_tool("aws"), *args], capture_output=True, text=True, timeout=120)


class ClusterAccessError(RuntimeError):
    """The profile's cluster cannot be reached, or a kubeconfig would point elsewhere."""


@dataclass(frozen=True, kw_only=True)
class ClusterTarget:
    """The cluster a profile's commands may act on, from the cluster layer's outputs."""

    name: str
    """The EKS cluster's name."""
    region: str
    """Its region."""
    endpoint: str
    """Its API server URL, as the cluster layer's `endpoint` output reports it."""


def api_tunnel(env: Mapping[str, str]) -> str | None:
    """The local forward to the API endpoint this run should use (TF_VAR_api_tunnel), or None."""
    tunnel = env.get(TUNNEL_ENV, "")
    if not tunnel:
        return None
    if not re.fullmatch(API_TUNNEL_PATTERN, tunnel):
        raise ClusterAccessError(
            f"{TUNNEL_ENV}={tunnel!r} is not a local forward: set it to https://localhost:PORT (or "
            "https://127.0.0.1:PORT), the local end of an SSM port forward or SSH tunnel to the private "
            "endpoint, or unset it to use the endpoint itself"
        )
    return tunnel


def bind_kubectl(
    target: ClusterTarget,
    kubeconfig: Path,
    *,
    tunnel: str | None = None,
    aws: AwsCli = run_aws,
    kubectl: Kubectl = run_kubectl,
) -> Kubectl:
    """A kubectl runner that always uses a private kubeconfig for `target`, checked first. With
    `tunnel` (https://localhost:PORT) it connects there, verifying TLS as the endpoint."""
    kubeconfig.parent.mkdir(parents=True, exist_ok=True)
    context = f"platform-{target.name}"
    written = aws(
        [
            "eks",
            "update-kubeconfig",
            "--name",
            target.name,
            "--region",
            target.region,
            "--kubeconfig",
            str(kubeconfig),
            "--alias",
            context,
        ]
    )
    if written.returncode != 0:
        raise ClusterAccessError(
            f"cannot write a kubeconfig for cluster {target.name} in {target.region}: "
            f"{(written.stderr or written.stdout).strip()}"
        )

    def bound(args: list[str]) -> subprocess.CompletedProcess[str]:
        return kubectl(["--kubeconfig", str(kubeconfig), "--context", context, *args])

    def view(path: str) -> str:
        shown = bound(["config", "view", "--minify", "-o", f"jsonpath={{{path}}}"])
        return shown.stdout.strip() if shown.returncode == 0 else ""

    server = view(".clusters[0].cluster.server")
    if server.rstrip("/") != target.endpoint.rstrip("/"):
        raise ClusterAccessError(
            f"the kubeconfig for {target.name} points at {server or 'nothing'}, "
            f"not at the cluster layer's endpoint {target.endpoint}: refusing to act on it"
        )
    endpoint_name = host_name(target.endpoint)
    if tunnel:
        entry = view(".contexts[0].context.cluster")
        redirected = bound(["config", "set-cluster", entry, f"--server={tunnel}", f"--tls-server-name={endpoint_name}"])
        if not entry or redirected.returncode != 0:
            raise ClusterAccessError(
                f"cannot point the kubeconfig for {target.name} at the forward {tunnel}: "
                f"{(redirected.stderr or redirected.stdout).strip()}"
            )
        if (
            view(".clusters[0].cluster.server") != tunnel
            or view(".clusters[0].cluster.tls-server-name") != endpoint_name
        ):
            raise ClusterAccessError(
                f"the kubeconfig for {target.name} does not go to {tunnel} checked as {endpoint_name}: "
                "refusing to act on it"
            )
    reached = bound(["get", "--raw", "/version", "--request-timeout=20s"])
    if reached.returncode != 0:
        where = f"through the forward {tunnel}" if tunnel else f"at {target.endpoint}"
        raise ClusterAccessError(
            f"cluster {target.name} does not answer {where} ({(reached.stderr or reached.stdout).strip()}).\n"
            + access_options(target.endpoint)
        )
    return bound


def host_name(url: str) -> str:
    """The host part of an https URL, as written (EKS endpoints are upper-case hex)."""
    return urlparse(url).netloc.rsplit("@", 1)[-1].split(":")[0]


def access_options(endpoint: str | None) -> str:
    """The ways to reach a private API endpoint from this machine, as docs/operations.md gives them
    (lines for operate/messages.py: a list, and the forward's commands to copy)."""
    host = host_name(endpoint) if endpoint else "<host name of cluster.endpoint in make outputs>"
    return (
        "Ways to reach it (docs/operations.md, Reaching the API):\n"
        "- run from a network named in cluster.private_endpoint_access.cidrs (peering, a site-to-site VPN), "
        "or through a Client VPN endpoint or host (a bastion) in a group named in "
        "cluster.private_endpoint_access.security_groups;\n"
        "- or forward a local port through such a host, e.g. with SSM:\n"
        f"    EKS_HOST={host}\n"
        "    aws ssm start-session --target <instance-id> --document-name AWS-StartPortForwardingSessionToRemoteHost"
        ' --parameters "host=$EKS_HOST,portNumber=443,localPortNumber=8443"\n'
        f"    export {TUNNEL_ENV}=https://localhost:8443\n"
        "- or open the public endpoint to your egress (cluster.endpoint_public_access with "
        "endpoint_public_access_cidrs)."
    )
