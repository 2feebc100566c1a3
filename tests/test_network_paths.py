"""Run-time network paths, judged as the VPC CNI judges them (tests/netpol.py, pre-DNAT egress):
every namespace the platform creates reaches the API server through its ClusterIP and DNS through
kube-dns's, on every shipped and fixture profile; tenants stay apart and away from IMDS."""

from __future__ import annotations

import ipaddress

import pytest

from components.k8s.namespaces import ApiServerAddresses, egress_to_api_server
from tests.cases import FIXTURES, SHIPPED, profiles_where
from tests.netpol import Peer, Service, ServicePort, allowed, allowed_to_service
from tests.test_namespaces import created_namespaces

ALL = SHIPPED + FIXTURES
API_IP = "172.20.0.1"
# `default/kubernetes`: no selector (the API server writes its endpoints: the control plane's
# network interfaces in the VPC), port 443 -> 443.
KUBERNETES = Service(
    namespace="default", name="kubernetes", cluster_ip=API_IP, selector=None, ports=(ServicePort(443, 443),)
)


def kube_dns(cluster_ip: str) -> Service:
    # EKS's CoreDNS Service: kube-system/kube-dns, selector k8s-app=kube-dns, 53 -> 53 (UDP and TCP).
    return Service(
        namespace="kube-system",
        name="kube-dns",
        cluster_ip=cluster_ip,
        selector={"k8s-app": "kube-dns"},
        ports=(ServicePort(53, 53, "UDP"), ServicePort(53, 53, "TCP")),
    )


def policy(namespace: str, name: str, spec: dict) -> dict:
    return {"metadata": {"namespace": namespace, "name": name}, "spec": {"podSelector": {}, **spec}}


def test_the_clusterip_rule_refuses_what_the_pod_ip_model_allowed():
    """The old allow (VPC CIDR only): a model that treats the Service as its endpoints (the API
    server's network interfaces in the VPC) allows it; the data plane judges the ClusterIP and
    refuses it. The new allow (ClusterIP /32 as well) passes both."""
    deny = policy("ns", "default-deny", {"policyTypes": ["Ingress", "Egress"]})
    old = [
        deny,
        policy(
            "ns",
            "allow-api-server",
            {
                "policyTypes": ["Egress"],
                "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/16"}}], "ports": [{"protocol": "TCP", "port": 443}]}],
            },
        ),
    ]
    endpoint_ip = Peer(ip="10.0.12.34")  # where kube-proxy's DNAT would send it
    assert allowed(old, namespace="ns", direction="Egress", peer=endpoint_ip, protocol="TCP", port=443)
    assert not allowed_to_service(old, namespace="ns", service=KUBERNETES, port=443)
    new = [
        deny,
        policy(
            "ns",
            "allow-api-server",
            egress_to_api_server(ApiServerAddresses(vpc_cidr="10.0.0.0/16", service_ip=API_IP)),
        ),
    ]
    assert allowed_to_service(new, namespace="ns", service=KUBERNETES, port=443)
    assert not allowed_to_service(new, namespace="ns", service=KUBERNETES, port=6443)


def test_selector_peers_reach_a_services_clusterip_only_when_the_selector_matches():
    deny = policy("ns", "default-deny", {"policyTypes": ["Egress"]})
    dns = policy(
        "ns",
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
    )
    assert allowed_to_service([deny, dns], namespace="ns", service=kube_dns("172.20.0.10"), port=53, protocol="UDP")
    other = Service(
        namespace="kube-system",
        name="metrics",
        cluster_ip="172.20.0.11",
        selector={"k8s-app": "m"},
        ports=(ServicePort(53, 53, "UDP"),),
    )
    assert not allowed_to_service([deny, dns], namespace="ns", service=other, port=53, protocol="UDP")
    # The 'monitoring works by luck' case: an all-namespaces, all-pods peer matches even the
    # selector-less kubernetes Service (the empty selector matches the empty label set).
    everywhere = policy("ns", "scrape", {"policyTypes": ["Egress"], "egress": [{"to": [{"namespaceSelector": {}}]}]})
    assert allowed_to_service([deny, everywhere], namespace="ns", service=KUBERNETES, port=443)
    assert not allowed_to_service([deny, dns], namespace="ns", service=KUBERNETES, port=443)


@pytest.mark.parametrize("profile", ALL)
def test_every_created_namespace_reaches_the_api_and_dns_through_their_clusterips(synthesized, profile):
    config = synthesized.configs[profile].cluster
    service_cidr = ipaddress.IPv4Network(config.service_cidr)
    api = Service(
        namespace="default",
        name="kubernetes",
        cluster_ip=config.api_service_ip,
        selector=None,
        ports=(ServicePort(443, 443),),
    )
    assert ipaddress.IPv4Address(api.cluster_ip) in service_cidr
    assert not service_cidr.overlaps(ipaddress.IPv4Network(config.vpc.cidr))
    dns = kube_dns(str(service_cidr.network_address + 10))
    unreachable = {}
    for name, (_, policies) in created_namespaces(synthesized, profile).items():
        paths = {
            "API ClusterIP": allowed_to_service(policies, namespace=name, service=api, port=443),
            "DNS over UDP": allowed_to_service(policies, namespace=name, service=dns, port=53, protocol="UDP"),
            "DNS over TCP": allowed_to_service(policies, namespace=name, service=dns, port=53),
        }
        if not all(paths.values()):
            unreachable[name] = [path for path, ok in paths.items() if not ok]
    assert unreachable == {}


