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


def allowed(policies: list[dict[str, Any]], *, namespace: str, direction: str, peer: Peer, protocol: str,
            port: int, pod_labels: dict[str, str] | None = None) -> bool:
    """Is this flow of a pod in `namespace` allowed? direction: "Egress" or "Ingress"."""
    key = "egress" if direction == "Egress" else "ingress"
    side = "to" if direction == "Egress" else "from"
    selecting = [p["spec"] for p in policies if p["metadata"]["namespace"] == namespace
                 and direction in p["spec"].get("policyTypes", [])
                 and _labels_match(p["spec"].get("podSelector", {}), pod_labels or {})]
    if not selecting:
        return True
    for spec in selecting:
        for rule in spec.get(key, []):
            peers = rule.get(side)
            if (peers is None or any(_peer_matches(p, peer, namespace) for p in peers)) and _port_matches(
                    rule.get("ports"), protocol, port):
                return True
    return False
