"""EKS control plane: API-mode access entries, KMS envelope encryption, control-plane logs."""

from __future__ import annotations

from dataclasses import dataclass

from cdktf import ITerraformDependable, Precondition, TerraformResourceLifecycle
from cdktf_cdktf_provider_aws.cloudwatch_log_group import CloudwatchLogGroup
from cdktf_cdktf_provider_aws.data_aws_caller_identity import DataAwsCallerIdentity
from cdktf_cdktf_provider_aws.data_aws_iam_session_context import DataAwsIamSessionContext
from cdktf_cdktf_provider_aws.eks_access_entry import EksAccessEntry
from cdktf_cdktf_provider_aws.eks_access_policy_association import (
    EksAccessPolicyAssociation,
    EksAccessPolicyAssociationAccessScope,
)
from cdktf_cdktf_provider_aws.eks_cluster import (
    EksCluster,
    EksClusterAccessConfig,
    EksClusterEncryptionConfig,
    EksClusterEncryptionConfigProvider,
    EksClusterKubernetesNetworkConfig,
    EksClusterVpcConfig,
)
from constructs import Construct

from components.expressions import expression, string_literal
from components.iam import ServiceRole, ServiceRoleProps, allow, policy_document
from components.kms import account_administered_key
from components.network import admit_https


@dataclass(frozen=True)
class ControlPlaneDefaults:
    log_retention_days: int = 90
    admin_policy: str = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"


DEFAULTS = ControlPlaneDefaults()


@dataclass(frozen=True, kw_only=True)
class ControlPlaneProps:
    name: str
    """The cluster's name."""
    kubernetes_version: str
    """EKS Kubernetes version, e.g. 1.34."""
    subnet_ids: tuple[str, ...]
    """Private subnets for the control plane's network interfaces."""
    public_access_cidrs: tuple[str, ...]
    """CIDRs that may reach the public endpoint; empty: no public endpoint."""
    private_access_cidrs: tuple[str, ...] = ()
    """Networks outside the VPC (a VPN, a peered network) admitted to the private endpoint on 443."""
    private_access_security_groups: tuple[str, ...] = ()
    """Security groups in the VPC (a bastion, an SSM forwarding host) admitted to the private endpoint on 443."""
    log_types: tuple[str, ...]
    """Control-plane log types sent to CloudWatch."""
    service_ipv4_cidr: str
    """The Kubernetes Service CIDR, set explicitly so the NetworkPolicies can name the API's ClusterIP."""
    admin_principal_arns: tuple[str, ...]
    """IAM principals granted cluster admin, besides the deploying principal."""


