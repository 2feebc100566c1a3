"""Every namespace the platform creates gets the same guard rails: Pod Security Admission labels
and a default-deny NetworkPolicy with explicit allows. Pure data (Kubernetes objects as dicts),
used by the addons layer, the tenants and the validation manifests."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from profiles.naming import METRICS_NAMESPACE

PodSecurityLevel = Literal["baseline", "privileged"]
# The EKS Pod Identity agent's link-local address: pods fetch credentials there (port 80).
POD_IDENTITY_AGENT = "169.254.170.23/32"
# EC2's link-local range (IMDS, the Pod Identity agent, the time service): never reachable through
# the general egress allows; the Pod Identity agent gets its own, narrower one.
LINK_LOCAL = "169.254.0.0/16"
# How long Terraform waits for a namespace it deletes to be gone: kubernetes_manifest's
# timeouts.delete, 10 minutes unless set (hashicorp/terraform-provider-kubernetes v2.38.0,
# manifest/provider/apply.go L24-26 defaultDeleteTimeout, L545-548 and L573-598 the wait). The
# namespace controller first deletes what is left in it, pods with their own grace periods (a
# training job's may be an hour, to checkpoint), so 10 minutes would fail such a destroy half-way.
# The pre-destroy clean-up bounds its waits for pods by the same time (operate/cleanup.py). The
# provider reads the timeout from the state (getTimeouts(priorStateVal)): it holds for a destroy
# once the layer has been applied with it.
NAMESPACE_DELETE_TIMEOUT_MINUTES = 70


@dataclass(frozen=True, kw_only=True)
class ApiServerAddresses:
    """Where pods reach the EKS API server, as the VPC CNI's network policy agent sees the packet.

    In-cluster clients (client-go's in-cluster config, https://kubernetes.default.svc) connect to
    the `kubernetes` Service's ClusterIP. The agent judges egress on the pod's host-side veth, before
    kube-proxy translates that ClusterIP to the control plane's addresses, and it adds a Service's
    ClusterIP to a policy only for Services whose selector matches a rule's pod selector, which the
    selector-less `default/kubernetes` never does (aws/amazon-network-policy-controller-k8s,
    pkg/resolvers/endpoints.go, getMatchingServiceClusterIPs). So the ClusterIP must be an ipBlock
    of its own; the VPC CIDR covers the endpoint's network interfaces, which clients that use the
    endpoint's DNS name reach directly."""

    vpc_cidr: str
    """The VPC's CIDR (the private endpoint's network interfaces)."""
    service_ip: str
    """The `kubernetes` Service's ClusterIP (first address of the Service CIDR)."""


@dataclass(frozen=True, kw_only=True)
class NamespaceGuard:
    """How one namespace is guarded."""

    name: str
    """The namespace."""
    pod_security: PodSecurityLevel = "baseline"
    """Enforced Pod Security Standard; warnings and audit always use restricted."""
    privileged_because: str = ""
    """Why a namespace must admit privileged pods (required for privileged)."""
    labels: dict[str, str] = field(default_factory=dict)
    """Extra namespace labels."""
    allow: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Policy name -> NetworkPolicy spec, allowed on top of the common ones (same namespace, DNS,
    the API server, metric scrapes)."""

    def __post_init__(self) -> None:
        if self.pod_security == "privileged" and not self.privileged_because:
            raise ValueError(f"namespace {self.name} admits privileged pods: say why (privileged_because)")


def pod_security_labels(level: PodSecurityLevel) -> dict[str, str]:
    return {
        "pod-security.kubernetes.io/enforce": level,
        "pod-security.kubernetes.io/enforce-version": "latest",
        "pod-security.kubernetes.io/warn": "restricted",
        "pod-security.kubernetes.io/warn-version": "latest",
        "pod-security.kubernetes.io/audit": "restricted",
        "pod-security.kubernetes.io/audit-version": "latest",
    }


def _policy(namespace: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"podSelector": {}, **spec},
    }


def egress_to_api_server(api: ApiServerAddresses) -> dict[str, Any]:
    """The EKS API server on 443: its ClusterIP and the private endpoint's network interfaces."""
    return {
        "policyTypes": ["Egress"],
        "egress": [
            {
                "to": [{"ipBlock": {"cidr": f"{api.service_ip}/32"}}, {"ipBlock": {"cidr": api.vpc_cidr}}],
                "ports": [{"protocol": "TCP", "port": 443}],
            }
        ],
    }


def egress_https_outside_the_node() -> dict[str, Any]:
    """HTTPS to AWS APIs (S3 through the gateway endpoint's public ranges, STS, ECR, ...), by NAT,
    endpoints or the internet; IMDS and the rest of the link-local range stay out of reach."""
    return {
        "policyTypes": ["Egress"],
        "egress": [
            {
                "to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": [LINK_LOCAL]}}],
                "ports": [{"protocol": "TCP", "port": 443}],
            }
        ],
    }


