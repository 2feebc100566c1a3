"""Addons-layer settings: one model per Helm add-on, each with its enable switch and chart override."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from profiles.base import FieldProblem, HttpsUrl, K8sName, Quantity, Strict, check_cidr

ChartVersion = Annotated[str, Field(pattern=r"^v?\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$")]


class AddonConfig(Strict):
    enabled: bool = True
    """Install this add-on."""


class ReleaseConfig(AddonConfig):
    """A Helm add-on's settings: on or off, and its chart version."""

    chart_version: ChartVersion | None = Field(
        None, description="Override the pinned chart version (profiles/versions.py). Unset: the pinned one."
    )


class GpuOperatorConfig(ReleaseConfig):
    dra: bool = Field(
        False,
        description="Opt-in DRA mode: GPU Operator deploys the GPUCluster singleton instead of the "
        "ClusterPolicy. Needs Kubernetes 1.34 or later (resource.k8s.io/v1).",
    )


class MonitoringConfig(ReleaseConfig):
    grafana_admin_password_from: Literal["variable", "existing_secret"] = Field(
        "variable",
        description="variable: the sensitive Terraform variable grafana_admin_password (TF_VAR_grafana_admin_password) "
        "at apply time; existing_secret: a Secret you create in the monitoring namespace.",
    )
    grafana_admin_secret_name: K8sName = Field(
        "grafana-admin", description="With existing_secret: Secret holding keys admin-user and admin-password."
    )
    prometheus_retention_days: int = Field(15, ge=1, le=365)
    """How many days Prometheus keeps metrics."""
    prometheus_storage_gib: int = Field(50, ge=10)
    """Size of Prometheus' persistent volume, in GiB."""


class OidcConfig(Strict):
    """An OIDC client for JupyterHub (e.g. a Cognito app client). The client secret is never in the
    profile: it is read from a Secret mounted into the hub at /run/secrets/oidc."""

    client_id: str = Field(..., min_length=1)
    """The OAuth client id registered with the identity provider."""
    client_secret_name: K8sName = Field(
        "jupyterhub-oidc", description="Secret with key client-secret, in the hub namespace."
    )
    callback_url: HttpsUrl
    """JupyterHub's OAuth callback URL, e.g. https://hub.example.com/hub/oauth_callback."""
    authorize_url: HttpsUrl
    """The identity provider's authorization endpoint (https)."""
    token_url: HttpsUrl
    """The identity provider's token endpoint (https)."""
    userdata_url: HttpsUrl
    """The identity provider's user-info endpoint (https)."""
    scopes: list[str] = Field(["openid", "profile", "email"], min_length=1)
    """OAuth scopes requested at sign-in."""
    username_claim: str = Field("sub", description="A stable claim: sub never changes, unlike email.")


AcmCertificateArn = Annotated[str, Field(pattern=r"^arn:aws[a-z-]*:acm:[a-z0-9-]+:\d{12}:certificate/[0-9a-f-]+$")]


class JupyterHubExposure(Strict):
    """How users reach the hub. Never a plain-HTTP endpoint on the internet."""

    type: Literal["cluster_ip", "internal_nlb", "public_nlb_tls"] = Field(
        "cluster_ip",
        description="cluster_ip (default): no load balancer; reach the hub with kubectl port-forward or your own "
        "ingress. internal_nlb: a Network Load Balancer inside the VPC. public_nlb_tls: an internet-facing NLB "
        "that terminates TLS with acm_certificate_arn and admits only source_cidrs.",
    )
    acm_certificate_arn: AcmCertificateArn | None = Field(
        None, description="ACM certificate for the hub's host name (public_nlb_tls; optional for internal_nlb)."
    )
    source_cidrs: list[str] = Field(
        default_factory=list, description="public_nlb_tls: the client CIDRs the load balancer admits."
    )

    @model_validator(mode="after")
    def _tls_on_the_internet(self) -> JupyterHubExposure:
        if self.type == "public_nlb_tls":
            if self.acm_certificate_arn is None:
                raise FieldProblem(
                    "acm_certificate_arn",
                    None,
                    "an internet-facing hub needs TLS: name the ACM certificate for its host name",
                    allowed="arn:aws:acm:<region>:<account>:certificate/<id>",
                )
            if not self.source_cidrs:
                raise FieldProblem(
                    "source_cidrs",
                    [],
                    "an internet-facing hub admits only named client ranges",
                    allowed="one or more CIDRs, e.g. [203.0.113.0/24]",
                )
            for index, cidr in enumerate(self.source_cidrs):
                try:
                    check_cidr(cidr)
                except ValueError as error:
                    raise FieldProblem(("source_cidrs", index), cidr, str(error)) from None
        elif self.source_cidrs:
            raise FieldProblem(
                "source_cidrs",
                self.source_cidrs,
                f"{self.type} has no public listener to restrict",
                allowed="empty, or type public_nlb_tls",
            )
        return self


