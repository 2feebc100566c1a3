"""Reaching a private API endpoint: who the cluster security group admits (from the profile), and
where the Kubernetes layers' providers connect (the endpoint, or the local forward TF_VAR_api_tunnel
names) with TLS checked against the endpoint's own name either way. The provider settings are
evaluated by the real Terraform. kubectl's side and the deploy/destroy paths through a forward are
in tests/test_operate.py and tests/test_preflight.py."""

from __future__ import annotations

import json
import re

import pytest

from tests.cases import FIXTURES, QUICK, SHIPPED, profiles_where
from tests.synth_helpers import resources

ENDPOINT = "https://0123ABCD.gr7.eu-west-1.eks.amazonaws.com"


def api_rules(stack: dict) -> list[dict]:
    """Ingress rules on the security group EKS creates for the cluster (its API's interfaces)."""
    (eks_id,) = resources(stack, "aws_eks_cluster")
    group = f"${{aws_eks_cluster.{eks_id}.vpc_config[0].cluster_security_group_id}}"
    return [
        rule
        for rule in resources(stack, "aws_vpc_security_group_ingress_rule").values()
        if rule["security_group_id"] == group
    ]


def test_the_profile_names_who_reaches_the_private_endpoint_on_443_only(synthesized):
    rules = api_rules(synthesized.stack("s3-state", "cluster"))
    admitted = sorted((rule.get("cidr_ipv4") or rule["referenced_security_group_id"]) for rule in rules)
    assert admitted == ["172.31.128.0/22", "sg-0123456789abcdef0"]
    assert all((r["ip_protocol"], r["from_port"], r["to_port"]) == ("tcp", 443, 443) for r in rules)


@pytest.mark.parametrize("profile", [p for p in SHIPPED + FIXTURES if p != "s3-state"])
def test_without_settings_the_cluster_security_group_admits_no_one_else(synthesized, profile):
    assert api_rules(synthesized.stack(profile, "cluster")) == []


def endpoint_rules(stack: dict) -> dict[str, list[dict]]:
    """Ingress rules per security group carried by the interface endpoints."""
    groups = {
        group
        for endpoint in resources(stack, "aws_vpc_endpoint").values()
        for group in endpoint.get("security_group_ids", [])
    }
    return {
        group: [
            r
            for r in resources(stack, "aws_vpc_security_group_ingress_rule").values()
            if r["security_group_id"] == group
        ]
        for group in groups
    }


WITH_INTERFACE_ENDPOINTS = profiles_where(lambda config: bool(config.cluster.vpc.interface_endpoints))


def test_the_private_access_fixture_has_interface_endpoints():
    assert "s3-state" in WITH_INTERFACE_ENDPOINTS or QUICK
    assert {"p5-training", "p5en-training"} <= set(WITH_INTERFACE_ENDPOINTS) or QUICK


@pytest.mark.parametrize("profile", WITH_INTERFACE_ENDPOINTS)
def test_every_host_admitted_to_the_api_reaches_the_interface_endpoints(synthesized, profile):
    """Private DNS sends every host that resolves through the VPC to the endpoints' interfaces:
    a bastion, VPN or CI runner admitted to the API must be admitted there too (HTTPS), besides the
    cluster security group itself, or the SSM forward and Terraform's STS calls fail from it."""
    stack = synthesized.stack(profile, "cluster")
    (eks_id,) = resources(stack, "aws_eks_cluster")
    cluster_group = f"${{aws_eks_cluster.{eks_id}.vpc_config[0].cluster_security_group_id}}"
    api = {rule.get("cidr_ipv4") or rule["referenced_security_group_id"] for rule in api_rules(stack)}
    groups = endpoint_rules(stack)
    assert groups, "interface endpoints without a security group"
    for rules in groups.values():
        admitted = {rule.get("cidr_ipv4") or rule["referenced_security_group_id"] for rule in rules}
        assert admitted == api | {cluster_group}
        assert all((r["ip_protocol"], r["from_port"], r["to_port"]) == ("tcp", 443, 443) for r in rules)


def provider_settings(stack: dict) -> dict[str, str]:
    """The providers' connection settings, with the cluster layer's endpoint in place of the
    remote-state read (a local value), as a tiny configuration's outputs."""
    kubernetes = stack["provider"]["kubernetes"][0]
    settings = {"kubernetes_host": kubernetes["host"], "kubernetes_tls_server_name": kubernetes["tls_server_name"]}
    if "helm" in stack["provider"]:
        helm = stack["provider"]["helm"][0]["kubernetes"]
        settings |= {"helm_host": helm["host"], "helm_tls_server_name": helm["tls_server_name"]}
    remote = re.compile(r"data\.terraform_remote_state\.[\w-]+\.outputs\.[\w-]+endpoint")
    return {name: remote.sub("local.endpoint", value) for name, value in settings.items()}


@pytest.mark.parametrize("layer", ["addons", "workloads"])
def test_terraform_connects_to_the_forward_and_checks_tls_as_the_endpoint(synthesized, terraform, tmp_path, layer):
    stack = synthesized.stack("gpu-validation", layer)
    settings = provider_settings(stack)
    assert all("local.endpoint" in value for value in settings.values()), settings
    config = {
        "variable": {"api_tunnel": stack["variable"]["api_tunnel"]},
        "locals": {"endpoint": ENDPOINT},
        "output": {name: {"value": value} for name, value in settings.items()},
    }
    (tmp_path / "main.tf.json").write_text(json.dumps(config))
    assert terraform.run(tmp_path, "init", "-backend=false", "-input=false", "-no-color").returncode == 0

    def evaluated(tunnel: str | None) -> dict[str, str]:
        env = {"TF_VAR_api_tunnel": tunnel} if tunnel is not None else {}
        applied = terraform.run(tmp_path, "apply", "-auto-approve", "-input=false", "-no-color", env=env)
        assert applied.returncode == 0, applied.stderr + applied.stdout
        shown = json.loads(terraform.run(tmp_path, "output", "-json").stdout)
        return {name: body["value"] for name, body in shown.items()}

    hosts = [name for name in settings if name.endswith("_host")]
    names = [name for name in settings if name.endswith("_tls_server_name")]
    direct = evaluated(None)
    assert {direct[h] for h in hosts} == {ENDPOINT}
    forwarded = evaluated("https://localhost:8443")
    assert {forwarded[h] for h in hosts} == {"https://localhost:8443"}
    for shown in (direct, forwarded):  # the certificate is checked as the endpoint's, always
        assert {shown[n] for n in names} == {"0123ABCD.gr7.eu-west-1.eks.amazonaws.com"}
    refused = terraform.run(
        tmp_path,
        "apply",
        "-auto-approve",
        "-input=false",
        "-no-color",
        env={"TF_VAR_api_tunnel": "https://evil.example:443"},
    )
    assert refused.returncode != 0 and "api_tunnel must be empty or https://localhost:PORT" in refused.stderr
