"""kubectl bound to the profile's own cluster. Every kubectl call the operate and verify commands
make goes through a private kubeconfig written for that cluster (never the user's current
context), after checking that its API server is the one the cluster layer created and that it
answers; otherwise they stop with ClusterAccessError before touching anything."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from operate.kubectl import Kubectl
from operate.kubectl import kubectl as run_kubectl

AwsCli = Kubectl  # the same shape: arguments in, finished process out


def run_aws(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["aws", *args], capture_output=True, text=True, timeout=120)


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


def bind_kubectl(
    target: ClusterTarget, kubeconfig: Path, *, aws: AwsCli = run_aws, kubectl: Kubectl = run_kubectl
) -> Kubectl:
    """A kubectl runner that always uses a private kubeconfig for `target`, checked first."""
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

    server = bound(["config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"])
    if server.returncode != 0 or server.stdout.strip().rstrip("/") != target.endpoint.rstrip("/"):
        raise ClusterAccessError(
            f"the kubeconfig for {target.name} points at {server.stdout.strip() or 'nothing'}, "
            f"not at the cluster layer's endpoint {target.endpoint}: refusing to act on it"
        )
    reached = bound(["get", "--raw", "/version", "--request-timeout=20s"])
    if reached.returncode != 0:
        raise ClusterAccessError(
            f"cluster {target.name} does not answer at {target.endpoint} "
            f"({(reached.stderr or reached.stdout).strip()}); is the endpoint reachable from "
            "here (VPN, SSM port forwarding, bastion)?"
        )
    return bound
