"""Interface VPC endpoints, so private nodes reach AWS APIs (ECR, STS, ...) without the NAT.

Each endpoint admits only principals of the platform's own account (aws:PrincipalAccount): a
credential of another account, found on a node or in a pod, cannot use this private path to reach
its own account's APIs (the NAT and the global endpoints remain: this narrows a path, it is not a
data perimeter). Every caller the platform has is its own (the node role, Pod Identity roles
through eks-auth, the controllers' roles); pulls of AWS-owned images (the EKS add-ons' registries)
are made as the node role, whatever account owns the repository. STS also admits the two
federated calls, which are unsigned (AssumeRoleWithWebIdentity for IRSA-style charts, and SAML):
the role's trust policy decides those. eks-auth gets no policy: EKS documents endpoint policies
for its `eks` endpoint only, and a service without support refuses any but the full-access one.
Cross-account Pod Identity (a target role in another account) would be refused here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from cdktf_cdktf_provider_aws.security_group import SecurityGroup
from cdktf_cdktf_provider_aws.vpc_endpoint import VpcEndpoint
from constructs import Construct

from components.network import INGRESS_RULE, admit_https


@dataclass(frozen=True, kw_only=True)
class InterfaceEndpointsProps:
    name: str
    """Prefix of the endpoints' names."""
    region: str
    """The VPC's region."""
    vpc_id: str
    """The VPC the endpoints live in."""
    subnet_ids: tuple[str, ...]
    """Private subnets, one endpoint interface each."""
    services: tuple[str, ...]
    """Service names after com.amazonaws.<region>., e.g. "ecr.api", "sts"."""
    client_security_group_id: str
    """The cluster security group: its nodes and pods connect (HTTPS)."""
    admitted_cidrs: tuple[str, ...] = ()
    """Networks outside the VPC admitted to the private API (a VPN's clients, a peered VPC): the
    endpoints' private DNS answers for them too, so they must be admitted here as well."""
    admitted_security_groups: tuple[str, ...] = ()
    """Groups of hosts admitted to the private API (a bastion, the SSM forward's instance, a CI
    runner): the same reason."""
    account_id: str
    """The platform's account: only its principals may use the endpoints."""


# Services whose endpoints take no policy but the full-access one.
WITHOUT_POLICY = ("eks-auth",)
# The STS calls that carry no AWS signature (the identity provider's token is the credential).
FEDERATED_STS = ["sts:AssumeRoleWithWebIdentity", "sts:AssumeRoleWithSAML"]


def own_account_policy(account_id: str, service: str) -> str | None:
    """The endpoint policy: any action by principals of `account_id` (and on STS the federated
    calls); None for a service that takes none."""
    if service in WITHOUT_POLICY:
        return None
    statements: list[dict[str, object]] = [
        {
            "Sid": "OwnAccountPrincipalsOnly",
            "Effect": "Allow",
            "Principal": "*",
            "Action": "*",
            "Resource": "*",
            "Condition": {"StringEquals": {"aws:PrincipalAccount": account_id}},
        }
    ]
    if service == "sts":
        statements.append(
            {"Sid": "FederatedSignIn", "Effect": "Allow", "Principal": "*", "Action": FEDERATED_STS, "Resource": "*"}
        )
    return json.dumps({"Version": "2012-10-17", "Statement": statements})


class InterfaceEndpoints(Construct):
    def __init__(self, scope: Construct, id_: str, *, props: InterfaceEndpointsProps):
        super().__init__(scope, id_)
        endpoints_group_id = SecurityGroup(
            self,
            "group",
            name=f"{props.name}-endpoints",
            vpc_id=props.vpc_id,
            # A new description would replace the group: the rules below say who else is admitted.
            description="HTTPS to interface endpoints from cluster nodes",
            tags={"Name": f"{props.name}-endpoints"},
        ).id  # each attribute read is a jsii round trip: read once
        INGRESS_RULE.add(
            self,
            "https-from-nodes",
            security_group_id=endpoints_group_id,
            referenced_security_group_id=props.client_security_group_id,
            ip_protocol="tcp",
            from_port=443,
            to_port=443,
            description="HTTPS from cluster nodes",
        )

        # With private DNS, every host in the VPC (and every network resolving through it) reaches
        # ssm, sts, ec2, ecr and eks-auth through these interfaces: whoever may call the private
        # API may call these, or the SSM forward cannot start and Terraform there cannot reach STS.
        def admit(rule_id: str, named: str, *, cidr: str | None = None, group_id: str | None = None) -> None:
            description = f"HTTPS from {named}"
            admit_https(
                self,
                rule_id,
                security_group_id=endpoints_group_id,
                description=description,
                cidr=cidr,
                group_id=group_id,
            )

        for index, cidr in enumerate(props.admitted_cidrs):
            admit(f"https-from-network-{index}", f"{cidr} (cluster.private_endpoint_access.cidrs)", cidr=cidr)
        for admitted in props.admitted_security_groups:
            admit(
                f"https-from-{admitted}",
                f"{admitted} (cluster.private_endpoint_access.security_groups)",
                group_id=admitted,
            )
        for service in props.services:
            VpcEndpoint(
                self,
                service.replace(".", "-"),
                vpc_id=props.vpc_id,
                service_name=f"com.amazonaws.{props.region}.{service}",
                vpc_endpoint_type="Interface",
                private_dns_enabled=True,
                subnet_ids=list(props.subnet_ids),
                security_group_ids=[endpoints_group_id],
                policy=own_account_policy(props.account_id, service),
                tags={"Name": f"{props.name}-{service}"},
            )