@pytest.mark.parametrize("profile", ALL)
def test_paths_that_must_stay_closed(synthesized, profile):
    namespaces = created_namespaces(synthesized, profile)
    tenants = [t.name for t in synthesized.configs[profile].workloads.tenants]
    for tenant in tenants:
        policies = namespaces[tenant][1]
        assert not allowed(
            policies, namespace=tenant, direction="Egress", peer=Peer(ip="169.254.169.254"), protocol="TCP", port=80
        ), f"{tenant} reaches IMDS"
        for other in tenants:
            if other != tenant:
                assert not allowed(
                    policies,
                    namespace=tenant,
                    direction="Ingress",
                    peer=Peer(namespace=other),
                    protocol="TCP",
                    port=8265,
                ), f"{other} reaches {tenant}"


def ray_head_service(namespace: str) -> Service:
    # The head Service KubeRay makes for a RayCluster: selects the head pod of that cluster.
    return Service(
        namespace=namespace,
        name="demo-head-svc",
        cluster_ip="172.20.5.5",
        selector={"ray.io/cluster": "demo", "ray.io/node-type": "head", "ray.io/identifier": "demo-head"},
        ports=(ServicePort(8265, 8265), ServicePort(8000, 8000), ServicePort(6379, 6379)),
    )


WITH_RAY_TENANTS = profiles_where(lambda c: c.addons.kuberay.enabled and bool(c.workloads.tenants))


@pytest.mark.every_profile
def test_some_profiles_run_ray_for_tenants():
    assert WITH_RAY_TENANTS


@pytest.mark.parametrize("profile", WITH_RAY_TENANTS)
def test_kuberay_reaches_tenant_ray_heads_and_nothing_else_there(synthesized, profile):
    config = synthesized.configs[profile]
    namespaces = created_namespaces(synthesized, profile)
    operator_policies = namespaces["ray-system"][1]
    head = {"ray.io/cluster": "demo", "ray.io/node-type": "head"}
    for tenant in (t.name for t in config.workloads.tenants):
        service = ray_head_service(tenant)
        for port in (8265, 8000):  # dashboard (RayJob), Serve (RayService)
            assert allowed_to_service(operator_policies, namespace="ray-system", service=service, port=port)
            assert allowed(
                namespaces[tenant][1],
                namespace=tenant,
                direction="Ingress",
                pod_labels=head,
                peer=Peer(namespace="ray-system"),
                protocol="TCP",
                port=port,
            )
        assert not allowed_to_service(operator_policies, namespace="ray-system", service=service, port=6379)
        assert not allowed(
            namespaces[tenant][1],
            namespace=tenant,
            direction="Ingress",
            pod_labels={"app": "x"},
            peer=Peer(namespace="ray-system"),
            protocol="TCP",
            port=8265,
        )


@pytest.mark.parametrize("profile", profiles_where(lambda c: c.addons.jupyterhub.enabled))
def test_the_hub_reaches_its_identity_provider(synthesized, profile):
    """Sign-in needs the hub to call the provider's token and user-info endpoints (https, on the
    internet); the namespace's default deny refused it, so nobody could log in."""
    _, policies = created_namespaces(synthesized, profile)["jupyterhub"]
    provider = Peer(ip="203.0.113.10")
    hub = {"app": "jupyterhub", "component": "hub"}
    assert allowed(
        policies, namespace="jupyterhub", direction="Egress", peer=provider, protocol="TCP", port=443, pod_labels=hub
    )
    assert not allowed(
        policies, namespace="jupyterhub", direction="Egress", peer=provider, protocol="TCP", port=80, pod_labels=hub
    )


def test_an_internet_facing_hub_admits_its_source_ranges_at_the_proxy_only():
    from addons.jupyterhub import JupyterHubExposure
    from addons.jupyterhub.install import PROXY_HTTP_PORT, PROXY_POD, load_balancer_ingress

    exposure = JupyterHubExposure(
        type="public_nlb_tls",
        acm_certificate_arn="arn:aws:acm:us-west-2:123456789012:certificate/abc-123",
        source_cidrs=["198.51.100.0/24"],
    )
    deny = policy("jupyterhub", "default-deny", {"policyTypes": ["Ingress", "Egress"]})
    lb = {
        "metadata": {"namespace": "jupyterhub", "name": "allow-load-balancer"},
        "spec": load_balancer_ingress(exposure, vpc_cidr="10.0.0.0/16"),
    }
    policies = [deny, lb]
    client, stranger, node = Peer(ip="198.51.100.7"), Peer(ip="192.0.2.1"), Peer(ip="10.0.3.4")
    hub = {"app": "jupyterhub", "component": "hub"}

    def reach(peer, labels, port=PROXY_HTTP_PORT):
        return allowed(
            policies,
            namespace="jupyterhub",
            direction="Ingress",
            peer=peer,
            protocol="TCP",
            port=port,
            pod_labels=labels,
        )

    assert reach(client, PROXY_POD) and reach(node, PROXY_POD)
    assert not reach(stranger, PROXY_POD) and not reach(client, hub) and not reach(client, PROXY_POD, port=8001)