class EksControlPlane(Construct):
    """Exposes `name`, `endpoint`, `certificate_authority`, `cluster_security_group_id`,
    `kms_key_arn` and `ready` (what must exist before anything talks to the API)."""

    def __init__(self, scope: Construct, id_: str, *, props: ControlPlaneProps):
        super().__init__(scope, id_)
        caller = DataAwsCallerIdentity(self, "caller")
        self._account_id = caller.account_id
        # The account administers the key through IAM; nothing else is granted here.
        key = account_administered_key(
            self,
            "secrets-key",
            description=f"EKS secrets envelope encryption for {props.name}",
            alias=f"{props.name}-eks-secrets",
            account_id=caller.account_id,
        )
        role = ServiceRole(
            self,
            "cluster-role",
            props=ServiceRoleProps(
                name=f"{props.name}-cluster",
                service="eks.amazonaws.com",
                managed_policies=("AmazonEKSClusterPolicy",),
                trust_actions=("sts:AssumeRole", "sts:TagSession"),
                # Envelope encryption: the control plane encrypts and decrypts secrets with this key only.
                inline_policy=policy_document(
                    allow(["kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:ListGrants"], key.arn)
                ),
            ),
        )
        # Created before the cluster so retention applies from the first log line.
        logs = CloudwatchLogGroup(
            self,
            "logs",
            name=f"/aws/eks/{props.name}/cluster",
            retention_in_days=DEFAULTS.log_retention_days,
        )
        cluster = EksCluster(
            self,
            "cluster",
            name=props.name,
            version=props.kubernetes_version,
            role_arn=role.arn,
            vpc_config=EksClusterVpcConfig(
                subnet_ids=list(props.subnet_ids),
                endpoint_private_access=True,
                endpoint_public_access=bool(props.public_access_cidrs),
                public_access_cidrs=list(props.public_access_cidrs) or None,
            ),
            # Access entries only; the creator gets admin through an explicit entry below, so
            # access is visible in code and does not depend on who ran the first apply.
            access_config=EksClusterAccessConfig(
                authentication_mode="API",
                bootstrap_cluster_creator_admin_permissions=False,
            ),
            encryption_config=EksClusterEncryptionConfig(
                resources=["secrets"],
                provider=EksClusterEncryptionConfigProvider(key_arn=key.arn),
            ),
            enabled_cluster_log_types=list(props.log_types),
            kubernetes_network_config=EksClusterKubernetesNetworkConfig(service_ipv4_cidr=props.service_ipv4_cidr),
            depends_on=[*role.attachments, logs],
        )
        self._name = cluster.name
        self._endpoint = cluster.endpoint
        self._certificate_authority = cluster.certificate_authority.get(0).data
        self._cluster_security_group_id = cluster.vpc_config.cluster_security_group_id
        self._kms_key_arn = key.arn

        # The private endpoint's network interfaces carry the cluster security group, which admits
        # only itself; whoever else may call the API is named in the profile.
        def admit(rule_id: str, named: str, *, cidr: str | None = None, group: str | None = None) -> None:
            admit_https(
                self,
                rule_id,
                security_group_id=self._cluster_security_group_id,
                description=f"Kubernetes API from {named}",
                cidr=cidr,
                group_id=group,
            )

        for index, cidr in enumerate(props.private_access_cidrs):
            admit(f"api-from-network-{index}", f"{cidr} (cluster.private_endpoint_access.cidrs)", cidr=cidr)
        for group in props.private_access_security_groups:
            admit(f"api-from-{group}", f"{group} (cluster.private_endpoint_access.security_groups)", group=group)

        # The deploying principal (an assumed role resolves to its role ARN) plus listed admins.
        # The first deployer's entry stays: were it to follow whoever applies, a teammate's or CI's
        # apply would move cluster admin away from everyone else (list them in admin_principal_arns).
        session = DataAwsIamSessionContext(self, "caller-session", arn=caller.arn)
        admins = {"deployer": session.issuer_arn}
        admins.update({f"admin-{index}": arn for index, arn in enumerate(props.admin_principal_arns)})
        self._ready: list[ITerraformDependable] = [cluster]
        deployer: EksAccessEntry | None = None
        for key_, principal in admins.items():
            if deployer is None:
                kept = TerraformResourceLifecycle(ignore_changes=["principal_arn"])
            else:
                # EKS refuses a second entry for one principal: a listed admin who is also the
                # first deployer would fail the apply with a bare "resource in use".
                kept = TerraformResourceLifecycle(
                    precondition=[
                        Precondition(
                            condition=expression(f"{deployer.fqn}.principal_arn != {string_literal(principal)}"),
                            error_message=f"{principal} deployed this cluster first and already has an access entry "
                            "with cluster admin: remove it from cluster.admin_principal_arns.",
                        )
                    ]
                )
            entry = EksAccessEntry(
                self,
                f"{key_}-access",
                cluster_name=cluster.name,
                principal_arn=principal,
                type="STANDARD",
                lifecycle=kept,
            )
            association = EksAccessPolicyAssociation(
                self,
                f"{key_}-admin",
                cluster_name=cluster.name,
                principal_arn=entry.principal_arn,
                policy_arn=DEFAULTS.admin_policy,
                access_scope=EksAccessPolicyAssociationAccessScope(type="cluster"),
                lifecycle=kept if deployer is None else None,
            )
            self._ready.append(association)
            deployer = deployer or entry

    @property
    def name(self) -> str:
        """The cluster's name (a token: depends on the cluster)."""
        return self._name

    @property
    def endpoint(self) -> str:
        """The API server endpoint."""
        return self._endpoint

    @property
    def certificate_authority(self) -> str:
        """Base64 cluster CA certificate."""
        return self._certificate_authority

    @property
    def cluster_security_group_id(self) -> str:
        """The security group EKS creates for the cluster and its nodes."""
        return self._cluster_security_group_id

    @property
    def kms_key_arn(self) -> str:
        """The secrets envelope-encryption key."""
        return self._kms_key_arn

    @property
    def ready(self) -> list[ITerraformDependable]:
        """What must exist before anything talks to the API."""
        return self._ready

    @property
    def account_id(self) -> str:
        """The account the cluster runs in."""
        return self._account_id