def ingress_from_control_plane(vpc_cidr: str, port: int) -> dict[str, Any]:
    """The API server calling into the namespace (an admission webhook, an aggregated API): EKS's
    control plane reaches pods through its network interfaces in the VPC's subnets."""
    return {
        "policyTypes": ["Ingress"],
        "ingress": [{"from": [{"ipBlock": {"cidr": vpc_cidr}}], "ports": [{"protocol": "TCP", "port": port}]}],
    }


def egress_to_pod_identity_agent() -> dict[str, Any]:
    return {
        "policyTypes": ["Egress"],
        "egress": [{"to": [{"ipBlock": {"cidr": POD_IDENTITY_AGENT}}], "ports": [{"protocol": "TCP", "port": 80}]}],
    }


def container_defaults(namespace: str) -> dict[str, Any]:
    """A LimitRange giving every container that states no CPU or memory request a small one, so a
    ResourceQuota on requests admits it (a quota rejects pods without requests). No default
    LIMIT: a training container written like the public samples (only GPUs and EFA set) would get
    it and be OOM-killed loading its model, and one that requests more CPU than that limit without
    a limit of its own would be refused (a request above its limit is invalid)."""
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": "defaults", "namespace": namespace},
        "spec": {
            "limits": [
                {
                    "type": "Container",
                    "defaultRequest": {"cpu": "250m", "memory": "512Mi"},
                }
            ]
        },
    }


def namespace_objects(guard: NamespaceGuard, *, api: ApiServerAddresses | None) -> list[dict[str, Any]]:
    """The Namespace and its NetworkPolicies: deny everything, then allow the namespace itself,
    DNS, the API server (unless `api` is None), metric scrapes from the monitoring namespace, and
    what `guard.allow` adds."""
    ns = guard.name
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": ns, "labels": {**guard.labels, **pod_security_labels(guard.pod_security)}},
        },
        _policy(ns, "default-deny", {"policyTypes": ["Ingress", "Egress"]}),
        _policy(
            ns,
            "allow-same-namespace",
            {
                "policyTypes": ["Ingress", "Egress"],
                "ingress": [{"from": [{"podSelector": {}}]}],
                "egress": [{"to": [{"podSelector": {}}]}],
            },
        ),
        _policy(
            ns,
            "allow-dns",
            {
                "policyTypes": ["Egress"],
                "egress": [
                    {
                        "to": [
                            {
                                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                                "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
                            }
                        ],
                        "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
                    }
                ],
            },
        ),
        _policy(
            ns,
            "allow-metrics-scrape",
            {
                "policyTypes": ["Ingress"],
                "ingress": [
                    {
                        "from": [
                            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": METRICS_NAMESPACE}}}
                        ]
                    }
                ],
            },
        ),
    ]
    if api is not None:
        objects.append(_policy(ns, "allow-api-server", egress_to_api_server(api)))
    objects += [_policy(ns, name, spec) for name, spec in guard.allow.items()]
    return objects