class JupyterHubConfig(ReleaseConfig):
    enabled: bool = False
    """Install JupyterHub (off by default; needs oidc and allowed_users)."""
    oidc: OidcConfig | None = None
    """The OpenID Connect identity provider users sign in with; required when enabled."""
    allowed_users: list[str] = Field(
        default_factory=list, description="Values of the username claim allowed to log in."
    )
    cpu_image: str = Field("quay.io/jupyter/scipy-notebook:2025-12-01", description="Pinned CPU notebook image.")
    gpu_image: str = Field(
        "quay.io/jupyter/pytorch-notebook:cuda12-2025-12-01", description="Pinned CUDA notebook image."
    )
    start_timeout_seconds: int = Field(
        1200, ge=300, description="GPU images are large: starts of many minutes are normal."
    )
    user_storage_gib: int = Field(20, ge=1)
    """Size of each user's home volume, in GiB."""
    exposure: JupyterHubExposure = Field(
        default_factory=JupyterHubExposure, description="How users reach the hub; private (ClusterIP) by default."
    )

    @model_validator(mode="after")
    def _authentication(self) -> JupyterHubConfig:
        if self.enabled and self.oidc is None:
            raise FieldProblem(
                "oidc",
                None,
                "JupyterHub needs OIDC settings: it never runs without authentication",
                allowed="client_id, callback_url, authorize_url, token_url, userdata_url",
            )
        if self.enabled and not self.allowed_users:
            raise FieldProblem(
                "allowed_users",
                [],
                "with allow_all false an empty allow-list lets nobody in",
                allowed="one or more values of the username claim",
            )
        return self


class ArgoWorkflowsConfig(ReleaseConfig):
    enabled: bool = False
    """Install Argo Workflows (off by default)."""
    namespace: K8sName = "argo"
    """Namespace for the Argo Workflows controller and server; not a tenant's or the platform's own."""
    default_active_deadline_seconds: int = Field(3600, ge=60, description="Workflows without a deadline get this one.")
    default_parallelism: int = Field(10, ge=1, description="Pods a workflow runs at once unless it says otherwise.")
    quota_cpu: Quantity = Field("64", description="ResourceQuota requests.cpu of the workflow namespace.")
    quota_memory: Quantity = Field("256Gi", description="ResourceQuota requests.memory of the workflow namespace.")
    quota_gpus: int = Field(8, ge=0, description="ResourceQuota requests.nvidia.com/gpu of the workflow namespace.")


class KarpenterConfig(ReleaseConfig):
    pass


# RDS for PostgreSQL instance classes: burstable (t3, t4g) and general-purpose or memory-optimised
# Graviton and Intel families.
DbInstanceClass = Annotated[
    str, Field(pattern=r"^db\.(t3|t4g|m5|m6g|m6i|m7g|m7i|r5|r6g|r6i|r7g|r7i)\.(micro|small|medium|large|\d*xlarge)$")
]


