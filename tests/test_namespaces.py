"""Every namespace the platform creates carries Pod Security Admission labels and a default-deny
NetworkPolicy with explicit allows; privileged ones say why in code."""

from __future__ import annotations

import pytest

from addons.registry import ADDONS
from components.k8s.namespaces import NamespaceGuard
from manifests.checks.target import NAMESPACE as VALIDATION_NAMESPACE
from manifests.render import render
from tests.cases import FIXTURES, SHIPPED
from tests.netpol import Peer, allowed
from tests.synth_helpers import resources

ALL = SHIPPED + FIXTURES
PSA = "pod-security.kubernetes.io/"


def manifests(synthesized, profile: str, layer: str) -> list[dict]:
    # Objects spelled out in the stack (the MPI Operator's come from its release manifest at plan time).
    return [
        b["manifest"]
        for b in resources(synthesized.stack(profile, layer), "kubernetes_manifest").values()
        if isinstance(b["manifest"], dict)
    ]


def created_namespaces(synthesized, profile: str) -> dict[str, tuple[dict, list[dict]]]:
    """Namespace name -> (Namespace object, its NetworkPolicies), from the addons and workloads
    layers and the validation manifests."""
    found = manifests(synthesized, profile, "addons") + manifests(synthesized, profile, "workloads")
    for objects in render(synthesized.configs[profile]).values():
        found += objects
    namespaces = {o["metadata"]["name"]: o for o in found if o["kind"] == "Namespace"}
    return {
        name: (ns, [o for o in found if o["kind"] == "NetworkPolicy" and o["metadata"]["namespace"] == name])
        for name, ns in namespaces.items()
    }


@pytest.mark.parametrize("profile", ALL)
def test_every_created_namespace_is_guarded(synthesized, profile):
    namespaces = created_namespaces(synthesized, profile)
    config = synthesized.configs[profile]
    expected = {t.name for t in config.workloads.tenants}
    expected |= {
        a.release_namespace(a.settings(config)) for a in ADDONS if a.enabled(config) and a.definition.creates_namespace
    }
    if config.cluster.gpu_node_groups:
        expected.add(VALIDATION_NAMESPACE)
    assert set(namespaces) == expected
    for name, (namespace, policies) in namespaces.items():
        labels = namespace["metadata"]["labels"]
        assert labels[f"{PSA}enforce"] in ("baseline", "privileged"), name
        assert labels[f"{PSA}warn"] == labels[f"{PSA}audit"] == "restricted", name
        specs = {p["metadata"]["name"]: p["spec"] for p in policies}
        assert specs["default-deny"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}, name
        # Nothing from another team's namespace gets in.
        assert not allowed(
            policies, namespace=name, direction="Ingress", peer=Peer(namespace="some-team"), protocol="TCP", port=8080
        ), name
        assert not allowed(
            policies, namespace=name, direction="Egress", peer=Peer(ip="169.254.169.254"), protocol="TCP", port=80
        ), f"{name} reaches IMDS"


@pytest.mark.parametrize("profile", ["gpu-validation", "jark"])
def test_only_system_addons_are_privileged_and_say_why(synthesized, profile):
    privileged = {
        name
        for name, (ns, _) in created_namespaces(synthesized, profile).items()
        if ns["metadata"]["labels"][f"{PSA}enforce"] == "privileged"
    }
    assert privileged == {"monitoring", "gpu-operator"}
    assert all(a.privileged_because for a in ADDONS if a.pod_security == "privileged")


def test_a_privileged_namespace_needs_a_reason():
    with pytest.raises(ValueError, match="say why"):
        NamespaceGuard(name="x", pod_security="privileged")


def test_helm_releases_go_only_into_guarded_or_system_namespaces(synthesized):
    for profile in ALL:
        guarded = set(created_namespaces(synthesized, profile))
        for release in resources(synthesized.stack(profile, "addons"), "helm_release").values():
            assert release["namespace"] in guarded | {"kube-system"}, release["name"]
            assert release["create_namespace"] is False, "the platform creates namespaces, with their guards"
