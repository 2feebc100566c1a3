"""A small NetworkPolicy evaluator (the Kubernetes semantics the VPC CNI enforces): a flow is
allowed when no policy selects the pod for that direction, or any selecting policy has a rule
that matches the peer and port. Enough of the spec for the policies the platform renders:
podSelector {} or matchLabels, namespaceSelector matchLabels, ipBlock with except, ports."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Peer:
    """The other end of a flow: a pod (namespace + labels) or a plain IP address."""

    namespace: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    ip: str | None = None
    namespace_labels: dict[str, str] = field(default_factory=dict)
    """The peer namespace's own labels (besides kubernetes.io/metadata.name, which it always has)."""


def _labels_match(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def _peer_matches(rule_peer: dict[str, Any], peer: Peer, own_namespace: str) -> bool:
    if "ipBlock" in rule_peer:
        if peer.ip is None:
            return False
        address = ipaddress.ip_address(peer.ip)
        block = rule_peer["ipBlock"]
        inside = address in ipaddress.ip_network(block["cidr"])
        return inside and not any(address in ipaddress.ip_network(e) for e in block.get("except", []))
    if peer.namespace is None:  # a pod selector never matches an off-cluster address
        return False
    if "namespaceSelector" in rule_peer:
        ns_labels = {**peer.namespace_labels, "kubernetes.io/metadata.name": peer.namespace}
        if not _labels_match(rule_peer["namespaceSelector"], ns_labels):
            return False
    elif peer.namespace != own_namespace:
        return False
    return _labels_match(rule_peer.get("podSelector", {}), peer.labels)


def _port_matches(ports: list[dict[str, Any]] | None, protocol: str, port: int) -> bool:
    return not ports or any(p.get("protocol", "TCP") == protocol and p.get("port") in (None, port) for p in ports)


def allowed(
    policies: list[dict[str, Any]],
    *,
    namespace: str,
    direction: str,
    peer: Peer,
    protocol: str,
    port: int,
    pod_labels: dict[str, str] | None = None,
) -> bool:
    """Is this flow of a pod in `namespace` allowed? direction: "Egress" or "Ingress"."""
    key = "egress" if direction == "Egress" else "ingress"
    side = "to" if direction == "Egress" else "from"
    selecting = [
        p["spec"]
        for p in policies
        if p["metadata"]["namespace"] == namespace
        and direction in p["spec"].get("policyTypes", [])
        and _labels_match(p["spec"].get("podSelector", {}), pod_labels or {})
    ]
    if not selecting:
        return True
    for spec in selecting:
        for rule in spec.get(key, []):
            peers = rule.get(side)
            if (peers is None or any(_peer_matches(p, peer, namespace) for p in peers)) and _port_matches(
                rule.get("ports"), protocol, port
            ):
                return True
    return False


# ------------------------------------------------------------------ egress to a Service, pre-DNAT
#
# The VPC CNI's network policy agent attaches its eBPF probes to the TC hook of the pod's host-side
# veth, so it judges egress BEFORE kube-proxy's DNAT: a connection to a Service is seen with the
# Service's ClusterIP and port, never the backing pod. The controller therefore adds ClusterIPs to
# a policy's egress endpoints, and only these ways (aws/amazon-network-policy-controller-k8s
# v1.1.7, pkg/resolvers/endpoints.go):
# - computeEgressEndpoints: an ipBlock peer becomes a CIDR endpoint as written (buildIPBlockEndpoint),
#   a rule without `to` allows every address (buildAllowAllEgress);
# - for a pod/namespace-selector peer, in each namespace the peer selects (resolvePeerNamespaces:
#   its namespaceSelector, else the policy's own namespace), getMatchingServiceClusterIPs adds the
#   ClusterIP of every non-headless Service (IsServiceHeadless) whose spec.selector, read as a
#   label SET, is matched by the peer's podSelector (`svcSelector.Matches(labels.Set(svc.Spec.Selector))`;
#   a nil podSelector is the empty selector, which matches every set, the empty one included);
# - ports: a policy port names the Service's targetPort; the endpoint gets the Service port that
#   targets it (getMatchingServicePort -> LookupServiceListenPort).
# So the selector-less `default/kubernetes` Service is reached only through an ipBlock holding its
# ClusterIP, or a peer that selects namespace `default` with an empty podSelector.


@dataclass(frozen=True)
class ServicePort:
    port: int
    target_port: int
    protocol: str = "TCP"


@dataclass(frozen=True)
class Service:
    """A ClusterIP Service as a client's packet names it (its ClusterIP), before DNAT."""

    namespace: str
    name: str
    cluster_ip: str
    selector: dict[str, str] | None
    """None: no selector (like default/kubernetes, whose endpoints the API server writes)."""
    ports: tuple[ServicePort, ...]
    namespace_labels: dict[str, str] = field(default_factory=dict)
    headless: bool = False


def _selector_matches_set(selector: dict[str, Any] | None, label_set: dict[str, str]) -> bool:
    """A LabelSelector (matchLabels only, as the platform writes them) against a label set."""
    return all(label_set.get(k) == v for k, v in (selector or {}).get("matchLabels", {}).items())


def _service_peer_matches(rule_peer: dict[str, Any], service: Service, own_namespace: str) -> bool:
    if "ipBlock" in rule_peer:
        return _peer_matches(rule_peer, Peer(ip=service.cluster_ip), own_namespace)
    if service.headless:
        return False
    if "namespaceSelector" in rule_peer:
        ns_labels = {**service.namespace_labels, "kubernetes.io/metadata.name": service.namespace}
        if not _labels_match(rule_peer["namespaceSelector"], ns_labels):
            return False
    elif service.namespace != own_namespace:
        return False
    return _selector_matches_set(rule_peer.get("podSelector"), service.selector or {})


def _service_port_matches(
    ports: list[dict[str, Any]] | None, service: Service, port: int, protocol: str, via_selector: bool
) -> bool:
    if not ports:
        return True
    if not via_selector:  # an ipBlock endpoint carries the policy's ports as written: the port on the wire
        return _port_matches(ports, protocol, port)
    listen = {
        p.port
        for p in service.ports
        for q in ports
        if q.get("protocol", "TCP") == p.protocol == protocol and q.get("port") == p.target_port
    }
    return port in listen


def allowed_to_service(
    policies: list[dict[str, Any]],
    *,
    namespace: str,
    service: Service,
    port: int,
    protocol: str = "TCP",
    pod_labels: dict[str, str] | None = None,
) -> bool:
    """May a pod in `namespace` open a connection to `service`'s ClusterIP:port (judged pre-DNAT)?"""
    selecting = [
        p["spec"]
        for p in policies
        if p["metadata"]["namespace"] == namespace
        and "Egress" in p["spec"].get("policyTypes", [])
        and _labels_match(p["spec"].get("podSelector", {}), pod_labels or {})
    ]
    if not selecting:
        return True
    for spec in selecting:
        for rule in spec.get("egress", []):
            peers = rule.get("to")
            if peers is None:
                if _port_matches(rule.get("ports"), protocol, port):
                    return True
                continue
            for peer in peers:
                if _service_peer_matches(peer, service, namespace) and _service_port_matches(
                    rule.get("ports"), service, port, protocol, via_selector="ipBlock" not in peer
                ):
                    return True
    return False