class MlflowDatabaseConfig(Strict):
    """MLflow's backend store: an RDS for PostgreSQL instance the storage layer creates. Its master
    password is made and rotated by RDS in Secrets Manager; it is in no profile, plan or Helm value."""

    instance_class: DbInstanceClass = Field(
        "db.t4g.micro",
        description="RDS instance class. db.t4g.micro (default) is the cheapest; tracking "
        "traffic is small next to training.",
    )
    multi_az: bool = Field(
        False,
        description="A standby in a second availability zone (twice the instance cost). Off by default: "
        "backups and the final snapshot already protect the data; turn on where tracking must survive an AZ outage.",
    )
    allocated_storage_gib: int = Field(20, ge=20, le=65536, description="gp3 storage, in GiB (RDS minimum 20).")
    max_allocated_storage_gib: int = Field(
        100,
        ge=20,
        le=65536,
        description="Storage autoscaling ceiling, in GiB; equal to allocated_storage_gib turns autoscaling off.",
    )
    backup_retention_days: int = Field(
        7,
        ge=1,
        le=35,
        description="Days of automated backups (point-in-time recovery); at least 1.",
    )

    @model_validator(mode="after")
    def _autoscaling_ceiling(self) -> MlflowDatabaseConfig:
        if self.max_allocated_storage_gib < self.allocated_storage_gib:
            raise FieldProblem(
                "max_allocated_storage_gib",
                self.max_allocated_storage_gib,
                "the autoscaling ceiling is below the allocated storage",
                allowed=f"at least allocated_storage_gib ({self.allocated_storage_gib})",
            )
        return self


class MlflowConfig(ReleaseConfig):
    """The MLflow tracking server: backend store in RDS, artifacts in S3 through the server, and
    MLflow's basic auth (every request authenticated; no anonymous reads or writes)."""

    enabled: bool = False
    """Install MLflow and create its database and artifact bucket (storage layer). Off by default."""
    database: MlflowDatabaseConfig = Field(default_factory=MlflowDatabaseConfig)
    """The RDS for PostgreSQL backend store."""
    admin_password_from: Literal["variable", "existing_secret"] = Field(
        "variable",
        description="The MLflow admin's password. variable: the sensitive Terraform variable mlflow_admin_password "
        "(TF_VAR_mlflow_admin_password) at apply time; existing_secret: a Secret you create in the mlflow "
        "namespace, named admin_secret_name, with keys username and password.",
    )
    admin_secret_name: K8sName = Field(
        "mlflow-admin", description="With existing_secret: the Secret holding the admin's username and password."
    )
    default_permission: Literal["NO_PERMISSIONS", "READ", "EDIT", "MANAGE"] = Field(
        "READ",
        description="What a signed-in user may do with experiments and models others own.",
    )


class AddonsConfig(Strict):
    gpu_operator: GpuOperatorConfig = Field(default_factory=GpuOperatorConfig)
    """NVIDIA GPU Operator (uses the driver the AL2023 NVIDIA AMI ships)."""
    efa_device_plugin: ReleaseConfig = Field(default_factory=ReleaseConfig)
    """AWS EFA Kubernetes device plugin, which advertises vpc.amazonaws.com/efa."""
    monitoring: MonitoringConfig = Field(default_factory=MonitoringConfig)
    """kube-prometheus-stack with DCGM exporter scraping."""
    kuberay: ReleaseConfig = Field(default_factory=lambda: ReleaseConfig(enabled=False))
    """KubeRay operator for Ray clusters and jobs (off by default)."""
    mpi_operator: AddonConfig = Field(
        default_factory=AddonConfig, description="The Kubeflow MPI Operator (MPIJob v2beta1) from its release manifest."
    )
    jupyterhub: JupyterHubConfig = Field(default_factory=JupyterHubConfig)
    """JupyterHub for interactive notebooks (off by default)."""
    argo_workflows: ArgoWorkflowsConfig = Field(default_factory=ArgoWorkflowsConfig)
    """Argo Workflows for pipelines (off by default)."""
    karpenter: KarpenterConfig = Field(default_factory=KarpenterConfig)
    """Karpenter for just-in-time CPU and GPU nodes."""
    mlflow: MlflowConfig = Field(default_factory=MlflowConfig)
    """MLflow tracking server with an RDS PostgreSQL backend store and S3 artifacts (off by default)."""
