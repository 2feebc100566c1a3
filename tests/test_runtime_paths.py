"""Every run-time path each add-on declares (RuntimePath, next to the add-on in its install.py,
read from its upstream source at the pin) evaluated as the VPC CNI judges it (tests/netpol.py) on
every shipped and fixture profile: the open ones are allowed at both ends, the closed ones are
denied. The common paths (API server ClusterIP, DNS) are tests/test_network_paths.py's."""

from __future__ import annotations

import ipaddress
from types import SimpleNamespace

import pytest

from addons.registry import ADDONS
from components.helm.addon import RuntimePath
from components.k8s.namespaces import POD_IDENTITY_AGENT
from tests.cases import FIXTURES, SHIPPED
from tests.netpol import Peer, allowed
from tests.test_namespaces import created_namespaces

ALL = SHIPPED + FIXTURES
INTERNET = "203.0.113.10"


def addresses(vpc_cidr: str) -> dict[str, str]:
    network = ipaddress.ip_network(vpc_cidr)
    return {
        "control-plane": str(network.network_address + 10),  # an interface of the API server in the VPC
        "vpc": str(network.network_address + 300),
        "internet": INTERNET,
        "pod-identity-agent": POD_IDENTITY_AGENT.split("/")[0],
    }


def judged(namespaces: dict, config, namespace: str, path: RuntimePath) -> list[tuple[str, bool]]:
    """(peer, allowed) for every peer the path names."""
    _, policies = namespaces[namespace]
    own_labels = namespaces[namespace][0]["metadata"].get("labels", {})
    ips = addresses(config.cluster.vpc.cidr)
    if path.peer in ips:
        ok = allowed(
            policies,
            namespace=namespace,
            direction=path.direction,
            peer=Peer(ip=ips[path.peer]),
            protocol="TCP",
            port=path.port,
            pod_labels=dict(path.pod_labels),
        )
        return [(path.peer, ok)]
    if path.peer == "tenants":
        others = [tenant.name for tenant in config.workloads.tenants]
    elif path.peer.startswith("namespace:"):
        others = [path.peer.split(":", 1)[1]]
    else:
        raise AssertionError(f"unknown peer {path.peer}")
    results = []
    reverse = "Ingress" if path.direction == "Egress" else "Egress"
    for other in others:
        other_labels = namespaces[other][0]["metadata"].get("labels", {})
        here = allowed(
            policies,
            namespace=namespace,
            direction=path.direction,
            peer=Peer(namespace=other, labels=dict(path.peer_labels), namespace_labels=other_labels),
            protocol="TCP",
            port=path.port,
            pod_labels=dict(path.pod_labels),
        )
        there = allowed(
            namespaces[other][1],
            namespace=other,
            direction=reverse,
            peer=Peer(namespace=namespace, labels=dict(path.pod_labels), namespace_labels=own_labels),
            protocol="TCP",
            port=path.port,
            pod_labels=dict(path.peer_labels),
        )
        results.append((other, here and there))
    return results


@pytest.mark.parametrize("profile", ALL)
def test_every_declared_path_is_open_or_closed_as_declared(synthesized, profile):
    config = synthesized.configs[profile]
    namespaces = created_namespaces(synthesized, profile)
    checked = 0
    for addon in ADDONS:
        if not addon.enabled(config) or not addon.definition.creates_namespace:
            continue
        settings = addon.settings(config)
        namespace = addon.release_namespace(settings)
        for path in addon.runtime_paths(settings):
            for peer, ok in judged(namespaces, config, namespace, path):
                checked += 1
                state = "denied" if path.open else "allowed"
                assert ok is path.open, f"{addon.key}: {path.what} ({path.direction} {peer}:{path.port}) is {state}"
    assert checked


def test_the_judge_sees_a_closed_path_at_either_end():
    """A path allowed at the add-on's pods but denied at the tenant's (or the reverse) is closed:
    the VPC CNI enforces both namespaces' policies."""
    deny = {
        "metadata": {"namespace": "t", "name": "deny"},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
    }
    out = {
        "metadata": {"namespace": "a", "name": "out"},
        "spec": {
            "podSelector": {},
            "policyTypes": ["Egress"],
            "egress": [{"ports": [{"protocol": "TCP", "port": 80}]}],
        },
    }
    namespaces = {
        "a": ({"metadata": {"name": "a", "labels": {}}}, [out]),
        "t": ({"metadata": {"name": "t", "labels": {}}}, [deny]),
    }

    config = SimpleNamespace(
        cluster=SimpleNamespace(vpc=SimpleNamespace(cidr="10.0.0.0/16")),
        workloads=SimpleNamespace(tenants=[SimpleNamespace(name="t")]),
    )
    path = RuntimePath(what="x", direction="Egress", peer="tenants", port=80)
    assert judged(namespaces, config, "a", path) == [("t", False)]
